# Benchmarks: discovery on a large synthetic host vs running lspci here; every parser of host output on MB-sized
# hostile input, asserting linear growth and a time bound per MB; wanted_devices on the largest host the facts allow;
# the nodes phase against the real kube-apiserver (mk/kube.mk): time per node and requests per run
# (benchmarks/README.md holds the measured tables); the k8s_objects role's apply, one call per list; the cluster
# role's reads in one call against the three before, on the nodes phase (A/B); the kubevirt_devices role's reads in
# one call against the three before, on the kubevirt phase (A/B);
# host_prep.yml over 1, 10 and 50 Podman hosts, plan then roll.
# bench-lab: the no-op host_prep.yml on the lab VM against the same checks over raw SSH (after `make demo`).
.PHONY: bench bench-lab
bench: HOST_GROUPS = core kube podman
bench: venv collection kube-apiserver
	$(PY) benchmarks/bench_discovery.py
	$(PY) benchmarks/bench_hostile.py
	$(PY) benchmarks/bench_wanted_devices.py
	$(PY) benchmarks/bench_vgpu_vf_phase.py
	$(PY) benchmarks/bench_nodes_phase.py
	$(PY) benchmarks/bench_k8s_objects.py
	$(PY) benchmarks/bench_cluster_role.py
	$(PY) benchmarks/bench_kubevirt_devices_role.py
	tools/images/build-base-image.sh gpuvirt-debian12-systemd --systemd
	$(PY) benchmarks/bench_host_prep.py

bench-lab: HOST_GROUPS = core lab
bench-lab: venv collection
	LAB_DIR=$(LAB_DIR) $(PY) benchmarks/bench_host_prep_lab.py
