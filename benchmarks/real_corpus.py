"""Coverage of `check` on real published manifests (tests/corpus/real, provenance in its SOURCES.md).

For every file it compares what `check` extracts with tests/corpus/real/expected.yaml: each vLLM
server's model, GPUs, GPU type, the four memory flags (gpu_memory_utilization, kv_cache_dtype,
max_num_seqs, max_model_len) and TP / PP; and whether a file that mentions vLLM ends with neither a
server nor a `not-understood` / `template-not-rendered` finding ("silent"). It also prints, for
information, how many servers are checked against the memory budget with a default GPU and without.

Usage: python benchmarks/real_corpus.py [--verbose]
Exits 1 when fewer than 95% of the expected servers are extracted right, or any file is silent
(issue 10's targets).
"""


import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus" / "real"
FLAGS = ("gpu_memory_utilization", "kv_cache_dtype", "max_num_seqs", "max_model_len")
TARGET_RIGHT = 0.95
DEFAULT_GPU = "h100-80gb"  # the `.vllm-configurator.yaml` default GPU of the budget figure


@dataclass
class FileResult:
    file: str
    expected: list[dict]
    got: list[dict]
    not_understood: int
    templates: int
    want_not_understood: int
    want_template: bool
    wrong: list[str] = field(default_factory=list)  # one line per server that is not right

    @property
    def right(self) -> int:
        return len(self.expected) - sum(1 for w in self.wrong if not w.startswith("extra"))

    @property
    def silent(self) -> bool:
        wants = bool(self.expected) or self.want_not_understood > 0 or self.want_template
        return wants and not self.got and not self.not_understood and not self.templates


def _view(server) -> dict:
    """What the corpus compares of one extracted server."""
    from configurator.hardware.labels import gpu_from_labels

    gpu, _ = gpu_from_labels(server.gpu_labels)
    return {"model": server.flags.get("model"), "gpus": server.gpu_count, "gpu": gpu.name if gpu else None,
            "flags": {k: server.flags[k] for k in FLAGS if k in server.flags},
            "tp": server.flags.get("tensor_parallel_size", 1), "pp": server.flags.get("pipeline_parallel_size", 1)}


def _diff(want: dict, got: dict) -> list[str]:
    out = []
    for key in ("model", "gpus", "gpu"):
        if want.get(key) != got[key]:
            out.append(f"{key} {got[key]!r} (want {want.get(key)!r})")
    for key in ("tp", "pp"):
        if want.get(key, 1) != got[key]:
            out.append(f"{key} {got[key]!r} (want {want.get(key, 1)!r})")
    wflags = want.get("flags") or {}
    for k in FLAGS:
        w, g = wflags.get(k), got["flags"].get(k)
        if (w is None) != (g is None) or (w is not None and (float(w) != float(g) if isinstance(w, float) else w != g)):
            out.append(f"{k} {g!r} (want {w!r})")
    return out


def evaluate_file(rel: str, want: dict) -> FileResult:
    from configurator.lint.extract import extract_all
    from configurator.lint.render import RULE, Tools, load_paths

    docs, problems = load_paths([str(CORPUS / rel)], tools=Tools(None, None))
    servers, not_understood = extract_all(docs)
    got = [_view(s) for s in servers]
    expected = want.get("servers") or []
    r = FileResult(rel, expected, got, len(not_understood), sum(getattr(p, "rule", "") == RULE for p in problems),
                   int(want.get("not_understood") or 0), bool(want.get("template")))
    for i, w in enumerate(expected):
        if i >= len(got):
            r.wrong.append(f"missing: {w['model']}")
            continue
        d = _diff(w, got[i])
        if d:
            r.wrong.append(f"{w['model']}: " + "; ".join(d))
    r.wrong += [f"extra: {g['model']}" for g in got[len(expected):]]
    return r


def evaluate() -> list[FileResult]:
    expected = yaml.safe_load((CORPUS / "expected.yaml").read_text())["files"]
    return [evaluate_file(rel, want or {}) for rel, want in expected.items()]


def budget_coverage(gpu: str | None) -> tuple[int, int]:
    """(servers checked against the memory budget, servers) over the whole corpus."""
    from configurator.lint.engine import Options
    from configurator.lint.engine import evaluate as run
    from configurator.lint.render import Tools, load_paths

    docs, problems = load_paths([str(CORPUS)], tools=Tools(None, None))
    report = run(docs, problems, Options(gpu=gpu))
    return sum(s.verdict != "not-checked" for s in report.servers), len(report.servers)


def summary(results: list[FileResult]) -> dict:
    n = sum(len(r.expected) for r in results)
    right = sum(r.right for r in results)
    return {"files": len(results), "servers": n, "right": right, "share": right / n if n else 1.0,
            "extra": sum(w.startswith("extra") for r in results for w in r.wrong),
            "silent": [r.file for r in results if r.silent],
            "not_understood_mismatch": [r.file for r in results
                                        if (r.not_understood + r.templates > 0) != (r.want_not_understood > 0
                                                                                   or r.want_template)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--verbose", action="store_true", help="one line per file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    results = evaluate()
    s = summary(results)
    by_repo: dict[str, list[FileResult]] = {}
    for r in results:
        by_repo.setdefault(r.file.split("/", 1)[0], []).append(r)
    print(f"{'repository':48s} {'files':>5s} {'servers':>7s} {'right':>5s} {'n-u':>4s} {'silent':>6s}")
    for repo, rs in sorted(by_repo.items()):
        print(f"{repo:48s} {len(rs):5d} {sum(len(r.expected) for r in rs):7d} {sum(r.right for r in rs):5d} "
              f"{sum(r.not_understood + r.templates for r in rs):4d} {sum(r.silent for r in rs):6d}")
    for r in results:
        if args.verbose or r.wrong or r.silent:
            status = "SILENT" if r.silent else ("ok" if not r.wrong else "WRONG")
            print(f"  {status:6s} {r.file}" + "".join(f"\n           {w}" for w in r.wrong))
    checked, total = budget_coverage(DEFAULT_GPU)
    checked_none, _ = budget_coverage(None)
    print(f"\nservers extracted right: {s['right']}/{s['servers']} = {s['share']:.1%} (target >= {TARGET_RIGHT:.0%}); "
          f"extra servers: {s['extra']}")
    print(f"silent files (mention vLLM, no server and no not-understood finding): {len(s['silent'])} (target 0)")
    print(f"files whose not-understood findings differ from expected.yaml: {len(s['not_understood_mismatch'])}")
    print(f"servers checked against the budget: {checked}/{total} with --gpu {DEFAULT_GPU}, "
          f"{checked_none}/{total} with no GPU default (information)")
    ok = s["share"] >= TARGET_RIGHT and not s["silent"]
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
