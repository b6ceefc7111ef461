# Benchmarks: discovery on a large synthetic host vs running lspci here; every parser of host output on MB-sized
# hostile input, asserting linear growth and a time bound per MB; wanted_devices on the largest host the facts allow.
.PHONY: bench
bench: venv collection
	$(PY) benchmarks/bench_discovery.py
	$(PY) benchmarks/bench_hostile.py
	$(PY) benchmarks/bench_wanted_devices.py
	$(PY) benchmarks/bench_vgpu_vf_phase.py
