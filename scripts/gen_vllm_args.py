"""Read every `vllm serve` option of each vLLM release from the wheel's source, statically.

    python scripts/gen_vllm_args.py [--src /work/vllm-src] [--out profiles/vllm-args/options.json]

For each release unpacked at <src>/<version>/vllm/ this walks, with `ast` (vLLM is never imported),
the functions that build the `vllm serve` parser: ServeSubcommand.subparser_init
(vllm/entrypoints/cli/serve.py) -> make_arg_parser (entrypoints/.../cli_args.py) ->
FrontendArgs.add_cli_args -> AsyncEngineArgs.add_cli_args -> EngineArgs.add_cli_args
(vllm/engine/arg_utils.py). Each `add_argument(...)` call gives an option; `**x_kwargs["field"]`
expands to what vLLM's `get_kwargs(ConfigClass)` derives from that dataclass field's annotation
(bool -> `--x/--no-x`, Literal -> choices, list/tuple -> nargs, `bool | str | None` -> optional
value, int -> int or human-readable int, ...), following the rules in that release's `get_kwargs`.
Later edits (`x_kwargs["f"]["type"] = ...`, `del x_kwargs["f"]["nargs"]`, `choices += ...`) are
applied. Whatever cannot be resolved statically is recorded as "takes one value, any text" (choices
null), so the table can only under-reject, never invent a refusal.

Output: one JSON file. `options` holds each distinct option record once; `releases` maps a release
to the indexes of its options; `parser` holds per-release parser facts (positional model argument,
negation style, None-in-choices spelling).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNKNOWN = object()  # a value the static reading cannot know


def _ver_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


# --------------------------------------------------------------------------------------------------
# The release's source: a lazy index of module-level names (aliases, constants, classes, functions)


class Source:
    def __init__(self, root: Path):
        self.root = root  # .../<version>/vllm
        self._trees: dict[Path, ast.Module] = {}
        self._defs: dict[str, list[Path]] = {}
        name_re = re.compile(r"^(?:class\s+(\w+)|def\s+(\w+)|(\w+)\s*(?::[^=\n]*)?=[^=])", re.M)
        for p in sorted(root.rglob("*.py")):
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for m in name_re.finditer(text):
                name = m.group(1) or m.group(2) or m.group(3)
                self._defs.setdefault(name, []).append(p)

    def tree(self, p: Path) -> ast.Module:
        if p not in self._trees:
            self._trees[p] = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        return self._trees[p]

    def lookup(self, name: str, prefer: Path | None = None) -> tuple[Path, ast.AST] | None:
        """The module-level definition of `name` (class, function or assignment)."""
        paths = list(self._defs.get(name, []))
        # prefer: the module asking, then vllm/config*, then the rest (in path order)
        paths.sort(key=lambda p: (p != prefer, "config" not in p.parts and p.stem != "config",
                                  "quantization" not in p.parts, str(p)))
        for p in paths:
            for node in self.tree(p).body:
                for n in _unwrap_if(node):
                    if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == name:
                        return p, n
                    if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                         for t in n.targets):
                        return p, n.value
                    if (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                            and n.target.id == name and n.value is not None):
                        return p, n.value
        return None

    def cls(self, name: str, prefer: Path | None = None) -> tuple[Path, ast.ClassDef] | None:
        paths = list(self._defs.get(name, []))
        paths.sort(key=lambda p: (p != prefer, "config" not in p.parts and p.stem != "config", str(p)))
        for p in paths:
            for node in self.tree(p).body:
                for n in _unwrap_if(node):
                    if isinstance(n, ast.ClassDef) and n.name == name:
                        return p, n
        return None


def _unwrap_if(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.If):  # `if TYPE_CHECKING:` / version guards at module level
        return [x for b in (node.body, node.orelse) for n in b for x in _unwrap_if(n)]
    if isinstance(node, ast.Try):
        return [x for b in (node.body, node.orelse) for n in b for x in _unwrap_if(n)]
    return [node]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for n in cls.body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return n
    return None


# --------------------------------------------------------------------------------------------------
# Types: a dataclass field's annotation -> the set of "type hints" get_kwargs sees


@dataclass(frozen=True)
class Hint:
    kind: str  # bool int float str none literal list tuple set dict dataclass other
    values: tuple = ()  # literal values
    args: tuple = ()  # element hints for list / tuple (as Hint), Ellipsis marker "..."


class Types:
    def __init__(self, src: Source):
        self.src = src

    def hints(self, node: ast.AST | None, where: Path, depth: int = 0) -> set[Hint]:
        if node is None or depth > 12:
            return {Hint("other")}
        if isinstance(node, ast.Constant):
            if node.value is None:
                return {Hint("none")}
            if isinstance(node.value, str):  # forward reference
                try:
                    return self.hints(ast.parse(node.value, mode="eval").body, where, depth + 1)
                except SyntaxError:
                    return {Hint("other")}
            if node.value is Ellipsis:
                return {Hint("ellipsis")}
            return {Hint("other")}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.hints(node.left, where, depth + 1) | self.hints(node.right, where, depth + 1)
        if isinstance(node, ast.Subscript):
            base = _dotted(node.value)
            last = base.rsplit(".", 1)[-1]
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if last in ("Optional",):
                return self.hints(elts[0], where, depth + 1) | {Hint("none")}
            if last == "Union":
                out: set[Hint] = set()
                for e in elts:
                    out |= self.hints(e, where, depth + 1)
                return out
            if last in ("Annotated", "SkipValidation"):
                return self.hints(elts[0], where, depth + 1)
            if last == "Literal":
                vals = []
                for e in elts:
                    v = self.value(e, where, depth + 1)
                    if v is UNKNOWN:
                        return {Hint("other")}
                    vals.extend(v if isinstance(v, list) else [v])
                return {Hint("literal", tuple(vals))}
            if last in ("list", "List", "Sequence"):
                return {Hint("list", args=(self._elem(elts[0], where, depth),))}
            if last in ("tuple", "Tuple"):
                return {Hint("tuple", args=tuple("..." if isinstance(e, ast.Constant) and e.value is Ellipsis
                                                 else self._elem(e, where, depth) for e in elts))}
            if last in ("set", "Set"):
                return {Hint("set", args=(self._elem(elts[0], where, depth),))}
            if last in ("dict", "Dict", "Mapping"):
                return {Hint("dict")}
            if last in ("ClassVar", "InitVar"):
                return self.hints(elts[0], where, depth + 1)
            return {Hint("other")}
        if isinstance(node, ast.Name | ast.Attribute):
            name = _dotted(node)
            last = name.rsplit(".", 1)[-1]
            builtin = {"bool": "bool", "int": "int", "float": "float", "str": "str", "dict": "dict",
                       "list": "list", "tuple": "tuple", "set": "set", "None": "none", "Any": "other"}
            if name in builtin:
                return {Hint(builtin[name])}
            found = self.src.lookup(last, where)
            if found is None:
                return {Hint("other")}
            p, n = found
            if isinstance(n, ast.ClassDef):
                if _is_dataclass(n):
                    return {Hint("dataclass")}
                if any(_dotted(b).rsplit(".", 1)[-1] in ("dict", "Dict", "TypedDict") for b in n.bases):
                    return {Hint("dict") if "TypedDict" not in [_dotted(b).rsplit(".", 1)[-1]
                                                                  for b in n.bases] else Hint("other")}
                return {Hint("other")}
            if isinstance(n, ast.FunctionDef):
                return {Hint("other")}
            if isinstance(n, ast.Call) and _dotted(n.func).endswith("TypeAliasType"):
                return self.hints(n.args[1] if len(n.args) > 1 else None, p, depth + 1)
            return self.hints(n, p, depth + 1)
        return {Hint("other")}

    def _elem(self, node: ast.AST, where: Path, depth: int) -> Hint:
        hs = self.hints(node, where, depth + 1)
        kinds = {h.kind for h in hs}
        if len(hs) == 1:
            return next(iter(hs))
        if "str" in kinds:
            return Hint("str")
        return Hint("other")

    def value(self, node: ast.AST, where: Path, depth: int = 0) -> Any:
        """A constant-ish expression: literals, names of constants, get_args(Literal), enum values."""
        if depth > 12:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.value(node.operand, where, depth + 1)
            return -v if isinstance(v, int | float) else UNKNOWN
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    v = self.value(e.value, where, depth + 1)
                    if not isinstance(v, list):
                        return UNKNOWN
                    out.extend(v)
                else:
                    v = self.value(e, where, depth + 1)
                    if v is UNKNOWN:
                        return UNKNOWN
                    out.append(v)
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.value(node.left, where, depth + 1), self.value(node.right, where, depth + 1)
            if isinstance(a, list) and isinstance(b, list):
                return a + b
            return UNKNOWN
        if isinstance(node, ast.Call):
            fn = _dotted(node.func).rsplit(".", 1)[-1]
            if fn in ("get_args", "list", "sorted", "tuple") and len(node.args) == 1:
                arg = node.args[0]
                if fn == "get_args":
                    hs = self.hints(arg, where, depth + 1)
                    lits = [h for h in hs if h.kind == "literal"]
                    if len(lits) == 1 and len(hs) == 1:
                        return list(lits[0].values)
                    return UNKNOWN
                v = self.value(arg, where, depth + 1)
                if isinstance(v, dict):
                    v = list(v)
                if isinstance(v, list):
                    return sorted(v, key=str) if fn == "sorted" else v
                return UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            g = node.generators[0]
            # [f.value for f in SomeEnum]
            if (isinstance(node.elt, ast.Attribute) and node.elt.attr == "value"
                    and isinstance(node.elt.value, ast.Name) and isinstance(g.target, ast.Name)
                    and node.elt.value.id == g.target.id and not g.ifs):
                return self.enum_values(_dotted(g.iter), where)
            return UNKNOWN
        if isinstance(node, ast.Subscript) and _dotted(node.value).rsplit(".", 1)[-1] == "Literal":
            hs = self.hints(node, where, depth + 1)
            lit = next(iter(hs))
            return list(lit.values) if lit.kind == "literal" else UNKNOWN
        if isinstance(node, ast.Name | ast.Attribute):
            found = self.src.lookup(_dotted(node).rsplit(".", 1)[-1], where)
            if found is None or isinstance(found[1], ast.ClassDef | ast.FunctionDef):
                return UNKNOWN
            if isinstance(found[1], ast.Dict):
                keys = [self.value(k, found[0], depth + 1) for k in found[1].keys if k is not None]
                return {k: None for k in keys} if UNKNOWN not in keys else UNKNOWN
            return self.value(found[1], found[0], depth + 1)
        return UNKNOWN

    def enum_values(self, name: str, where: Path) -> Any:
        found = self.src.cls(name.rsplit(".", 1)[-1], where)
        if not found:
            return UNKNOWN
        out = []
        for n in found[1].body:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant):
                out.append(n.value.value)
        return out or UNKNOWN


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "()"
    return ""


def _is_dataclass(c: ast.ClassDef) -> bool:
    for d in c.decorator_list:
        name = _dotted(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
        if name in ("dataclass", "config"):
            return True
    return any(_dotted(b).rsplit(".", 1)[-1] == "BaseModel" for b in c.bases)


# --------------------------------------------------------------------------------------------------
# get_kwargs(ConfigClass): the argparse keywords a release derives from each dataclass field


@dataclass
class Rules:
    """How this release's get_kwargs turns a field's type hints into argparse keywords."""

    dataclass_json: bool  # a dataclass-typed field takes JSON
    optional_bool_str: bool  # `bool | str | None` -> nargs='?'
    literal_metavar_with_str: bool  # Literal alongside str -> no choices
    none_choice: Any  # what is appended to choices for Optional fields (None or "None")
    human_int_fields: tuple[str, ...]  # fields parsed with human_readable_int
    human_auto_fields: tuple[str, ...]  # fields parsed with human_readable_int_or_auto
    set_collection: bool  # set[...] -> nargs='+'
    dict_with_str: bool  # dict | str -> union_dict_and_str (one value)


def _rules(src: Source, arg_utils: Path) -> Rules:
    text = arg_utils.read_text(encoding="utf-8")
    fn = re.search(r"def (?:_compute_kwargs|get_kwargs)\(.*?(?=\n(?:def |class |@))", text, re.S)
    body = fn.group(0) if fn else ""
    # the field names given human_readable_int: `if name in {...}`, `human_readable_ints = {...}`
    hi = tuple(n for m in re.finditer(r"(?:name in|human_readable_ints?(?:_args)?\s*=)\s*[{(]([^})]*)[})]", body)
               for n in re.findall(r'"(\w+)"', m.group(1)))
    auto = tuple(re.findall(r'name == "(\w+)":\s*\n\s*kwargs\[name\]\["type"\] = human_readable_int_or_auto',
                            body))
    return Rules(
        dataclass_json="is_dataclass(th)" in body,
        optional_bool_str="type_hints == {bool, str, type(None)}" in body,
        literal_metavar_with_str='"metavar" if contains_type(type_hints, str)' in text,
        none_choice=None if '["choices"].append(None)' in body else "None",
        human_int_fields=hi, human_auto_fields=auto,
        set_collection="contains_type(type_hints, set)" in body,
        dict_with_str="union_dict_and_str" in body,
    )


def _field_kwargs(h: set[Hint], name: str, rules: Rules) -> dict:
    kinds = {x.kind for x in h}
    kw: dict[str, Any] = {}
    if rules.dataclass_json and "dataclass" in kinds:
        kw["type"] = "json"
    elif rules.optional_bool_str and kinds == {"bool", "str", "none"}:
        kw.update(type="str", nargs="?")
    elif "bool" in kinds:
        kw["action"] = "BooleanOptionalAction"
    elif "literal" in kinds:
        lit = next(x for x in h if x.kind == "literal")
        t = type(lit.values[0]).__name__ if lit.values else "str"
        kw["type"] = t
        if rules.literal_metavar_with_str and "str" in kinds:
            kw["known"] = sorted(lit.values, key=lambda v: (str(type(v)), v))  # metavar only
        else:
            kw["choices"] = sorted(lit.values, key=lambda v: (str(type(v)), v))
    elif "tuple" in kinds or "list" in kinds or (rules.set_collection and "set" in kinds):
        coll = next(x for x in h if x.kind in ("tuple", "list", "set"))
        elems = [a for a in coll.args if a != "..."]
        elem = elems[0] if elems else Hint("str")
        kw["type"] = elem.kind if elem.kind in ("int", "float", "str") else "str"
        if elem.kind == "literal":
            kw["type"] = type(elem.values[0]).__name__ if elem.values else "str"
            kw["choices"] = sorted(elem.values, key=lambda v: (str(type(v)), v))
        if coll.kind == "tuple" and "..." not in coll.args:
            kw["nargs"] = len(coll.args)
        else:
            kw["nargs"] = "+"
    elif "int" in kinds:
        if name in rules.human_auto_fields:
            kw["type"] = "human_int_or_auto"
        elif name in rules.human_int_fields:
            kw["type"] = "human_int"
        else:
            kw["type"] = "int"
    elif "float" in kinds:
        kw["type"] = "float"
    elif "dict" in kinds:
        kw["type"] = "str" if (rules.dict_with_str and ("str" in kinds or "other" in kinds
                                                      or "dataclass" in kinds)) else "json"
    else:
        kw["type"] = "str"
    if "none" in kinds and "bool" not in kinds:
        kw["optional"] = True
        if kw.get("choices"):
            kw["choices"] = [*kw["choices"], rules.none_choice]
    return kw


# --------------------------------------------------------------------------------------------------
# Walking the parser-building functions


@dataclass
class Walker:
    src: Source
    types: Types
    rules: Rules
    options: list[dict] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)
    _seen_fns: set = field(default_factory=set)

    def class_fields(self, name: str, where: Path) -> tuple[dict[str, dict], Path] | None:
        found = self.src.cls(name, where)
        if not found:
            return None
        p, c = found
        out: dict[str, dict] = {}
        for b in c.bases:  # dataclass inheritance: base fields first
            base = self.class_fields(_dotted(b).rsplit(".", 1)[-1], p)
            if base:
                out.update(base[0])
        for n in c.body:
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                ann = _dotted(n.annotation.value) if isinstance(n.annotation, ast.Subscript) else ""
                if ann.rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
                    continue
                if _dotted(n.annotation) in ("ClassVar", "InitVar"):
                    continue
                out[n.target.id] = _field_kwargs(self.types.hints(n.annotation, p), n.target.id, self.rules)
        return out, p

    def walk_fn(self, fn: ast.FunctionDef, where: Path, env: dict, cls_name: str | None) -> None:
        key = (where, fn.name, fn.lineno, cls_name)
        if key in self._seen_fns:
            return
        self._seen_fns.add(key)
        self.walk_body(fn.body, where, env, cls_name)

    def walk_body(self, body: list[ast.stmt], where: Path, env: dict, cls_name: str | None) -> None:
        for st in body:
            self.walk_stmt(st, where, env, cls_name)

    def walk_stmt(self, st: ast.stmt, where: Path, env: dict, cls_name: str | None) -> None:
        if isinstance(st, ast.If | ast.With | ast.Try | ast.For | ast.While):
            if isinstance(st, ast.For) and self._for_items(st, where, env):
                return
            for b in ("body", "orelse", "finalbody"):
                self.walk_body(getattr(st, b, []) or [], where, env, cls_name)
            for h in getattr(st, "handlers", []) or []:
                self.walk_body(h.body, where, env, cls_name)
            return
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t, v = st.targets[0], st.value
            if isinstance(t, ast.Name):
                got = self._kwargs_source(v, where, env, cls_name)
                if got is not None:
                    env[t.id] = got
                    return
            if isinstance(t, ast.Subscript):
                self._mutate(t, v, where, env, op="set")
                return
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Subscript):
            self._mutate(st.target, st.value, where, env, op="add")
            return
        if isinstance(st, ast.Delete):
            for t in st.targets:
                self._mutate(t, None, where, env, op="del")
            return
        for node in ast.walk(st):
            if isinstance(node, ast.Call):
                self.call(node, where, env, cls_name)

    def _for_items(self, st: ast.For, where: Path, env: dict) -> bool:
        """`for key, value in x_kwargs.items(): group.add_argument(*extra, f"--{key...}", **value)`."""
        it = st.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and isinstance(it.func.value, ast.Name) and it.func.value.id in env):
            return False
        kwargs = env[it.func.value.id]
        for fname, kw in kwargs.items():
            kw = dict(kw)
            flags = kw.pop("flags", None) or []
            self.add({**kw}, [*flags, "--" + fname.replace("_", "-")])
        return True

    def _kwargs_source(self, v: ast.AST, where: Path, env: dict, cls_name: str | None) -> dict | None:
        if isinstance(v, ast.Call):
            fn = _dotted(v.func).rsplit(".", 1)[-1]
            if fn == "get_kwargs" and v.args:
                cname = _dotted(v.args[0])
                if cname == "cls" and cls_name:
                    cname = cls_name
                got = self.class_fields(cname.rsplit(".", 1)[-1], where)
                return {k: dict(x) for k, x in got[0].items()} if got else {}
            if fn == "_customize_cli_kwargs" and v.args and isinstance(v.args[0], ast.Name):
                var = v.args[0].id
                self._customize(cls_name, where, env, var)
                return env.get(var)
        return None

    def _customize(self, cls_name: str | None, where: Path, env: dict, var: str) -> None:
        found = self.src.cls(cls_name or "", where)
        if not found:
            return
        p, c = found
        m = _method(c, "_customize_cli_kwargs")
        if m is None:
            for b in c.bases:
                self._customize(_dotted(b).rsplit(".", 1)[-1], p, env, var)
            return
        param = next(a.arg for a in m.args.args if a.arg not in ("cls", "self"))
        local = {param: env.get(var, {})}
        for st in m.body:
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call) \
                    and _dotted(st.value.func).endswith("_customize_cli_kwargs"):
                for b in c.bases:
                    self._customize(_dotted(b).rsplit(".", 1)[-1], p, local, param)
                continue
            self.walk_stmt(st, p, local, cls_name)
        env[var] = local[param]

    def _mutate(self, target: ast.AST, value: ast.AST | None, where: Path, env: dict, op: str) -> None:
        chain: list[Any] = []
        node = target
        while isinstance(node, ast.Subscript):
            k = node.slice
            chain.append(k.value if isinstance(k, ast.Constant) else UNKNOWN)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in env:
            return
        chain.reverse()
        d = env[node.id]
        if UNKNOWN in chain or not chain:
            return
        if len(chain) == 1:
            if op == "set" and isinstance(value, ast.Dict):
                d[chain[0]] = self.explicit_kwargs(value, where, env)
            elif op == "del":
                d.pop(chain[0], None)
            return
        entry = d.setdefault(chain[0], {})
        key = chain[1]
        if op == "del":
            entry.pop(key, None)
        elif op == "set":
            entry.update(self.explicit_kwargs(ast.Dict(keys=[ast.Constant(key)], values=[value]), where, env))
        elif op == "add" and key == "choices":
            extra = self.types.value(value, where)
            if isinstance(extra, list) and isinstance(entry.get("choices"), list):
                entry["choices"] = [*entry["choices"], *extra]
            else:
                entry["choices"] = None  # not knowable statically: accept any value

    def explicit_kwargs(self, node: ast.Dict | list[ast.keyword], where: Path, env: dict) -> dict:
        """argparse keywords written out (keyword arguments or a dict literal)."""
        pairs: list[tuple[str | None, ast.AST]] = []
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                pairs.append((k.value if isinstance(k, ast.Constant) else None, v))
        else:
            pairs = [(kw.arg, kw.value) for kw in node]
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k is None:  # **something
                out.update(self._splat(v, where, env))
                continue
            if k == "action":
                out["action"] = (v.value if isinstance(v, ast.Constant)
                                 else _dotted(v).rsplit(".", 1)[-1] or "custom")
                if out["action"] in ("store_true", "store_false", "store_const", "count", "help", "version"):
                    out.pop("nargs", None)
            elif k == "type":
                out["type"], opt = _type_name(v)
                if opt:
                    out["optional"] = True
                else:
                    out.pop("optional", None)
            elif k == "choices":
                val = self.types.value(v, where)
                out["choices"] = val if isinstance(val, list) else None
            elif k == "nargs":
                val = self.types.value(v, where)
                out["nargs"] = val if val is not UNKNOWN else "?"
            elif k == "flags":
                val = self.types.value(v, where)
                out["flags"] = val if isinstance(val, list) else []
            elif k == "metavar":
                pass
        return out

    def _splat(self, v: ast.AST, where: Path, env: dict) -> dict:
        if isinstance(v, ast.Dict):
            return self.explicit_kwargs(v, where, env)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id in env \
                and isinstance(v.slice, ast.Constant):
            return dict(env[v.value.id].get(v.slice.value, {}))
        return {}

    def call(self, node: ast.Call, where: Path, env: dict, cls_name: str | None) -> None:
        f = node.func
        name = _dotted(f)
        last = name.rsplit(".", 1)[-1]
        if last == "add_argument":
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if not strings:
                return
            self.add(self.explicit_kwargs(node.keywords, where, env), strings)
            return
        if last == "make_arg_parser":
            found = self.src.lookup("make_arg_parser", where)
            if found and isinstance(found[1], ast.FunctionDef):
                self.walk_fn(found[1], found[0], {}, None)
            return
        if last == "add_cli_args" and isinstance(f, ast.Attribute):
            owner = _dotted(f.value)
            if owner == "super()":
                owner_cls = self.src.cls(cls_name or "", where)
                bases = [_dotted(b).rsplit(".", 1)[-1] for b in owner_cls[1].bases] if owner_cls else []
            elif owner in ("cls", "self"):
                bases = [cls_name] if cls_name else []
            else:
                bases = [owner.rsplit(".", 1)[-1]]
            for b in bases:
                self.walk_class_method(b, "add_cli_args", where)

    def walk_class_method(self, cname: str | None, method: str, where: Path) -> None:
        found = self.src.cls(cname or "", where)
        if not found:
            return
        p, c = found
        m = _method(c, method)
        if m is None:
            for b in c.bases:  # inherited classmethod: runs with cls = this class
                bp = self.src.cls(_dotted(b).rsplit(".", 1)[-1], p)
                if bp and _method(bp[1], method):
                    self.walk_fn(_method(bp[1], method), bp[0], {}, cname)
                    return
            return
        self.walk_fn(m, p, {}, cname)

    def add(self, kw: dict, strings: list[str]) -> None:
        if not strings:
            return
        if not strings[0].startswith("-"):
            self.positional.append(strings[0])
            return
        action = kw.get("action")
        longs = [s for s in strings if s.startswith("--")]
        dest = (longs[0] if longs else strings[0]).lstrip("-").replace("-", "_")
        rec: dict[str, Any] = {"opts": list(dict.fromkeys(strings)), "dest": dest}
        if action in ("store_true", "store_false", "store_const", "count", "help", "version"):
            rec["nargs"] = 0
        elif action == "BooleanOptionalAction":
            rec["nargs"] = 0
            rec["negatable"] = True
        else:
            nargs = kw.get("nargs")
            rec["nargs"] = nargs if nargs is not None else 1
            if action == "StoreBoolean":
                rec["type"] = "str"
                rec["choices"] = None
            rec["type"] = kw.get("type", "str")
            if kw.get("optional"):
                rec["optional"] = True
            if kw.get("choices") is not None:
                rec["choices"] = kw["choices"]
            if kw.get("known") and "choices" not in rec:
                rec["known"] = kw["known"]  # listed in help, checked later by the config
        self.options.append(rec)


def _type_name(v: ast.AST) -> tuple[str, bool]:
    """An argparse `type=` expression -> (our type name, whether '' / 'None' mean None)."""
    if isinstance(v, ast.Call):
        fn = _dotted(v.func).rsplit(".", 1)[-1]
        if fn == "optional_type" and v.args:
            return _type_name(v.args[0])[0], True
        if fn == "parse_type" and v.args:
            return _type_name(v.args[0])
        return "str", False
    name = _dotted(v).rsplit(".", 1)[-1]
    table = {"int": "int", "float": "float", "str": "str", "nullable_str": "str", "loads": "json",
             "human_readable_int": "human_int", "human_readable_int_or_auto": "human_int_or_auto",
             "nullable_kvs": "str", "union_dict_and_str": "str"}
    if name == "nullable_str":
        return "str", True
    return table.get(name, "str"), False


# --------------------------------------------------------------------------------------------------


def read_release(version_root: Path) -> tuple[list[dict], dict]:
    vroot = version_root / "vllm"
    src = Source(vroot)
    arg_utils = vroot / "engine" / "arg_utils.py"
    rules = _rules(src, arg_utils)
    w = Walker(src, Types(src), rules)
    serve = vroot / "entrypoints" / "cli" / "serve.py"
    found = src.cls("ServeSubcommand", serve)
    if found and _method(found[1], "subparser_init"):
        w.walk_fn(_method(found[1], "subparser_init"), found[0], {}, "ServeSubcommand")
    else:  # no `vllm serve` subcommand: the api_server's parser
        mk = src.lookup("make_arg_parser")
        if mk and isinstance(mk[1], ast.FunctionDef):
            w.walk_fn(mk[1], mk[0], {}, None)
    argparse_text = ""
    for cand in (vroot / "utils" / "argparse_utils.py", vroot / "utils" / "__init__.py", vroot / "utils.py"):
        if cand.exists():
            argparse_text += cand.read_text(encoding="utf-8")
    facts = {
        "positional": w.positional[:1],
        # the suffixes human_readable_int knows (0.8.x: k m g / K M G; later also t / T)
        "human_suffixes": _human_suffixes(vroot),
        # vllm/utils/argparse_utils.py EnableDisableAction: --enable-x also takes --disable-x
        "enable_disable": "class EnableDisableAction" in argparse_text,
    }
    # the last definition of an option string wins in argparse (conflict_handler='error' would
    # refuse a duplicate; vLLM has none), so keep the first record per dest
    seen: set[str] = set()
    opts = []
    for o in w.options:
        if o["dest"] in seen:
            continue
        seen.add(o["dest"])
        opts.append(o)
    return opts, facts


def _human_suffixes(vroot: Path) -> str:
    for p in (vroot / "utils" / "argparse_utils.py", vroot / "engine" / "arg_utils.py",
              vroot / "utils" / "__init__.py"):
        if not p.exists():
            continue
        m = re.search(r"def human_readable_int\(.*?return int\(value\)", p.read_text(encoding="utf-8"), re.S)
        if m:
            return "".join(sorted(set(re.findall(r"[\"'](\w)[\"']:\s*(?:10|2)\s*\*\*", m.group(0)))))
    return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="/work/vllm-src")
    ap.add_argument("--out", default=str(ROOT / "profiles" / "vllm-args" / "options.json"))
    ap.add_argument("--versions", nargs="*", help="default: every unpacked release")
    a = ap.parse_args(argv)
    src = Path(a.src)
    versions = a.versions or sorted((p.name for p in src.iterdir()
                                     if (p / "vllm" / "engine" / "arg_utils.py").exists()), key=_ver_key)
    distinct: dict[str, int] = {}
    table: list[dict] = []
    releases: dict[str, list[int]] = {}
    parser_facts: dict[str, dict] = {}
    for v in versions:
        opts, facts = read_release(src / v)
        idx = []
        for o in opts:
            k = json.dumps(o, sort_keys=True)
            if k not in distinct:
                distinct[k] = len(table)
                table.append(o)
            idx.append(distinct[k])
        releases[v] = idx
        parser_facts[v] = facts
        print(f"{v}: {len(opts)} options", file=sys.stderr)
    out = {
        "about": "vLLM `serve` options per release, read statically from the wheels' source by "
                 "scripts/gen_vllm_args.py (do not edit by hand).",
        "options": table,
        "releases": releases,
        "parser": parser_facts,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(table)} distinct option records, {len(releases)} releases -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
