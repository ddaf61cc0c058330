PYTHON ?= python3

.PHONY: test lint schemas bench
test:  ## install the test dependencies and run the test suite
	$(PYTHON) -m pip install -q -e ".[dev]"
	$(PYTHON) -m pytest -q

lint:
	$(PYTHON) -m ruff check .

schemas:  ## everything generated from the code: JSON Schemas, the chart's schema and values, rule docs, the data index
	$(PYTHON) scripts/gen_schemas.py
	$(PYTHON) -m configurator.resources
	$(PYTHON) scripts/gen_chart_schema.py
	$(PYTHON) scripts/gen_rules_doc.py

BENCHMARKS = accuracy kv_reproduction error_band real_corpus cold_start plan_speed check_speed webhook_load webhook_flood speed_accuracy

# every benchmark runs (a failure does not hide the ones after it); exits 1 when any missed its target
bench:  ## every script in benchmarks/: each exits non-zero when its own stated claim is not met
	@failed=""; for b in $(BENCHMARKS); do \
	  echo "== benchmarks/$$b.py"; \
	  args=""; [ "$$b" = error_band ] && args="--check"; \
	  $(PYTHON) benchmarks/$$b.py $$args || failed="$$failed $$b"; \
	done; \
	if [ -n "$$failed" ]; then echo "make bench: FAILED:$$failed"; exit 1; fi; \
	echo "make bench: all $(words $(BENCHMARKS)) benchmarks met their targets"
