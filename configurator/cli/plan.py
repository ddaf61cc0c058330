"""`vllm-configurator plan`: the four flags that carry a workload, why, and the command to run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from configurator.errors import ExitCode, InputError

# --emit targets that write a deployment file (YAML), each a pure function of the plan
DEPLOY_EMITS = ("helm", "production-stack", "manifest")


@click.command("plan")
@click.option("--model", required=True, help="Built-in profile, Hugging Face id, or path to config.json.")
@click.option("--gpu", help="GPU name, alias or node-label value (see `vllm-configurator gpus`).")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory", help="GPU memory as CUDA reports it, e.g. 79.18GiB.")
@click.option("--gpus", type=int, default=None, help="GPUs available: also choose tensor / pipeline parallelism.")
@click.option("--gpus-per-node", "gpus_per_node", type=int, default=8, show_default=True,
              help="GPUs in one node: tensor parallelism stays within a node, more GPUs become nodes.")
@click.option("--workload", default="chat", show_default=True,
              help="Built-in workload (chat, rag, long-context, agentic-coding, batch) or a workload file.")
@click.option("--max-context", "--max_context", "max_context", type=int, help="Longest request in tokens.")
@click.option("--prompt-tokens", "--prompt_tokens", "prompt_tokens", type=int, help="Typical prompt length.")
@click.option("--output-tokens", "--output_tokens", "output_tokens", type=int, help="Typical output length.")
@click.option("--concurrency", type=int, help="Requests in flight that must fit without preemption.")
@click.option("--headroom", type=float, default=0.10, show_default=True,
              help="Share of the KV pool kept free at the target load.")
@click.option("--max-gpu-memory-utilization", "max_util", type=float, default=None,
              help="Cap on --gpu-memory-utilization (a GPU shared with other work).")
@click.option("--gpu-memory-used", "--gpu_memory_used", "gpu_memory_used", default=None,
              help="Memory other processes already hold on the device, e.g. 6GiB.")
@click.option("--kv-cache-dtype", "--kv_cache_dtype", "kv_cache_dtype", default=None,
              help="Fix the KV dtype instead of choosing it.")
@click.option("--tensor-parallel-size", "-tp", "tp", type=int, default=None, help="Fix tensor parallelism.")
@click.option("--pipeline-parallel-size", "-pp", "pp", type=int, default=None, help="Fix pipeline parallelism.")
@click.option("--quantization", "-q", default=None, help="Weight quantization to plan with (e.g. fp8).")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default="latest", show_default=True)
@click.option("--image", default=None, help="vLLM container image; its tag picks the release.")
@click.option("--calibration", type=click.Path(dir_okay=False), default=None,
              help="Calibration file from `vllm-configurator calibrate`.")
@click.option("--entry-point", "entry", type=click.Choice(["server", "offline"]), default="server", show_default=True)
@click.option("--emit", type=click.Choice(["serve", "args", *DEPLOY_EMITS]), default=None,
              help="Print only the `vllm serve` line, the container args as a JSON list, values for charts/vllm "
                   "(helm), a production-stack values file, or Kubernetes manifests (Deployment and Service, or a "
                   "LeaderWorkerSet past 8 GPUs).")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of standard output.")
@click.option("--force", is_flag=True, help="Replace an existing --output file.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def plan_cmd(model, gpu, gpu_memory, gpus, gpus_per_node, workload, max_context, prompt_tokens, output_tokens,
             concurrency, headroom, max_util, gpu_memory_used, kv_cache_dtype, tp, pp, quantization, vllm_version,
             image, calibration, entry, emit, output, force, fmt) -> None:
    """Choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and, with
    --gpus, the parallelism) that vLLM accepts and that carry the workload; explain each.

    Exit 0 with a plan, 1 when nothing carries the workload (the shortfall and checked remedies are
    printed), 2 for bad input.
    """
    from configurator.cli import common
    from configurator.plan import PlanRequest, plan
    from configurator.workloads import load_workload, override

    if output and Path(output).exists() and not force:
        raise InputError(f"{output} exists; pass --force to replace it")
    for name, v in (("--concurrency", concurrency), ("--max-context", max_context),
                    ("--prompt-tokens", prompt_tokens), ("--output-tokens", output_tokens), ("--gpus", gpus)):
        if v is not None and v <= 0:
            raise InputError(f"{name} must be a positive integer, got {v}")
    w = override(load_workload(workload), max_context_tokens=max_context, prompt_tokens=prompt_tokens,
                 output_tokens=output_tokens, concurrency=concurrency)
    result = plan(PlanRequest(
        model=model, workload=w, gpu=gpu, gpu_memory=gpu_memory, gpus=gpus,
        vllm_version=common.release(vllm_version, image), headroom=headroom, max_gpu_memory_utilization=max_util,
        gpu_memory_used=common.memory_used(gpu_memory_used), calibration=common.calibration(calibration),
        kv_cache_dtype=kv_cache_dtype, tensor_parallel_size=tp, pipeline_parallel_size=pp,
        quantization=quantization, entry=entry, gpus_per_node=gpus_per_node))
    if emit and result.feasible:
        _write(_emit(emit, result, gpus_per_node), output)
    elif fmt == "json":
        _write(result.model_dump_json(indent=2) + "\n", output if not emit else None)
    elif output and not emit:
        import io

        from configurator.report.plan_text import render

        buf = io.StringIO()
        render(result, buf)
        _write(buf.getvalue(), output)
    else:
        from configurator.report.plan_text import render

        render(result, sys.stdout)  # a terminal gets colour
    if emit and not result.feasible:
        click.echo(f"error: no plan carries the workload: {result.summary}", err=True)
    sys.exit(int(ExitCode.OK if result.feasible else ExitCode.FAIL))


def _emit(what: str, result, gpus_per_node: int = 8) -> str:
    """The text of one --emit target; the deployment files are deterministic YAML with a one-line header."""
    if what == "serve":
        return result.serve_command + "\n"
    if what == "args":
        return json.dumps(result.serve_args) + "\n"
    from configurator.emit.helm import DeployOptions, deployment_warnings, helm_values
    from configurator.emit.manifest import manifests, to_yaml
    from configurator.emit.production_stack import production_stack_values

    header = (f"# vllm-configurator plan: {result.model} on {result.gpus} x {result.gpu}, vLLM {result.vllm_version}"
              f" ({what})\n")
    opts = DeployOptions(gpus_per_node=gpus_per_node)
    body = {"helm": lambda: to_yaml(helm_values(result, opts)),
            "production-stack": lambda: to_yaml(production_stack_values(result, opts)),
            "manifest": lambda: to_yaml(*manifests(result, opts))}[what]()
    for warning in deployment_warnings(result, opts):
        click.echo(f"warning: {warning}", err=True)
    return header + body


def _write(text: str, output: str | None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{output}: cannot write ({e.strerror})") from None
