"""Entry point: `vllm-configurator` and its commands; maps results and errors to exit codes."""

from __future__ import annotations

import itertools
import sys

import click

from configurator import __version__
from configurator.errors import ConfiguratorError, ExitCode


def _wants_json(args: list[str]) -> bool:
    """`--format json` (or `--format=json`) among the command's own options (before `--`)."""
    own = args[:args.index("--")] if "--" in args else args
    return "--format=json" in own or any(a == "--format" and b == "json" for a, b in itertools.pairwise(own))


def _fail(message: str, code: int, as_json: bool) -> None:
    """One line on standard error and, under `--format json`, the error object (schemas/error.schema.json) on
    standard output too (where the report would have been); then the exit code."""
    if as_json:
        from configurator.errors import ErrorReport

        click.echo(ErrorReport.of(message, code).model_dump_json(indent=2))
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
                from configurator.errors import ErrorReport

                click.echo(ErrorReport.of(e.format_message(), e.exit_code).model_dump_json(indent=2))
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


def _register() -> None:
    from configurator.cli.admission import audit_cmd, review_cmd, webhook_cmd
    from configurator.cli.calibrate import calibrate_cmd
    from configurator.cli.check import check_cmd
    from configurator.cli.estimate import estimate_cmd
    from configurator.cli.gpus import gpus_cmd
    from configurator.cli.models import models_cmd
    from configurator.cli.plan import plan_cmd
    from configurator.cli.rules import rules_cmd

    cli.add_command(estimate_cmd)
    cli.add_command(calibrate_cmd)
    cli.add_command(plan_cmd)
    cli.add_command(check_cmd)
    cli.add_command(review_cmd)
    cli.add_command(webhook_cmd)
    cli.add_command(audit_cmd)
    cli.add_command(gpus_cmd)
    cli.add_command(models_cmd)
    cli.add_command(rules_cmd)


_register()


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
