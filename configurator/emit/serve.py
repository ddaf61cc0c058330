"""The `vllm serve` command line of a set of flags: moved to configurator/vllm/serve.py (the solver builds it
too, below the emitters); kept here for the emitters' imports."""

from configurator.vllm.serve import SERVE_ORDER, serve_args, serve_command  # noqa: F401
