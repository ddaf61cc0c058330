"""The operator and values formats on small manifests: the cases the real corpus does not hold."""

import pytest

from configurator.hardware.labels import gpu_from_labels
from configurator.lint.find import extract_all
from configurator.lint.formats._common import kwargs_tokens
from configurator.lint.load import parse_text
from configurator.lint.shape import Node


def run(text: str):
    docs, problems = parse_text(text, "m.yaml")
    assert problems == []
    return extract_all(docs)


def gpu(s) -> str | None:
    g, _ = gpu_from_labels(s.gpu_labels)
    return g.name if g else None


def test_engine_kwargs_become_a_command_line():
    docs, _ = parse_text("a: {max_model_len: 8192, enable_lora: true, enforce_eager: false, "
                         "speculative_config: {method: ngram}}\n", "k.yaml")
    got = [t.text for t in kwargs_tokens(Node.of(docs[0]).mapping("a"))]
    assert got == ["--max-model-len", "8192", "--enable-lora", "--speculative-config", '{"method": "ngram"}']


RAY_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    template:
      spec:
        containers:
          - name: head
            image: vllm/vllm-openai:v0.10.1
            command: ["sh", "-c", "ray start --head && vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2"]
            resources: {limits: {nvidia.com/gpu: 2}}
"""
RAY_SERVE = """\
apiVersion: ray.io/v1
kind: RayService
metadata: {name: rs}
spec:
  serveConfigV2: |
    applications:
      - name: llms
        import_path: ray.serve.llm:build_openai_app
        args:
          llm_configs:
            - models/qwen.yaml
            - model_loading_config: {model_id: q}
              accelerator_type: A100-80G
              engine_kwargs:
                tensor_parallel_size: 4
                max_model_len: 4096
      - name: custom
        import_path: app.vllm_app:build
  rayClusterConfig:
    workerGroupSpecs:
      - template:
          spec:
            nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
            containers: [{name: w, image: rayproject/ray-llm:2.50.1, resources: {limits: {nvidia.com/gpu: 4}}}]
"""


def test_ray_cluster_container_running_vllm():
    [s], nu = run(RAY_CLUSTER)
    assert (s.flags["model"], s.gpu_count, s.flags["tensor_parallel_size"], nu) == ("Qwen/Qwen3-8B", 2, 2, [])


def test_ray_serve_llm_config_and_what_is_not_understood():
    servers, nu = run(RAY_SERVE)
    [s] = servers
    assert (s.flags["model"], s.gpu_count, gpu(s), s.flags["max_model_len"]) == ("q", 4, "a100-80gb", 4096)
    assert s.flag_locs["max_model_len"].line == 16
    reasons = " ".join(n.reason for n in nu)
    assert "given as a file path" in reasons and "app.vllm_app:build" in reasons


DYNAMO = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: d}
spec:
  services:
    Frontend:
      componentType: frontend
      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0}}
    Prefill:
      componentType: worker
      resources: {requests: {gpu: "2"}}
      extraPodSpec:
        nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
          command: ["python3", "-m", "dynamo.vllm"]
          args: ["--model", "Qwen/Qwen3-8B", "--is-prefill-worker", "--connector", "nixl", "kvbm",
                 "--migration-limit=3", "--tensor-parallel-size", "2"]
"""


def test_dynamo_own_options_are_not_vllm_flags():
    [s], nu = run(DYNAMO)
    assert (s.flags["model"], s.gpu_count, gpu(s), s.flags["tensor_parallel_size"]) == ("Qwen/Qwen3-8B", 2,
                                                                                        "h100-80gb", 2)
    assert s.unknown == [] and s.notes == [] and nu == []


def isvc(model: str) -> str:
    return f"apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {{name: i}}\n" \
           f"spec: {{predictor: {{model: {model}}}}}\n"


