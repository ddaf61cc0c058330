"""A vLLM command line applied to a server: its flags read by the release's own argument parser, each value checked."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from configurator.errors import InputError
from configurator.lint.load import Loc
from configurator.lint.release import _release_dependent, flag_table_release, release_basis
from configurator.lint.server import Server, Token
from configurator.lint.shape import MAX_BYTES, MAX_INT, Node, describe
from configurator.lint.shell import shell_script_at, shell_tokens, unresolved
from configurator.vllm.flags import BY_DEST, Flag, ParsedArgs, convert, parse_args

MAX_BAD_FLAGS = 8  # flag values dropped (each a note) before a command is given up


@lru_cache(maxsize=4096)
def _parse_cached(texts: tuple[str, ...], version: str | None) -> ParsedArgs:
    """parse_args is pure in (tokens, release); manifests repeat the same command many times (replicas,
    one Deployment per namespace), so each distinct command is read once. Errors are not cached."""
    return parse_args(list(texts), version)


# -- flags ----------------------------------------------------------------------------------------

def flag_value_problem(flag: Flag, value: Any) -> str | None:
    """Why a converted flag value cannot be used (NaN, infinite, absurdly large), or None."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{flag.option}: {value} is not a finite number"
        if abs(value) > MAX_INT:
            return f"{flag.option}: {value:g} is out of range"
    if isinstance(value, int) and not isinstance(value, bool):
        hi = MAX_BYTES if flag.type == "bytes" else MAX_INT
        if not -1 <= value <= hi:
            text = f"{value:,}" if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
            return f"{flag.option}: {text} is out of range"
    if flag.dest == "model" and isinstance(value, str) and (
            len(value) > 1024 or "\x00" in value or any(len(p) > 255 for p in value.split("/"))):
        return f"{flag.option}: '{value[:40]}...' is not a model id or path (too long)"
    return None


def set_flag(server: Server, node: Node, dest: str, loc: Loc | None = None) -> None:
    """A structured flag (production-stack vllmConfig, chart values): the scalar at `node`, converted as
    vLLM would, range-checked; a bad value is a note on the server and is not used."""
    flag = BY_DEST[dest]
    if node.value is None:
        return
    text = node.text()
    if text is None:
        server.notes.append(f"{flag.option}: expected a scalar value, got {describe(node.value)}")
        return
    try:
        value = convert(flag, node.value if isinstance(node.value, bool) else text,
                        flag_table_release(server.image, server.env))
    except (InputError, ValueError, OverflowError) as e:
        server.notes.append(str(e))
        return
    problem = flag_value_problem(flag, value)
    if problem:
        server.notes.append(problem)
        return
    server.flags[dest] = value
    server.flag_locs[dest] = loc or node.loc()


def _drop_flag(tokens: list[Token], message: str) -> list[Token] | None:
    """Remove the flag a parse error names (and its value), so the rest of the command is still read; the
    tokens removed, None when the message names no flag in the tokens."""
    m = re.match(r"(?:argument |ambiguous option: )?(-[\w.-]+)", message)
    if m is None:
        return None
    for i, t in enumerate(tokens):
        if t.text.partition("=")[0] == m.group(1):
            has_value = "=" not in t.text and i + 1 < len(tokens) and not tokens[i + 1].text.startswith("--")
            removed = tokens[i:i + 2 if has_value else i + 1]
            del tokens[i:i + 2 if has_value else i + 1]
            return removed
    return None


def _without_unresolved(server: Server, tokens: list[Token], version: str | None) -> list[Token]:
    """The tokens less every value the file does not give (Server.unresolved): an option with such a value is
    left out with it, never split into flags or read as a number; the server is checked with what is known."""
    if not any(unresolved(t.text) for t in tokens):
        return tokens
    from configurator.vllm.args import _normalise, release_args, resolve

    rel = release_args(version)
    out: list[Token] = []
    for t in tokens:
        if not unresolved(t.text):
            out.append(t)
            continue
        if t.text.startswith("-"):
            name, _, value = t.text.partition("=")
            server.unresolved.append((name, value or t.text, t.loc))
            continue
        prev = out[-1] if out else None
        if prev is not None and prev.text.startswith("-") and "=" not in prev.text and not unresolved(prev.text):
            try:
                found = resolve(rel, _normalise(prev.text), 0)
            except InputError:
                found = None
            if found is None or found[0].nargs != 0:
                if found is not None:
                    out.pop()
                server.unresolved.append((prev.text, t.text, t.loc))
                continue
        server.unresolved.append(("", t.text, t.loc))
    for name, value, _ in server.unresolved:
        server.basis[(name.lstrip("-").replace("-", "_") or "argument")] = f"unresolved ({value[:80]})"
    return out


