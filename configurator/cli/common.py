"""Option handling shared by the commands (release from an image tag, calibration file, memory used)."""

from __future__ import annotations

import click


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

    return parse_size(text, what="--gpu-memory-used") if text else 0
