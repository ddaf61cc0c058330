"""Read what `check` is pointed at as a user deploys it: Helm charts and Kustomize folders rendered first.

A folder with a `Chart.yaml` is a Helm chart: it is rendered with `helm template` (the chart's defaults,
or the `--values` files given) and the rendered objects are checked; its raw templates are never parsed
(they are Go templates, not YAML). A folder with a `kustomization.yaml` is rendered with `kubectl
kustomize`. When the binary is not on PATH, or rendering fails, the folder yields one info finding
(`template-not-rendered`) that says how to render it, and a chart's `values*.yaml` files are still read
as values files (production-stack, vLLM's example chart, llm-d modelservice, ai-on-eks, ...).

Any other file that is not valid YAML because of unrendered placeholders (`{{ .Values.x }}`,
`{{HF_TOKEN}}`, `${VAR}`, `{{{X}}}`) gets the same info finding instead of a `parse-error`.

`load_paths` is a drop-in for configurator.lint.load.load: same arguments, same result, more inputs
understood. Rendering runs the binaries with a timeout, no shell, and the chart folder as argument.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from configurator.lint.load import EXTENSIONS, MAX_FILE_BYTES, Document, Loc, Problem, load, parse_text
from configurator.lint.load import load_file as load_file_at

RULE = "template-not-rendered"
CHART_FILE = "Chart.yaml"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
RENDER_TIMEOUT_S = 60  # helm / kubectl per folder; a chart that takes longer is reported, not waited on
MAX_RENDERED_BYTES = 64 << 20  # the same cap load.py puts on one file
RELEASE_NAME = "release"  # what `{{ .Release.Name }}` renders to
# Placeholders of template engines that leave a file unparseable until filled in: Go templates (Helm),
# mustache / handlebars ({{X}}, {{{X}}}), and shell / envsubst (${VAR}).
_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_SOURCE = re.compile(r"(?m)^# Source: (\S+)\s*$")


@dataclass(frozen=True)
class RenderNote(Problem):
    """Input that is a template rather than a manifest: reported as info, never as a parse error.

    The engine reports a Problem under its `rule` (parse-error for plain Problems)."""

    rule: str = RULE


@dataclass(frozen=True)
class Tools:
    """The renderers found on PATH (None when absent)."""

    helm: str | None
    kubectl: str | None

    @classmethod
    def from_path(cls) -> Tools:
        return cls(shutil.which("helm"), shutil.which("kubectl"))


def chart_root(path: Path) -> Path | None:
    """The Helm chart a path belongs to (the nearest folder, itself included, with a Chart.yaml)."""
    p = path if path.is_dir() else path.parent
    for d in (p, *p.parents):
        if (d / CHART_FILE).is_file():
            return d
    return None


def kustomization_root(path: Path) -> Path | None:
    """The folder itself when it holds a kustomization file (files inside one are plain manifests)."""
    if path.is_dir() and any((path / n).is_file() for n in KUSTOMIZATION_FILES):
        return path
    return None


def has_placeholders(text: str) -> str | None:
    """The first unrendered placeholder in a text, or None."""
    m = _PLACEHOLDER.search(text)
    return m.group(0) if m else None


def _walk(root: Path, skip: Callable[[Path], bool],
          problems: list[Problem] | None = None) -> tuple[list[Path], list[Path], list[Path]]:
    """(charts, kustomizations, plain files) under a folder; a chart's or kustomization's own files
    are not listed as plain files. A folder that cannot be listed is a problem in `problems` (never a silent
    skip), and the walk goes on."""
    charts: list[Path] = []
    kusts: list[Path] = []
    files: list[Path] = []

    def unreadable(e: OSError) -> None:
        if problems is not None:
            problems.append(Problem(Loc(str(e.filename or root), 1), f"cannot read folder: {e.strerror or e}: "
                                    "its files were not checked"))

    for dirpath, dirs, names in os.walk(root, onerror=unreadable):
        d = Path(dirpath)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and not skip(d / x))
        if CHART_FILE in names:
            charts.append(d)
            dirs[:] = []
            continue
        if any(n in names for n in KUSTOMIZATION_FILES):
            kusts.append(d)
            dirs[:] = []
            continue
        files += [d / n for n in sorted(names) if n.endswith(EXTENSIONS) and not skip(d / n)]
    return charts, kusts, files


def _run(argv: list[str], what: str) -> tuple[str | None, str]:
    """(stdout, error line) of a renderer; stdout None on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=RENDER_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"{what} took over {RENDER_TIMEOUT_S} s"
    except OSError as e:
        return None, f"{what} could not run ({e.strerror})"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        first = next((line for line in err if line.strip()), f"exit status {done.returncode}")
        return None, f"{what} failed: {first[:300]}"
    if len(done.stdout) > MAX_RENDERED_BYTES:
        return None, f"{what} printed over {MAX_RENDERED_BYTES >> 20} MiB"
    return done.stdout.decode("utf-8", "replace"), ""


