# Benchmarks: discovery on a large synthetic host vs running lspci here; every parser of host output on MB-sized
# hostile input, asserting linear growth and a time bound per MB.
.PHONY: bench
bench: venv collection
	$(PY) benchmarks/bench_discovery.py
	$(PY) benchmarks/bench_hostile.py
