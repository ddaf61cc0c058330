"""Extraction under hostile values: each wrong shape is a not-understood note at its line, never an exception,
and the rest of the object is still read. One case per line: (value path, YAML value, expected note text)."""

from __future__ import annotations

import pytest

from configurator.lint.find import extract_all
from configurator.lint.load import parse_text
from configurator.lint.shape import quantity_bytes, to_number

BASE = {
    "kind": "Deployment",
    "metadata": {"name": "srv", "namespace": "team", "annotations": {"a": "b"}},
    "spec": {"template": {"spec": {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"},
        "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.28.0",
                        "args": ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"],
                        "resources": {"limits": {"nvidia.com/gpu": 1}},
                        "startupProbe": {"periodSeconds": 10, "failureThreshold": 30}}]}}},
}
C = ("spec", "template", "spec", "containers", 0)

CASES = [
    (("kind",), "{}", "kind: expected a string"),
    (("metadata", "name"), "[a]", "metadata.name: expected a string"),
    (("metadata", "namespace"), "2001-12-14", "expected a string, got date 2001-12-14"),
    (("metadata", "annotations"), "[a]", "metadata.annotations: expected a mapping"),
    ((*C, "image"), "11", "image: expected a string, got integer 11"),
    ((*C, "resources", "limits", "nvidia.com/gpu"), "two", "expected an integer, got string 'two'"),
    ((*C, "resources", "limits", "nvidia.com/gpu"), "[2]", "expected an integer, got list"),
    ((*C, "resources", "limits", "nvidia.com/gpu"), "1" + "0" * 400, "out of range"),
    ((*C, "resources", "limits", "nvidia.com/gpu"), "true", "expected an integer, got boolean"),
    ((*C, "startupProbe", "periodSeconds"), ".inf", "expected an integer, got number inf"),
    ((*C, "startupProbe", "periodSeconds"), "auto", "expected an integer, got string 'auto'"),
    ((*C, "startupProbe", "periodSeconds"), ".nan", "expected an integer, got number nan"),
    ((*C, "volumeMounts"), "[not-a-mount]", "volumeMounts[0]: expected a mapping"),
    ((*C, "env"), "oops", "env: expected a list"),
    (("spec", "template", "spec", "nodeSelector"), "[a]", "nodeSelector: expected a mapping"),
]


def _yaml(path: tuple, value: str) -> str:
    import copy

    import yaml

    data = copy.deepcopy(BASE)
    cur = data
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = "@@VALUE@@"
    return yaml.safe_dump(data, sort_keys=False).replace("'@@VALUE@@'", value)


@pytest.mark.parametrize(("path", "value", "note"), CASES, ids=[f"{c[0][-1]}={c[1][:12]}" for c in CASES])
def test_a_wrong_shape_is_a_note_at_its_line(path, value, note):
    text = _yaml(path, value)
    docs, problems = parse_text(text, "m.yaml")
    assert problems == []
    servers, nus = extract_all(docs)
    hits = [n for n in nus if note in n.reason]
    assert hits, [n.reason for n in nus]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if value in t.split(":", 1)[-1] or value in t)
    assert hits[0].loc.line == line
    if path[0] != "kind":  # the rest of the object is still read
        assert len(servers) == 1 and servers[0].flags["model"] == "Qwen/Qwen3-8B"


@pytest.mark.parametrize("bad", ["1e400", "nan", "inf", "-5", "1" + "0" * 400])
def test_an_absurd_flag_value_drops_that_flag_only(bad):
    text = _yaml((*C, "args"), f'["vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "{bad}", "--dtype", "half"]')
    servers, _ = extract_all(parse_text(text, "m.yaml")[0])
    (s,) = servers
    assert "max_num_seqs" not in s.flags and s.flags["dtype"] == "half" and s.notes


@pytest.mark.parametrize(("key", "value"), [("gpuMemoryUtilization", "{a: 1}"), ("maxModelLen", "[1]"),
                                            ("tensorParallelSize", "1e308"), ("maxNumSeqs", ".inf")])
def test_production_stack_values_of_the_wrong_shape(key, value):
    text = f"servingEngineSpec:\n  modelSpec:\n  - name: m\n    modelURL: Qwen/Qwen3-8B\n    vllmConfig:\n" \
           f"      {key}: {value}\n"
    servers, _ = extract_all(parse_text(text, "v.yaml")[0])
    (s,) = servers
    assert s.flags == {"model": "Qwen/Qwen3-8B"} and s.notes


def test_model_as_a_list_and_a_300_character_model():
    for model in ("[a, b]", "x" * 300):
        text = f"servingEngineSpec:\n  modelSpec:\n  - name: m\n    modelURL: {model}\n"
        servers, nus = extract_all(parse_text(text, "v.yaml")[0])
        assert "model" not in servers[0].flags and (nus or servers[0].notes)


def test_lws_size_of_the_wrong_shape_reads_as_one_pod():
    import yaml

    pod = BASE["spec"]["template"]
    for size in ("[2]", "two", "0", "-3"):
        data = {"kind": "LeaderWorkerSet", "metadata": {"name": "l"},
                "spec": {"leaderWorkerTemplate": {"size": "@@SIZE@@", "leaderTemplate": pod}}}
        text = yaml.safe_dump(data, sort_keys=False).replace("'@@SIZE@@'", size)
        servers, nus = extract_all(parse_text(text, "l.yaml")[0])
        assert servers[0].pods == 1 and any("size" in n.reason for n in nus)


def test_chart_values_gpu_as_a_string():
    text = "model: {name: Qwen/Qwen3-8B}\nvllm: {maxModelLen: 4096}\ngpu: h100\nprobes: {startup: [1]}\n"
    servers, nus = extract_all(parse_text(text, "values.yaml")[0])
    assert servers[0].gpu_resource == "nvidia.com/gpu"
    assert {n.reason.split(":")[0] for n in nus} >= {"gpu", "probes.startup"}


def test_an_object_mentioning_vllm_with_no_server_is_not_understood():
    text = ("kind: Widget\nmetadata: {name: w}\nspec: {image: vllm/vllm-openai}\n---\n"
            "kind: Service\nmetadata: {name: vllm}\n")
    servers, nus = extract_all(parse_text(text, "w.yaml")[0])
    assert servers == [] and [(n.kind, n.loc.line) for n in nus] == [("Widget", 1)]


@pytest.mark.parametrize(("value", "expected"), [
    ("8Gi", 8 << 30), ("512Mi", 512 << 20), (20, 20), ("1.5Gi", 3 << 29), ("1e308", None), ("9" * 400 + "Ei", None),
    (True, None), ("-1Gi", None), (float("inf"), None), ([1], None), ("1500m", 1)])
def test_quantities(value, expected):
    assert quantity_bytes(value) == expected


@pytest.mark.parametrize(("value", "expected"), [("0.9", 0.9), (1, 1.0), ("nan", None), (float("inf"), None),
                                                 (True, None), (10**400, None), ("1e400", None)])
def test_numbers(value, expected):
    assert to_number(value) == expected
