"""The typed view of one vLLM server (`Server`), the tokens of its command line (`Token`), and its annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from configurator.lint.load import Loc
from configurator.lint.shape import Node
from configurator.vllm.flags import UnknownArg

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
ANNOTATION_PREFIX = "vllm-configurator.io/"
MAX_GPUS = 1 << 16  # per pod: more is a typo


@dataclass
class Token:
    text: str
    loc: Loc
    origin: str = "literal"  # where its value came from: literal, env var X in the file, default of ${X:-d}


@dataclass
class Server:
    """One vLLM server container and everything the rules need about it."""

    file: str
    kind: str
    namespace: str | None
    name: str
    container: str
    loc: Loc  # the container (or values entry)
    object_loc: Loc
    image: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)  # last occurrence wins, as in argparse
    flag_locs: dict[str, Loc] = field(default_factory=dict)
    repeated: dict[str, list[Loc]] = field(default_factory=dict)  # flags given more than once
    gpu_count: int | None = None
    gpu_resource: str | None = None
    gpu_loc: Loc | None = None
    gpu_labels: dict[str, list[str]] = field(default_factory=dict)  # node labels the pod selects on
    gpu_labels_loc: Loc | None = None
    pods: int = 1  # LeaderWorkerSet group size: pods that serve one model replica
    shm_bytes: int | None = None  # memory-backed /dev/shm size (0 = mounted without a limit)
    shm_error: str | None = None  # a size limit Kubernetes refuses (the API server rejects the object)
    raw_command: list | None = None  # the container's command / args as written (None: not set, the image's)
    raw_args: list | None = None
    raw_args_loc: Loc | None = None
    shm_loc: Loc | None = None
    startup_budget_s: int | None = None  # seconds the probes allow before a kill
    probe_loc: Loc | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the container's literal env (VLLM_* change behaviour)
    notes: list[str] = field(default_factory=list)
    served_names: list[str] = field(default_factory=list)  # --served-model-name values, as written
    # vLLM options that change memory but are not modelled, as written, with their location
    unmodelled: list[tuple[str, Loc]] = field(default_factory=list)
    # tokens vLLM's parser would reject ("unrecognized arguments"), with their location
    unknown: list[tuple[UnknownArg, Loc]] = field(default_factory=list)
    # options (or the model) whose value the file does not give ($((A * B)), $VAR not in the env, templating):
    # (option as written, the value as written, location); the server is checked without them
    unresolved: list[tuple[str, str, Loc]] = field(default_factory=list)
    # what some modelled release accepts but the assumed one refuses, where the file names no release
    # (message, location): a warning, not an error
    release_dependent: list[tuple[str, Loc]] = field(default_factory=list)
    flags_release: str | None = None  # the release whose argument parser read the command (None: newest)
    sources: list[str] = field(default_factory=list)  # other files it was built from (its runtime, a ConfigMap)
    basis: dict[str, str] = field(default_factory=dict)
    # data parallelism as the server's own ranks see it (configurator/lint/discover.py reads it): the ranks this
    # pod runs (--data-parallel-size-local, a controller's dataLocal), and whether each pod is one rank of a
    # larger group (--data-parallel-rank / --data-parallel-start-rank: external load balancing or multi-node)
    dp_local: int | None = None
    dp_ranked: bool = False
    gpu_count_source: str = "resources"  # where gpu_count came from ("resources" or the controller that derives it)
    parallel_unresolved: set[str] = field(default_factory=set)  # parallel sizes written as $VAR, $(( )): not judged
    accelerator: str | None = None  # a TPU / Gaudi / Neuron resource or label: not a GPU the memory model knows
    assumed: list[tuple[str, Loc]] = field(default_factory=list)  # values taken at a default (${VAR:-default})

    def flag_loc(self, dest: str) -> Loc:
        return self.flag_locs.get(dest, self.loc)


def annotations(*metas: Node | None) -> dict[str, str]:
    """String annotations of the given metadata mappings (later ones win)."""
    out: dict[str, str] = {}
    for meta in metas:
        if meta is not None:
            for k, v in meta.entries("annotations"):
                text = v.text()
                if text is not None:
                    out[k] = text
    return out
