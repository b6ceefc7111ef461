# Discovery benchmark: parsing and discovery on a large synthetic host vs running lspci here.
.PHONY: bench
bench: venv collection
	$(PY) benchmarks/bench_discovery.py
