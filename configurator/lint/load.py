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

from configurator.errors import InputError
from configurator.safe_io import InputTooLarge, read_file

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

_TAGS: dict[str, str] = {}  # a plain scalar's resolved tag, by its text (bounded: cleared past _TAGS_MAX)
_TAGS_MAX = 65_536
_TAG_TEXT_MAX = 64  # longer scalars are resolved each time (they rarely repeat)


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader, with the tag resolution the C composer asks for once per node made cheaper: a plain
    scalar's tag depends on its text alone (the class's implicit resolvers), so it is remembered; a quoted scalar
    is a string and a collection a map or a seq, as the base resolver says when no path resolvers are registered
    (SafeLoader has none; the loader never takes any), which also makes descend / ascend no-ops."""

    def resolve(self, kind, value, implicit):  # PyYAML's signature
        if kind is yaml.ScalarNode:
            if not implicit[0]:
                return _STR
            tag = _TAGS.get(value)
            if tag is None:
                tag = _BaseLoader.resolve(self, kind, value, implicit)
                if len(value) <= _TAG_TEXT_MAX:
                    if len(_TAGS) >= _TAGS_MAX:
                        _TAGS.clear()
                    _TAGS[value] = tag
            return tag
        return _BaseLoader.resolve(self, kind, value, implicit)

    def descend_resolver(self, current_node, current_index):
        return None

    def ascend_resolver(self):
        return None


MAX_FILE_BYTES = 64 << 20  # larger files are reported, not parsed
MAX_EXPANDED_NODES = 2_000_000  # a YAML alias "billion laughs" is refused past this many nodes
# A document of more values than this is refused before it is composed: composing costs ~370 bytes a
# node (1M nodes: 369 MB peak RSS, measured), so this bounds a file's parse to ~200 MB.
MAX_DOCUMENT_NODES = 500_000
# A file of more documents than this is read up to it, and the rest reported, not checked: each document
# costs ~3 KB held (positions, styles), and a 14 MB file of a million tiny documents took 3.8 GB and 138 s.
MAX_DOCUMENTS = 10_000
PRESCAN_CHARS = 1_000_000  # smaller texts cannot hold MAX_DOCUMENT_NODES (a node takes >= 2 characters)
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
    styles: dict[Path_, str] = field(default_factory=dict, repr=False)  # scalar styles ('|', '>', '"', "'")
    indents: dict[Path_, int] = field(default_factory=dict, repr=False)  # a `|` block's content indentation

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

    def indent(self, path: Path_) -> int:
        """Columns before the content of a `|` block scalar in the file (0 when unknown)."""
        return self.indents.get(self.prefix + tuple(path), 0)


@dataclass(frozen=True)
class Problem:
    """Input that could not be read or parsed."""

    loc: Loc
    message: str


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


def _walk(root: yaml.Node, text: str, pos: dict, styles: dict, indents: dict, loader: Any) -> Any:
    """Record the position (and scalar style) of every node and build the document's data, iteratively, each
    node once (PyYAML's constructor, for the plain YAML of manifests, is most of the parse time); count the
    nodes aliases expand to. Raises _TooBig past MAX_EXPANDED_NODES, _Cycle for an alias inside itself, and
    _Fallback for what only PyYAML's constructor handles (merge keys, !!set, !!omap, unknown tags).

    A collection's scalar items are built where the collection is (most nodes are scalars: no trip through the
    stack); its collections go on the stack, so each one is first met in document order, as its anchor comes
    before its aliases, and its positions are recorded there, once."""
    visited: set[int] = set()
    built: dict[int, Any] = {}  # id(node) -> its list or dict (aliases share it, as PyYAML does)
    sizes: dict[int, int] = {}  # expanded sizes of aliased nodes, computed when an alias is met
    styled = _Styled(text, styles, indents)
    scalar = yaml.ScalarNode
    constructors = loader.yaml_constructors
    out: list[Any] = [None]
    # (node, path, container the value goes into, its key or index there)
    stack: list[tuple[yaml.Node, Path_, Any, Any]] = [(root, (), out, 0)]
    total = 0
    while stack:
        node, path, parent, key = stack.pop()
        mark = node.start_mark
        pos[path] = (mark.line + 1, mark.column + 1)
        if type(node) is scalar:
            total += 1
            if node.style:
                styled.add(node, path)
            parent[key] = node.value if node.tag == _STR else _scalar(node, constructors, loader)
            continue
        nid = id(node)
        if nid in visited:  # an alias: count its expansion, record no positions twice
            total += _expanded_size(node, sizes)
            parent[key] = built[nid]
            if total > MAX_EXPANDED_NODES:
                raise _TooBig
            continue
        visited.add(nid)
        total += 1
        pending: list[tuple[yaml.Node, Path_, Any, Any]] = []
        if node.tag == _SEQ:
            value = built[nid] = [None] * len(node.value)
            seq = True
        elif node.tag == _MAP:
            value = built[nid] = {}
            seq = False
        else:
            raise _Fallback
        for pk, v in (enumerate(node.value) if seq else node.value):
            if seq:
                ck = pk
            else:  # pk is the key's node: a scalar (a merge key or a collection as key: PyYAML's constructor)
                if type(pk) is not scalar or pk.tag == "tag:yaml.org,2002:merge":
                    raise _Fallback
                pk, ck = pk.value, (pk.value if pk.tag == _STR else _scalar(pk, constructors, loader))
            vpath = (*path, pk)
            if type(v) is scalar and (seq or ck not in value):  # (a repeated key goes the long way: the last wins)
                mark = v.start_mark
                pos[vpath] = (mark.line + 1, mark.column + 1)
                total += 1
                if v.style:
                    styled.add(v, vpath)
                value[ck] = v.value if v.tag == _STR else _scalar(v, constructors, loader)
            else:
                pending.append((v, vpath, value, ck))
                if not seq:
                    value[ck] = None  # document order, even when a later value is built first
        parent[key] = value
        stack.extend(reversed(pending))
        if total > MAX_EXPANDED_NODES:
            raise _TooBig
    return out[0]


class _Styled:
    """The scalar styles of a document ('|', '>', '"', "'") and the content indentation of its `|` blocks."""

    __slots__ = ("indents", "lines", "styles", "text")

    def __init__(self, text: str, styles: dict, indents: dict) -> None:
        self.text, self.styles, self.indents = text, styles, indents
        self.lines: list[str] | None = None

    def add(self, node: yaml.ScalarNode, path: Path_) -> None:
        self.styles[path] = node.style
        if node.style == "|":
            if self.lines is None:
                self.lines = self.text.splitlines()
            self.indents[path] = _block_indent(self.lines, node.start_mark.line)


def _scalar(node: yaml.ScalarNode, constructors: dict, loader: Any) -> Any:
    key = (node.tag, node.value)
    out = _SCALARS.get(key, _SCALARS)
    if out is not _SCALARS:
        return out
    fn = constructors.get(node.tag)
    if fn is None or node.tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs"):
        raise _Fallback
    out = fn(loader, node)
    if (out is None or type(out) in (int, bool, float)) and len(node.value) <= _TAG_TEXT_MAX:
        if len(_SCALARS) >= _TAGS_MAX:
            _SCALARS.clear()
        _SCALARS[key] = out  # immutable, and pure in the tag and text (ports, counts, booleans recur)
    return out


_SCALARS: dict[tuple[str, str], Any] = {}  # a non-string scalar's value by (tag, text), bounded like _TAGS


class _Fallback(Exception):
    """The document needs PyYAML's own constructor."""


