"""Extract typed views of every vLLM server in the loaded documents: the names the format plugins share.

Each deployment format is a module of configurator/lint/formats/ that registers what it recognises
and an extractor returning `Server`s; `extract_all` (configurator/lint/find.py) only dispatches each
document to the first format that recognises it. What the formats share lives in modules along what
they hold, and this module names them all in one place (the plugins and tests import them from here):

- configurator/lint/server.py: the typed views (`Server`, `Token`) and a server's annotations;
- configurator/lint/release.py: the release an image tag names, and refusals that depend on it;
- configurator/lint/command.py: a vLLM command line read into a server's flags (`apply_tokens`, `set_flag`);
- configurator/lint/shell.py: command lines as a shell and Kubernetes read them (words, expansions, `sh -c`);
- configurator/lint/pod.py: a pod spec's containers -> `Server`s (flags from `command` / `args`, a `--config`
  file from a ConfigMap in the same input, each with its line), GPU requests, node labels, /dev/shm and probes.

Every value is read through configurator/lint/shape.py, so a value of the wrong shape becomes a finding on
its object, never an exception.
"""

from __future__ import annotations

from configurator.hardware.labels import gpu_from_labels
from configurator.lint.command import (
    MAX_BAD_FLAGS,
    _drop_flag,
    _parse_cached,
    _without_unresolved,
    apply_tokens,
    flag_value_problem,
    set_flag,
)
from configurator.lint.inputs import Inputs, NotUnderstood, identity
from configurator.lint.pod import (
    MAX_SCRIPT_CHARS,
    MAX_SECONDS,
    argv_items,
    argv_runs_vllm,
    config_file_flags,
    container_env,
    container_facts,
    container_server,
    container_tokens,
    gpu_request,
    image_names_vllm,
    is_vllm,
    pod_scheduling,
    pod_servers,
    probe_budget,
    workload_pod,
)
from configurator.lint.release import (
    _ASSUMED_RELEASE,
    NGC_REGISTRY,
    flag_table_release,
    image_release,
    ngc_tag,
    release_basis,
    release_known,
)
from configurator.lint.server import ANNOTATION_PREFIX, GPU_RESOURCES, MAX_GPUS, Server, Token, annotations
from configurator.lint.shape import ShapeNote
from configurator.lint.shell import (
    VLLM_MODULE_PREFIX,
    argv_words,
    shell_script_at,
    shell_tokens,
    shell_words,
    unresolved,
)

__all__ = [
    "ANNOTATION_PREFIX", "GPU_RESOURCES", "MAX_BAD_FLAGS", "MAX_GPUS", "MAX_SCRIPT_CHARS", "MAX_SECONDS",
    "NGC_REGISTRY", "VLLM_MODULE_PREFIX", "_ASSUMED_RELEASE", "Inputs", "NotUnderstood", "Server", "ShapeNote",
    "Token", "_drop_flag", "_parse_cached", "_without_unresolved", "annotations", "apply_tokens", "argv_items",
    "argv_runs_vllm", "argv_words", "config_file_flags", "container_env", "container_facts", "container_server",
    "container_tokens", "flag_table_release", "flag_value_problem", "gpu_from_labels", "gpu_request", "identity",
    "image_names_vllm", "image_release", "is_vllm", "ngc_tag", "pod_scheduling", "pod_servers", "probe_budget",
    "release_basis", "release_known", "set_flag", "shell_script_at", "shell_tokens", "shell_words", "unresolved",
    "workload_pod",
]
