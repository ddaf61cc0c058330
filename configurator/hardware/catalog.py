"""The GPU catalog (profiles/gpus/*.yaml): lookup by name, alias, product or node-label value.

MIG slices are GPUs of their own size: `a100-80gb:3g.40gb`, `NVIDIA-A100-SXM4-80GB-MIG-3g.40gb`
or the MIG resource name `nvidia.com/mig-3g.40gb` with a parent.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from configurator.errors import InputError, NotFoundError
from configurator.resources import data_path, load_yaml
from configurator.units import MiB, parse_size
from configurator.vllm.args import release_key as _release_order


@dataclass(frozen=True)
class GPU:
    """One GPU (or MIG slice) as vLLM sees it."""

    name: str
    display_name: str
    vendor: str
    total_bytes: int  # CUDA-visible total (cudaMemGetInfo), what vLLM multiplies by utilization
    total_source: str
    compute_capability: str = ""
    fp8: bool = False
    fp4: bool = False
    fp8_kv: str = "native"
    product_name: str = ""  # as vLLM's get_device_name would report it (used for default rules)
    mig_profile: str | None = None
    aliases: tuple[str, ...] = ()
    gfd_products: tuple[str, ...] = ()  # nvidia.com/gpu.product (AMD: amd.com/gpu.product-name) values
    gpu_class: str = ""  # "datacenter", "workstation" or "desktop" (consumer cards, desktop systems)
    # an integrated GPU sharing the host's memory (torch's device property is_integrated): vLLM then reads free
    # memory from psutil, so host allocations count in its non-torch figure (vllm/utils/mem_utils.py, 0.25.0)
    integrated: bool = False

    @property
    def sm(self) -> int:
        """Compute capability as an integer (9.0 -> 90); 0 when unknown or not NVIDIA."""
        m = re.fullmatch(r"(\d+)\.(\d+)", self.compute_capability or "")
        return int(m.group(1)) * 10 + int(m.group(2)) if m else 0


def _norm(s: str) -> str:
    return re.sub(r"[\s_]+", "-", s.strip().lower())


@lru_cache(maxsize=1)
def _entries() -> tuple[dict, ...]:
    folder = data_path("profiles", "gpus")
    out = []
    for p in sorted(folder.glob("*.yaml")):
        d = load_yaml("profiles", "gpus", p.name)  # the prebuilt index when it is current (resources.py)
        if isinstance(d, dict) and d.get("name"):
            out.append(d)
    return tuple(out)


@lru_cache(maxsize=1)
def _index() -> dict[str, dict]:
    idx: dict[str, dict] = {}
    for d in _entries():
        keys = [d["name"], *d.get("aliases", []), *d.get("product_names", []),
                *d.get("gfd_products", []), *d.get("gke_accelerators", [])]
        for k in keys:
            idx.setdefault(_norm(str(k)), d)
    return idx


def list_gpus() -> list[GPU]:
    return [_gpu(d) for d in _entries()]


def _gpu(d: dict, mig: str | None = None) -> GPU:
    total = int(d["cuda_total_bytes"])
    source = str(d.get("cuda_total_source", ""))
    name = d["name"]
    if mig:
        slices = {_norm(k): (k, v) for k, v in (d.get("mig") or {}).items()}
        if _norm(mig) not in slices:
            raise NotFoundError(f"MIG profile of {name}", mig, sorted(k for k, _ in slices.values()))
        key, info = slices[_norm(mig)]
        if info.get("cuda_total_mib") or info.get("smi_total_mib"):
            mib = int(info.get("cuda_total_mib") or info["smi_total_mib"])
            kind = "CUDA" if info.get("cuda_total_mib") else "nvidia-smi"
        else:
            # only the nominal size is published: MIG 'N gb' slices show about N x 1,000 MiB
            # (A100 3g.40gb: 40,192 MiB; 1g.10gb: 9,984 MiB)
            mib = int(info["nominal_gb"]) * 1000
            kind = "nominal, approximate"
        total = mib * MiB
        source = f"MIG slice {key}: {mib} MiB ({kind} total)"
        name = f"{name}:{key}"
        mig = key
    products = d.get("product_names") or [d.get("display_name", name)]
    return GPU(name=name, display_name=d.get("display_name", name) + (f" MIG {mig}" if mig else ""),
               vendor=d.get("vendor", "nvidia"), total_bytes=total, total_source=source,
               compute_capability=str(d.get("compute_capability", "")), fp8=bool(d.get("fp8")),
               fp4=bool(d.get("fp4")), fp8_kv=str(d.get("fp8_kv", "native")),
               product_name=str(products[0]), mig_profile=mig, aliases=tuple(d.get("aliases", [])),
               gfd_products=tuple(str(p) for p in d.get("gfd_products", [])),
               gpu_class=str(d.get("gpu_class", "")), integrated=bool(d.get("integrated")))


_MIG_RE = re.compile(r"^(?P<gpu>.+?)(?::|-mig-|/mig-)(?P<mig>\d+g\.\d+gb(?:\+me)?)$", re.I)


def find_gpu(name: str) -> GPU:
    """Look up a GPU by canonical name, alias, nvidia-smi name, GFD product or GKE accelerator."""
    key = _norm(name)
    idx = _index()
    if key in idx:
        return _gpu(idx[key])
    m = _MIG_RE.match(key)
    if m and _norm(m.group("gpu")) in idx:
        return _gpu(idx[_norm(m.group("gpu"))], m.group("mig"))
    if re.fullmatch(r"(nvidia\.com/)?mig-\d+g\.\d+gb", key):
        raise InputError(f"MIG slice '{name}' needs its parent GPU, e.g. a100-80gb:{key.split('mig-')[-1]}")
    names = sorted({d["name"] for d in _entries()} | {a for d in _entries() for a in d.get("aliases", [])})
    near = difflib.get_close_matches(key, names, n=3, cutoff=0.5)
    raise NotFoundError("GPU", name, near, hint="`vllm-configurator gpus` lists them; or pass --gpu-memory")


def alias_note(name: str) -> str | None:
    """When a bare alias names one of several catalog GPUs of a family ('a100' is the 80 GB part,
    while GKE's nvidia-tesla-a100 is the 40 GB one), say which one it picked; else None."""
    key = _norm(name)
    idx = _index()
    d = idx.get(key)
    if d is None or key == _norm(d["name"]):
        return None
    family = sorted(e["name"] for e in _entries() if _norm(e["name"]).startswith(key + "-"))
    if len(family) < 2:
        return None
    others = ", ".join(f for f in family if f != d["name"])
    return (f"'{name}' could mean {', '.join(family)}: using {d['name']} "
            f"({int(d['cuda_total_bytes']) / (1 << 30):.2f} GiB); name {others} to choose that one")


def match_cuda_total(total_bytes: int, tolerance_bytes: int) -> tuple[GPU | None, list[GPU]]:
    """The catalog GPU whose CUDA-visible total is within `tolerance_bytes` of a logged total, and every
    GPU within it: (the one, [it]) when exactly one is; (None, those) when none or several are (MIG
    slices are not matched: their totals are nominal; nor is a GPU whose total is derived, not observed:
    it cannot tell one GPU from another)."""
    near = sorted((g for g in list_gpus() if abs(g.total_bytes - total_bytes) <= tolerance_bytes
                   and not g.total_source.startswith("derived")),
                  key=lambda g: abs(g.total_bytes - total_bytes))
    return (near[0] if len(near) == 1 else None), near


# The lowest compute capability (x10) each vLLM release's PyPI wheel ships CUDA kernels for: (first release,
# lowest SM). A GPU below it fails its first kernel launch with CUDA's "no kernel image is available for
# execution on the device". Measured, not remembered: `pip download vllm==X --no-deps`, then
# `cuobjdump --list-elf` (cuobjdump 13.5.37 from the nvidia-cuda-cuobjdump wheel) on the wheel's vllm/_C.abi3.so
# (0.25+: vllm/_C_stable_libtorch.abi3.so), counting the cubins of each sm_XX:
#   vllm 0.8.0  (vllm-0.8.0-cp38-abi3-manylinux1_x86_64.whl):         sm_52 1, sm_70 24, sm_75 25, sm_80 34, ...
#   vllm 0.9.0  (vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl):         sm_52 1, sm_70 30, sm_75 31, sm_80 49, ...
#   vllm 0.15.0 (vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl):    sm_52 1, sm_70 30, sm_75 43, sm_80 53, ...
#   vllm 0.19.1 (vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl):    sm_52 1, sm_70 28, sm_75 40, sm_80 50, ...
#   vllm 0.20.0 (vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl):    sm_75 39, sm_80 48, sm_86 29, ... (no sm_70;
#               its only PTX is compute_75 / 80 / 90, which cannot be JIT-compiled for 7.0)
#   vllm 0.25.0 (vllm-0.25.0-cp38-abi3-manylinux_2_28_x86_64.whl):    sm_75 53, sm_80 63, ... (no sm_70)
#   vllm 0.33.0 (vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl):    sm_75 62, sm_80 71, ... (no sm_70)
# 0.19.1 is the release just before 0.20.0, so 0.20.0 is the first without Volta (V100, 7.0); Turing (T4, 7.5)
# is still shipped by 0.33.0. docs/gpus.md has the full listings.
WHEEL_MIN_SM: tuple[tuple[str, int], ...] = (("0.0", 70), ("0.20.0", 75))


def wheel_min_sm(version: str) -> int:
    """The lowest compute capability (x10) the release's wheel ships kernels for (WHEEL_MIN_SM)."""
    key = _release_order(version)
    return max(sm for since, sm in WHEEL_MIN_SM if _release_order(since) <= key)


def newest_release_for(gpu: GPU, releases: tuple[str, ...]) -> str | None:
    """The newest of `releases` whose wheel still ships kernels for the GPU, or None."""
    ok = [v for v in releases if gpu.sm >= wheel_min_sm(v)]
    return max(ok, key=_release_order) if ok else None


def no_kernel_image(gpu: GPU, version: str, releases: tuple[str, ...]) -> str | None:
    """CUDA's refusal when the release ships no kernels for the GPU's architecture, else None (also for a GPU
    whose compute capability is unknown, such as --gpu-memory)."""
    need = wheel_min_sm(version)
    if not (0 < gpu.sm < need):
        return None
    newest = newest_release_for(gpu, releases)
    return (f"CUDA error: no kernel image is available for execution on the device (vLLM {version}'s wheels ship "
            f"kernels for compute capability {need // 10}.{need % 10} and above; {gpu.product_name or gpu.display_name}"
            f" is {gpu.compute_capability}"
            + (f"; the newest release that runs it is {newest}, e.g. vllm/vllm-openai:v{newest})" if newest else ")"))


def custom_gpu(memory: str) -> GPU:
    """A GPU known only by its memory (`--gpu-memory 79.18GiB`; a bare number is GiB): taken as
    the CUDA total."""
    total = parse_size(memory, what="--gpu-memory", bare="GiB")
    if total <= 0:
        raise InputError("--gpu-memory must be positive")
    shown = f"{memory} GiB" if re.fullmatch(r"\s*[0-9.]+\s*", str(memory)) else str(memory)
    return GPU(name="custom", display_name=f"GPU with {shown}", vendor="nvidia", total_bytes=total,
               total_source=f"--gpu-memory {memory}", compute_capability="")
