"""The prebuilt index of the shipped YAML data (profiles/_index.json, configurator/resources.py): in step with the
files, the same data as parsing them, and never read for a file that changed since it was built."""

from __future__ import annotations

import json

import yaml

from configurator import resources
from configurator.resources import INDEX_FILE, build_index, data_path, load_yaml


def test_the_committed_index_is_current():
    committed = json.loads(data_path("profiles", INDEX_FILE).read_text(encoding="utf-8"))
    assert committed == build_index(), "profiles/_index.json is stale: run `make schemas`"
    # every GPU profile and both tables are in it (a cold start then imports no YAML parser)
    names = set(committed["files"])
    assert {"overheads.yaml", "error_bands.yaml"} <= names
    assert {f"gpus/{p.name}" for p in data_path("profiles", "gpus").glob("*.yaml")} <= names


def test_the_index_gives_what_parsing_gives():
    for name in build_index()["files"]:
        path = data_path("profiles", *name.split("/"))
        assert load_yaml("profiles", *name.split("/")) == yaml.safe_load(path.read_text(encoding="utf-8"))


def test_a_changed_file_is_parsed_not_read_from_the_index(monkeypatch):
    entry = {"digest": "0" * 32, "json": json.dumps({"eras": [{"since": "0.0.0", "stale": True}]})}
    monkeypatch.setattr(resources, "_index", lambda top: {"overheads.yaml": entry})
    fresh = load_yaml("profiles", "overheads.yaml")
    assert fresh == yaml.safe_load(data_path("profiles", "overheads.yaml").read_text(encoding="utf-8"))
    assert not any(era.get("stale") for era in fresh["eras"])
    # and a caller that changes what it got does not change what the next caller gets
    first = load_yaml("profiles", "error_bands.yaml")
    first["strata"].clear()
    assert load_yaml("profiles", "error_bands.yaml")["strata"]


def test_estimate_imports_no_yaml_parser():
    import subprocess
    import sys

    code = ("import sys; from configurator.estimate import estimate, EstimateRequest; "
            "from configurator.hardware.catalog import find_gpu; from configurator.vllm.overhead_data import era_row; "
            "from configurator.estimate.band import band_bytes; find_gpu('a100-80gb'); era_row('0.19.0'); "
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
