"""The releases a log's `[basename.py:LINE]` tags fit (configurator/vllm/linetags.py), on the real logs of data/logs,
and the table they are read from (profiles/vllm-log-lines/log_lines.json, scripts/gen_log_line_table.py)."""

import json
import re
import sys

import pytest

from configurator.vllm import linetags
from configurator.vllm.linetags import LOG_TEXT_FIELDS, releases_from_line_tags, releases_from_tags, tags_in
from configurator.vllm.versions import SUPPORTED
from tests.conftest import ROOT, repo_data

sys.path.insert(0, str(ROOT / "scripts"))
import gen_log_line_table as gen

# a final release as a record prints it ("0.13.0", "0.20.0 (vllm/vllm-openai:v0.20.0-...)", "0.13.0+faa43dbf.nv26.01"),
# not a pre-release or nightly ("0.19.2rc1.dev8+g4b7f5ea1a"): a nightly's lines are a commit's between two releases
FINAL = re.compile(r"(\d+\.\d+\.\d+(?:\.\d+)?)(?:$|[ +(])")


def _records() -> list[dict]:
    out = []
    for name in ("vllm-startup-logs.dev.jsonl", "vllm-startup-logs.dev2.jsonl", "vllm-startup-logs.found.jsonl"):
        out += [json.loads(x) for x in repo_data("logs", name).read_text().splitlines() if x.strip()]
    return out


def _log_text(r: dict) -> str:
    return "\n".join(str(r.get(k) or "") for k in LOG_TEXT_FIELDS)


def _printed_and_tagged() -> list[tuple[dict, str]]:
    out = []
    for r in _records():
        m = FINAL.match(str(r.get("vllm_version") or ""))
        if m and tags_in(_log_text(r)):
            out.append((r, m.group(1)))
    return out


def test_every_record_that_prints_a_final_release_has_tags_that_fit_it():
    """The table's consistency check: a log that prints its release was written by that release, so its tags
    must make the printed release a candidate (13 of 13 records on 2026-12-05). Of the 10 pre-releases and
    nightlies with tags, 2 fit the release they lead to (0.15.0rc3; 0.23.1rc1.dev531 -> 0.24.0), 1 the release
    after that (0.16.1rc1.dev265 -> 0.17.1) and 7 none: a nightly's lines are a commit's, between two releases."""
    pairs = _printed_and_tagged()
    assert len(pairs) >= 12
    misses = [(r["id"], v, releases_from_line_tags(_log_text(r))) for r, v in pairs
              if v not in releases_from_line_tags(_log_text(r))]
    assert misses == []
    # and the tags narrow: most such logs leave at most the printed release and its patch releases
    narrow = [r for r, v in pairs
              if {c.rsplit(".", 1)[0] for c in releases_from_line_tags(_log_text(r))} == {v.rsplit(".", 1)[0]}]
    assert len(narrow) >= len(pairs) * 2 // 3


def test_a_nightly_build_fits_no_release_or_a_neighbour():
    """A nightly's source is between two releases: its tags fit none, or a release next to it; never a far one."""
    nightlies = [r for r in _records() if re.search(r"\d+\.\d+\.\d+rc\d+\.dev\d+", str(r.get("vllm_version") or ""))
                 and tags_in(_log_text(r))]
    assert nightlies
    for r in nightlies:
        major = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", r["vllm_version"]).groups())
        for c in releases_from_line_tags(_log_text(r)):
            assert abs(int(c.split(".")[1]) - major[1]) <= 1, (r["id"], c)


def test_a_real_line_and_its_path_form_give_the_same_releases():
    r, v = _printed_and_tagged()[0]
    line = next(x for x in _log_text(r).splitlines() if linetags.TAG.search(x))
    name = linetags.TAG.search(line).group(1)
    got = releases_from_line_tags(line)
    assert v in got
    # 0.11+ can print a shortened path instead of the file name (vllm/logging_utils/formatter.py shrink_path)
    assert releases_from_line_tags(line.replace(f"[{name}:", f"[v1/.../{name}:")) == got


def test_a_tag_on_no_logging_call_gives_no_candidates():
    r, _ = _printed_and_tagged()[0]
    text = _log_text(r)
    name, _line = tags_in(text)[0]
    assert releases_from_line_tags(f"INFO 10-06 15:57:53 [{name}:999999] Available KV cache memory: 2.31 GiB") == []
    # one impossible tag among real ones: every release is ruled out
    assert releases_from_line_tags(text + f"\nINFO 10-06 15:57:53 [{name}:999999] x") == []


def test_unknown_basenames_are_ignored():
    r, _v = _printed_and_tagged()[0]
    text = _log_text(r)
    assert releases_from_line_tags(text + "\nINFO 10-06 15:57:53 [not_a_vllm_file.py:12] x") == \
        releases_from_line_tags(text)
    assert releases_from_line_tags("INFO 10-06 15:57:53 [not_a_vllm_file.py:12] x") == []
    assert releases_from_line_tags("no tags at all") == []


