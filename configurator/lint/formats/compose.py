"""docker compose files (compose-spec.io): one vLLM server per service that runs vLLM.

Keys from the Compose Specification (compose-spec/compose-spec, spec.md and deploy.md): services.<name>.{image,
build, entrypoint, command (a string or a list), environment (a map or a list of KEY=VALUE), shm_size, ipc,
gpus, deploy.resources.reservations.devices[].{driver, count (a number or `all`), device_ids, capabilities}}.
A service runs vLLM when its entrypoint or command is a vLLM command line, or when its image (or its name /
build context) is vLLM's and the command holds only options: the vllm/vllm-openai image's entrypoint is vLLM's
OpenAI server (vllm-project/vllm docker/Dockerfile, `ENTRYPOINT ["vllm", "serve"]`), so `command` is its
arguments. `${VAR:-default}` / `${VAR-default}` are taken at their default (compose reads a `.env` file the
check does not see; an info finding says so), `$VAR` from the service's own environment; a model left to a
variable the file does not give is reported, not guessed. GPUs: the device reservation's count, else its
device_ids, else `gpus: N`; CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES in the environment narrow `all`.
"""

from __future__ import annotations

import re

from configurator.lint.discover import VLLM_COMMAND, build, command_tokens, env_of, expand_vars, new_server
from configurator.lint.extract import Inputs, Server, Token, shell_words
from configurator.lint.formats import register
from configurator.lint.formats._common import set_gpu_count
from configurator.lint.shape import Node

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_DEVICES = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")


def recognise(obj: Node) -> bool:
    if obj.has("kind"):
        return False
    services = obj.mapping("services")
    return services is not None and any(
        isinstance(v.value, dict) and any(k in v.value for k in ("image", "build", "command", "entrypoint"))
        for _, v in services.entries())


def _docker_bytes(text: str) -> int | None:
    """A docker size (`16gb`, `8G`, `1024m`): units of 1024, as docker's units.RAMInBytes reads them."""
    m = _SIZE.match(text)
    if m is None:
        return None
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2).lower() or " "))


def _args_tokens(node: Node, env: dict[str, str], assumed: list[str]) -> list[Token]:
    """A command that holds only options (the image's entrypoint runs vLLM): its words as tokens."""
    if isinstance(node.value, str):
        text, took = expand_vars(node.value, env)
        assumed += took
        return [Token(w, node.loc()) for seg in shell_words(text) for w, _ in seg]
    out = []
    for item in node.items():
        t = item.text()
        if t is not None:
            t, took = expand_vars(t, env)
            assumed += took
            out.append(Token(t, item.loc()))
    return out


def _gpus(s: Server, svc: Node, env: dict[str, str]) -> None:
    for dev in svc.mappings("deploy", "resources", "reservations", "devices"):
        caps = [str(c.value) for c in dev.items("capabilities")]
        if caps and "gpu" not in caps:
            continue
        count, ids = dev.at("count").value, dev.at("device_ids").value  # raw: `all` and ${VAR} are not shape errors
        if (isinstance(count, int) and not isinstance(count, bool)) or (isinstance(count, str) and count.isdigit()):
            set_gpu_count(s, int(count), dev.loc("count"))
        elif isinstance(ids, list) and ids and not any("$" in str(x) for x in ids):
            set_gpu_count(s, len(ids), dev.loc("device_ids"))
        elif count is not None or ids is not None:
            s.gpu_loc = dev.loc()
    gpus = svc.at("gpus").value
    if s.gpu_count is None and isinstance(gpus, int) and not isinstance(gpus, bool):
        set_gpu_count(s, gpus, svc.loc("gpus"))
    for key in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if _DEVICES.match(env.get(key, "")) and (s.gpu_count is None or s.gpu_count > len(env[key].split(","))):
            set_gpu_count(s, len(env[key].split(",")), s.gpu_loc or svc.loc())
            break


def _service(obj: Node, name: str, svc: Node) -> Server | None:
    env = env_of(svc.value)
    image = svc.at("image").value
    image = expand_vars(image, env)[0] if isinstance(image, str) else None
    built = svc.at("build").value
    build_ctx = str(built.get("context", "") if isinstance(built, dict) else built or "")
    entry, command = svc.at("entrypoint"), svc.at("command")
    texts = [x for x in (entry.value, command.value) if x is not None]
    runs = any(VLLM_COMMAND.search(t if isinstance(t, str) else " ".join(map(str, t[:4]))) for t in texts)
    vllm_image = "vllm" in (image or "").lower() or ("vllm" in name.lower() + build_ctx.lower() and image is None)
    first = command.value if isinstance(command.value, str) else (command.value or [""])[0] if isinstance(
        command.value, list) else ""
    if not runs and not (vllm_image and entry.value is None and (command.value is None or str(first).lstrip()
                                                                   .startswith("-"))):
        return None
    path = (*svc.path[len(obj.path):],)
    s = new_server(obj, path, "compose service", env, image=image, name=name)
    assumed: list[str] = []
    tokens: list[Token] = []
    for node in (entry, command):
        if node.value is None:
            continue
        words = node.value if isinstance(node.value, str) else " ".join(map(str, node.value[:4]))
        if VLLM_COMMAND.search(words):
            tokens = (command_tokens(node, env, assumed) or []) + (
                _args_tokens(command, env, assumed) if node is entry else [])
            break
    else:
        tokens = _args_tokens(command, env, assumed) if command.value is not None else []
    _gpus(s, svc, env)
    shm = svc.at("shm_size").value
    shm = expand_vars(str(shm), env)[0] if isinstance(shm, str | int) else None
    if shm is not None and _docker_bytes(shm) is not None:
        s.shm_bytes, s.shm_loc = _docker_bytes(shm), svc.loc("shm_size")
    if svc.at("ipc").value == "host":
        s.shm_bytes, s.shm_loc = 0, svc.loc("ipc")
    return build(s, obj, path, tokens, assumed)


def extract(obj: Node, inputs: Inputs) -> list[Server]:
    out = []
    services = obj.mapping("services")
    for name, svc in services.entries() if services is not None else []:
        if isinstance(svc.value, dict):
            s = _service(obj, name, svc)
            if s is not None:
                out.append(s)
    return out


register("docker-compose", recognise, extract, order=20, kinds=())