def _positions_only(root: yaml.Node, text: str, pos: dict, styles: dict, indents: dict) -> None:
    """The positions of a document PyYAML constructs itself (merge keys, special tags)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, Path_]] = [(root, ())]
    lines: list[str] | None = None
    while stack:
        node, path = stack.pop()
        pos[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            if node.style:
                styles[path] = node.style
                if node.style == "|":
                    lines = lines if lines is not None else text.splitlines()
                    indents[path] = _block_indent(lines, node.start_mark.line)
        elif id(node) not in seen:
            seen.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                stack.extend((c, (*path, i)) for i, c in enumerate(node.value))
            else:
                stack.extend((v, (*path, k.value if isinstance(k, yaml.ScalarNode) else str(k.start_mark)))
                             for k, v in node.value)


def _expanded_size(root: yaml.Node, sizes: dict[int, int]) -> int:
    """Nodes `root` stands for with every alias expanded (memoised); raises _Cycle when it contains itself."""
    active: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, exiting = stack.pop()
        nid = id(node)
        if exiting:
            active.discard(nid)
            sizes[nid] = min(MAX_EXPANDED_NODES + 1, 1 + sum(sizes.get(id(c), 1) for c in _children(node)))
            continue
        if isinstance(node, yaml.ScalarNode) or nid in sizes:
            continue
        if nid in active:
            raise _Cycle(node.start_mark.line + 1)
        active.add(nid)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node))
    return sizes.get(id(root), 1)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return [v for _, v in node.value]


def _block_indent(lines: list[str], indicator_line: int) -> int:
    """Columns before the content of a `|` block whose indicator is on 0-based `indicator_line`."""
    for line in lines[indicator_line + 1:indicator_line + 50]:
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    return 0


class _TooBig(Exception):
    pass


class _Cycle(Exception):
    pass


def _too_many_nodes(text: str) -> tuple[int, int] | None:
    """For a large file, count its YAML nodes from the event stream (constant memory) before composing
    them: (line, nodes) of the first document past MAX_DOCUMENT_NODES, else None."""
    if len(text) < PRESCAN_CHARS:
        return None
    loader = _Loader(text)
    try:
        count, start, documents = 0, 1, 0
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.DocumentStartEvent):
                count, start = 0, event.start_mark.line + 1
                documents += 1
                if documents > MAX_DOCUMENTS:
                    return None  # parse_text stops reading there
            elif isinstance(event, yaml.NodeEvent):
                count += 1
                if count > MAX_DOCUMENT_NODES:
                    return start, count
    except yaml.YAMLError:
        return None  # the parse proper reports it, at its line
    finally:
        loader.dispose()
    return None


def parse_text(text: str, file: str) -> tuple[list[Document], list[Problem]]:
    """Parse one file's text into documents (expanding `kind: List`)."""
    docs: list[Document] = []
    problems: list[Problem] = []
    big = _too_many_nodes(text)
    if big is not None:
        return [], [Problem(Loc(file, big[0]), f"a YAML document of more than {MAX_DOCUMENT_NODES:,} values: "
                            "not a manifest, file not checked")]
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            if index >= MAX_DOCUMENTS:
                line = loader.peek_event().start_mark.line + 1
                problems.append(Problem(Loc(file, line), f"more than {MAX_DOCUMENTS:,} YAML documents in one file: "
                                        f"the first {MAX_DOCUMENTS:,} were read, this one and the rest not checked"))
                break
            node = loader.get_node()
            if node is None:
                continue
            pos: dict = {}
            styles: dict = {}
            indents: dict = {}
            fallback = False
            try:
                data = _walk(node, text, pos, styles, indents, loader)
            except _Fallback:
                fallback = True
            except TypeError:  # an unhashable key (a list or mapping as a key)
                fallback = True
            except _TooBig:
                problems.append(Problem(Loc(file, node.start_mark.line + 1), "YAML aliases expand past "
                                        f"{MAX_EXPANDED_NODES:,} nodes: document not checked"))
                index += 1
                continue
            except _Cycle as e:
                problems.append(Problem(Loc(file, e.args[0]), "a YAML alias refers to a node that contains it (a "
                                        "recursive structure): document not checked"))
                index += 1
                continue
            try:
                if fallback:
                    pos.clear()
                    styles.clear()
                    indents.clear()
                    _positions_only(node, text, pos, styles, indents)
                    if _expanded_size(node, {}) > MAX_EXPANDED_NODES:
                        raise _TooBig
                    data = loader.construct_document(node)
            except (_TooBig, _Cycle) as e:
                what = "YAML aliases expand past " + f"{MAX_EXPANDED_NODES:,} nodes" if isinstance(e, _TooBig) else \
                    "a YAML alias refers to a node that contains it (a recursive structure)"
                problems.append(Problem(Loc(file, node.start_mark.line + 1), f"{what}: document not checked"))
                index += 1
                continue
            except RecursionError:
                problems.append(Problem(Loc(file, node.start_mark.line + 1), "YAML nested too deeply to read: "
                                        "document not checked"))
                index += 1
                continue
            if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
                for i, item in enumerate(data["items"]):
                    docs.append(Document(file, index, item, pos, ("items", i), styles, indents))
            elif data is not None:
                docs.append(Document(file, index, data, pos, (), styles, indents))
            index += 1
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problems.append(Problem(Loc(file, line), f"not valid YAML: {_one_line(getattr(e, 'problem', None) or e)}"))
    except (ValueError, TypeError, OverflowError) as e:  # a constructor refusing a value (a bad !!timestamp)
        problems.append(Problem(Loc(file, 1), f"not valid YAML: {_one_line(e)}"))
    finally:
        loader.dispose()
    return docs, problems


