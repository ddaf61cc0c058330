"""`vllm-configurator estimate`: vLLM's own flags in, what vLLM will allocate and log out."""

from __future__ import annotations

import sys

import click

from configurator.errors import ExitCode
from configurator.vllm.flags import FLAGS


def _flag_options(fn):
    for flag in reversed(FLAGS):
        if flag.dest == "model":
            continue
        names = [flag.option, "--" + flag.dest, *flag.short]
        names = list(dict.fromkeys(names))
        if flag.type == "bool" and flag.negatable:
            opt = click.option(f"{flag.option}/--no-{flag.option[2:]}", flag.dest, default=None, help=flag.help)
        elif flag.type == "bool":
            opt = click.option(*names, flag.dest, is_flag=True, default=None, help=flag.help)
        else:
            opt = click.option(*names, flag.dest, default=None, help=flag.help, metavar=flag.type.upper())
        fn = opt(fn)
    return fn


@click.command("estimate", context_settings={"ignore_unknown_options": False})
@click.option("--model", "model", help="Catalog id (`vllm-configurator models`), Hugging Face id, or path to "
              "config.json / model folder.")
@click.option("--model-config", "model_configs", multiple=True, metavar="NAME=PATH",
              help="The config.json, model folder or catalog id for a model name, served name or path inside a "
                   "container (`/models/llama=./llama/config.json`); a bare PATH is for --model. Repeatable.")
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to read a Hub model's "
              "config at.")
@click.option("--gpu", help="GPU name, alias, or node-label value (see `vllm-configurator gpus`); "
              "MIG: a100-80gb:3g.40gb.")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory",
              help="GPU memory as CUDA reports it, e.g. 79.18GiB or 81559MiB.")
@click.option("--gpu-memory-used", "--gpu_memory_used", "gpu_memory_used", default=None,
              help="Memory already taken on the device by other processes (e.g. 6GiB).")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default="latest", show_default=True,
              help="vLLM release whose behaviour to model (0.10 to the newest).")
@click.option("--image", default=None, help="vLLM container image; its tag picks the release "
              "(vllm/vllm-openai:v0.11.0 -> 0.11.0; latest -> the newest modelled).")
@click.option("--calibration", "calibration", default=None, type=click.Path(dir_okay=False),
              help="Calibration file written by `vllm-configurator calibrate`.")
@click.option("--entry-point", "entry", type=click.Choice(["server", "offline"]), default="server",
              show_default=True, help="`vllm serve` (OpenAI server) or the offline LLM class: their batch "
              "defaults differ.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_flag_options
@click.argument("serve_command", nargs=-1, type=click.UNPROCESSED)
def estimate_cmd(model, model_configs, revision, gpu, gpu_memory, gpu_memory_used, vllm_version, image, calibration,
                 entry, fmt, serve_command, **flags) -> None:
    """What vLLM will allocate and log for these flags, and whether it will start.

    Takes vLLM's flags by vLLM's names (dashes or underscores), or a whole command after `--`:

      vllm-configurator estimate --gpu l4 -- vllm serve Qwen/Qwen3-8B --max-model-len 32768

    Exit 0 when it fits, 1 when vLLM would refuse to start, 2 for bad input, 3 when nothing is predicted
    (no GPU named, or vLLM would run its V0 engine).
    """
    from configurator.cli import common
    from configurator.estimate import EstimateRequest, estimate
    from configurator.report import ESTIMATE_FORMATS
    from configurator.vllm.flags import BY_DEST, parse_args, unrecognized_message

    version = common.release(vllm_version, image)
    # vLLM's flags given as options here are read exactly like the ones after `--`: one parser
    tokens = list(serve_command)
    for dest, raw in flags.items():
        if raw is None:
            continue
        flag = BY_DEST[dest]
        if flag.type == "bool":
            if raw or flag.negatable:
                tokens.append(flag.option if raw else "--no-" + flag.option[2:])
        else:
            tokens.append(f"{flag.option}={raw}")
    args = parse_args(tokens, version)
    if args.unknown:  # vLLM itself would exit here: so does the estimate, with its words
        # (vllm/entrypoints/cli/main.py: the top-level parser, prog 'vllm', reports left-over tokens)
        click.echo(f"vllm: error: {unrecognized_message(args.unknown)}", err=True)
        sys.exit(int(ExitCode.FAIL))
    # an option that changes memory and is not modelled is named in the result's warnings (text and JSON alike)
    unmodelled = [f"not-modelled: {o.dest} changes GPU memory and is not modelled; the estimate ignores it"
                  for o in args.unmodelled]
    parsed = args.flags
    name = model or parsed.pop("model", None)
    parsed.pop("model", None)
    if not name:
        raise click.UsageError("name a model with --model (or after `-- vllm serve`)")
    spec = common.model_spec(name, model_configs, revision)
    result = estimate(EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory,
                                      vllm_version=version, flags=parsed,
                                      gpu_memory_used=common.memory_used(gpu_memory_used),
                                      calibration=common.calibration(calibration), entry=entry))
    if unmodelled:
        result = result.model_copy(update={"warnings": [*unmodelled, *result.warnings]})
    common.gpu_note(gpu)
    code = ExitCode.NOT_PREDICTED if result.verdict == "not-predicted" else \
        ExitCode.OK if result.fits else ExitCode.FAIL
    common.finish(lambda: ESTIMATE_FORMATS[fmt](result, sys.stdout), code)
