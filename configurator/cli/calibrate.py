"""`vllm-configurator calibrate LOG`: what vLLM measured next to what we predicted; writes a calibration file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from configurator.cli import common
from configurator.errors import ExitCode


def _read_log(path: str) -> tuple[str, str]:
    """The log's text, bounded (an endless stream stops at the cap) and from a regular file only (a FIFO
    or a device is refused at once instead of blocking or filling memory)."""
    from configurator.safe_io import read_file, read_stdin

    if path == "-":
        data = read_stdin(what="the log on standard input")
        return data.decode("utf-8", errors="replace"), "<stdin>"
    return read_file(Path(path), what=path).decode("utf-8", errors="replace"), path


@click.command("calibrate")
@click.argument("log")
@click.option("--model", shell_complete=common.complete_model,
              help="Model of the logged run (when the log shows only a local path).")
@click.option("--gpu", shell_complete=common.complete_gpu,
              help="GPU of the logged run (default: the total memory the log prints).")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory", help="GPU memory as CUDA reports it, e.g. 79.18GiB.")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default=None,
              help=f"vLLM release of the run (default: the version the log prints; {common.release_range()} are "
                   "predicted, older ones read).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), default=None,
              help="Calibration file to write (.yaml or .json); default: <log name>.calibration.yaml.")
@click.option("--out", "out_alias", type=click.Path(dir_okay=False), default=None, hidden=True,
              help="Former name of --output, kept working.")
@click.option("--force", is_flag=True, help="Replace an existing calibration file.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help=common.FORMAT_HELP + ".")
@click.argument("serve_command", nargs=-1, type=click.UNPROCESSED)
def calibrate_cmd(log, model, gpu, gpu_memory, vllm_version, out, out_alias, force, fmt, serve_command) -> None:
    """Read a vLLM start-up log (V0 or V1), compare what vLLM measured with the prediction for the same
    flags, and write a calibration file that `estimate --calibration FILE` uses.

    Flags the log does not show can follow `--` as a `vllm serve` command. Exit 0 on success, 2 for a log
    that cannot be used (empty, truncated, another program's, several start-ups mixed).
    """
    from configurator.calibration import calibrate_from_log, write_calibration
    from configurator.vllm.logparse import parse_log

    out = out or out_alias
    text, source = _read_log(log)
    parsed = parse_log(text)
    extra: dict = {}
    if serve_command:
        from configurator.vllm.flags import parse_serve_args

        extra, _ = parse_serve_args(list(serve_command))
        if model and extra.get("model") not in (None, model):  # as `estimate`: two models is an error naming both
            from configurator.errors import InputError

            raise InputError(f"--model {model} and `vllm serve {extra['model']}` after `--` disagree; give one")
    report = calibrate_from_log(parsed, source=source, model=model or extra.pop("model", None), gpu=gpu,
                                gpu_memory=gpu_memory, vllm_version=vllm_version, flags=extra)
    path = Path(out) if out else Path(Path(source).name if source != "<stdin>" else "vllm").with_suffix(
        ".calibration.yaml")
    write_calibration(report.calibration, path, force=force, inputs=(log,))
    if fmt == "json":
        import json

        click.echo(json.dumps({"calibration_file": str(path), **report.as_dict()}, indent=2))
    else:
        click.echo(report.render_text(str(path)))
    sys.exit(int(ExitCode.OK))