def _rendered_docs(text: str, base: Path, label: str) -> tuple[list[Document], list[Problem]]:
    """Parse a renderer's output; Helm's `# Source:` comments name the template each object came from."""
    docs: list[Document] = []
    problems: list[Problem] = []
    starts = [m.start() for m in _SOURCE.finditer(text)]
    if not starts:
        return parse_text(text, f"{base} ({label})")
    chunks = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    for chunk in chunks:
        src = _SOURCE.match(chunk)
        rel = src.group(1).split("/", 1)[-1] if src else ""
        d, p = parse_text(chunk, f"{base / rel} ({label})")
        docs += d
        problems += p
    return docs, problems


def render_chart(chart: Path, values: list[Path], tools: Tools) -> tuple[list[Document], list[Problem]]:
    """A chart's objects as `helm template` renders them, or one note saying how to render it (its
    values files are then read as they are)."""
    how = f"`helm template {chart} | vllm-configurator check -`"
    if tools.helm is None:
        note = RenderNote(Loc(str(chart / CHART_FILE), 1),
                          f"Helm chart not rendered (helm is not on PATH): its templates are not checked; run {how}")
        return _values_files(chart, [note])
    argv = [tools.helm, "template", RELEASE_NAME, str(chart)]
    for v in values:
        argv += ["--values", str(v)]
    out, err = _run(argv, "helm template")
    if out is None:
        note = RenderNote(Loc(str(chart / CHART_FILE), 1),
                          f"Helm chart not rendered ({err}): its templates are not checked; fix it, then run {how}")
        return _values_files(chart, [note])
    return _rendered_docs(out, chart, "helm template")


def _values_files(chart: Path, problems: list[Problem]) -> tuple[list[Document], list[Problem]]:
    docs: list[Document] = []
    for f in sorted(chart.glob("values*.y*ml")):
        d, p = load([str(f)])
        docs += d
        problems += p
    return docs, problems


def render_kustomization(folder: Path, tools: Tools,
                         skip: Callable[[Path], bool] = lambda p: False) -> tuple[list[Document], list[Problem]]:
    """A kustomization's objects as `kubectl kustomize` builds them; when it cannot be built, one note saying
    how, and its resource files checked as they are (before patches), so that a refused server in them is
    still reported."""
    how = f"`kubectl kustomize {folder} | vllm-configurator check -`"
    kfile = next(folder / n for n in KUSTOMIZATION_FILES if (folder / n).is_file())
    why = "kubectl is not on PATH"
    if tools.kubectl is not None:
        out, why = _run([tools.kubectl, "kustomize", str(folder)], "kubectl kustomize")
        if out is not None:
            return _rendered_docs(out, folder, "kubectl kustomize")
    docs, problems = _unrendered_resources(folder, skip, set())
    fix = "run" if tools.kubectl is None else "fix it, then run"
    note = RenderNote(Loc(str(kfile), 1), f"Kustomize folder not rendered ({why}): its resource files are checked "
                      f"as they are, without its patches and transformers; {fix} {how}")
    return docs, [note, *problems]


