"""Reading untrusted input and writing reports, safely: the one place files and streams are touched.

Input: only regular files are read (a FIFO, device or socket would block or never end), and every
read is incremental and stops at a byte cap, so `/dev/zero` or an endless pipe costs at most the cap.
Output: `-o PATH` never replaces an existing path or follows a symlink without `--force`, never
writes onto one of the run's own inputs, and lands atomically (a temporary file in the same folder,
then an exclusive hard link, or a rename under --force), so racing writers leave one complete file
or a clear refusal.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from configurator.errors import InputError

MAX_INPUT_BYTES = 64 << 20  # per file and for standard input
_CHUNK = 1 << 20


class InputTooLarge(InputError):
    """An input is larger than its byte cap."""


class NotRegularFile(InputError):
    """A path names a FIFO, device, socket or other non-regular file."""


class TooDeep(InputError):
    """Parsed data nests deeper than its bound."""


def special_kind(path: Path) -> str | None:
    """'FIFO', 'character device', ... for a non-regular file (following symlinks); None for a regular
    file or a folder. Raises OSError when the path cannot be stat'ed."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def read_stream(stream: BinaryIO, *, cap: int = MAX_INPUT_BYTES, what: str = "input") -> bytes:
    """Read a binary stream to its end, or raise InputTooLarge as soon as it passes `cap` bytes."""
    return _read_capped(stream.read, cap, what)


def _read_capped(read: Callable[[int], bytes], cap: int, what: str) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = read(min(_CHUNK, cap + 1 - size))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        size += len(chunk)
        if size > cap:
            raise InputTooLarge(f"{what}: larger than the {cap >> 20} MiB limit: not read")


def read_file(path: str | Path, *, cap: int = MAX_INPUT_BYTES, what: str | None = None) -> bytes:
    """A regular file's bytes (symlinks followed), bounded by `cap`. Raises NotRegularFile,
    InputTooLarge, or InputError for a missing or unreadable path."""
    p = Path(path)
    name = what or str(p)
    try:
        kind = special_kind(p)
        if kind is not None:
            raise NotRegularFile(f"{name}: a {kind}, not a regular file: not read")
        if p.is_dir():
            raise InputError(f"{name}: is a folder")
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open() still returns
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(p, flags)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegularFile(f"{name}: not a regular file: not read")
            return _read_capped(functools.partial(os.read, fd), cap, name)  # no buffered file object
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror or e})") from None


def read_stdin(*, cap: int = MAX_INPUT_BYTES, what: str = "standard input") -> bytes:
    """Standard input, bounded by `cap`; an interactive terminal is refused instead of waiting."""
    if sys.stdin is None:
        return b""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        if sys.stdin.isatty():
            raise InputError(f"reading {what}, but it is a terminal: pipe the input in")
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream (tests): encode what it holds, still bounded
        text = sys.stdin.read(cap + 1)
        data = text.encode("utf-8", "surrogateescape")
        if len(data) > cap:
            raise InputTooLarge(f"{what}: larger than the {cap >> 20} MiB limit: not read")
        return data
    return read_stream(stream, cap=cap, what=what)