def test_a_release_without_the_basename_does_not_vote_and_is_no_candidate_alone():
    """A tag only some releases' files hold: the candidates are among those releases (a release lacking the
    basename neither fits nor refutes it, and a release with no tag to vote on is no candidate)."""
    table = dict(linetags._table())
    counts: dict[str, int] = {}
    for row in table.values():
        for name in row:
            counts[name] = counts.get(name, 0) + 1
    name = min((n for n in counts if 0 < counts[n] < len(table)), key=counts.__getitem__)
    holder = next(v for v, row in table.items() if name in row)
    line = table[holder][name][0][0]  # the first line of its first logging call there
    got = releases_from_tags([(name, line)])
    assert holder in got and all(name in table[v] for v in got)
    # with a tag of another basename every release holds, the releases lacking `name` are judged on that one
    common = next(n for n in counts if counts[n] == len(table))
    other_line = table[holder][common][0][0]
    both = releases_from_tags([(name, line), (common, other_line)])
    assert holder in both
    assert set(both) == {v for v in table if (name not in table[v] or linetags._on_call(table[v][name], line))
                         and linetags._on_call(table[v][common], other_line)}


def test_the_table_covers_every_modelled_release_and_states_its_source():
    path = ROOT / "profiles" / "vllm-log-lines" / "log_lines.json"
    data = json.loads(path.read_text())
    assert path.stat().st_size < 1_000_000
    assert linetags.releases() == list(SUPPORTED)
    assert "pypi.org/project/vllm" in data["source"] and re.fullmatch(r"\d{4}-\d\d-\d\d", data["read"])
    for name in ("gpu_worker.py", "gpu_model_runner.py", "kv_cache_utils.py", "core.py", "utils.py"):
        assert name in data["basenames"]
        assert all(name in row for row in data["releases"].values()), name


def test_the_generator_keeps_every_line_of_every_logging_call():
    src = '''import logging
logger = init_logger(__name__)
logger.info("one line")
logger.warning_once(
    "two lines %s",
    x)
lgr.info(message, version, model_name)
init_logger(__name__).info_once("a")
parser.error("not a logging call")
warnings.warn("nor this")
'''
    assert gen.logging_lines(src) == {3, 4, 5, 6, 7, 8}
    assert gen.ranges({3, 4, 5, 6, 9, 12, 13}) == "3-6,9,12-13"


@pytest.mark.parametrize("text, expected", [
    ("(Worker_TP0 pid=41699) INFO 10-06 15:57:53 [gpu_worker.py:298] Available KV", [("gpu_worker.py", 298)]),
    ("INFO 01-02 10:00:00 [model_executor/.../utils/fp8_utils.py:12] x\n[a.py:1] [a.py:1]",
     [("fp8_utils.py", 12), ("a.py", 1)]),
    ("[rank0]:[W1006 ProcessGroupNCCL.cpp:4561] not a python tag", []),
])
def test_tags_in(text, expected):
    assert tags_in(text) == expected


def test_calibrate_reads_the_release_of_a_log_without_a_version_line_from_its_tags(run_cli, tmp_path):
    """Real logs that print no version (chosen by what they hold: tags that narrow the release, an available KV
    figure, a model named in the record): calibrate reads them as the newest release their tags fit, and says so
    in the text and in the JSON."""
    from configurator.vllm.logparse import LogError, parse_log

    ran = 0
    for r in _records():
        text = str(r.get("log_excerpt") or "")
        if r.get("vllm_version") or r.get("engine") != "V1" or not text:
            continue
        try:
            log = parse_log(text)
        except LogError:
            continue
        candidates = releases_from_tags(log.line_tags)
        if log.vllm_version or not candidates or log.available_kv_bytes is None or log.available_kv_bytes <= 0:
            continue
        path = tmp_path / f"{r['id']}.log"
        path.write_text(text)
        model = str(r.get("model") or "").split(" ")[0]
        res = run_cli("calibrate", str(path), "--model", model, "--gpu", "b200", "-o", str(tmp_path / "c.yaml"),
                      "--force", "--format", "json")
        if res.exit_code != 0:  # a model this offline checkout cannot resolve, a log too thin to calibrate
            continue
        got = json.loads(res.stdout)
        assert got["calibration"]["vllm_version"] == candidates[-1]
        assert got["vllm_version_source"].startswith("release from the log's source-line tags: candidate")
        assert candidates[0] in got["vllm_version_source"]
        text_out = run_cli("calibrate", str(path), "--model", model, "--gpu", "b200", "-o", str(tmp_path / "c.yaml"),
                           "--force").stdout
        assert f"vLLM {candidates[-1]}: release from the log's source-line tags" in text_out
        assert "assuming the newest modelled release" not in text_out
        ran += 1
    assert ran >= 5
