"""Build the table of vLLM's logging-call source lines per release, from the wheels' own Python source.

    python scripts/gen_log_line_table.py --src /tmp/lt-src [--out profiles/vllm-log-lines/log_lines.json]

vLLM's log format puts the logging call's place in every line: "INFO 10-06 15:57:53 [gpu_worker.py:298] ..."
(vllm/logger.py _FORMAT "[%(filename)s:%(lineno)d]"; 0.11+ "[%(fileinfo)s:%(lineno)d]", the file name or a
shortened path, vllm/logging_utils/formatter.py). The line numbers move between releases, so the tags of a log
that prints no version still say which releases could have written it (configurator/vllm/linetags.py).

Source: the wheels published on PyPI, https://pypi.org/project/vllm/X/ (files under
https://files.pythonhosted.org/packages/.../vllm-X-cp38-abi3-manylinux*_x86_64.whl, fetched with
`pip download vllm==X --no-deps`), read 2026-12-05; each unpacked at <src>/<X>/vllm/ (`unzip WHEEL 'vllm/*.py'`,
the wheel's file name in <src>/<X>/.wheel: the table's `wheels`). vLLM is never imported.

For every release in configurator/vllm/versions.py SUPPORTED, every file whose basename is in BASENAMES (the
files whose tags start-up logs show: the list below, and every basename tagged in the log text of
data/logs/*.jsonl) is parsed with `ast`; every logging call (a call of debug / info / warning / error / ... /
info_once / warning_once / debug_once on a name such as `logger`) gives the source lines it spans, lineno to
end_lineno: which of them Python's logging reports for a call written over several lines depends on the
interpreter, so all are kept. Files of the same basename in different folders are merged (the tag names the
basename only). Output: one JSON file; `spans` holds each distinct per-file line set once ("12-14,20,33"),
`releases` maps release -> basename -> index into `spans` (a basename absent there is not in that release).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from configurator.vllm.linetags import LOG_TEXT_FIELDS, tags_in  # noqa: E402
from configurator.vllm.versions import SUPPORTED, _key  # noqa: E402

# files whose logging calls start-up logs show (engine, worker, model runner, KV sizing, platform, loader,
# API server); the script adds every basename tagged in data/logs
BASENAMES = (
    "api_server.py", "api_utils.py", "arg_utils.py", "backends.py", "config.py", "core.py", "core_client.py",
    "cuda.py", "default_loader.py", "gpu_model_runner.py", "gpu_worker.py", "interface.py", "kv_cache_utils.py",
    "launcher.py", "llm_engine.py", "loggers.py", "logger.py", "model.py", "model_runner.py", "monitor.py",
    "multiproc_executor.py", "parallel_state.py", "scheduler.py", "selector.py", "utils.py", "weight_utils.py",
    "worker.py", "worker_base.py", "__init__.py", "cache.py", "compilation.py", "decorators.py", "backend.py",
    "cuda_communicator.py", "pynccl.py", "custom_all_reduce.py", "serve.py", "ray_utils.py", "executor_base.py",
)
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log",
                         "debug_once", "info_once", "warning_once", "error_once"})
READ = "2026-12-05"


def _is_logger(node: ast.expr) -> bool:
    """`logger`, `_logger`, `self.logger`, `lgr` (0.23+ api_utils.log_version_and_model), `logging`,
    `init_logger(__name__)`: the object a logging call is made on."""
    if isinstance(node, ast.Call):
        return _is_logger(node.func) or getattr(node.func, "id", "") == "init_logger"
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "logger" in name.lower() or name in ("lgr", "logging")


def logging_lines(source: str) -> set[int]:
    """Every source line a logging call spans (lineno..end_lineno)."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in LOG_METHODS and _is_logger(node.func.value):
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


def ranges(lines: set[int]) -> str:
    """{12, 13, 14, 20} -> '12-14,20'."""
    out: list[str] = []
    for n in sorted(lines):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in out)


def logged_basenames() -> set[str]:
    """Every basename tagged in the log text of data/logs/*.jsonl."""
    out: set[str] = set()
    for path in sorted((ROOT / "data" / "logs").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                text = "\n".join(str(r.get(k) or "") for k in LOG_TEXT_FIELDS)
                out.update(b for b, _ in tags_in(text))
    return out


def build(src: Path, releases: list[str], basenames: set[str]) -> dict:
    spans: list[str] = []
    index: dict[str, int] = {}
    table: dict[str, dict[str, int]] = {}
    wheels: dict[str, str] = {}
    for version in releases:
        root = src / version / "vllm"
        if not root.is_dir():
            raise SystemExit(f"{root}: not found (unpack vllm=={version}'s wheel there)")
        per: dict[str, set[int]] = {}
        for path in sorted(root.rglob("*.py")):
            if path.name not in basenames:
                continue
            try:
                lines = logging_lines(path.read_text(encoding="utf-8"))
            except SyntaxError as e:  # newer syntax than this interpreter reads: run with a newer Python
                raise SystemExit(f"{path}: {e}; run this script with a Python that reads it") from None
            per.setdefault(path.name, set()).update(lines)
        row = {}
        for name, lines in sorted(per.items()):
            if lines:
                text = ranges(lines)
                row[name] = index.setdefault(text, len(spans))
                if row[name] == len(spans):
                    spans.append(text)
        table[version] = row
        marker = src / version / ".wheel"  # the wheel's file name, where the unpacking step left it
        if marker.is_file():
            wheels[version] = marker.read_text(encoding="utf-8").strip()
    return {"about": "vLLM's logging-call source lines per release and file basename, read statically from the "
                     "wheels' source by scripts/gen_log_line_table.py (do not edit by hand); used by "
                     "configurator/vllm/linetags.py",
            "source": "https://pypi.org/project/vllm/ (pip download vllm==X --no-deps: "
                      "https://files.pythonhosted.org/packages/.../vllm-X-cp38-abi3-manylinux*_x86_64.whl)",
            "read": READ, "wheels": wheels, "basenames": sorted(basenames), "spans": spans, "releases": table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, required=True, help="folder of <release>/vllm/ source trees")
    ap.add_argument("--out", type=Path, default=ROOT / "profiles" / "vllm-log-lines" / "log_lines.json")
    args = ap.parse_args()
    basenames = set(BASENAMES) | logged_basenames()
    data = build(args.src, sorted(SUPPORTED, key=_key), basenames)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(data['releases'])} releases, {len(basenames)} basenames, "
          f"{len(data['spans'])} distinct line sets, {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
