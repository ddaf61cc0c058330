"""`--model org/name` fetched from the Hugging Face Hub, offline: the Hub client's download and the network
probe are replaced, so each outcome (found, not found, unreachable, no huggingface_hub, a refused id) is
the tool's own message or a model named by its repository id."""

from __future__ import annotations

import json
import socket
import sys

import huggingface_hub as hub
import huggingface_hub.constants as hub_constants
import huggingface_hub.errors as hub_errors
import pytest

from configurator.errors import NotFoundError
from configurator.model import resolve
from tests.conftest import ROOT

REPO = "example-org/hub-only-model"  # no built-in profile, not in the cache below


@pytest.fixture
def online(monkeypatch, tmp_path):
    """No cache hit, not offline, and a network probe that succeeds without a network."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)

    class _Conn:
        def close(self):
            pass

    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: _Conn())
    return tmp_path


def _download_from(folder, config):
    (folder / "snap").mkdir()
    (folder / "snap" / "config.json").write_text(json.dumps(config))
    asked = []

    def fake(repo_id, filename, **kw):
        asked.append((repo_id, filename))
        if filename != "config.json":
            raise hub_errors.EntryNotFoundError(f"{filename} not in {repo_id}")
        return str(folder / "snap" / "config.json")
    return fake, asked


def test_a_hub_model_is_downloaded_and_named_by_its_id(online, monkeypatch, estimate_json):
    config = json.loads((ROOT / "profiles" / "models" / "Qwen__Qwen3-0.6B.json").read_text())["config"]
    fake, asked = _download_from(online, config)
    monkeypatch.setattr(hub, "hf_hub_download", fake)
    spec = resolve.resolve_model(REPO)
    assert spec.name == REPO and spec.hf_id == REPO and spec.num_hidden_layers == 28
    # config.json first; the optional files beside it may be absent without an error
    assert asked[0] == (REPO, "config.json") and all(r == REPO for r, _ in asked)
    _, out = estimate_json("--model", REPO, "--gpu", "l4")
    assert out["model"]["name"] == REPO


@pytest.mark.parametrize("error, says", [
    (OSError("404 Client Error. Repository Not Found for url"), "Hub: 404 Client Error"),
    (hub_errors.LocalEntryNotFoundError("offline"), "unreachable"),
    (ValueError("Repo id must be in the form 'repo_name'"), "Hub: Repo id must be"),
])
def test_hub_errors_are_the_tools_unknown_model_message(online, monkeypatch, run_cli, error, says):
    def fail(*a, **k):
        raise error
    monkeypatch.setattr(hub, "hf_hub_download", fail)
    with pytest.raises(NotFoundError) as e:
        resolve.resolve_model(REPO)
    assert says in str(e.value) and REPO in str(e.value)
    res = run_cli("estimate", "--model", REPO, "--gpu", "l4")
    assert res.exit_code == 2 and "unknown model" in res.stderr and "Traceback" not in res.output


def test_an_unreachable_hub_is_said_at_once(online, monkeypatch):
    def refuse(*a, **k):
        raise OSError("network unreachable")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(hub, "hf_hub_download", lambda *a, **k: pytest.fail("the Hub was asked while unreachable"))
    with pytest.raises(NotFoundError, match="unreachable"):
        resolve.resolve_model(REPO)


def test_without_huggingface_hub_the_message_says_how_to_get_it(online, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    monkeypatch.setenv("HF_HUB_CACHE", str(online / "empty-cache"))
    with pytest.raises(NotFoundError, match="pip install huggingface_hub"):
        resolve.resolve_model(REPO)


def test_offline_or_allow_hub_false_never_asks_the_hub(online, monkeypatch):
    monkeypatch.setattr(hub, "hf_hub_download", lambda *a, **k: pytest.fail("the Hub was asked"))
    with pytest.raises(NotFoundError):
        resolve.resolve_model(REPO, allow_hub=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(NotFoundError) as e:
        resolve.resolve_model(REPO)
    assert "nearest" in str(e.value) or "unknown model" in str(e.value)


@pytest.mark.parametrize("name, says", [
    ("", "name a model with --model"), ("   ", "--model is empty"), ("./no/such/config.json", "no such file or folder"),
    ("missing.json", "no such file or folder"), (".cache/huggingface", "unknown model"),
])
def test_names_that_are_no_model(run_cli, name, says):
    res = run_cli("estimate", "--model", name, "--gpu", "l4")
    assert res.exit_code == 2 and says in res.stderr and "Traceback" not in res.output
