PYTHON ?= python3

.PHONY: test lint schemas bench accuracy
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

# the accuracy figures, regenerated in order: the fitted coefficients (profiles/overheads.yaml), the band table
# from the held-out residuals (profiles/error_bands.yaml), the report (benchmarks/accuracy.md) with its Summary
# paragraph copied into README.md and docs/accuracy.md, then everything generated from the data (make schemas).
# A missed target is printed (TARGET MISSED) but does not stop the regeneration.
accuracy:  ## refit, rebuild the band, rewrite benchmarks/accuracy.md and the README / docs accuracy paragraph
	$(PYTHON) benchmarks/accuracy.py --write-coefficients
	-$(PYTHON) benchmarks/error_band.py
	-$(PYTHON) benchmarks/accuracy.py --sync-docs > /dev/null
	$(MAKE) schemas PYTHON=$(PYTHON)

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
