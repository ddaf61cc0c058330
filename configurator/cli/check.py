"""`vllm-configurator check PATH...`: lint manifests and Helm output against the GPU memory budget."""

from __future__ import annotations

import dataclasses
import io
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from configurator.cli.common import complete_gpu, release_range
from configurator.errors import ExitCode, InputError
from configurator.lint.run import _fewer_collections, options_from_config  # noqa: F401 (their old home)

FORMAT_NAMES = ("text", "json", "sarif", "github", "junit", "html")
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
              help="text (default), json, sarif, github, junit or html (one self-contained page); repeat with "
                   "--output to write several.")
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
    from configurator.lint.run import run

    _light_exit()
    pairs = _pairs(formats, outputs)
    settings = settings_for(list(paths), config_path)
    mapped = dict(m.split("=", 1) for m in model_config if "=" in m)  # NAME=PATH: into `models:`, over the file's
    if mapped:
        settings.config = dataclasses.replace(settings.config, models={**settings.config.models, **mapped})
    report = run(paths, settings, gpu=gpu, workload=workload, vllm_version=vllm_version,
                 model_config_dirs=tuple(m for m in model_config if "=" not in m), values=values,
                 force_exclude=force_exclude)
    workload_file = workload or settings.config.workload  # the output must not overwrite any input
    inputs = (*paths, *values, *(x for x in (settings.source, workload_file) if x and Path(str(x)).is_file()))
    write_reports(report, pairs, strict or settings.config.strict, force=force, inputs=inputs)


_EXIT_FREEZE: list[bool] = []


def _light_exit() -> None:
    """At exit the interpreter's last collection scans every object still alive (the modules, the report, the
    caches: 0.03 s of a 2,000-manifest check's 1.3 s CPU); frozen first (an atexit hook), they are not scanned.
    Nothing is lost: the objects are freed as before, and finalizers of objects alive at exit are never promised
    (Python's data model, object.__del__). Registered once per process."""
    import atexit
    import gc

    if not _EXIT_FREEZE:
        _EXIT_FREEZE.append(True)
        atexit.register(gc.freeze)


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