def _one_line(e: object) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 200 else text[:197] + "..."


def read_text(data: bytes, file: str) -> tuple[str | None, Problem | None]:
    if b"\x00" in data[:8192]:
        return None, Problem(Loc(file, 1), "binary file, not a manifest")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        return None, Problem(Loc(file, line), "not UTF-8 text")


def _files(path: Path, problems: list[Problem]) -> list[Path]:
    """The manifests under a folder (hidden folders skipped, symlinked folders not followed), or the
    path itself; a folder that cannot be listed is a problem, and the scan goes on."""
    if not path.is_dir():
        return [path]
    out = []

    def unreadable(e: OSError) -> None:
        problems.append(Problem(Loc(str(e.filename or path), 1), f"cannot read folder: {e.strerror or e}: "
                                "its files were not checked"))

    for root, dirs, names in os.walk(path, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [Path(root) / n for n in sorted(names) if n.endswith(EXTENSIONS)]
    return out


def load(paths: list[str], stdin: str | bytes | None = None) -> tuple[list[Document], list[Problem]]:
    """Load every path ('-' is standard input, already read into `stdin`, best with safe_io.read_stdin so it
    is bounded; bytes are decoded here, a binary or non-UTF-8 stream being a problem). Missing paths raise
    FileNotFoundError (a usage error); everything else becomes documents or problems: only regular
    files are read (a FIFO, device or socket, or a symlink to one, is reported and skipped), each up to
    MAX_FILE_BYTES, incrementally (configurator/safe_io.py)."""
    docs: list[Document] = []
    problems: list[Problem] = []
    for raw in paths:
        if raw == "-":
            text, problem = read_text(stdin, "<stdin>") if isinstance(stdin, bytes) else (stdin, None)
            if problem:
                problems.append(problem)
                continue
            d, p = parse_text(text or "", "<stdin>")
            docs += d
            problems += p
            continue
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise FileNotFoundError(raw)
        for f in _files(path, problems):
            d, p = load_file(f)
            docs += d
            problems += p
    return docs, problems


def load_file(f: Path) -> tuple[list[Document], list[Problem]]:
    """One file known to be there (`load` checked the path, or a folder's walk listed it): its documents, or the
    problem of reading it (bounded, never a FIFO or device: configurator/safe_io.py)."""
    name = str(f)
    try:
        data = read_file(f, cap=MAX_FILE_BYTES)
    except InputTooLarge:
        return [], [Problem(Loc(name, 1), f"larger than the {MAX_FILE_BYTES >> 20} MiB limit: not checked")]
    except InputError as e:  # NotRegularFile too
        return [], [Problem(Loc(name, 1), _after_name(str(e), name))]
    text, problem = read_text(data, name)
    del data
    if problem:
        return [], [problem]
    return parse_text(text or "", name)


def _after_name(message: str, name: str) -> str:
    """safe_io's messages start with the path; the finding carries it already."""
    return message[len(name) + 2:] if message.startswith(name + ": ") else message
