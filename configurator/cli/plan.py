"""`vllm-configurator plan`: the four flags that carry a workload, why, and the command to run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from configurator.cli import common
from configurator.errors import ExitCode, InputError

# --emit targets that write a deployment file (YAML), each a pure function of the plan
DEPLOY_EMITS = ("helm", "production-stack", "manifest")


@click.command("plan")
@click.argument("model_arg", required=False, metavar="[MODEL]", shell_complete=common.complete_model)
@click.option("--model", shell_complete=common.complete_model,
              help="Catalog id (`vllm-configurator models`), Hugging Face id, or path to config.json / model "
                   "folder; or give it positionally (`plan MODEL`), as `estimate` takes it.")
@click.option("--model-config", "model_configs", multiple=True, metavar="NAME=PATH|FOLDER",
              help=common.MODEL_CONFIG_HELP)
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to read a Hub model's config at.")
@click.option("--gpu", shell_complete=common.complete_gpu,
              help="GPU name, alias, or node-label value (see `vllm-configurator gpus`); MIG: a100-80gb:3g.40gb.")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory", help="GPU memory as CUDA reports it, e.g. 79.18GiB.")
@click.option("--gpus", type=int, default=None,
              help="GPUs available: also choose the layout (replicas, tensor / pipeline / data parallelism).")
@click.option("--gpus-per-node", "gpus_per_node", type=int, default=8, show_default=True,
              help="GPUs in one node: tensor parallelism stays within a node, more GPUs become nodes.")
@click.option("--workload", default="chat", show_default=True,
              help="Built-in workload (chat, rag, long-context, agentic-coding, batch) or a workload file.")
@click.option("--max-context", "--max_context", "max_context", type=int, help="Longest request in tokens.")
@click.option("--prompt-tokens", "--prompt_tokens", "prompt_tokens", type=int, help="Typical prompt length.")
@click.option("--output-tokens", "--output_tokens", "output_tokens", type=int, help="Typical output length.")
@click.option("--concurrency", type=int, help="Requests in flight that must fit without preemption.")
@click.option("--ttft-ms", "ttft_ms", type=float, default=None,
              help="Time-to-first-token target (ms): plan the fewest GPUs that meet it (the speed model's prediction).")
@click.option("--tpot-ms", "tpot_ms", type=float, default=None,
              help="Time-per-output-token target (ms): plan the fewest GPUs that meet it.")
@click.option("--max-model-len", "--max_model_len", "max_model_len", default=None,
              help="Plan a longer --max-model-len than the workload needs (tokens, or 'full' for the model's limit); "
                   "default: the workload's longest request rounded up to a multiple of 1,024.")
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
@click.option("--vllm-version", "--vllm_version", "vllm_version", default="latest", show_default=True,
              help=common.VLLM_VERSION_HELP)
@click.option("--image", default=None, help="vLLM container image; its tag picks the release.")
@click.option("--calibration", type=click.Path(dir_okay=False), default=None,
              help="Calibration file from `vllm-configurator calibrate`.")
@click.option("--entry-point", "entry", type=click.Choice(["server", "offline"]), default="server", show_default=True,
              help="`vllm serve` (OpenAI server) or the offline LLM class: their batch defaults differ.")
@click.option("--emit", type=click.Choice(["serve", "args", *DEPLOY_EMITS]), default=None,
              help="Print only the `vllm serve` line, the container args as a JSON list, values for charts/vllm "
                   "(helm), a production-stack values file, or Kubernetes manifests (Deployment and Service, or a "
                   "LeaderWorkerSet where an engine spans nodes; the plan's replicas as replicas).")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of standard output.")
@click.option("--force", is_flag=True, help="Replace an existing --output file.")
@click.option("--best-effort", "best_effort", is_flag=True,
              help="With --emit: when no plan carries the target, emit the best plan (the flags that carry the most "
                   "of it) anyway; the exit code stays 1.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True,
              help=common.FORMAT_HELP + " (schemas/plan.schema.json).")
def plan_cmd(model_arg, model, model_configs, revision, gpu, gpu_memory, gpus, gpus_per_node, workload, max_context,
             prompt_tokens, output_tokens, concurrency, headroom, max_util, gpu_memory_used, kv_cache_dtype, tp, pp,
             quantization, vllm_version, image, calibration, entry, emit, output, force, best_effort, fmt,
             max_model_len, ttft_ms=None, tpot_ms=None) -> None:
    """Choose --gpu-memory-utilization, --kv-cache-dtype, --max-num-seqs and --max-model-len (and, with
    --gpus, the parallelism) that vLLM accepts and that carry the workload; explain each.

    When nothing carries the target, the best plan is still shown, marked short of it, with how far and
    the remedies (each checked by planning again). With TTFT / TPOT targets (--ttft-ms, --tpot-ms or the
    workload file), the fewest GPUs that meet them. Exit 0 when the plan carries the workload (and meets its
    targets), 1 when it falls short (or vLLM would start with no candidate, or a target is missed), 2 for
    bad input. With --emit, a short plan is
    written only with --best-effort; otherwise nothing goes to standard output and the report goes to
    standard error.
    """
    from configurator.plan import PlanRequest, plan
    from configurator.workloads import load_workload, override

    if model and model_arg and model != model_arg:
        raise InputError(f"two models: {model_arg} and --model {model}; give one")
    model = model or model_arg
    if not model:
        raise click.UsageError("name a model: `plan MODEL` or --model MODEL")

    for name, v in (("--concurrency", concurrency), ("--max-context", max_context),
                    ("--prompt-tokens", prompt_tokens), ("--output-tokens", output_tokens), ("--gpus", gpus)):
        if v is not None and (v <= 0 or (v > common.MAX_COUNT and name != "--gpus")):  # --gpus: at most 1,024 below
            shown = f"{v}" if v < 10**20 else f"a {len(str(v))}-digit number"
            raise InputError(f"{name} must be a positive integer up to {common.MAX_COUNT:,}, got {shown}")
    for name, t in (("--ttft-ms", ttft_ms), ("--tpot-ms", tpot_ms)):
        if t is not None and not 0 < t < 1e9:
            raise InputError(f"{name} must be a positive number of milliseconds, got {t:g}")
    w = override(load_workload(workload), max_context_tokens=max_context, prompt_tokens=prompt_tokens,
                 output_tokens=output_tokens, concurrency=concurrency, ttft_ms=ttft_ms, tpot_ms=tpot_ms)
    spec = common.model_spec(model, model_configs, revision)
    result = plan(PlanRequest(
        model=spec, workload=w, gpu=gpu, gpu_memory=gpu_memory, gpus=gpus,
        vllm_version=common.release(vllm_version, image), headroom=headroom, max_gpu_memory_utilization=max_util,
        gpu_memory_used=common.memory_used(gpu_memory_used), calibration=common.calibration(calibration),
        kv_cache_dtype=kv_cache_dtype, tensor_parallel_size=tp, pipeline_parallel_size=pp,
        quantization=quantization, entry=entry, gpus_per_node=gpus_per_node,
        max_model_len=_max_model_len(max_model_len)))
    inputs = tuple(x for x in (calibration, workload) if x and Path(x).is_file())
    if emit:
        deployable = result.feasible or (best_effort and result.status == "short")
        if deployable:
            short = not result.feasible
            if short:
                click.echo(f"warning: best effort: {_shortfall(result)}", err=True)
                # the emitters deploy carrying plans only; --best-effort is the user's acceptance of this one
                result = result.model_copy(update={"feasible": True})
            _write(_emit(emit, result, gpus_per_node, best_effort=short), output, force, inputs)
        else:
            _render(result, sys.stderr)
            if result.status == "short":
                why = f"{_shortfall(result)}; pass --best-effort to emit the best plan anyway"
            else:
                why = "vLLM would start with none of the candidates"
            click.echo(f"error: no plan carries the workload, nothing was emitted: {why}", err=True)
    elif fmt == "json":
        _write(result.model_dump_json(indent=2) + "\n", output, force, inputs)
    elif fmt == "html":
        import json

        from configurator.report.html import render_html

        _write(render_html("plan", json.loads(result.model_dump_json())), output, force, inputs)
    elif output:
        import io

        buf = io.StringIO()
        _render(result, buf)
        _write(buf.getvalue(), output, force, inputs)
    else:
        _render(result, sys.stdout)  # a terminal gets colour
    ok = result.feasible and result.status == "carries" and result.meets_targets is not False
    sys.exit(int(ExitCode.OK if ok else ExitCode.FAIL))


def _shortfall(result) -> str:
    return (f"short of the target, the best plan carries {result.carried_concurrency:,} of "
            f"{result.workload['concurrency']:,} concurrent requests ({result.shortfall_bytes / (1 << 30):.2f} GiB "
            f"of KV cache per GPU short)")


def _max_model_len(text: str | None) -> int | str | None:
    if text is None:
        return None
    if text.strip().lower() == "full":
        return "full"
    from configurator.vllm.flags import BY_DEST, convert

    value = convert(BY_DEST["max_model_len"], text)  # as vLLM reads it: 128K = 131,072, 128k = 128,000
    if value <= 0:
        raise InputError(f"--max-model-len must be a positive number of tokens or 'full', got {text}")
    return value


def _render(result, stream) -> None:
    from configurator.report.plan_text import render

    render(result, stream)
    if result.status == "nothing-starts":
        return
    lines = []
    if result.replicas > 1:
        lines.append(f"Replicas: run {result.replicas} engines of this command, {result.gpus // result.replicas} "
                     f"GPUs each ({result.layout}; --emit manifest / helm sets the replicas)")
    if result.binding and result.meets_targets is not None:  # a target stated: memory or a target binds
        lines.append(f"Binds: {result.binding}")
    if result.next_step:
        lines.append(f"Next step up: {result.next_step}")
    if lines:
        stream.write("\n" + "\n".join(lines) + "\n")


def _emit(what: str, result, gpus_per_node: int = 8, *, best_effort: bool = False) -> str:
    """The text of one --emit target; the deployment files are deterministic YAML with a one-line header."""
    if what == "serve":
        return result.serve_command + "\n"
    if what == "args":  # the container args under the stock image's `vllm serve` entrypoint
        return json.dumps(result.serve_args) + "\n"
    from configurator.emit.helm import DeployOptions, deployment_warnings, helm_values
    from configurator.emit.manifest import manifests, to_yaml
    from configurator.emit.production_stack import production_stack_values

    header = (f"# vllm-configurator plan: {result.model} on {result.gpus} x {result.gpu}, vLLM {result.vllm_version}"
              f" ({what})\n")
    if result.replicas > 1:
        header += f"# {result.layout}: {result.replicas} replicas of {result.gpus // result.replicas} GPUs\n"
    if result.queued:
        header += (f"# a queue: {result.carried_concurrency:,} of {result.workload['concurrency']:,} requests run at "
                   f"once, {result.queued:,} wait in vLLM's queue\n")
    if best_effort:
        header += (f"# best effort: short of the target, carries {result.carried_concurrency:,} of "
                   f"{result.workload['concurrency']:,} concurrent requests\n")
    opts = DeployOptions(gpus_per_node=gpus_per_node)
    body = {"helm": lambda: to_yaml(helm_values(result, opts)),
            "production-stack": lambda: to_yaml(production_stack_values(result, opts)),
            "manifest": lambda: to_yaml(*manifests(result, opts))}[what]()
    for warning in deployment_warnings(result, opts):
        click.echo(f"warning: {warning}", err=True)
    return header + body


def _write(text: str, output: str | None, force: bool = False, inputs: tuple[str, ...] = ()) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    from configurator.safe_io import write_output

    # the no-clobber check happens here, at the write, atomically (not before the work)
    write_output(output, text, force=force, inputs=inputs)
