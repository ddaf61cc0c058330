"""schemas/ is generated from the pydantic models; fail when it drifts (run scripts/gen_schemas.py)."""

from configurator.schemas import SCHEMAS, render
from tests.conftest import ROOT


def test_schemas_up_to_date():
    for name in SCHEMAS:
        assert (ROOT / "schemas" / name).read_text() == render(name), f"regenerate schemas/{name}"