def decode_text(data: bytes, what: str) -> str:
    """UTF-8 (with or without BOM) text, or one clear InputError."""
    if b"\x00" in data[:8192]:
        raise InputError(f"{what}: binary data, not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(f"{what}: not UTF-8 text (line {line})") from None


MAX_JSON_BYTES = 32 << 20  # a config.json, hf_quant_config.json or safetensors index (the largest real: ~9 MB)
MAX_SMALL_FILE_BYTES = 4 << 20  # a workload or calibration file: a few hundred bytes in practice
MAX_DEPTH = 64  # nesting of a config file (real config.json files: 4 levels)


def read_text_file(path: str | Path, *, cap: int = MAX_INPUT_BYTES, what: str | None = None) -> str:
    """A regular file's UTF-8 text, read with `read_file`'s bounds; one InputError line otherwise."""
    name = what or str(path)
    return decode_text(read_file(path, cap=cap, what=name), name)


def check_depth(data: object, what: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise InputError when lists / maps nest deeper than `max_depth` (an iterative walk)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, dict):
            children = x.values()
        elif isinstance(x, list):
            children = x
        else:
            continue
        if depth > max_depth:
            raise TooDeep(f"{what}: nested deeper than {max_depth} levels: not read")
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


def parse_json(text: str, what: str, *, max_depth: int = MAX_DEPTH) -> object:
    """JSON text -> value, its nesting bounded; raises json.JSONDecodeError for bad syntax and InputError
    for nesting past `max_depth` (however deep: the decoder's own recursion limit is caught)."""
    import json

    try:
        data = json.loads(text)
    except RecursionError:
        raise TooDeep(f"{what}: nested deeper than {max_depth} levels: not read") from None
    check_depth(data, what, max_depth=max_depth)
    return data


def read_json(path: str | Path, *, cap: int = MAX_JSON_BYTES, what: str | None = None,
              max_depth: int = MAX_DEPTH) -> object:
    """A JSON file, bounded in bytes and nesting. Raises InputError (not regular, too large, not UTF-8,
    too deep) or json.JSONDecodeError (bad syntax: the caller words it)."""
    name = what or str(path)
    return parse_json(read_text_file(path, cap=cap, what=name), name, max_depth=max_depth)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def input_clash(path: str | Path, inputs: tuple[str | Path, ...], folder_reads: tuple[str, ...] = ()) -> str | None:
    """Why `path` must not be written by a run that reads `inputs`, or None: it is one of them (the same file,
    through any link), or it lies inside an input folder where the run reads files ending in `folder_reads`
    (outside hidden folders, as the folder walk reads them), so that it is, or would next time be, an input."""
    p = Path(path)
    real = Path(os.path.realpath(p))
    for i in inputs:
        if str(i) == "-":
            continue
        ip = Path(i)
        if _same_file(p, ip):
            return "is one of this run's inputs"
        if not folder_reads or not ip.is_dir() or not real.name.lower().endswith(folder_reads):
            continue
        try:
            rel = real.relative_to(os.path.realpath(ip))
        except ValueError:
            continue
        if not any(part.startswith(".") for part in rel.parts[:-1]):
            return f"is inside the input folder {i}, whose {', '.join(folder_reads)} files this run reads"
    return None


def write_output(path: str | Path, data: str | bytes, *, force: bool = False,
                 inputs: tuple[str | Path, ...] = (), folder_reads: tuple[str, ...] = ()) -> None:
    """Write `data` to `path` atomically. Without `force`, an existing path (a dangling symlink
    included) is refused; with it, a symlink is still refused (its target is not ours to replace).
    A path that is one of the run's `inputs`, or a file the run reads inside an input folder (see
    `input_clash`), is always refused, --force or not."""
    p = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    clash = input_clash(p, inputs, folder_reads)
    if clash is not None:
        raise InputError(f"{p}: {clash}: not overwritten (choose another output path)")
    if p.is_symlink():
        raise InputError(f"{p}: is a symbolic link: not written through (remove it, or choose another path)")
    if p.exists() and not force:
        raise InputError(f"{p}: exists: not overwritten (pass --force to replace it)")
    if p.exists() and not p.is_file():
        raise InputError(f"{p}: exists and is not a regular file: not replaced")
    folder = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise InputError(f"{p}: cannot write ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        if force:
            os.replace(tmp, p)
        else:
            try:  # exclusive: fails if another writer got there first
                os.link(tmp, p)
            except FileExistsError:
                raise InputError(f"{p}: exists: not overwritten (pass --force to replace it)") from None
            except OSError:  # a filesystem without hard links: O_EXCL create, then copy
                try:
                    out = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    raise InputError(f"{p}: exists: not overwritten (pass --force to replace it)") from None
                with os.fdopen(out, "wb") as f:
                    f.write(raw)
    except OSError as e:
        raise InputError(f"{p}: cannot write ({e.strerror or e})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
