"""Load manifests: files, folders, stdin; multi-document YAML and `kind: List`; positions kept.

YAML is composed once (C loader when available); every mapping value and sequence item keeps the
line and column of its node, so findings point at the real line. A file that cannot be read or
parsed becomes a `parse-error` problem and the run goes on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_FILE_BYTES = 64 << 20  # larger files are reported, not parsed
MAX_EXPANDED_NODES = 2_000_000  # a YAML alias "billion laughs" is refused past this many nodes
EXTENSIONS = (".yaml", ".yml", ".json")

Path_ = tuple[Any, ...]


@dataclass(frozen=True)
class Loc:
    file: str
    line: int  # 1-based
    column: int = 1


@dataclass
class Document:
    """One YAML document (or one item of a `kind: List`) with the position of every value."""

    file: str
    index: int
    data: Any
    positions: dict[Path_, tuple[int, int]] = field(repr=False)
    prefix: Path_ = ()  # where `data` sits inside the parsed document (List items)
    styles: dict[Path_, str] = field(default_factory=dict, repr=False)  # block scalar styles ('|', '>')

    def loc(self, path: Path_) -> Loc:
        """The position of the value at `path`, or of its nearest ancestor that has one."""
        full = self.prefix + tuple(path)
        while full:
            if full in self.positions:
                line, col = self.positions[full]
                return Loc(self.file, line, col)
            full = full[:-1]
        line, col = self.positions.get((), (1, 1))
        return Loc(self.file, line, col)

    def style(self, path: Path_) -> str:
        return self.styles.get(self.prefix + tuple(path), "")


@dataclass(frozen=True)
class Problem:
    """Input that could not be read or parsed."""

    loc: Loc
    message: str


def _walk(node: yaml.Node, path: Path_, pos: dict, styles: dict, seen: dict[int, int], budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    pos[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.ScalarNode):
        if node.style in ("|", ">"):
            styles[path] = node.style
        return
    if id(node) in seen:  # an alias: count its expanded size, record no positions twice
        budget[0] -= seen[id(node)]
        if budget[0] < 0:
            raise _TooBig
        return
    before = budget[0]
    if isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            _walk(child, (*path, i), pos, styles, seen, budget)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.start_mark)
            _walk(v, (*path, key), pos, styles, seen, budget)
    seen[id(node)] = before - budget[0]


class _TooBig(Exception):
    pass


def parse_text(text: str, file: str) -> tuple[list[Document], list[Problem]]:
    """Parse one file's text into documents (expanding `kind: List`)."""
    docs: list[Document] = []
    problems: list[Problem] = []
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            pos: dict = {}
            styles: dict = {}
            try:
                _walk(node, (), pos, styles, {}, [MAX_EXPANDED_NODES])
            except _TooBig:
                problems.append(Problem(Loc(file, node.start_mark.line + 1), "YAML aliases expand past "
                                        f"{MAX_EXPANDED_NODES:,} nodes: document not checked"))
                index += 1
                continue
            data = loader.construct_document(node)
            if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
                for i, item in enumerate(data["items"]):
                    docs.append(Document(file, index, item, pos, ("items", i), styles))
            elif data is not None:
                docs.append(Document(file, index, data, pos, (), styles))
            index += 1
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problems.append(Problem(Loc(file, line), f"not valid YAML: {getattr(e, 'problem', None) or e}"))
    finally:
        loader.dispose()
    return docs, problems


def read_text(data: bytes, file: str) -> tuple[str | None, Problem | None]:
    if b"\x00" in data[:8192]:
        return None, Problem(Loc(file, 1), "binary file, not a manifest")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        return None, Problem(Loc(file, line), "not UTF-8 text")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        out = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            out += [Path(root) / n for n in sorted(names) if n.endswith(EXTENSIONS)]
        return out
    return [path]


def load(paths: list[str], stdin: str | None = None) -> tuple[list[Document], list[Problem]]:
    """Load every path ('-' is standard input, already read into `stdin`). Missing paths raise
    FileNotFoundError (a usage error); everything else becomes documents or problems."""
    docs: list[Document] = []
    problems: list[Problem] = []
    for raw in paths:
        if raw == "-":
            d, p = parse_text(stdin or "", "<stdin>")
            docs += d
            problems += p
            continue
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(raw)
        for f in _files(path):
            name = str(f)
            try:
                size = f.stat().st_size
                if size > MAX_FILE_BYTES:
                    problems.append(Problem(Loc(name, 1), f"file of {size / (1 << 20):.0f} MiB is over the "
                                            f"{MAX_FILE_BYTES >> 20} MiB limit: not checked"))
                    continue
                data = f.read_bytes()
            except OSError as e:
                problems.append(Problem(Loc(name, 1), f"cannot read: {e.strerror}"))
                continue
            text, problem = read_text(data, name)
            if problem:
                problems.append(problem)
                continue
            d, p = parse_text(text or "", name)
            docs += d
            problems += p
    return docs, problems