@pytest.mark.parametrize(("model", "want"), [
    ("{modelFormat: {name: huggingface}, args: [--model_name=x, --backend=vllm, --max-model-len=4096], "
     "storageUri: 'hf://org/m', resources: {limits: {nvidia.com/gpu: 1}}}", ("org/m", 4096)),
    ("{modelFormat: {name: huggingface}, args: [--model_id=org/a, --backend, auto]}", ("org/a", None)),
    ("{modelFormat: {name: vLLM}, storageUri: 'hf://org/v', args: [--max-model-len, '2048']}", ("org/v", 2048)),
    ("{modelFormat: {name: huggingface}, args: [--model_id=org/a, --backend=huggingface]}", None),
])
def test_kserve_runtimes(model, want):
    servers, _ = run(isvc(model))
    got = [(s.flags.get("model"), s.flags.get("max_model_len")) for s in servers]
    assert got == ([want] if want else [])
    assert all(not s.unknown for s in servers)


def test_kserve_hf_runtime_sets_its_own_options_aside_and_hands_dtype_to_vllm():
    """One option table (configurator.vllm.flags.HF_SERVER): KServe's model-server options are the runtime's, never
    vLLM's unknown flags; --dtype and --trust_remote_code reach vLLM's engine (huggingfaceserver __main__.py)."""
    [s], _ = run(isvc("{modelFormat: {name: huggingface}, args: [--model_id=org/a, --enable_latency_logging, "
                      "--configure_logging, --dtype, float16, --trust_remote_code, --max-model-len, '4096']}"))
    assert (s.flags["model"], s.flags["max_model_len"], s.flags["dtype"]) == ("org/a", 4096, "float16")
    assert s.unknown == [] and s.release_dependent == [] and s.notes == []


LLMISVC = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceServiceConfig
metadata: {name: base}
spec:
  parallelism: {tensor: 2}
  template:
    containers:
      - name: main
        image: ghcr.io/llm-d/llm-d-cuda:v0.4.0
        env: [{name: VLLM_ADDITIONAL_ARGS, value: "--max-model-len 4096 --kv-cache-dtype fp8"}]
---
apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: svc}
spec:
  baseRefs: [{name: base}]
  model: {uri: "hf://Qwen/Qwen3-8B", name: qwen}
  template:
    containers:
      - name: main
        args: ["--max-model-len", "8192"]
        resources: {limits: {nvidia.com/gpu: "2"}}
"""


def test_llminferenceservice_merges_a_base_config_in_the_input():
    [s], nu = run(LLMISVC)
    assert nu == []  # the base config is used, not reported
    assert (s.flags["model"], s.flags["tensor_parallel_size"], s.flags["kv_cache_dtype"]) == ("Qwen/Qwen3-8B", 2, "fp8")
    assert s.flags["max_model_len"] == 8192 and s.flag_locs["max_model_len"].line == 21  # own args last
    assert s.image == "ghcr.io/llm-d/llm-d-cuda:v0.4.0"


@pytest.mark.parametrize(("spec", "want"), [
    ("{engine: VLLM, url: 'hf://o/m', resourceProfile: 'nvidia-gpu-a100-80gb:4'}", ("o/m", 4, "a100-80gb")),
    ("{engine: VLLM, url: 'hf://o/m', resourceProfile: 'my-profile:2'}", ("o/m", None, None)),
    ("{engine: VLLM, url: 's3://bucket/m', resourceProfile: 'nvidia-gpu-l4:1'}", (None, 1, "l4")),
    ("{engine: OLlama, url: 'ollama://m'}", None),
])
def test_kubeai_profiles(spec, want):
    servers, nu = run(f"apiVersion: kubeai.org/v1\nkind: Model\nmetadata: {{name: m}}\nspec: {spec}\n")
    assert [(s.flags.get("model"), s.gpu_count, gpu(s)) for s in servers] == ([want] if want else [])
    assert bool(nu) == (want is not None and want[0] is None)  # a non-HF url is said


KAITO = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  inference_config.yaml: |
    vllm:
      gpu-memory-utilization: 0.85
      max-model-len: 16384
---
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata: {name: w}
resource: {instanceType: Standard_NC48ads_A100_v4}
inference:
  preset: {name: microsoft/Phi-4}
  config: cfg
"""


def test_kaito_config_map_and_instance_type():
    [s], nu = run(KAITO)
    assert (s.flags["model"], s.flags["max_model_len"], s.gpu_count, gpu(s)) == ("microsoft/Phi-4", 16384, 2,
                                                                                 "a100-80gb")
    assert nu == []  # the ConfigMap is read by the Workspace


