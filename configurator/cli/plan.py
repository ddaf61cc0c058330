"""`vllm-configurator plan`: the four flags that carry a workload, why, and the command to run."""

from __future__ import annotations

import json
import sys

import click

from configurator.errors import ExitCode


@click.command("plan")
@click.option("--model", required=True, help="Built-in profile, Hugging Face id, or path to config.json.")
@click.option("--gpu", help="GPU name, alias or node-label value (see `vllm-configurator gpus`).")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory", help="GPU memory as CUDA reports it, e.g. 79.18GiB.")
@click.option("--gpus", type=int, default=None, help="GPUs available: also choose tensor / pipeline parallelism.")
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
@click.option("--emit", type=click.Choice(["serve", "args"]), default=None,
              help="Print only the `vllm serve` line, or the container args as a JSON list.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def plan_cmd(model, gpu, gpu_memory, gpus, workload, max_context, prompt_tokens, output_tokens, concurrency, headroom,
             max_util, gpu_memory_used, kv_cache_dtype, tp, pp, quantization, vllm_version, image, calibration, entry,
             emit, fmt) -> None:
    """Choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and, with
    --gpus, the parallelism) that vLLM accepts and that carry the workload; explain each.

    Exit 0 with a plan, 1 when nothing carries the workload (the shortfall and checked remedies are
    printed), 2 for bad input.
    """
    from configurator.cli import common
    from configurator.errors import InputError
    from configurator.plan import PlanRequest, plan
    from configurator.workloads import load_workload, override

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
        quantization=quantization, entry=entry))
    if emit == "serve" and result.feasible:
        click.echo(result.serve_command)
    elif emit == "args" and result.feasible:
        click.echo(json.dumps(result.serve_args))
    elif fmt == "json":
        click.echo(result.model_dump_json(indent=2))
    else:
        from configurator.report.plan_text import render

        render(result, sys.stdout)
    if emit and not result.feasible:
        click.echo(f"error: no plan carries the workload: {result.summary}", err=True)
    sys.exit(int(ExitCode.OK if result.feasible else ExitCode.FAIL))
