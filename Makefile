PYTHON ?= python3

.PHONY: test lint schemas bench
test:  ## install the test dependencies and run the test suite
	$(PYTHON) -m pip install -q -e ".[dev]"
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .

schemas:
	$(PYTHON) scripts/gen_schemas.py

bench:
	$(PYTHON) benchmarks/kv_reproduction.py
	$(PYTHON) benchmarks/cold_start.py
	$(PYTHON) benchmarks/plan_speed.py
