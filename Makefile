PYTHON ?= python3

.PHONY: test lint schemas bench
test:  ## install the test dependencies and run the test suite
	$(PYTHON) -m pip install -q -e ".[dev]"
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .

schemas:  ## everything generated from the code: JSON Schemas, the chart's schema and values, rule docs
	$(PYTHON) scripts/gen_schemas.py
	$(PYTHON) scripts/gen_chart_schema.py
	$(PYTHON) scripts/gen_rules_doc.py

bench:
	$(PYTHON) benchmarks/kv_reproduction.py
	$(PYTHON) benchmarks/accuracy.py
	$(PYTHON) benchmarks/error_band.py --check
	$(PYTHON) benchmarks/cold_start.py
	$(PYTHON) benchmarks/plan_speed.py
	$(PYTHON) benchmarks/check_speed.py
	$(PYTHON) benchmarks/webhook_load.py
