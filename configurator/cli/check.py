"""`vllm-configurator check PATH...`: lint manifests and Helm output against the GPU memory budget."""

from __future__ import annotations

import gc
import io
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from configurator.cli.common import complete_gpu, release_range
from configurator.errors import ExitCode, InputError

FORMAT_NAMES = ("text", "json", "sarif", "github", "junit")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# `kubectl vllm-check` runs kubectl-vllm_check (kubectl's plugin naming: a dash of the command is an underscore
# of the file). The pip console script of that name sets argv[0] to the command the user typed; the krew shell
# launcher (plugins/kubectl-vllm_check) runs `vllm-configurator check` with PROG_NAME_ENV set to it.
PLUGIN_NAME = "kubectl vllm-check"
PLUGIN_EXECUTABLE = "kubectl-vllm_check"
PROG_NAME_ENV = "VLLM_CONFIGURATOR_PROG_NAME"


def invoked_as() -> str | None:
    """The command the user typed when it is not `vllm-configurator check` (the kubectl plugin), or None."""
    import os

    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == PLUGIN_NAME or Path(argv0).name == PLUGIN_EXECUTABLE:
        return PLUGIN_NAME
    named = os.environ.get(PROG_NAME_ENV, "").strip()
    return named if named == PLUGIN_NAME else None


class _CheckContext(click.Context):
    """Usage lines, `--help` and "Try '... --help'" name the command as the user typed it."""

    @property
    def command_path(self) -> str:
        return invoked_as() or super().command_path


class _CheckCommand(click.Command):
    context_class = _CheckContext


def _named_file_is_not_yaml(path: str, docs: list, problems: list) -> str | None:
    """Why a file named on the command line is not a manifest at all (README.md, a script), or None.
    A `.yaml` / `.yml` / `.json` file is always checked (one that does not parse is a parse-error finding).
    Any other named file must hold a Kubernetes object (`kind` / `apiVersion`) or a vLLM server: prose
    often parses as YAML (`Some *prose*: text` is a mapping), so parsing alone proves nothing."""
    from configurator.lint.extract import extract_all

    if Path(path).suffix.lower() in MANIFEST_SUFFIXES:
        return None
    if any(isinstance(d.data, dict) and ("kind" in d.data or "apiVersion" in d.data) for d in docs):
        return None
    servers, not_understood = extract_all(docs)
    if servers or not_understood:
        return None
    if problems:
        return f"{path}: not YAML or JSON ({problems[0].message}): nothing to check"
    return f"{path}: not a Kubernetes manifest or values file (named files must be YAML or JSON manifests)"


def _load(paths: Sequence[str], settings, values: tuple[str, ...] = (), force_exclude: bool = False):
    """Every path's documents and problems. `ignorePaths` leaves out what `check` finds inside the folders
    it walks; a file or folder named on the command line is read even when it matches, unless
    `force_exclude` (ruff's `--force-exclude` semantics: pre-commit names every changed file, so the hook
    passes it, and `check .` on a repository skips its ignored fixtures while `check fixtures/` reads them)."""
    from configurator.lint.render import load_paths
    from configurator.safe_io import read_stdin

    stdin = read_stdin() if "-" in paths else None  # bounded: /dev/zero stops at the cap
    docs, problems = [], []
    for group in _by_chart(paths):
        raw = group[0]
        asked_for = raw != "-" and not force_exclude and all(settings.ignored(r, Path(r).is_dir()) for r in group)
        if asked_for:
            def skip(f: Path) -> bool:
                return False
        else:
            def skip(f: Path) -> bool:
                return settings.ignored(str(f))
        try:
            d, p = load_paths(group, stdin, values=values, skip=skip)
        except FileNotFoundError as e:
            what = "a symbolic link to nothing (dangling, or a loop)" if Path(e.args[0]).is_symlink() else \
                "no such file or folder"
            raise InputError(f"{e.args[0]}: {what}") from None
        if len(group) == 1 and raw != "-" and Path(raw).is_file():
            why = _named_file_is_not_yaml(raw, d, p)
            if why is not None:
                raise InputError(why)
        if settings.config.ignore_paths and not asked_for:  # rendered templates a glob leaves out
            d = [x for x in d if not settings.ignored(x.file)]
            p = [x for x in p if not settings.ignored(x.loc.file)]
        docs += d
        problems += p
    return docs, problems


