"""Entry point: `vllm-configurator` and its commands; maps results and errors to exit codes."""

from __future__ import annotations

import itertools
import sys

import click

from configurator import __version__
from configurator.errors import ConfiguratorError, ErrorReport, ExitCode


def _wants_json(args: list[str]) -> bool:
    """`--format json` (or `--format=json`) among the command's own options (before `--`)."""
    own = args[:args.index("--")] if "--" in args else args
    return "--format=json" in own or any(a == "--format" and b == "json" for a, b in itertools.pairwise(own))


def _fail(message: str, code: int, as_json: bool) -> None:
    """One line on standard error and, under `--format json`, the error object (schemas/error.schema.json) on
    standard output too (where the report would have been); then the exit code."""
    if as_json:
        click.echo(ErrorReport.of(message, code).to_json())
    click.echo(f"error: {message}", err=True)
    sys.exit(int(code))


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        as_json = _wants_json([*getattr(ctx, "_protected_args", []), *ctx.args])
        try:
            return super().invoke(ctx)
        except ConfiguratorError as e:
            _fail(str(e), e.exit_code, as_json)
        except click.UsageError as e:  # bad options: click prints the usage; JSON also gets the error object
            if as_json:
                click.echo(ErrorReport.of(e.format_message(), e.exit_code).to_json())
            raise
        except BrokenPipeError:  # output piped into `head`: stop quietly (click would exit 1)
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(int(ExitCode.OK))
        except (OSError, ValueError) as e:  # last line of defence: one line, never a traceback
            _fail(str(e), ExitCode.USAGE, as_json)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # usage errors, --help, Ctrl-C: click's own
        except Exception as e:  # a fault (RecursionError, OverflowError, KeyError, ...): fail closed, never 0
            from configurator.lint.engine import cause

            _fail(f"internal error ({cause(e)}): nothing was decided; please report it", ExitCode.USAGE, as_json)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vllm-configurator")
def cli() -> None:
    """Predict vLLM's GPU memory budget and KV-cache capacity before you start it.

    Exit codes: 0 fits / clean, 1 vLLM would refuse to start, 2 bad input, 3 not predicted (estimate: no GPU
    named, or a V0 start-up).
    """


# Each command's module is imported when the command runs (or when --help lists them all): `estimate` does not
# pay for the linter, the webhook or the plan solver. Name -> (module, click command in it).
COMMANDS = {
    "estimate": ("configurator.cli.estimate", "estimate_cmd"),
    "calibrate": ("configurator.cli.calibrate", "calibrate_cmd"),
    "plan": ("configurator.cli.plan", "plan_cmd"),
    "check": ("configurator.cli.check", "check_cmd"),
    "review": ("configurator.cli.admission", "review_cmd"),
    "webhook": ("configurator.cli.admission", "webhook_cmd"),
    "audit": ("configurator.cli.admission", "audit_cmd"),
    "gpus": ("configurator.cli.gpus", "gpus_cmd"),
    "models": ("configurator.cli.models", "models_cmd"),
    "rules": ("configurator.cli.rules", "rules_cmd"),
}


class _LazyCommands(dict):
    """The group's commands (click reads `group.commands` as a dict), each imported on first look-up; iterating
    or listing them imports them all."""

    def _load(self, name: str) -> None:
        if name in COMMANDS and not dict.__contains__(self, name):
            import importlib

            module, attr = COMMANDS[name]
            dict.__setitem__(self, name, getattr(importlib.import_module(module), attr))

    def _load_all(self) -> None:
        for name in COMMANDS:
            self._load(name)

    def __getitem__(self, name: str):
        self._load(name)
        return dict.__getitem__(self, name)

    def get(self, name: str, default=None):
        self._load(name)
        return dict.get(self, name, default)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or dict.__contains__(self, name)

    def __iter__(self):
        self._load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._load_all()
        return dict.__len__(self)

    def keys(self):
        self._load_all()
        return dict.keys(self)

    def values(self):
        self._load_all()
        return dict.values(self)

    def items(self):
        self._load_all()
        return dict.items(self)


cli.commands = _LazyCommands()


def main() -> None:
    try:
        cli(prog_name="vllm-configurator")
    except BrokenPipeError:  # output piped into `head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(int(ExitCode.OK))


if __name__ == "__main__":  # pragma: no cover
    main()


def kubectl_plugin() -> None:
    """`kubectl vllm-check ...` (executable kubectl-vllm_check): the same as `vllm-configurator check ...`."""
    sys.argv = ["kubectl vllm-check", "check", *sys.argv[1:]]
    main()