def apply_tokens(server: Server, tokens: list[Token]) -> None:
    """Parse a vLLM command line into the server's flags (last wins), noting repeats, unmodelled
    options and tokens vLLM would reject; a bad value is a note. The command is read by the argument
    parser of the server's own release (its image tag), not the newest: an option added later is
    "unrecognized" there, as vLLM itself would say. Where the file names no release, what some modelled
    release accepts is a warning naming the releases that refuse it (Server.release_dependent), not an error.
    A value the file does not give (an unset $VAR, $(( )), templating) is left out (Server.unresolved), and each
    flag's basis (Server.basis) says where its value came from."""
    version = flag_table_release(server.image, server.env)
    server.flags_release = version
    server.basis.setdefault("release", release_basis(server.image, server.env))
    at = shell_script_at([t.text for t in tokens]) if tokens and "-" in tokens[min(1, len(tokens) - 1)].text else None
    if at is not None:  # a format's raw command + args that are a `sh -c` script (a Dynamo service's [/bin/sh, -c])
        inner = shell_tokens(tokens[at].text, tokens[at].loc, ">", script=True, env=server.env)
        tokens = (inner or []) + list(tokens[at + 2:])
    tokens = _without_unresolved(server, list(tokens), version)
    for i, t in enumerate(tokens):  # not a memory flag, but it may name the model a container path holds
        if not t.text.startswith("--served"):
            continue
        opt, eq, val = t.text.partition("=")
        if opt in ("--served-model-name", "--served_model_name"):
            following = [x.text for x in tokens[i + 1:i + 4]]
            names = [val] if eq else [x for x in following[:next(
                (k for k, x in enumerate(following) if x.startswith("-")), len(following))]]
            server.served_names = [n for n in names if n]  # the last occurrence wins, as in argparse
            server.flag_locs["served_model_name"] = t.loc
    for _ in range(MAX_BAD_FLAGS):
        try:
            parsed = _parse_cached(tuple(t.text for t in tokens), version)
            break
        except (InputError, ValueError, OverflowError, RecursionError) as e:
            message = str(e) if not isinstance(e, RecursionError) else "a value nested too deeply to read"
            removed = _drop_flag(tokens, message)
            if removed is None:
                server.notes.append(message)
                return
            if not _release_dependent(server, [t.text for t in removed], f"\"{message}\"", removed[0].loc):
                server.notes.append(message)
    else:
        return
    literal = all(t.origin == "literal" for t in tokens)
    server.unmodelled += [(o.dest, tokens[o.index].loc) for o in parsed.unmodelled]
    for u in parsed.unknown:
        loc = tokens[u.index].loc
        if u.wrapper and u.token.startswith("--") and not u.suggestion:
            # neither vLLM's nor the wrapper's as listed here (flags.WRAPPERS); a wrapper release after the list
            # may have it, and nothing here says which wrapper release runs
            server.release_dependent.append((
                f"{u.token}: an option of neither vLLM {version or 'the newest'} nor {u.wrapper} as read here; a "
                f"{u.wrapper} release may add it, else its parser exits (\"unrecognized arguments\")", loc))
        elif not _release_dependent(server, [u.token], "\"unrecognized arguments\"", loc):
            server.unknown.append((u, loc))
    for o in parsed.occurrences:
        dest, value, loc = o.dest, o.value, tokens[o.index].loc
        flag = BY_DEST.get(dest)
        problem = flag_value_problem(flag, value) if flag is not None else None
        if problem:
            server.notes.append(problem)
            continue
        if dest in server.flag_locs:
            server.repeated.setdefault(dest, [server.flag_locs[dest]])
            server.repeated[dest].append(loc)
        server.flags[dest] = value
        server.flag_locs[dest] = loc
        if literal:
            server.basis[dest] = "literal"
            continue
        origins = [t.origin for t in tokens[o.index:max(o.end, o.index + 1)] if t.origin != "literal"]
        server.basis[dest] = ", ".join(dict.fromkeys(origins)) or "literal"
    if literal:  # no token took its value from anywhere else: no default taken
        return
    for i, t in enumerate(tokens):  # a default taken (${VAR:-d}) by any option, modelled or not, is said
        if "default of $" in t.origin:
            option = t.text if t.text.startswith("--") else tokens[i - 1].text if i else "argument"
            key = option.partition("=")[0].lstrip("-").replace("-", "_")
            server.basis.setdefault(key, t.origin)
            server.flag_locs.setdefault(key, t.loc)
