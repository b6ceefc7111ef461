# Benchmarks: discovery on a large synthetic host vs running lspci here; every parser of host output on MB-sized
# hostile input, asserting linear growth and a time bound per MB; wanted_devices on the largest host the facts allow;
# the nodes phase against the real kube-apiserver (mk/kube.mk): time per node and requests per run
# (benchmarks/README.md holds the measured tables).
.PHONY: bench
bench: HOST_GROUPS = core kube
bench: venv collection kube-apiserver
	$(PY) benchmarks/bench_discovery.py
	$(PY) benchmarks/bench_hostile.py
	$(PY) benchmarks/bench_wanted_devices.py
	$(PY) benchmarks/bench_vgpu_vf_phase.py
	$(PY) benchmarks/bench_nodes_phase.py
