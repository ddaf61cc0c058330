"""The linter's one library call: paths and settings in, a CheckReport out (`check`, and whatever else lints
files). Loading, Helm chart grouping and rendering, and the config's ignorePaths all happen here; the
command only parses its options and writes the report."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from configurator.errors import InputError

if TYPE_CHECKING:
    from configurator.lint.config import Settings
    from configurator.lint.engine import CheckReport

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def run(paths: Sequence[str], settings: Settings, *, gpu: str | None = None, workload: str | None = None,
        vllm_version: str | None = None, model_config_dirs: Sequence[str] = (), values: Sequence[str] = (),
        force_exclude: bool = False) -> CheckReport:
    """`check`'s verdict on PATHS (files, folders, `-` for standard input) under `settings`: every path loaded
    (Helm charts rendered once per chart, kustomizations built, the config's ignorePaths applied), every vLLM
    server found and judged. --gpu, --workload and --vllm-version win over the config's. InputError (exit 2)
    for a GPU no one knows, a path that is not there, or a named file that is no manifest."""
    with _fewer_collections():  # the imports below too: a check builds its modules' objects without collections
        from configurator.lint.engine import Options, evaluate

        cfg = settings.config
        for name in (gpu, settings.default_gpu(), *((cfg.gpu or {}).values() if isinstance(cfg.gpu, dict) else ())):
            if name:
                _known_gpu(name)
        docs, problems = _load(paths, settings, tuple(values), force_exclude)
        opts = Options(gpu=gpu, workload=workload or cfg.workload, vllm_version=vllm_version or cfg.vllm_version,
                       model_config_dirs=tuple(model_config_dirs), settings=settings)
        return evaluate(docs, problems, opts)


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


def _named_file_is_not_yaml(path: str, docs: list, problems: list) -> str | None:
    """Why a file named on the command line is not a manifest at all (README.md, a script), or None.
    A `.yaml` / `.yml` / `.json` file is always checked (one that does not parse is a parse-error finding).
    Any other named file must hold a Kubernetes object (`kind` / `apiVersion`) or a vLLM server: prose
    often parses as YAML (`Some *prose*: text` is a mapping), so parsing alone proves nothing."""
    from configurator.lint.find import extract_all

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
CHECK_GC_THRESHOLD = (500_000, 20, 100)  # the collector's thresholds while a check runs (_fewer_collections)
_GC_LOCK = threading.Lock()
_gc_depth = 0
_gc_saved: tuple[tuple[int, ...], bool] | None = None


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run a check with the cyclic garbage collector mostly out of the way: loading builds a dict, a list or a
    tuple per YAML node (positions included), almost none of them cyclic (reference counting frees them), yet
    CPython's default thresholds (700, 10, 10) rescan the growing heap over and over. The objects alive after
    the imports are frozen out of the scans, and the young generation collects every 500,000 allocations
    (CHECK_GC_THRESHOLD): `check` on 2,000 manifests spends 20% less CPU than at the defaults (3.8 s -> 3.0 s,
    measured, at 50,000), and at 500,000 it runs no collection at all (50,000 made 8, 0.05 s of its 1.3 s CPU).
    When it froze the objects itself, it ends by freezing what it allocated too before unfreezing all of them
    (each O(1): the objects move to the oldest generation unscanned), so the caller's first young collection does
    not scan everything the check built at once.

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
            gc.set_threshold(*CHECK_GC_THRESHOLD)
        _gc_depth += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_saved is not None:
                threshold, froze = _gc_saved
                _gc_saved = None
                if froze:
                    gc.freeze()  # the check's own objects too, unscanned (see above)
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
