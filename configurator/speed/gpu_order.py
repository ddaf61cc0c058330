"""Larger GPUs in the order people try them: the same family's larger part, then by fit, speed and generation."""

from __future__ import annotations

import re

from configurator.hardware.catalog import GPU, list_gpus
from configurator.speed.hardware import gpu_speed
from configurator.units import GiB


def capability(gpu: GPU) -> tuple[int, ...]:
    """A GPU's compute capability as numbers (8.0 -> (8, 0)); () when the catalog does not say."""
    try:
        return tuple(int(x) for x in gpu.compute_capability.split("."))
    except ValueError:
        return ()


def family(name: str) -> str:
    """A GPU's family: its name's leading model token (a100-40gb, a100-80gb: a100; h100-pcie: h100)."""
    m = re.match(r"[a-z]+-?\d+", name)
    return m.group(0) if m else name


def larger_gpu_order(gpu: GPU) -> list[GPU]:
    """Larger GPUs of the same vendor and class (data-centre, workstation, consumer / desktop): the same
    family's larger parts first (a100-40gb: a100-80gb), then the others by fit (the least memory that is
    larger, in 8 GiB steps), then by speed (memory bandwidth, profiles/gpu_speed.yaml) and generation
    (compute capability); a GPU known only by its memory (no class) is compared with every class."""
    fam = family(gpu.name)

    def order(g: GPU) -> tuple:
        s = gpu_speed(g.name)
        return (family(g.name) != fam, round(g.total_bytes / (8 * GiB)), -(s.hbm_gbs if s else 0),
                tuple(-x for x in capability(g)), g.total_bytes)

    return sorted((g for g in list_gpus() if g.total_bytes > gpu.total_bytes and g.vendor == gpu.vendor
                   and (not gpu.gpu_class or g.gpu_class == gpu.gpu_class)), key=order)