def _unrendered_resources(folder: Path, skip: Callable[[Path], bool],
                          seen: set[str]) -> tuple[list[Document], list[Problem]]:
    """The files a kustomization lists under `resources:` (a listed folder with its own kustomization: its
    resources in turn), read as plain manifests; with no readable `resources:` list, every manifest file in the
    folder. Remote resources are left to the note."""
    import yaml

    from configurator.errors import InputError
    from configurator.safe_io import read_file

    real = os.path.realpath(folder)
    if real in seen:  # a base listed twice, or a cycle
        return [], []
    seen.add(real)
    kfile = next(folder / n for n in KUSTOMIZATION_FILES if (folder / n).is_file())
    try:
        spec = yaml.safe_load(read_file(kfile, cap=MAX_FILE_BYTES).decode("utf-8", "replace"))
    except (InputError, yaml.YAMLError, RecursionError, ValueError):
        spec = None
    listed = spec.get("resources") if isinstance(spec, dict) else None
    if isinstance(listed, list):
        paths = [folder / r for r in listed if isinstance(r, str) and r and "://" not in r
                 and not r.startswith(("github.com/", "git@"))]
    else:
        paths = [folder / n for n in sorted(os.listdir(folder)) if n.endswith(EXTENSIONS)
                 and n not in KUSTOMIZATION_FILES]
    docs: list[Document] = []
    problems: list[Problem] = []
    for p in paths:
        if skip(p):
            continue
        if p.is_dir():
            if kustomization_root(p):
                d, q = _unrendered_resources(p, skip, seen)
                docs += d
                problems += q
        elif p.is_file() and p.name.endswith(EXTENSIONS):
            d, q = load_file(p)
            docs += d
            problems += q
    return docs, problems


def load_file(path: Path) -> tuple[list[Document], list[Problem]]:
    """One plain file; when it is not valid YAML because of unrendered placeholders, one note instead
    of a parse error."""
    docs, problems = load_file_at(path)
    if not problems or not any(p.message.startswith("not valid YAML") for p in problems):
        return docs, problems
    from configurator.errors import InputError
    from configurator.safe_io import read_file

    try:  # bounded, and never a FIFO (load() read it the same way a moment ago)
        text = read_file(path, cap=MAX_FILE_BYTES).decode("utf-8", errors="replace")
    except InputError:
        return docs, problems
    token = has_placeholders(text)
    if token is None:
        return docs, problems
    line = text[: text.find(token)].count("\n") + 1
    shown = token if len(token) <= 40 else token[:37] + "..."
    note = RenderNote(Loc(str(path), line), f"a template, not a manifest: {shown} is not filled in, so the file is "
                      "not valid YAML; render it (helm template, envsubst, ...) and check the output")
    return docs, [p for p in problems if not p.message.startswith("not valid YAML")] + [note]


def load_paths(paths: list[str], stdin: str | None = None, *, values: tuple[str, ...] = (),
               tools: Tools | None = None,
               skip: Callable[[Path], bool] = lambda p: False) -> tuple[list[Document], list[Problem]]:
    """Every path as `check` reads it ('-' is standard input, already read into `stdin`): files,
    folders, Helm charts (rendered with `values`), Kustomize folders. Missing paths raise
    FileNotFoundError (a usage error); everything else becomes documents or problems. `skip` says
    which files and folders the configuration ignores."""
    tools = tools or Tools.from_path()
    value_files = [Path(v) for v in values]
    docs: list[Document] = []
    problems: list[Problem] = []
    charts: list[Path] = []
    kusts: list[Path] = []
    files: list[Path] = []
    for raw in paths:
        if raw == "-":
            d, p = load(["-"], stdin)
            docs += d
            problems += p
            continue
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(raw)
        if skip(path):  # ignored by the configuration even when named (pre-commit names every file)
            continue
        chart = chart_root(path)
        if chart is not None:  # a chart, or a file or folder inside one: the chart is rendered once
            charts.append(chart)
            if path.is_file() and path.name.startswith("values") and path.parent == chart \
                    and path.name != "values.yaml" and path not in value_files:
                value_files.append(path)
            continue
        if path.is_dir():
            c, k, f = ([], [path], []) if kustomization_root(path) else _walk(path, skip, problems)
            charts += c
            kusts += k
            files += f
        else:
            files.append(path)
    for chart in dict.fromkeys(charts):
        d, p = render_chart(chart, [v for v in value_files if chart_root(v) in (chart, None)], tools)
        docs += d
        problems += p
    for k in dict.fromkeys(kusts):
        d, p = render_kustomization(k, tools, skip)
        docs += d
        problems += p
    for f in dict.fromkeys(files):
        d, p = load_file(f)
        docs += d
        problems += p
    return docs, problems


__all__ = ["RULE", "RenderNote", "Tools", "chart_root", "has_placeholders", "load_file", "load_paths",
           "render_chart", "render_kustomization"]