LLMD = """\
modelArtifacts: {uri: "pvc://models/llama", name: meta-llama/Llama-3.1-8B-Instruct}
accelerator: {type: nvidia}
decode:
  parallelism: {tensor: 2, dataLocal: 2}
  acceleratorTypes: {labelKey: nvidia.com/gpu.product, labelValues: [NVIDIA-L40S]}
  containers:
    - name: vllm
      modelCommand: custom
      command: ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]
      args: ["--tensor-parallel-size", "2", "--max-model-len", "8192"]
prefill: {create: false, containers: [{name: vllm, modelCommand: vllmServe}]}
"""


def test_llm_d_values_gpus_from_parallelism_and_accelerator_types():
    [s], _ = run(LLMD)
    assert (s.flags["model"], s.gpu_count, gpu(s), s.flags["max_model_len"]) == (
        "meta-llama/Llama-3.1-8B-Instruct", 4, "l40s", 8192)


@pytest.mark.parametrize(("text", "want"), [
    ("image: {repository: vllm/vllm-openai, tag: v0.10.0, command: [vllm, serve, o/m]}\n"
     "resources: {limits: {nvidia.com/gpu: 1}}\ngpuModels: [NVIDIA-L4]\n", ("o/m", 1, "l4")),
    ("model: o/m\nmodelParameters: {maxModelLen: 2048}\ninference: {framework: llamacpp, modelServer: {}}\n", None),
])
def test_values_files(text, want):
    servers, _ = run(text)
    assert [(s.flags.get("model"), s.gpu_count, gpu(s)) for s in servers] == ([want] if want else [])


def test_storm_service_roles_name_their_containers():
    text = """\
apiVersion: orchestration.aibrix.ai/v1alpha1
kind: StormService
metadata: {name: s}
spec:
  template:
    spec:
      roles:
        - name: decode
          template: {spec: {containers: [{name: c, image: vllm/vllm-openai:v0.9.2, args: [--model, o/m]}]}}
"""
    [s], _ = run(text)
    assert (s.container, s.flags["model"]) == ("decode/c", "o/m")


@pytest.mark.parametrize(("preset", "sku", "want"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "Standard_NC96ads_A100_v4",
     {"data_parallel_size": 4, "tensor_parallel_size": 1}),  # 16 GB of weights: under half an 80 GB GPU
    ("meta-llama/Llama-3.3-70B-Instruct", "Standard_NC96ads_A100_v4", {"tensor_parallel_size": 4}),
    ("someone/unknown-model", "Standard_NC48ads_A100_v4", {"tensor_parallel_size": 2}),  # unknown: the larger case
    ("meta-llama/Llama-3.1-8B-Instruct", "Standard_NC24ads_A100_v4", {}),
])
def test_kaito_chooses_data_or_tensor_parallelism_as_kaito_does(preset, sku, want):
    [s], _ = run(f"apiVersion: kaito.sh/v1beta1\nkind: Workspace\nmetadata: {{name: w}}\n"
                 f"resource: {{instanceType: {sku}}}\ninference: {{preset: {{name: {preset}}}}}\n")
    assert {k: v for k, v in s.flags.items() if k.endswith("parallel_size")} == want
    assert s.shm_bytes == 0  # KAITO mounts /dev/shm without a limit


def test_kuberay_shm_is_the_ray_containers_memory_limit():
    servers, _ = run(RAY_SERVE.replace("limits: {nvidia.com/gpu: 4}", "limits: {nvidia.com/gpu: 4, memory: 32Gi}"))
    assert [s.shm_bytes for s in servers] == [32 << 30]


def test_ray_job_entrypoint_running_vllm():
    text = """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: j}
spec:
  entrypoint: vllm serve facebook/opt-13b --tensor-parallel-size 2 --distributed-executor-backend ray
  rayClusterSpec:
    workerGroupSpecs:
      - template:
          spec:
            nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}
            containers: [{name: w, image: rayproject/ray:2.43.0, resources: {limits: {nvidia.com/gpu: 2}}}]
"""
    [s], nu = run(text)
    assert (s.flags["model"], s.gpu_count, gpu(s), s.flags["tensor_parallel_size"]) == ("facebook/opt-13b", 2, "l4", 2)
    assert nu == []
    assert s.flag_locs["tensor_parallel_size"].column > s.flag_locs["model"].column  # each token at its column
