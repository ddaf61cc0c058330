"""`vllm-configurator estimate`: vLLM's own flags in, what vLLM will allocate and log out."""

from __future__ import annotations

import dataclasses
import sys

import click

from configurator.cli import common
from configurator.errors import ExitCode, InputError
from configurator.vllm.flags import FLAGS

# vLLM's defaults differ between releases (max_num_seqs, max_num_batched_tokens, block size, ...): said once
RELEASE_DEFAULT = " [default: vLLM's, per release]"


def _flag_options(fn):
    for flag in reversed(FLAGS):
        if flag.dest == "model":
            continue
        names = [flag.option, "--" + flag.dest, *flag.short]
        names = list(dict.fromkeys(names))
        text = flag.help + RELEASE_DEFAULT
        if flag.type == "bool" and flag.negatable:
            opt = click.option(f"{flag.option}/--no-{flag.option[2:]}", flag.dest, default=None, help=text)
        elif flag.type == "bool":
            opt = click.option(*names, flag.dest, is_flag=True, default=None, help=text)
        else:
            opt = click.option(*names, flag.dest, default=None, help=text, metavar=flag.type.upper())
        fn = opt(fn)
    return fn


class _EstimateCommand(click.Command):
    """A vLLM option that `estimate` does not take as its own (`--mm-processor-cache-gb`) is named as one that
    goes after `--`, instead of click's nearest option of estimate's own."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            from configurator.vllm.args import release_args

            name = e.option_name.split("=", 1)[0]
            spelled = "--" + name[2:].replace("_", "-") if name.startswith("--") else name
            if spelled in release_args(None).strings or name in release_args(None).strings:
                raise click.UsageError(
                    f"{name} is a vLLM option that `estimate` reads only in the `vllm serve` command after `--`: "
                    f"vllm-configurator estimate --gpu GPU -- vllm serve MODEL {name} VALUE", ctx) from None
            raise


@click.command("estimate", cls=_EstimateCommand, context_settings={"ignore_unknown_options": False})
@click.option("--model", "model", shell_complete=common.complete_model,
              help="Catalog id (`vllm-configurator models`), Hugging Face id, or path to config.json / model "
                   "folder; or give it positionally (`estimate MODEL`) or in the command after `--`.")
@click.option("--model-config", "model_configs", multiple=True, metavar="NAME=PATH|FOLDER",
              help=common.MODEL_CONFIG_HELP)
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) to read a Hub model's "
              "config at.")
@click.option("--gpu", shell_complete=common.complete_gpu,
              help="GPU name, alias, or node-label value (see `vllm-configurator gpus`); MIG: a100-80gb:3g.40gb.")
@click.option("--gpu-memory", "--gpu_memory", "gpu_memory",
              help="GPU memory as CUDA reports it, e.g. 79.18GiB or 81559MiB.")
@click.option("--gpu-memory-used", "--gpu_memory_used", "gpu_memory_used", default=None,
              help="Memory already taken on the device by other processes (e.g. 6GiB).")
@click.option("--vllm-version", "--vllm_version", "vllm_version", default="latest", show_default=True,
              help=common.VLLM_VERSION_HELP)
@click.option("--image", default=None, help="vLLM container image; its tag picks the release "
              "(vllm/vllm-openai:v0.11.0 -> 0.11.0; latest -> the newest modelled).")
@click.option("--calibration", "calibration", default=None, type=click.Path(dir_okay=False),
              help="Calibration file written by `vllm-configurator calibrate`.")
@click.option("--entry-point", "entry", type=click.Choice(["server", "offline"]), default="server",
              show_default=True, help="`vllm serve` (OpenAI server) or the offline LLM class: their batch "
              "defaults differ.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True,
              help=common.FORMAT_HELP + " (schemas/estimate.schema.json).")
@_flag_options
@click.argument("serve_command", nargs=-1, type=click.UNPROCESSED, shell_complete=common.complete_model)
def estimate_cmd(model, model_configs, revision, gpu, gpu_memory, gpu_memory_used, vllm_version, image, calibration,
                 entry, fmt, serve_command, **flags) -> None:
    """What vLLM will allocate and log for these flags, and whether it will start.

    Takes vLLM's flags by vLLM's names (dashes or underscores), or a whole command after `--`:

      vllm-configurator estimate --gpu l4 -- vllm serve Qwen/Qwen3-8B --max-model-len 32768

    A vLLM flag left out takes vLLM's default for the release modelled (--vllm-version): the defaults differ
    between releases (max_num_seqs, max_num_batched_tokens, block size, ...), and `How it adds up` names the
    values used. vLLM options not listed here go after `--`.

    Exit 0 when it fits, 1 when vLLM would refuse to start, 2 for bad input, 3 when nothing is predicted
    (no GPU named, or vLLM would run its V0 engine).
    """
    from configurator.estimate import EstimateRequest, estimate
    from configurator.vllm.flags import BY_DEST, parse_args, unrecognized_message

    version = common.release(vllm_version, image)
    # vLLM's flags given as options here are read exactly like the ones after `--`: one parser
    tokens = list(serve_command)
    own: list[str] = []
    for dest, raw in flags.items():
        if raw is None:
            continue
        flag = BY_DEST[dest]
        if flag.type == "bool":
            if raw or flag.negatable:
                own.append(flag.option if raw else "--no-" + flag.option[2:])
        else:
            own.append(f"{flag.option}={raw}")
    args = parse_args([*tokens, *own], version)
    if args.unknown:  # vLLM itself would exit here: so does the estimate, with its words
        # (vllm/entrypoints/cli/main.py: the top-level parser, prog 'vllm', reports left-over tokens)
        click.echo(f"vllm: error: {unrecognized_message(args.unknown)}", err=True)
        sys.exit(int(ExitCode.FAIL))
    # an option that changes memory and is not modelled is named in the result's warnings (text and JSON alike)
    unmodelled = [f"not-modelled: {o.dest} changes GPU memory and is not modelled; the estimate ignores it"
                  for o in args.unmodelled]
    parsed = args.flags
    served = parse_args(tokens, version).flags if tokens and (own or model) else {}
    _conflicts(served, parse_args(own, version).flags if own else {}, model)
    name = model or parsed.pop("model", None)
    parsed.pop("model", None)
    if not name:
        raise click.UsageError("name a model with --model (or after `-- vllm serve`)")
    spec = common.model_spec(name, model_configs, revision)
    req = EstimateRequest(model=spec, gpu=gpu, gpu_memory=gpu_memory, vllm_version=version, flags=parsed,
                          gpu_memory_used=common.memory_used(gpu_memory_used),
                          calibration=common.calibration(calibration), entry=entry)
    result = estimate(req)
    if unmodelled:
        result = dataclasses.replace(result, warnings=[*unmodelled, *result.warnings])
    common.gpu_note(gpu)
    code = ExitCode.NOT_PREDICTED if result.verdict == "not-predicted" else \
        ExitCode.OK if result.fits else ExitCode.FAIL
    if fmt != "text":
        from configurator.report import ESTIMATE_FORMATS

        common.finish(lambda: ESTIMATE_FORMATS[fmt](result, sys.stdout), code)
    from configurator.cli.next_steps import estimate_next_steps
    from configurator.report.estimate_text import render

    steps = estimate_next_steps(req, result)
    common.finish(lambda: render(result, sys.stdout, steps), code)


def _conflicts(served: dict, own: dict, model: str | None) -> None:
    """A model or flag given both as an option and, with another value, in the `vllm serve` command after `--`
    is an error naming both (which one vLLM would get is not for the estimate to guess)."""
    from configurator.vllm.flags import BY_DEST

    clashes = []
    if model and served.get("model") not in (None, model):
        clashes.append(f"--model {model} and `vllm serve {served['model']}`")
    for dest, value in own.items():
        if dest in served and served[dest] != value:
            option = BY_DEST[dest].option
            clashes.append(f"{option} {value} and {option} {served[dest]} after `--`")
    if clashes:
        raise InputError(f"the options and the `vllm serve` command after `--` disagree: {'; '.join(clashes)}; "
                         f"give each once")
