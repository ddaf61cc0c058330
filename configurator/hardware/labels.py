"""Which GPU a pod lands on, from the node labels it selects (nodeSelector / required affinity).

Sources of the label keys and values: data/notes/kubernetes-facts.md section 4 (GPU feature
discovery, GKE, EKS / Karpenter / EKS Auto Mode, AKS, AMD's node labeller). Instance types are
mapped from the providers' published instance tables. With several values (`In [a, b]`) the
smallest GPU is taken: the pod may land on any of them.
"""

from __future__ import annotations

import re

from configurator.errors import ConfiguratorError
from configurator.hardware.catalog import GPU, custom_gpu, find_gpu
from configurator.units import MiB

# node.kubernetes.io/instance-type prefixes -> catalog GPU (AWS EC2, GCP machine types, Azure VM sizes)
INSTANCE_TYPES: tuple[tuple[str, str], ...] = (
    (r"^p4d\.", "a100-40gb"), (r"^p4de\.", "a100-80gb"), (r"^p5\.", "h100-80gb"), (r"^p5e\.", "h200"),
    (r"^p5en\.", "h200"), (r"^p6-b200\.", "b200"), (r"^g5\.", "a10g"), (r"^g6\.", "l4"), (r"^g6e\.", "l40s"),
    (r"^g4dn\.", "t4"), (r"^p3dn\.", "v100-32gb"), (r"^p3\.", "v100-16gb"), (r"^g7e\.", "rtx-pro-6000"),
    (r"^a2-highgpu-", "a100-40gb"), (r"^a2-megagpu-", "a100-40gb"), (r"^a2-ultragpu-", "a100-80gb"),
    (r"^a3-(high|mega|edge)gpu-", "h100-80gb"), (r"^a3-ultragpu-", "h200"), (r"^a4-highgpu-", "b200"),
    (r"^g2-standard-", "l4"),
    (r"^standard_nc\d+ads_a100_v4$", "a100-80gb"), (r"^standard_nd96asr_v4$", "a100-40gb"),
    (r"^standard_nd96amsr_a100_v4$", "a100-80gb"), (r"^standard_nd96isr_h100_v5$", "h100-80gb"),
    (r"^standard_nc\d+ads_h100_v5$", "h100-nvl"), (r"^standard_nc80adis_h100_v5$", "h100-nvl"),
    (r"^standard_nd96isr_h200_v5$", "h200"), (r"^standard_nc\d+as_t4_v3$", "t4"),
    (r"^standard_nv\d+ads_a10_v5$", "a10"),
)
NAME_KEYS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name",
             "eks.amazonaws.com/instance-gpu-name", "karpenter.azure.com/sku-gpu-name", "gpu.nvidia.com/model",
             "amd.com/gpu.product-name", "vllm-configurator.io/gpu")
INSTANCE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
MEMORY_KEYS = ("nvidia.com/gpu.memory",)  # MiB, as nvidia-smi shows it
# CUDA keeps back part of the nvidia-smi total: the median gap over the catalog's observed pairs
SMI_TO_CUDA_MARGIN_MIB = 506


def _one(key: str, value: str) -> GPU | None:
    v = value.strip()
    if key in NAME_KEYS:
        cand = re.sub(r"-SHARED$", "", v)
        for c in (cand, cand.replace("_", "-"), cand.removeprefix("NVIDIA-").removeprefix("nvidia-")):
            try:
                return find_gpu(c)
            except ConfiguratorError:
                continue
        return None
    if key in INSTANCE_KEYS:
        low = v.lower()
        for pattern, name in INSTANCE_TYPES:
            if re.search(pattern, low):
                return find_gpu(name)
        return None
    if key in MEMORY_KEYS and v.isdigit():
        return custom_gpu(f"{(int(v) - SMI_TO_CUDA_MARGIN_MIB) * MiB}B")
    return None


# Node labels and resources of accelerators that are not GPUs the memory model knows (TPU, Gaudi, Trainium /
# Inferentia): a pod that selects them runs vLLM's TPU / HPU / Neuron backends, never judged as an NVIDIA GPU.
# Keys: GKE TPU node labels (cloud.google.com/gke-tpu-accelerator), the Habana and AWS Neuron device plugins.
OTHER_ACCELERATOR_LABELS = ("cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-tpu-topology")
OTHER_ACCELERATOR_RESOURCES = ("google.com/tpu", "habana.ai/gaudi", "aws.amazon.com/neuron",
                               "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice")


def unknown_gpu_label(labels: dict[str, list[str]]) -> str | None:
    """The GPU a node label names that the catalog lacks (`nvidia.com/gpu.product=NVIDIA-A16` -> 'NVIDIA-A16'),
    or an instance type that names no catalog GPU; None when a label names a catalog GPU or none names a GPU."""
    if gpu_from_labels(labels)[0] is not None:
        return None
    for key in (*NAME_KEYS, *INSTANCE_KEYS):
        for v in labels.get(key, []):
            if v.strip():
                return v.strip() if key in NAME_KEYS else f"{v.strip()} (instance type)"
    return None


def _allowed(labels: dict[str, list[str]]) -> tuple[str, list[GPU]]:
    """(the label key that names catalog GPUs, every GPU its values allow, smallest first): the first key that
    names any, names before instance types before memory; ("", []) when none does."""
    for keys in (NAME_KEYS, INSTANCE_KEYS, MEMORY_KEYS):
        for key in keys:
            found = {g.name: g for g in (_one(key, v) for v in labels.get(key, [])) if g is not None}
            if found:
                return key, sorted(found.values(), key=lambda x: x.total_bytes)
    return "", []


def gpus_from_labels(labels: dict[str, list[str]]) -> list[GPU]:
    """Every catalog GPU the selected labels allow (`In [l4, a100-80gb]`, SkyPilot `{L4, A100-80GB}`), smallest
    first, read from the same label as gpu_from_labels."""
    return _allowed(labels)[1]


def gpu_from_labels(labels: dict[str, list[str]]) -> tuple[GPU | None, str]:
    """(GPU, the label that said so); the smallest when several values are allowed."""
    key, found = _allowed(labels)
    if not found:
        return None, ""
    return found[0], f"{key}={labels[key][0] if len(labels[key]) == 1 else labels[key]}"
