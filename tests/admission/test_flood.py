"""benchmarks/webhook_flood.py at a small size: the webhook, a real process on loopback, keeps its memory
under the chart's limit with many concurrent large bodies, and denies must-deny probes itself (HTTP 200,
`allowed: false`) during a flood of 64-container pods beside slow connections."""

import importlib.util

from tests.conftest import ROOT


def _flood():
    spec = importlib.util.spec_from_file_location("webhook_flood", ROOT / "benchmarks" / "webhook_flood.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_flood_is_denied_by_the_webhook_within_its_memory(capsys):
    flood = _flood()
    code = flood.main(["--bodies", "120", "--body-mib", "3", "--flood-clients", "10", "--containers", "64",
                       "--slow", "300", "--probes", "4", "--flood-seconds", "6", "--rss-limit-mib", "512"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4/4 must-deny probes denied by the webhook" in out
    assert " 0 allowed" in out and "peak RSS" in out
