"""vllm-project/production-stack Helm values: one server per servingEngineSpec.modelSpec[] entry.

Keys from the chart's values.yaml / deployment-vllm-multi.yaml template: modelURL, repository, tag,
requestGPU, requestGPUType, shmSize, nodeSelectorTerms, vllmConfig.{maxModelLen, ...,
extraArgs}. /dev/shm is mounted only when vllmConfig has the tensorParallelSize key
(production-stack#276).
"""

from __future__ import annotations

from configurator.lint.extract import (
    MAX_GPUS,
    Inputs,
    Server,
    Token,
    annotations,
    apply_tokens,
    flag_value_problem,
    set_flag,
)
from configurator.lint.formats import register
from configurator.lint.shape import Node
from configurator.vllm.flags import BY_DEST

KEYMAP = {"maxModelLen": "max_model_len", "gpuMemoryUtilization": "gpu_memory_utilization",
          "tensorParallelSize": "tensor_parallel_size", "maxNumSeqs": "max_num_seqs", "dtype": "dtype",
          "enablePrefixCaching": "enable_prefix_caching", "enableChunkedPrefill": "enable_chunked_prefill"}


def recognise(obj: Node) -> bool:
    return obj.mapping("servingEngineSpec") is not None


def _server(obj: Node, spec: Node) -> Server:
    i = spec.path[-1]
    s = Server(file=obj.doc.file, kind="production-stack modelSpec", namespace=None,
               name=spec.text("name", max_chars=253) or str(i), container="vllm", loc=spec.loc(),
               object_loc=spec.loc(),
               image=f"{spec.text('repository') or 'vllm/vllm-openai'}:{spec.text('tag') or 'latest'}",
               annotations=annotations(spec))
    model = spec.str("modelURL")
    if model:
        problem = flag_value_problem(BY_DEST["model"], model)
        if problem:
            s.notes.append(problem)
        else:
            s.flags["model"] = model
            s.flag_locs["model"] = spec.loc("modelURL")
    vc = spec.mapping("vllmConfig")
    if vc is not None:
        for key, dest in KEYMAP.items():
            set_flag(s, vc.at(key), dest)
        # rendered after the vllmConfig flags: duplicates are last-wins
        extra = [t for t in vc.items("extraArgs") if t.text() is not None]
        apply_tokens(s, [Token(t.text() or "", t.loc()) for t in extra])
    if spec.at("requestGPU").value is not None:
        s.gpu_count = spec.int("requestGPU", hi=MAX_GPUS)
        s.gpu_resource = spec.str("requestGPUType", max_chars=253) or "nvidia.com/gpu"
        s.gpu_loc = spec.loc("requestGPU")
    if vc is not None and vc.has("tensorParallelSize"):
        s.shm_bytes = spec.quantity("shmSize") if spec.has("shmSize") else 20 << 30
        s.shm_bytes = s.shm_bytes or 0
        s.shm_loc = spec.loc("shmSize") if spec.has("shmSize") else spec.loc("vllmConfig")
    labels: dict[str, list[str]] = {}
    for term in spec.mappings("nodeSelectorTerms"):
        for expr in term.mappings("matchExpressions"):
            key = expr.str("key")
            if key is not None and expr.str("operator") == "In":
                labels.setdefault(key, []).extend(t for t in (x.text() for x in expr.items("values")) if t)
    s.gpu_labels = labels
    s.gpu_labels_loc = spec.loc("nodeSelectorTerms") if spec.at("nodeSelectorTerms").value else None
    return s


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    return [_server(obj, spec) for spec in obj.mappings("servingEngineSpec", "modelSpec")]


register("production-stack", recognise, extract, order=10)