# The collector settings of the outermost running check, and how many checks run (nested or in threads: the
# webhook reviews concurrently, tests call check many times in one process).
_GC_LOCK = threading.Lock()
_gc_depth = 0
_gc_saved: tuple[tuple[int, ...], bool] | None = None


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run a check with the cyclic garbage collector mostly out of the way: loading builds a dict, a list or a
    tuple per YAML node (positions included), almost none of them cyclic (reference counting frees them), yet
    CPython's default thresholds (700, 10, 10) rescan the growing heap over and over. The objects alive after
    the imports are frozen out of the scans, and the young generation collects every 50,000 allocations:
    `check` on 2,000 manifests spends 20% less CPU (3.8 s -> 3.0 s, measured).

    Nestable and thread-safe: only the outermost check changes the collector, and the last one to finish puts
    back exactly what it found: the caller's thresholds, and its frozen objects (a caller that froze its own,
    as a server does after start-up, keeps them frozen: the check then freezes nothing and unfreezes nothing).
    Whether the collector is enabled (gc.disable) is never touched."""
    global _gc_depth, _gc_saved
    with _GC_LOCK:
        if _gc_depth == 0:
            freeze = gc.get_freeze_count() == 0
            _gc_saved = (gc.get_threshold(), freeze)
            if freeze:
                gc.freeze()
            gc.set_threshold(50_000, 20, 100)
        _gc_depth += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_saved is not None:
                threshold, froze = _gc_saved
                _gc_saved = None
                gc.set_threshold(*threshold)
                if froze:
                    gc.unfreeze()


def _by_chart(paths: Sequence[str]) -> list[list[str]]:
    """The paths in order, those inside one Helm chart together (pre-commit names every changed file of a
    chart: the chart is rendered once, with the values files among them, not once per file)."""
    from configurator.lint.render import chart_root

    groups: dict[object, list[str]] = {}
    for raw in paths:
        chart = chart_root(Path(raw)) if raw != "-" and Path(raw).exists() else None
        groups.setdefault(chart.resolve() if chart is not None else (raw, len(groups)), []).append(raw)
    return list(groups.values())


def _pairs(formats: Sequence[str], outputs: Sequence[str]) -> list[tuple[str, str | None]]:
    """`--format F --output PATH` pairs, in order. One format may go without an output (standard output);
    `--output -` names standard output explicitly."""
    formats = list(formats) or ["text"]
    outputs = list(outputs)
    if len(outputs) == len(formats):
        pairs = [(f, None if o == "-" else o) for f, o in zip(formats, outputs, strict=True)]
    elif len(formats) == 1 and not outputs:
        pairs = [(formats[0], None)]
    elif not formats[1:] and len(outputs) > 1:
        raise InputError(f"{len(outputs)} --output paths but one --format: give a --format for each --output")
    else:
        raise InputError(f"{len(formats)} --format and {len(outputs)} --output: give them in pairs "
                         "(--format sarif --output a.sarif --format junit --output b.xml; --output - for "
                         "standard output)")
    if sum(1 for _, o in pairs if o is None) > 1:
        raise InputError("only one --format can go to standard output: give the others an --output")
    paths = [o for _, o in pairs if o is not None]
    if len(set(paths)) != len(paths):
        raise InputError("two --format share one --output path")
    return pairs


@click.command("check", cls=_CheckCommand)
@click.argument("paths", nargs=-1, required=True)
@click.option("--gpu", default=None, shell_complete=complete_gpu,
              help="GPU assumed when a manifest does not say (name, alias or label value).")
@click.option("--model-config", "model_config", multiple=True, type=click.Path(file_okay=False),
              metavar="NAME=PATH|FOLDER",
              help="Folder of local config.json files for models that are not built in, or NAME=PATH: the "
                   "config.json, model folder or catalog id for a served name or container path (`/models/llama="
                   "./llama/config.json`; added to `models:` of the config file). Repeatable.")
@click.option("--workload", default=None, help="Workload whose target concurrency must fit (name or file).")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default=None,
              help=f"vLLM release assumed when an image tag does not name one ({release_range()}).")
@click.option("--config", "config_path", default=None,
              help="Config file (default: the nearest .vllm-configurator.yaml or .yml from the first path up).")
@click.option("--format", "formats", type=click.Choice(FORMAT_NAMES), multiple=True,
              help="text (default), json, sarif, github or junit; repeat with --output to write several.")
@click.option("-o", "--output", "outputs", multiple=True,
              help="Write the report of the matching --format to FILE ('-': standard output).")
@click.option("--force", is_flag=True, help="Replace existing --output files.")
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
@click.option("--values", "values", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Values file for the Helm charts among PATHS (repeatable; default: the charts' own).")
@click.option("--force-exclude", is_flag=True,
              help="Apply the config's ignorePaths to PATHS named on the command line too (the pre-commit hook "
                   "passes it); without it a named file or folder is always read.")
def check_cmd(paths, gpu, model_config, workload, vllm_version, config_path, formats, outputs, force,
              strict, values, force_exclude) -> None:
    """Lint Kubernetes manifests, Helm output (`helm template ... | vllm-configurator check -`) and
    production-stack values against vLLM's memory budget and flags.

    PATHS are files, folders (searched for *.yaml, *.yml, *.json) or `-` for standard input; a folder
    with a Chart.yaml is rendered with `helm template`, one with a kustomization.yaml with `kubectl
    kustomize`, when those are on PATH.
    Several reports in one run: `--format sarif --output a.sarif --format junit --output b.xml`.
    Exit 0 when clean or warnings only, 1 with an error finding (or a warning under --strict), 2 for
    usage errors.
    """
    from configurator.lint.config import settings_for
    from configurator.lint.engine import Options, evaluate

    pairs = _pairs(formats, outputs)
    settings = settings_for(list(paths), config_path)
    mapped = dict(m.split("=", 1) for m in model_config if "=" in m)  # NAME=PATH: into `models:`, over the file's
    if mapped:
        settings.config = settings.config.model_copy(update={"models": {**settings.config.models, **mapped}})
    model_config = tuple(m for m in model_config if "=" not in m)
    cfg = settings.config
    for name in (gpu, settings.default_gpu(), *((cfg.gpu or {}).values() if isinstance(cfg.gpu, dict) else ())):
        if name:
            _known_gpu(name)
    with _fewer_collections():
        docs, problems = _load(paths, settings, tuple(values), force_exclude)
        opts = Options(gpu=gpu, workload=workload or cfg.workload, vllm_version=vllm_version or cfg.vllm_version,
                       model_config_dirs=tuple(model_config), settings=settings)
        report = evaluate(docs, problems, opts)
    inputs = (*paths, *values, *(x for x in (settings.source, opts.workload) if x and Path(str(x)).is_file()))
    write_reports(report, pairs, strict or cfg.strict, force=force, inputs=inputs)


def options_from_config(config_path: str | None, gpu: str | None, targets: Sequence[str] = ()):
    """(Options, LintConfig) from --config (or the nearest config file above `targets` / the current folder)
    and --gpu, for the commands that evaluate like `check` (webhook, review, audit)."""
    from configurator.lint.config import settings_for
    from configurator.lint.engine import Options

    settings = settings_for(list(targets), config_path)
    cfg = settings.config
    return Options(gpu=gpu, workload=cfg.workload, vllm_version=cfg.vllm_version, settings=settings), cfg


def _known_gpu(name: str) -> None:
    from configurator.hardware.catalog import find_gpu

    find_gpu(name)  # NotFoundError (exit 2) with the nearest names


def write_reports(report, pairs: Sequence[tuple[str, str | None]], strict: bool, *, force: bool = False,
                  inputs: tuple[str, ...] = ()) -> None:
    """Render a CheckReport in each (format, path) pair (None: stdout), then exit as `check` does. Files are
    written with safe_io.write_output: never over an existing file without --force, never onto an input."""
    from configurator.lint.load import EXTENSIONS
    from configurator.report.check_formats import FORMATS
    from configurator.safe_io import write_output

    for fmt, path in pairs:
        if path is None:
            FORMATS[fmt](report, sys.stdout)
            continue
        buf = io.StringIO()
        FORMATS[fmt](report, buf)
        write_output(path, buf.getvalue(), force=force, inputs=inputs, folder_reads=EXTENSIONS)
    worst = report.worst()
    failed = worst == "error" or (worst == "warning" and strict)
    sys.exit(int(ExitCode.FAIL if failed else ExitCode.OK))


def finish(report, fmt: str, output: str | None, strict: bool, *, force: bool = False) -> None:
    """Render one report (to `output` or stdout) and exit as `check` does (kept for `audit`)."""
    write_reports(report, [(fmt, output)], strict, force=force)
