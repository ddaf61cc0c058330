"""The webhook's model lookup: the catalog and the operator's folders, never a path a pod names."""

import json

import pytest

from configurator.admission.models import catalog_resolver
from configurator.errors import InputError, NotFoundError
from configurator.resources import data_path


def _profile():
    path = sorted(data_path("profiles", "models").glob("*.json"))[0]
    d = json.loads(path.read_text())
    return d["hf_id"], d


def test_catalog_and_operator_folders(tmp_path):
    hf_id, d = _profile()
    assert catalog_resolver(())(hf_id).hf_id == hf_id
    if isinstance(d.get("config"), dict):
        (tmp_path / "acme__private-model.json").write_text(json.dumps(d["config"]))
        spec = catalog_resolver((str(tmp_path),))("acme/private-model")
        assert spec.layers
    with pytest.raises(NotFoundError):
        catalog_resolver((str(tmp_path),))("acme/missing")


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../b", "~/m", "./m", "a/b/c", "m.json/..", "",
                                  "x" * 300, "a\\b", "a\x00b"])
def test_paths_are_never_looked_up(tmp_path, name, monkeypatch):
    monkeypatch.setattr("configurator.model.resolver.load_local", lambda p: pytest.fail(f"opened {p}"))
    with pytest.raises(InputError):
        catalog_resolver((str(tmp_path),))(name)
