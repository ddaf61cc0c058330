"""Option handling shared by the commands (release from an image tag, calibration file, memory used)."""

from __future__ import annotations

import click

MAX_COUNT = 10**12  # the largest token count or concurrency an option takes (a float holds it exactly)


def release(vllm_version: str, image: str | None) -> str:
    """--image wins over --vllm-version; an unknown tag warns and means the newest release."""
    if not image:
        return vllm_version
    from configurator.vllm.versions import version_from_image

    version, warning = version_from_image(image)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    return version


def calibration(path: str | None):
    if not path:
        return None
    from configurator.calibration import read_calibration

    return read_calibration(path)


def memory_used(text: str | None) -> int:
    from configurator.units import parse_size

    return parse_size(text, what="--gpu-memory-used", bare="GiB") if text else 0


# one wording for the options several commands share
MODEL_CONFIG_HELP = ("NAME=PATH: the config.json, model folder or catalog id for a model name, served name or "
                     "path inside a container (`/models/llama=./llama/config.json`); or a FOLDER of config files "
                     "(NAME.json with / as __, or NAME/config.json); a bare config.json or model folder is for "
                     "the model. Repeatable.")
FORMAT_HELP = "Report format: text, or JSON on standard output (an error that exits 2 is {\"error\": ...} then)"


def release_range() -> str:
    """The modelled releases, from configurator/vllm/versions.py: '0.8 to 0.33'."""
    from configurator.vllm.versions import NEWEST, OLDEST

    return f"{OLDEST.rsplit('.', 1)[0]} to {NEWEST.rsplit('.', 1)[0]}"


VLLM_VERSION_HELP = (f"vLLM release whose behaviour to model: {release_range()} (`latest`: the newest modelled); "
                     "older releases (V0 engine) are named, not predicted.")


def complete_gpu(ctx, param, incomplete: str):
    """Shell completion of --gpu: catalog names and aliases."""
    from click.shell_completion import CompletionItem

    from configurator.hardware.catalog import list_gpus

    names = sorted({n for g in list_gpus() for n in (g.name, *g.aliases)})
    return [CompletionItem(n) for n in names if n.lower().startswith(incomplete.lower())]


def complete_model(ctx, param, incomplete: str):
    """Shell completion of --model: the offline catalog's ids (and aliases)."""
    from click.shell_completion import CompletionItem

    from configurator.model import catalog

    names = sorted({n for e in catalog.entries() for n in (e.hf_id, *e.aliases)})
    low = incomplete.lower()
    return [CompletionItem(n) for n in names if n.lower().startswith(low)] or \
        [CompletionItem(n) for n in names if low in n.lower()]


def in_config_folder(folder, name: str):
    """The config file for model `name` in a --model-config FOLDER, or None: NAME.json (a / written __), or
    NAME/config.json, or the last part of NAME/config.json (what `check --model-config FOLDER` reads)."""
    from pathlib import Path

    for cand in (Path(folder) / (name.replace("/", "__") + ".json"), Path(folder) / name / "config.json",
                 Path(folder) / name.rsplit("/", 1)[-1] / "config.json"):
        if cand.is_file():
            return cand
    return None


def _model_configs(values: tuple[str, ...], name: str) -> tuple[str, ...]:
    """--model-config values with each FOLDER of configs (a folder without a config.json of its own) turned
    into NAME=PATH for the model it holds; a folder that holds none of it is an error naming what was looked for."""
    from pathlib import Path

    from configurator.errors import InputError

    out = []
    for v in values:
        p = Path(v).expanduser()
        if "=" in v or not p.is_dir() or (p / "config.json").is_file():
            out.append(v)
            continue
        found = in_config_folder(p, name)
        if found is None:
            raise InputError(f"--model-config {v}: a folder without {name.replace('/', '__')}.json, {name}/config.json "
                             f"or {name.rsplit('/', 1)[-1]}/config.json for the model {name}")
        out.append(f"{name}={found}")
    return tuple(out)


def model_spec(name: str, model_configs: tuple[str, ...] = (), revision: str | None = None):
    """Resolve --model (through --model-config NAME=PATH or FOLDER, at --revision) and print its warnings, such
    as a derivative's inferred base. An unknown model names the ways to give its config."""
    from configurator.errors import NotFoundError
    from configurator.model.resolve import parse_model_configs, resolve

    try:
        r = resolve(name, revision=revision, model_configs=parse_model_configs(_model_configs(model_configs, name),
                                                                                name))
    except NotFoundError as e:
        if "--model-config" in e.hint:  # it says already
            raise
        tried = f"{e.hint}; " if e.hint else ""
        raise NotFoundError(e.what, e.name, e.suggestions, hint=(
            f"{tried}give its config with --model /path/to/config.json (or the model's folder), --model-config "
            f"{name}=PATH, or through the Hugging Face Hub (network access; HF_TOKEN for a gated or private "
            f"model)")) from None
    for w in r.warnings:
        click.echo(f"warning: {w}", err=True)
    return r.spec


def gpu_note(gpu: str | None) -> None:
    """Say which GPU an ambiguous alias picked (`--gpu a100` -> a100-80gb)."""
    if gpu:
        from configurator.hardware.catalog import alias_note

        note = alias_note(gpu)
        if note:
            click.echo(f"note: {note}", err=True)


def finish(render, code: int) -> None:
    """Render to stdout and exit with the verdict's code; a reader that closed the pipe early
    (`| head -1`) does not change that code."""
    import os
    import sys

    try:
        render()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
    except SystemExit as e:
        # rich's Console.on_broken_pipe points stdout at /dev/null and raises SystemExit(1): that 1
        # was the "does not fit" code printed for a FITS result piped into `head`
        if e.code != 1:
            raise
    sys.exit(int(code))
