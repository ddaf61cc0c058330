"""`vllm-configurator check PATH...`: lint manifests and Helm output against the GPU memory budget."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from configurator.errors import ExitCode, InputError

CONFIG_FILE = ".vllm-configurator.yaml"


def _config(path: str | None):
    import yaml
    from pydantic import ValidationError

    from configurator.lint.engine import LintConfig

    p = Path(path) if path else Path(CONFIG_FILE)
    if not p.exists():
        if path:
            raise InputError(f"{path}: no such config file")
        return LintConfig()
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        return LintConfig.model_validate(data)
    except (yaml.YAMLError, OSError):
        raise InputError(f"{p}: config file is not valid YAML") from None
    except ValidationError as e:
        first = e.errors()[0]
        raise InputError(f"{p}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None


@click.command("check")
@click.argument("paths", nargs=-1, required=True)
@click.option("--gpu", default=None, help="GPU assumed when a manifest does not say (name, alias or label value).")
@click.option("--model-config", "model_config", multiple=True, type=click.Path(file_okay=False),
              help="Folder of local config.json files for models that are not built in (repeatable).")
@click.option("--workload", default=None, help="Workload whose target concurrency must fit (name or file).")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default=None,
              help="vLLM release assumed when an image tag does not name one.")
@click.option("--config", "config_path", default=None,
              help=f"Config file (default: {CONFIG_FILE} in the current folder, if present).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif", "github"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="Write the report to FILE.")
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
@click.option("--values", "values", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Values file for the Helm charts among PATHS (repeatable; default: the charts' own).")
def check_cmd(paths, gpu, model_config, workload, vllm_version, config_path, fmt, output, strict, values) -> None:
    """Lint Kubernetes manifests, Helm output (`helm template ... | vllm-configurator check -`) and
    production-stack values against vLLM's memory budget and flags.

    PATHS are files, folders (searched for *.yaml, *.yml, *.json) or `-` for standard input; a folder
    with a Chart.yaml is rendered with `helm template`, one with a kustomization.yaml with `kubectl
    kustomize`, when those are on PATH.
    Exit 0 when clean or warnings only, 1 with an error finding (or a warning under --strict), 2 for
    usage errors.
    """
    from configurator.lint.engine import Options, evaluate
    from configurator.lint.render import load_paths

    cfg = _config(config_path)
    stdin = None
    if "-" in paths:
        if sys.stdin.isatty():
            raise InputError("reading manifests from standard input, but it is a terminal: pipe them in")
        from configurator.lint.load import MAX_FILE_BYTES
        from configurator.safe_io import read_stdin

        stdin = read_stdin(cap=MAX_FILE_BYTES, what="standard input")  # bounded: /dev/zero stops at the cap
    try:
        docs, problems = load_paths(list(paths), stdin, values=tuple(values))
    except FileNotFoundError as e:
        raise InputError(f"{e.args[0]}: no such file or folder") from None
    opts = Options(gpu=gpu or cfg.gpu, workload=workload or cfg.workload,
                   vllm_version=vllm_version or cfg.vllm_version,
                   model_config_dirs=tuple(model_config) + tuple(cfg.model_config_dirs), severities=dict(cfg.rules))
    finish(evaluate(docs, problems, opts), fmt, output, strict or cfg.strict)


def finish(report, fmt: str, output: str | None, strict: bool) -> None:
    """Render a CheckReport (to --output or stdout) and exit as `check` does (shared with `audit`)."""
    from configurator.report.check_formats import FORMATS

    if output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                FORMATS[fmt](report, f)
        except OSError as e:
            raise InputError(f"{output}: cannot write ({e.strerror})") from None
    else:
        FORMATS[fmt](report, sys.stdout)
    worst = report.worst()
    failed = worst == "error" or (worst == "warning" and strict)
    sys.exit(int(ExitCode.FAIL if failed else ExitCode.OK))
