"""The vLLM release a server's image (or env, or --vllm-version) names, and what a refusal that depends on it is."""

from __future__ import annotations

import re
from contextvars import ContextVar
from functools import lru_cache

from configurator.errors import InputError
from configurator.lint.load import Loc
from configurator.lint.server import Server

_VLLM_IN_TAG = re.compile(r"vllm[-_.]?v?(\d+\.\d+(?:\.\d+){0,2})", re.IGNORECASE)
_VERSION_TAG = re.compile(r"v?(\d+\.\d+(?:\.\d+){0,2})(?:$|[-+._])")


# NVIDIA NGC containers (nvcr.io/nvidia/vllm:25.09-py3) are tagged with the container's own release, year
# and month, not with the vLLM release inside; no mapping is read here (none with a citable source is in
# the repository), so such a tag names no vLLM release.
_NGC_TAG = re.compile(r"^\d{2}\.\d{2}(?:\.\d+)?(?:-[a-z0-9]+)*$")
NGC_REGISTRY = "nvcr.io/"
# Images of wrappers around vLLM tagged with the wrapper's own release: NVIDIA Dynamo's runtimes
# (nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0 is Dynamo 0.4.0) and KServe's Hugging Face server
_WRAPPER_IMAGES = ("ai-dynamo/", "huggingfaceserver")


def ngc_tag(image: str) -> bool:
    """Whether an image is an NGC container with a year.month release tag (`nvcr.io/nvidia/vllm:25.09-py3`)."""
    tag = image.rsplit("/", 1)[-1].split("@", 1)[0].partition(":")[2]
    return image.lower().startswith(NGC_REGISTRY) and bool(_NGC_TAG.match(tag))


@lru_cache(maxsize=1024)
def image_release(image: str) -> tuple[str | None, str]:
    """(the vLLM release an image tag names, the tag); None when it names none. `vllm/vllm-openai:v0.8.5`
    -> 0.8.5; `rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521` -> 0.8.5 (not the ROCm version); `latest` -> None;
    `nvcr.io/nvidia/vllm:25.09-py3` -> None (an NGC container release, not vLLM's)."""
    last = image.rsplit("/", 1)[-1].split("@", 1)[0]
    tag = last.partition(":")[2]
    if not tag:
        return None, "latest"
    if any(w in image.lower() for w in _WRAPPER_IMAGES) and not _VLLM_IN_TAG.search(tag):
        return None, tag  # the wrapper's own release (Dynamo 1.3.1), not the vLLM inside
    m = _VLLM_IN_TAG.search(tag)
    if m is None and "vllm" in image.lower() and not ngc_tag(image):
        m = _VERSION_TAG.match(tag)
    return (m.group(1) if m else None), tag



# The release a run assumes where an image names none (--vllm-version / the config's vllm_version), set by
# extract_all for the length of one extraction (a ContextVar: concurrent webhook reviews keep their own).
_ASSUMED_RELEASE: ContextVar[str | None] = ContextVar("assumed_release", default=None)


def flag_table_release(image: str | None, env: dict[str, str]) -> str | None:
    """The release whose argument parser reads this server's command: the one its image tag names, else its
    VLLM_VERSION env, else the run's --vllm-version (None: the newest). A release outside the table reads as
    the nearest one in it (configurator.vllm.args.table_version), as the engine evaluates it."""
    named = image_release(image)[0] if image else None
    named = named or env.get("VLLM_VERSION") or _ASSUMED_RELEASE.get()
    return _table_release(named) if named else None


@lru_cache(maxsize=1024)
def _table_release(named: str) -> str | None:
    from configurator.vllm.args import table_version

    try:
        return table_version(named)
    except InputError:
        return None


# what a release rests on when it is known: the file's image tag or VLLM_VERSION env, or the user's --vllm-version
# (a controller's default image, or the newest assumed, is not known: the controller's release may be another)
_KNOWN_RELEASE = ("image tag ", "env VLLM_VERSION", "--vllm-version")


def release_basis(image: str | None, env: dict[str, str]) -> str:
    """What the release that reads a server's command rests on (Server.basis['release'])."""
    from configurator.vllm.args import releases

    if image and (image_release(image)[0] or image_release(image)[1].startswith("latest")):
        return f"image tag {image}"  # latest: the newest release, which refuses what the newest modelled one does
    if env.get("VLLM_VERSION"):
        return f"env VLLM_VERSION={env['VLLM_VERSION']} in the file"
    if _ASSUMED_RELEASE.get():
        return f"--vllm-version {_ASSUMED_RELEASE.get()}"
    return f"assumed newest {releases()[-1]}"


def release_known(server: Server) -> bool:
    """Whether the file (or the user) says which vLLM release runs the server."""
    return server.basis.get("release", "").startswith(_KNOWN_RELEASE)


def _ranges(found: list[str]) -> str:
    """Releases as ranges of consecutive modelled ones: '0.8.0-0.10.2, 0.12.0'."""
    from configurator.vllm.args import releases

    order = releases()
    runs: list[list[str]] = []
    for r in sorted(found, key=order.index):
        if runs and order.index(runs[-1][-1]) + 1 == order.index(r):
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _accepted_by(words: list[str]) -> tuple[list[str], list[str]]:
    """(releases whose parser reads these option words without complaint, those that refuse them)."""
    from configurator.vllm.args import _normalise, release_args, releases, resolve, scan

    ok, refused = [], []
    for r in releases():
        try:
            if len(words) == 1 and words[0].startswith("-") and "=" not in words[0]:  # an option it may not have
                good = resolve(release_args(r), _normalise(words[0]), 0) is not None
            else:
                good = not scan(list(words), r, positional=False).leftovers
        except (InputError, ValueError, OverflowError, RecursionError):
            good = False
        (ok if good else refused).append(r)
    return ok, refused


def _release_dependent(server: Server, words: list[str], why: str, loc: Loc) -> bool:
    """Where the file names no release: a refusal that some modelled release does not make is a warning naming
    the releases that refuse it (Server.release_dependent); False when every release refuses it (an error)."""
    if release_known(server) or not words:
        return False
    from configurator.vllm.args import releases

    ok, refused = _accepted_by(words)
    if not ok or not refused:
        return False
    server.release_dependent.append((
        f"{' '.join(words)}: {why} in vLLM {server.flags_release or releases()[-1]} "
        f"({server.basis.get('release')}); "
        f"releases {_ranges(refused)} refuse it, {_ranges(ok)} accept it, and the file does not say which runs",
        loc))
    return True
