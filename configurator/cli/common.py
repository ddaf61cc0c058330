"""Option handling shared by the commands (release from an image tag, calibration file, memory used)."""

from __future__ import annotations

import click

MAX_COUNT = 10**12  # the largest token count or concurrency an option takes (a float holds it exactly)


def release(vllm_version: str, image: str | None) -> str:
    """--image wins over --vllm-version; an unknown tag warns and means the newest release."""
    if not image:
        return vllm_version
    from configurator.vllm.versions import version_from_image

    version, warning = version_from_image(image)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return version


def calibration(path: str | None):
    if not path:
        return None
    from configurator.calibration import read_calibration

    return read_calibration(path)


def memory_used(text: str | None) -> int:
    from configurator.units import parse_size

    return parse_size(text, what="--gpu-memory-used", bare="GiB") if text else 0


def model_spec(name: str, model_configs: tuple[str, ...] = (), revision: str | None = None):
    """Resolve --model (through --model-config NAME=PATH, at --revision) and print its warnings, such as a
    derivative's inferred base."""
    from configurator.model.resolve import parse_model_configs, resolve

    r = resolve(name, revision=revision, model_configs=parse_model_configs(model_configs, name))
    for w in r.warnings:
        click.echo(f"warning: {w}", err=True)
    return r.spec


def gpu_note(gpu: str | None) -> None:
    """Say which GPU an ambiguous alias picked (`--gpu a100` -> a100-80gb)."""
    if gpu:
        from configurator.hardware.catalog import alias_note

        note = alias_note(gpu)
        if note:
            click.echo(f"note: {note}", err=True)


def finish(render, code: int) -> None:
    """Render to stdout and exit with the verdict's code; a reader that closed the pipe early
    (`| head -1`) does not change that code."""
    import os
    import sys

    try:
        render()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
    except SystemExit as e:
        # rich's Console.on_broken_pipe points stdout at /dev/null and raises SystemExit(1): that 1
        # was the "does not fit" code printed for a FITS result piped into `head`
        if e.code != 1:
            raise
    sys.exit(int(code))
