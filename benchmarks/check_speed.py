"""Throughput of `check` on 2,000 generated manifests, next to yamllint on the same files in the same run,
and the cold start of `check` on one file next to `python -c pass`.

Usage: python benchmarks/check_speed.py [--files 2000]
Needs yamllint (pip install yamllint). Each timing is one fresh process over the whole folder.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import median_process, tool_command

MODELS = ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "mistralai/Mistral-7B-Instruct-v0.3",
          "openai/gpt-oss-20b", "Qwen/Qwen3.6-27B-FP8", "google/gemma-2-9b-it", "meta-llama/Llama-3.3-70B-Instruct"]
GPUS = ["NVIDIA-L4", "NVIDIA-L40S", "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"]


def manifest(i: int) -> str:
    model, gpu = MODELS[i % len(MODELS)], GPUS[(i // len(MODELS)) % len(GPUS)]
    tp = 1 if i % 3 else 2
    length = [4096, 8192, 16384, 32768][i % 4]
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-{i}
  namespace: team-{i % 7}
  labels: {{app: vllm-{i}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: vllm-{i}}}
  template:
    metadata:
      labels: {{app: vllm-{i}}}
    spec:
      nodeSelector:
        nvidia.com/gpu.product: {gpu}
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.{20 + i % 14}.0
          args:
            - vllm
            - serve
            - {model}
            - --max-model-len
            - "{length}"
            - --tensor-parallel-size
            - "{tp}"
          ports:
            - containerPort: 8000
          resources:
            limits:
              nvidia.com/gpu: {tp}
          volumeMounts:
            - {{name: shm, mountPath: /dev/shm}}
      volumes:
        - name: shm
          emptyDir: {{medium: Memory, sizeLimit: 8Gi}}
---
apiVersion: v1
kind: Service
metadata:
  name: vllm-{i}
spec:
  selector: {{app: vllm-{i}}}
  ports:
    - port: 80
      targetPort: 8000
"""


def _time(cmd: list[str], runs: int = 1) -> float:
    return median_process(cmd, runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    a = ap.parse_args()
    tool = tool_command()
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for i in range(a.files):
            (folder / f"m{i:05d}.yaml").write_text(manifest(i))
        check = _time([*tool, "check", str(folder), "--format", "json"])
        yl = shutil.which("yamllint")
        ylint = _time([yl or "yamllint", "-d", "relaxed", str(folder)]) if yl else float("nan")
        cold = _time([*tool, "check", str(folder / "m00000.yaml")], runs=5)
        floor = _time([sys.executable, "-c", "pass"], runs=5)
    print(f"{a.files} manifests ({a.files} Deployments + {a.files} Services):")
    print(f"  vllm-configurator check: {check:6.2f} s  ({a.files / check:6.0f} files/s)")
    print(f"  yamllint (relaxed):      {ylint:6.2f} s  ({a.files / ylint:6.0f} files/s)  -> check is "
          f"{ylint / check:.1f}x yamllint's speed")
    print(f"cold start, check on one file: {cold * 1000:.0f} ms (python -c pass: {floor * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
