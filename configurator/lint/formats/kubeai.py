"""KubeAI `Model` (kubeai.org/v1): one vLLM server when `spec.engine` is VLLM.

Keys from KubeAI's Model API (api/k8s/v1/model_types.go): url (`hf://org/name` for vLLM), engine
(OLlama | VLLM | FasterWhisper | Infinity), args (added to the server's command line), env (a map),
image, resourceProfile (`<profile>:<count>`, e.g. nvidia-gpu-l4:2 = 2 x L4).

The profile's GPU type and per-unit GPU count come from KubeAI's default resource profiles
(charts/kubeai/values.yaml, `resourceProfiles`, commit 00218190): every nvidia-gpu-* profile requests
`nvidia.com/gpu: "1"` per unit, so `nvidia-gpu-h100:2` is 2 GPUs; the GPU is the one the profile is
named after. An installation may redefine a profile; a profile not in the defaults gives no GPU type.
Other engines (Ollama, FasterWhisper, Infinity) are not vLLM and are not read.
KubeAI's vLLM pod (internal/modelcontroller/engine_vllm.go, commit 2f32ef49) runs `--model=<url ref>
--served-model-name=<name>` then `args`, adds `--enable-lora` when the Model has `adapters`, and mounts
a memory-backed /dev/shm without a size limit.
"""

from __future__ import annotations

from configurator.lint.extract import Inputs, Server, apply_tokens
from configurator.lint.formats import register
from configurator.lint.formats._common import model_from_uri, new_server, set_gpu_count, set_gpu_name, set_model, tokens
from configurator.lint.shape import Node

# KubeAI's default profiles (charts/kubeai/values.yaml) -> (catalog GPU, GPUs per unit)
PROFILES = {
    "nvidia-gpu-t4": ("t4", 1), "nvidia-gpu-l4": ("l4", 1), "nvidia-gpu-l40s": ("l40s", 1),
    "nvidia-gpu-h100": ("h100-80gb", 1), "nvidia-gpu-gh200": ("gh200", 1),
    "nvidia-gpu-a100-80gb": ("a100-80gb", 1), "nvidia-gpu-a100-40gb": ("a100-40gb", 1),
    "nvidia-gpu-a16": (None, 1), "nvidia-gpu-rtx4070-8gb": (None, 1), "cpu": (None, 0),
}


def recognise(obj: Node) -> bool:
    return obj.str("kind") == "Model" and (obj.str("apiVersion") or "").startswith("kubeai.org/")


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    spec = obj.mapping("spec")
    if spec is None or (spec.str("engine") or "").upper() != "VLLM":
        return []
    s = new_server(obj, spec, kind="Model", container="server", image=spec.str("image"))
    s.env = {k: v.text() or "" for k, v in spec.entries("env") if v.text() is not None}
    apply_tokens(s, tokens(spec.items("args")))
    if spec.has("adapters"):
        s.unmodelled.append(("--enable-lora", spec.loc("adapters")))
    s.shm_bytes, s.shm_loc = 0, spec.loc()
    url = spec.str("url")
    set_model(s, model_from_uri(url), spec.loc("url"))
    if url and "model" not in s.flags:
        spec.note((*spec.path, "url"), f"{url}: not a Hugging Face model (hf://): the model is not known")
    profile = spec.str("resourceProfile")
    if profile:
        name, _, count = profile.partition(":")
        gpu, per_unit = PROFILES.get(name, (None, None))
        if count.isdigit() and per_unit is not None:
            set_gpu_count(s, int(count) * per_unit, spec.loc("resourceProfile"))
            s.gpu_count_source = f"derived by KubeAI from resourceProfile {profile}"
        set_gpu_name(s, gpu, spec.loc("resourceProfile"))
    return [s]


register("kubeai", recognise, extract, order=50, kinds=("Model",))
