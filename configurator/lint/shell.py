"""Command lines as a shell and Kubernetes read them: words, `$(VAR)` / `${VAR:-d}` / `$(( ))` expansion, `sh -c`."""

from __future__ import annotations

import re

from configurator.lint.load import Loc
from configurator.lint.server import Token

# Kubernetes' own expansion of command / args (`$(VAR)` from the container's env, `$$` an escaped `$`),
# done before any shell sees the text (k8s.io/kubernetes third_party/forked/golang/expansion/expand.go)
_K8S_VAR = re.compile(r"\$\$|\$\((\w+)\)")
# what a shell would expand: ${VAR}, ${VAR:-default} (and -, =, :=, +, :+), $VAR
_SH_PARAM = re.compile(r"\$\{(\w+)(?:(:?[-=+?])([^}]*))?\}|\$([A-Za-z_]\w*)")
_SH_ARITH = re.compile(r"^\$\(\((.*)\)\)$", re.S)
# a word that still holds an expansion nothing in the file gives a value (a command substitution, a variable the
# env does not set, arithmetic over one) or leftover templating ({{ .Values.x }}, ${{ }}, <% %>)
_UNRESOLVED = re.compile(r"\$[({A-Za-z_0-9@*#?!-]|`|\{\{.*?\}\}|\{%.*?%\}|<%.*?%>", re.S)
MAX_ARITH_CHARS = 200


def unresolved(text: str) -> bool:
    """Whether a word (after expansion) still holds a shell expansion or templating with no value in the file."""
    return ("$" in text or "{" in text or "`" in text or "<%" in text) and _UNRESOLVED.search(text) is not None


def _expand(text: str, env: dict[str, str], origins: list[str] | None = None) -> str:
    """Kubernetes' `$(VAR)` expansion of a command / args item with the container's env (an unset VAR stays
    as written, as Kubernetes leaves it); `$$` is a literal `$`."""
    if "$" not in text:
        return text

    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        if name in env:
            if origins is not None:
                origins.append(f"env var {name} in the file")
            return env[name]
        return m.group(0)
    return _K8S_VAR.sub(sub, text)


def _arith(expr: str) -> int | None:
    """A shell `$(( ))` whose operands are all numbers (after expansion), evaluated as the shell does
    (integers; / truncates); None for anything else."""
    import ast

    if len(expr) > MAX_ARITH_CHARS or not re.fullmatch(r"[\d\s+\-*/%()]*", expr):
        return None
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None

    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub | ast.UAdd):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if abs(a) > 1 << 62 or abs(b) > 1 << 62:
                raise ValueError
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Div | ast.FloorDiv | ast.Mod) and b != 0:
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if not isinstance(n.op, ast.Mod) else a - q * b
        raise ValueError
    try:
        return ev(tree)
    except (ValueError, RecursionError):
        return None


def _expand_shell(text: str, env: dict[str, str], origins: list[str], labels: dict[str, str] | None = None) -> str:
    """A shell's parameter expansion of one piece of a word, with the variables the file gives (the container's
    env, assignments earlier in the script); `${VAR:-default}` takes its default where VAR has no value here
    (said in `origins`); an expansion with no value stays as written (unresolved)."""
    if "$" not in text:
        return text

    def label(name: str) -> str:
        return (labels or {}).get(name) or f"env var {name} in the file"

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(4)
        op, word = m.group(2), m.group(3) or ""
        value = env.get(name)
        if op is None:
            if value is None:
                return m.group(0)
            origins.append(label(name))
            return value
        is_set = value is not None and (value != "" or ":" not in op)
        if op.endswith("+"):
            return word if is_set else ""
        if is_set:
            origins.append(label(name))
            return value or ""
        if op.endswith("?"):
            return m.group(0)
        origins.append(f"default of ${{{name}{op}{word}}} ({name} is not set in the file)")
        return word
    arith = _SH_ARITH.match(text)
    if arith is None:
        return _SH_PARAM.sub(sub, text)
    # $(( )): bare names are variables too; one the file does not set leaves it unresolved (never 0, as an
    # unset variable would be in the shell: LWS_GROUP_SIZE is set at run time, not in the file)
    found: list[str] = []
    inner = _SH_PARAM.sub(sub, arith.group(1))
    missing = False

    def name_value(m: re.Match) -> str:
        nonlocal missing
        if m.group(0) in env:
            found.append(label(m.group(0)))
            return env[m.group(0)]
        missing = True
        return m.group(0)
    numeric = re.sub(r"[A-Za-z_]\w*", name_value, inner)
    value = None if missing else _arith(numeric)
    if value is None:
        return "$((" + inner + "))"
    origins += found
    return str(value)


