"""Entry point: `vllm-configurator` and its commands; maps results and errors to exit codes."""

from __future__ import annotations

import sys

import click

from configurator import __version__
from configurator.errors import ConfiguratorError, ExitCode


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except ConfiguratorError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(int(e.exit_code))
        except BrokenPipeError:  # output piped into `head`: stop quietly (click would exit 1)
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(int(ExitCode.OK))
        except (OSError, ValueError) as e:  # last line of defence: one line, never a traceback
            click.echo(f"error: {e}", err=True)
            sys.exit(int(ExitCode.USAGE))
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # usage errors, --help, Ctrl-C: click's own
        except Exception as e:  # a fault (RecursionError, OverflowError, KeyError, ...): fail closed, never 0
            from configurator.lint.engine import cause

            click.echo(f"error: internal error ({cause(e)}): nothing was decided; please report it", err=True)
            sys.exit(int(ExitCode.USAGE))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vllm-configurator")
def cli() -> None:
    """Predict vLLM's GPU memory budget and KV-cache capacity before you start it.

    Exit codes: 0 fits / clean, 1 vLLM would refuse to start, 2 bad input.
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
