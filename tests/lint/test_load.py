"""The loader under hostile input: special files, unreadable folders, alias cycles, deep nesting, big files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from configurator.lint.load import MAX_DOCUMENT_NODES, load, parse_text
from tests.conftest import ROOT

GOOD = (ROOT / "tests" / "manifests" / "util-high.yaml").read_text()


def test_self_referencing_alias_is_a_parse_error():
    docs, problems = parse_text("a: &a [*a]\n", "x.yaml")
    assert docs == [] and len(problems) == 1 and "refers to a node that contains it" in problems[0].message


def test_alias_bomb_is_refused():
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        text += f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 10) + "]\n"
    docs, problems = parse_text(text, "bomb.yaml")
    assert docs == [] and "aliases expand past" in problems[0].message


def test_shared_alias_is_fine_and_counted_once():
    docs, problems = parse_text("a: &a {k: v}\nb: *a\nc: *a\n", "ok.yaml")
    assert problems == [] and docs[0].data["c"] == {"k": "v"}


def test_deep_nesting_is_a_parse_error_or_parses_never_a_recursion_error():
    for depth in (990, 1000, 5000):
        docs, problems = parse_text("[" * depth + "]" * depth, "deep.yaml")
        assert docs or problems
    docs, problems = parse_text("a:\n" + "".join(" " * i + "a:\n" for i in range(1, 1200)), "deep.yaml")
    assert problems and "not valid YAML" in problems[0].message


def test_a_huge_flow_list_is_refused_before_it_is_composed():
    text = "[" + ",".join(["0"] * (MAX_DOCUMENT_NODES + 10)) + "]"
    docs, problems = parse_text(text, "big.yaml")
    assert docs == [] and "more than" in problems[0].message and "alias" not in problems[0].message


def test_block_scalar_columns_point_at_the_flag():
    from configurator.lint.find import extract

    text = textwrap.dedent("""\
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.28.0
              command: ["sh", "-c"]
              args:
                - |
                  echo start;
                  vllm serve Qwen/Qwen3-8B \\
                    --max-model-len 8192
        """)
    docs, _ = parse_text(text, "p.yaml")
    (s,) = extract(docs)
    lines = text.splitlines()
    for dest, written in (("max_model_len", "--max-model-len 8192"), ("model", "Qwen/Qwen3-8B")):
        loc = s.flag_locs[dest]
        assert lines[loc.line - 1][loc.column - 1:].startswith(written), (dest, loc)
    assert s.flag_locs["max_model_len"].line == 12


def test_one_line_sh_c_columns_point_at_the_flag():
    from configurator.lint.find import extract

    text = 'kind: Pod\nspec:\n  containers:\n  - image: vllm/vllm-openai\n' \
           '    args: [sh, -c, "vllm serve m --max-model-len 8192"]\n'
    (s,) = extract(parse_text(text, "p.yaml")[0])
    loc = s.flag_locs["max_model_len"]
    assert text.splitlines()[loc.line - 1][loc.column - 1:].startswith("--max-model-len")


def test_a_long_sh_c_script_is_read_in_linear_time():
    # not timed (benchmarks time things): 50,000 words must be read at all, and each flag found
    words = " ".join(f"--unknown-{i} x" for i in range(25_000))
    text = f'kind: Pod\nspec:\n  containers:\n  - image: vllm/vllm-openai\n    args: [sh, -c, "vllm serve m {words} ' \
           '--max-model-len 4096"]\n'
    from configurator.lint.find import extract

    (s,) = extract(parse_text(text, "p.yaml")[0])
    assert s.flags["max_model_len"] == 4096


CHILD = """
import json, os, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
folder, locked = sys.argv[1], sys.argv[2]
if os.geteuid() == 0:
    # root reads a mode-000 folder anyway: make the listing of that one folder fail as it would for a user
    real = os.scandir
    def scandir(path="."):
        if os.path.abspath(os.fspath(path)) == locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)
    os.scandir = scandir
from configurator.lint.engine import Options, evaluate
from configurator.lint.load import load
t = time.time()
docs, problems = load([folder])
report = evaluate(docs, problems, Options())
print(json.dumps({"s": time.time() - t, "findings": [[f.file, f.rule, f.message] for f in report.findings]}))
"""


def test_check_a_folder_of_special_files_within_limits(tmp_path):
    folder = tmp_path / "scan"
    folder.mkdir()
    os.mkfifo(folder / "pipe.yaml")
    (folder / "zero.yaml").symlink_to("/dev/zero")
    (folder / "alias.yaml").write_text("a: &a [*a]\n")
    (folder / "good.yaml").write_text(GOOD)
    locked = folder / "locked"
    locked.mkdir()
    (locked / "hidden.yaml").write_text(GOOD)
    locked.chmod(0)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(locked)], capture_output=True,
                              text=True, timeout=10, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    by_file: dict[str, list] = {}
    for file, rule, message in out["findings"]:
        by_file.setdefault(os.path.basename(file), []).append((rule, message))
    assert ("parse-error", "a FIFO, not a regular file: not read") in by_file["pipe.yaml"]
    assert ("parse-error", "a character device, not a regular file: not read") in by_file["zero.yaml"]
    assert any("contains it" in m for _, m in by_file["alias.yaml"])
    assert any(r == "parse-error" and "cannot read folder" in m for r, m in by_file["locked"])
    assert ("gpu-memory-utilization" in {r for r, _ in by_file["good.yaml"]})


def test_missing_path_is_a_usage_error(tmp_path):
    import pytest

    with pytest.raises(FileNotFoundError):
        load([str(tmp_path / "nope")])