# vLLM's server entrypoints: `vllm serve` (vllm/entrypoints/cli/main.py) and the modules older manifests run
# with `python -m` (vllm.entrypoints.openai.api_server, vllm.entrypoints.api_server)
VLLM_MODULE_PREFIX = "vllm.entrypoints"
_SHELLS = ("sh", "bash", "zsh", "dash", "ash")
# shell options that take a value before -c (bash -o pipefail -c, bash -O extglob -c, bash --rcfile f -c)
_SHELL_VALUE_OPTIONS = ("-o", "+o", "-O", "+O", "--rcfile", "--init-file")


def shell_script_at(words: list[str]) -> int | None:
    """Where the script of a `sh -c SCRIPT` command line is: the shell (any path, behind `tini --`, `dumb-init`,
    `exec`, `env A=1`), its options (-l, -e, -x, -o pipefail, --login, ...) and `-c` or an option cluster holding c
    (-lc, -ec, -xc, -euxc); None when the words are not a shell given a script."""
    from configurator.vllm.flags import skip_prefix

    i = skip_prefix(words)
    if i >= len(words) or words[i].rsplit("/", 1)[-1] not in _SHELLS:
        return None
    i += 1
    seen_c = False
    while i < len(words):
        w = words[i]
        if w in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if w == "--":
            i += 1
            break
        if w.startswith("--"):  # --login, --norc, --noprofile, --posix
            i += 1
            continue
        if len(w) > 1 and w[0] in "-+" and w[1:].isalpha():
            seen_c = seen_c or "c" in w[1:]
            i += 1
            continue
        break
    return i if seen_c and i < len(words) else None


_SPLITS = re.compile(r"[ \t\n;&|]")  # a command line item holding one of these is itself a command


def argv_words(argv: list[str]) -> list[str]:
    """A command line as words: an item that is itself a command (`vllm serve m --port 8000`, a `sh -c`
    script) split as the shell would."""
    out: list[str] = []
    for text in argv:
        if not text.startswith("-") and _SPLITS.search(text) is not None:
            out += [w for seg in shell_words(text, script=True) for w, _ in seg]
        else:
            out.append(text)
    return out


# modules run with `python -m` that start a vLLM server: vLLM's own, and wrappers that take vLLM's engine options
# (configurator.vllm.flags.WRAPPERS: Dynamo's dynamo.vllm, KServe's Hugging Face server)
_WRAPPER_MODULES = ("dynamo.vllm", "huggingfaceserver", "huggingface_server")


# One piece of a POSIX shell word, or what separates words. Linear: each character is matched once. An
# expansion ($(( )), $( ), ${ }, `...`) is one piece, so the spaces inside `$((A * B))` never split a word.
_SH = re.compile(r"""
    (?P<cont>\\\n)
  | (?P<ws>[ \t\r\n]+)
  | (?P<comment>(?<![^ \t\r\n;&|])\#[^\n]*)
  | (?P<op>[;&|]+)
  | (?P<sq>'[^']*'?)
  | (?P<dq>"(?:[^"\\]|\\.)*"?)
  | (?P<esc>\\.?)
  | (?P<subst>\$\(\((?:[^()]|\([^()]*\))*\)\)|\$\((?:[^()'"]|\([^()]*\))*\)|\$\{[^}\s]*\}|`[^`]*`)
  | (?P<var>\$[A-Za-z_]\w*)
  | (?P<plain>[^ \t\r\n'"\\;&|$`]+|[$`])
""", re.X | re.S)
_DQ_ESCAPE = re.compile(r"\\([\\\"$`\n])")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def _shell_words(text: str, script: bool = False, env: dict[str, str] | None = None
                 ) -> list[list[tuple[str, int, str]]]:
    """shell_words, each word with where its value came from ('literal', 'env var X in the file', ...). With
    `env`, expansions are made as the shell would with what the file gives: the env, and `NAME=value`
    assignments earlier in the script (`export`, or a prefix of a command); unquoted, an expanded value with
    spaces splits into words. Without `env` nothing is expanded."""
    segments: list[list[tuple[str, int, str]]] = [[]]
    local = dict(env) if env is not None else None
    labels: dict[str, str] = {}  # a script variable -> where its value came from
    word: list[str] = []
    origins: list[str] = []
    start = -1
    quoted = False  # the word has a quote or a literal character (an empty unquoted expansion is no word)

    def end_word() -> None:
        nonlocal word, start, origins, quoted
        w = "".join(word)
        if start >= 0 and (w or quoted):
            segments[-1].append((w, start, ", ".join(dict.fromkeys(origins)) or "literal"))
            seg = [x for x, _, _ in segments[-1]]
            if local is not None and _ASSIGNMENT.match(w) and all(
                    _ASSIGNMENT.match(x) or x in ("export", "readonly", "local", "declare") for x in seg):
                name, _, value = w.partition("=")
                if not unresolved(value):
                    local[name] = value
                    got = ", ".join(dict.fromkeys(origins))
                    labels[name] = f"script variable {name}" + (f" ({got})" if got else "")
                else:
                    local.pop(name, None)
        word, start, origins, quoted = [], -1, [], False

    for m in _SH.finditer(text):
        kind, piece = m.lastgroup, m.group()
        if kind in ("ws", "cont", "comment"):
            end_word()
            if script and kind == "ws" and "\n" in piece and segments[-1]:
                segments.append([])  # a newline ends a command in a script (`if ...\nthen`, `export X\nvllm`)
            continue
        if kind == "op":
            end_word()
            segments.append([])
            continue
        if start < 0:
            start = m.start()
        quoted = quoted or kind not in ("subst", "var")
        if kind == "sq":
            word.append(piece[1:-1] if len(piece) > 1 and piece.endswith("'") else piece[1:])
        elif kind == "dq":
            inner = piece[1:-1] if len(piece) > 1 and piece.endswith('"') and not piece.endswith('\\"') \
                else piece[1:]
            inner = _DQ_ESCAPE.sub(r"\1", inner)
            word.append(_expand_shell(inner, local, origins, labels) if local is not None else inner)
        elif kind == "esc":
            word.append(piece[1:])
        elif kind in ("subst", "var") and local is not None:
            value = _expand_shell(piece, local, origins, labels)
            parts = value.split() if value != piece else [value]
            if len(parts) > 1:  # unquoted: the expansion's words are separate words
                word.append(parts[0])
                for p in parts[1:]:
                    end_word()
                    start = m.start()
                    word.append(p)
                    origins = [f"word of {piece}"]
            elif parts and parts[0]:
                word.append(parts[0])
        else:
            word.append(piece)
    end_word()
    return segments


def shell_words(text: str, script: bool = False) -> list[list[tuple[str, int]]]:
    """A shell script as segments (split at ; && || |, and with `script` at a newline, as `sh -c` does)
    of (word, offset of its first character), in linear time. Quotes and backslashes are removed as the
    shell would; comments dropped; expansions kept as written, each one piece of its word. Without `script`
    a newline is only a space (one command written over several lines of a YAML block, which no shell reads)."""
    return [[(w, at) for w, at, _ in seg] for seg in _shell_words(text, script)]


def _runs_vllm(word: str) -> bool:
    return word.rsplit("/", 1)[-1] == "vllm" or VLLM_MODULE_PREFIX in word or word in _WRAPPER_MODULES


def shell_tokens(text: str, loc: Loc, style: str, script: bool = False,
                 env: dict[str, str] | None = None) -> list[Token] | None:
    """The tokens of the vLLM command in a shell script (the last `cmd; cmd && cmd` segment that runs
    vLLM), each at its line and column: a `|` block's lines are the file's; a one-line string's
    columns are offsets from where it starts. With `env`, the script's expansions are made (_shell_words)."""
    segments = _shell_words(text, script, env if env is not None else {})
    runs_vllm = [seg for seg in segments if any(_runs_vllm(w) for w, _, _ in seg)]
    if not runs_vllm:
        return None
    chosen = runs_vllm[-1]
    out = []
    if style.startswith("|"):  # a literal block: the content starts on the next line, indented
        indent = int(style[1:] or 0)
        line, last_nl, counted = loc.line + 1, -1, 0
        for w, at, origin in chosen:
            line += text.count("\n", counted, at)  # incremental: linear overall
            nl = text.rfind("\n", counted, at)
            last_nl = nl if nl >= 0 else last_nl
            counted = at
            out.append(Token(w, Loc(loc.file, line, indent + at - last_nl), origin))
        return out
    if "\n" in text or style == ">":  # folded or multi-line flow scalar: the string's own position
        return [Token(w, loc, origin) for w, _, origin in chosen]
    quote = 1 if style in ('"', "'") else 0
    return [Token(w, Loc(loc.file, loc.line, loc.column + quote + at), origin) for w, at, origin in chosen]
