# gpuvirt.provision — developer entry points. `make test` is what CI runs (.ci/run).
# Every stage can run alone: make unit | sanity | lint | molecule | integration
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT        := $(CURDIR)
VENV        := $(ROOT)/.venv
PY          := $(VENV)/bin/python
BIN         := $(VENV)/bin
PYVER       := $(shell python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
COLLECTIONS := $(ROOT)/.build/collections
# the QEMU lab's directory (mk/lab.mk, tools/lab/)
LAB_DIR     ?= $(ROOT)/.lab
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export PATH := $(BIN):$(PATH)
export PYTHONPATH := $(COLLECTIONS)
# reference data (upstream CRDs, Helm values, pci.ids, captures), not copied into the repo: $GPUVIRT_REFERENCE
# if set, else .build/reference when it has crds/ (make reference), else the folder beside the checkout
# (same order as tests/unit/schema.py reference_dir())
REFERENCE_FETCHED := $(ROOT)/.build/reference
REFERENCE_BESIDE  := $(abspath $(ROOT)/../shared/reference)
export GPUVIRT_REFERENCE ?= $(if $(wildcard $(REFERENCE_FETCHED)/crds),$(REFERENCE_FETCHED),$(REFERENCE_BESIDE))
# Podman reads the test machine's settings from this project file (not /etc/containers/containers.conf);
# exported for the targets that run Podman (molecule, integration)
PODMAN_CONF := $(ROOT)/tools/containers.conf

# Molecule scenarios run by `make molecule` (each directory under molecule/ with a molecule.yml), and one target
# per scenario (molecule-default, molecule-vm): make test's last stage runs the default one beside the integration
# targets, make test-extended the vm one
MOLECULE_SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))
MOLECULE_TARGETS := $(addprefix molecule-,$(MOLECULE_SCENARIOS))
# Integration targets are registered by the fragments in mk/ (INTEGRATION_TARGETS += name).
INTEGRATION_TARGETS :=
include $(wildcard mk/*.mk)

.PHONY: help deps host venv collection unit sanity lint sanity-lint molecule integration integration-molecule test test-extended demo \
  build clean $(MOLECULE_TARGETS)

help:
	@echo "make demo         run the whole job (every phase) against the embedded lab"
	@echo "make test         what CI runs: unit, sanity, lint, demo-cold-check, molecule default, integration but ee, site"
	@echo "make test-extended  by hand, what make test leaves out (CI's time): vm scenario, EE jobs, site.yml (~70 min)"
	@echo "make unit|sanity|lint|molecule|integration   one stage (sanity-lint: sanity and lint at once)"
	@echo "make build        build gpuvirt-provision-<version>.tar.gz"
	@echo "make mutation     mutation testing, not part of make test (docs/testing.md, \"Mutation testing\")"

deps: host venv collection

# Debian package groups for tools/bootstrap-host.sh (empty: all, what `make test` needs); each target that needs
# fewer sets its own (below; mk/kube.mk: core kube). A target's groups also hold for the targets it depends on, and
# a target that others depend on adds its groups with += (mk/kube.mk, mk/ee.mk): with =, its own would replace
# those of the target that named it, and host, built once, would install only these (`make ee` once ran without
# the registry group). Every documented target installs what it uses when run alone
# (tests/unit/harness/test_target_groups.py).
HOST_GROUPS ?=
# each group once, in the order given (a group named by a target and by its prerequisite)
uniq = $(if $1,$(firstword $1) $(call uniq,$(filter-out $(firstword $1),$1)))
# HOST_BOOTSTRAPPED=1: this make was started by one that has installed the groups already (make integration)
host:
	@$(if $(HOST_BOOTSTRAPPED),:,tools/bootstrap-host.sh $(strip $(call uniq,$(HOST_GROUPS))))

# The tests' bytecode cache for what Ansible's modules import from their zip (tools/pyzip/gpuvirt_pyzip_cache.py,
# docs/testing.md "CI time"): the module and a .pth that imports it at each start of the environment's Python. It
# acts only where GPUVIRT_PYZIP_CACHE_DIR is set, as here for every target; written through a temporary file, as
# another checkout's make (demo-cold-check's clone) may rewrite it while a test starts Python.
export GPUVIRT_PYZIP_CACHE_DIR ?= $(ROOT)/.build/pyzip-cache
VENV_SITE := $(VENV)/lib/python$(PYVER)/site-packages
PYZIP_CACHE_INSTALLED := $(VENV_SITE)/gpuvirt-pyzip-cache.pth
venv: $(VENV)/.installed $(PYZIP_CACHE_INSTALLED)
$(VENV)/.installed: requirements.txt requirements-dev.txt
	@echo "venv: creating $(VENV) from requirements-dev.txt (the first time about 2 min; pip prints nothing meanwhile)"
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(PYZIP_CACHE_INSTALLED): tools/pyzip/gpuvirt_pyzip_cache.py $(VENV)/.installed
	cp $< $(VENV_SITE)/.gpuvirt_pyzip_cache.py.tmp && mv -f $(VENV_SITE)/.gpuvirt_pyzip_cache.py.tmp $(VENV_SITE)/gpuvirt_pyzip_cache.py
	@# its bytecode written now: every start of the environment's Python imports it, and where PYTHONDONTWRITEBYTECODE
	@# is set (as on the test machines) Python would compile it again at each start
	$(PY) -m py_compile $(VENV_SITE)/gpuvirt_pyzip_cache.py
	echo 'import gpuvirt_pyzip_cache' >$@.tmp && mv -f $@.tmp $@

collection:
	@tools/stage-collection.sh link

# the unit tests on every core (pytest-xdist, requirements-dev.txt): UNIT_JOBS worker processes (logical: one per
# CPU this process may run on; xdist's `auto` counts physical cores when psutil is installed, 1 on a 2-vCPU machine
# that reports one hyperthreaded core), each test file whole on one worker (--dist loadfile: a module's fixtures are
# made once, its tests keep their order); UNIT_JOBS=0 runs them in this one process as before (docs/testing.md,
# "CI time")
UNIT_JOBS ?= logical
unit: venv collection
	$(BIN)/pytest -q -p no:cacheprovider -n $(UNIT_JOBS) --dist loadfile $(PYTEST_DURATIONS) tests/unit

sanity: venv
	@tools/ansible-test-offline.sh $(PY) >/dev/null
	dest=$$(tools/stage-collection.sh copy); run=$${dest%/ansible_collections/*}; \
	  trap 'rm -rf "$$run"' EXIT; cd "$$dest" && \
	  $(BIN)/ansible-test sanity --local --python $(PYVER) --color no

lint: venv collection
	$(BIN)/ansible-lint --profile production

# make test's static stage: sanity and lint at once (each is mostly one process; sanity works on its own copy of the
# tree, lint writes nothing into it), each one's output printed whole when it ends; STATIC_JOBS=1: one after the other
STATIC_JOBS ?= 2
sanity-lint: venv collection
	$(MAKE) --no-print-directory -j$(STATIC_JOBS) --output-sync=target sanity lint

# Podman (molecule's driver, the registry and image targets) reads the project's containers.conf, also when
# an integration target runs alone
molecule integration integration-molecule $(INTEGRATION_TARGETS) $(MOLECULE_TARGETS): export CONTAINERS_CONF ?= $(PODMAN_CONF)

# default scenario: Podman driver; vm scenario: the QEMU lab (debootstrap disk, lab API server built from kube)
molecule: HOST_GROUPS = core kube podman lab
molecule: deps
	@for s in $(MOLECULE_SCENARIOS); do \
	  echo "=== molecule test -s $$s"; \
	  $(BIN)/molecule test -s $$s || exit 1; \
	done

$(MOLECULE_TARGETS): HOST_GROUPS = core kube podman lab
$(MOLECULE_TARGETS): deps
	$(BIN)/molecule test -s $(patsubst molecule-%,%,$@)

# the cluster and playbook targets: kube-apiserver; the registry targets: docker-registry, Podman, Docker (no lab).
# The targets are independent of each other (each pytest session starts its own API server, registry or dockerd on
# free loopback ports, in its own temporary directories) and much of their time is spent waiting (controller
# stand-ins, polls, CRDs becoming served): INTEGRATION_JOBS of them run at once, in INTEGRATION_ORDER
# (tools/run-in-lanes.sh: make -jN starts waiting targets newest first), each one's output printed whole when it
# ends (docs/testing.md, "CI time"). INTEGRATION_JOBS=1 runs them one after the other.
INTEGRATION_JOBS ?= 2
# the order they start in: long ones first (last measured on CI's 2 cores, docs/testing.md "CI time"), so that the
# short ones fill the end instead of one long target running alone; a target not named here starts after these.
# ee counts with its cold image build (a fresh machine has no EE image: about 6 minutes before its jobs), so it
# starts before integration-site: after it, it would start last and run alone while the other core idles
# cluster_operator first since the upgrade roll's tests (Helm, vendor-VFIO nodes, the KubeVirt re-render) and the VF
# MachineConfig pools joined it: now the longest target, it runs from the start beside the cold demo check
INTEGRATION_LONGEST_FIRST := integration-cluster-operator integration-cluster-kubevirt integration-playbooks \
  registry-integration ee integration-site discovery-integration
INTEGRATION_ORDER := $(filter $(INTEGRATION_TARGETS),$(INTEGRATION_LONGEST_FIRST)) \
  $(filter-out $(INTEGRATION_LONGEST_FIRST),$(INTEGRATION_TARGETS))
# every pytest target prints its slowest tests (setup, call and teardown apart)
PYTEST_DURATIONS ?= --durations=15 --durations-min=5
integration: HOST_GROUPS = core kube podman registry docker
integration: deps kube-apiserver
	@MAKE=$(MAKE) tools/run-in-lanes.sh $(INTEGRATION_JOBS) $(INTEGRATION_ORDER)

# make test's last stage: the cold demo check, the default Molecule scenario and the integration targets side by
# side, STAGE_JOBS at a time, each one's output printed whole when it ends. Each of them keeps about one core busy
# (measured: cluster_kubevirt alone 102% of a core; the lab VM's QEMU, TCG, one core while the guest works and the
# controller mostly waits), so two at a time fill CI's two cores; a third would only slow the lab guest, which
# suffers most from sharing a core (a boot of 35 s idle took 160 s beside two busy lanes). They share nothing but
# the machine: demo-cold-check has the lab (LAB_DIR, its SSH port, its own API server), the default scenario its
# Podman container, each integration target its own servers on free loopback ports. demo-cold-check, the longest
# lane with cluster_operator, starts first; the default scenario, short, fills the end.
# The vm scenario, the EE jobs and site.yml's end-to-end runs are not in make test: `make test-extended` (below).
# The lanes start at once, with no kube-apiserver build before them: the first target that needs it builds it
# (cluster_operator, its prerequisite) while demo-cold-check's `make demo` builds and boots the lab disk, which needs
# no API server yet (tools/kube/build.sh holds a lock, so the demo's own build waits for that one and finds it done).
STAGE_JOBS ?= 2
STAGE_ORDER := demo-cold-check $(filter-out ee integration-site,$(INTEGRATION_ORDER)) \
  $(filter-out molecule-vm,$(MOLECULE_TARGETS))
integration-molecule: HOST_GROUPS = core kube podman registry docker lab
integration-molecule: deps
	@MAKE=$(MAKE) tools/run-in-lanes.sh $(STAGE_JOBS) $(STAGE_ORDER)

# Its stages run after the install step (deps: every group), so a test that finds a tool missing fails instead of
# skipping (tests/integration/tool_gate.py; .ci/run exports the same)
test: export GPUVIRT_REQUIRE_TOOLS = 1
test: deps unit sanity-lint integration-molecule
	@echo "make test: all stages passed"

# What make test leaves out for CI's time (90 minutes on two cores; docs/testing.md, "CI time"), run by hand before
# a change to what they test lands: the cold demo check, then the vm scenario on the disk it built (a pool change,
# vGPU to passthrough, on the real guest: its boot-time restore taken back, the --check --diff preview, testinfra;
# about 25 minutes of one core under QEMU TCG), then the lab's day-2 check (tools/lab/day2-check.sh: the same guest
# moved from the passthrough pool to the container pool, refused with a VM on its node, then retired), then the AWX
# jobs in the execution environment (`make ee`: its cold image build and twelve jobs, about 9 minutes), then site.yml end to end on a real API server for OpenShift and
# Kubernetes (`make integration-site`, about 12 minutes). Before host roles, host_prep.yml, tools/lab/, the EE
# definition, the AWX material or the order of site.yml's phases change.
test-extended: export GPUVIRT_REQUIRE_TOOLS = 1
test-extended: HOST_GROUPS = core kube podman registry lab
test-extended: deps kube-apiserver
	$(MAKE) --no-print-directory HOST_BOOTSTRAPPED=1 demo-cold-check molecule-vm lab-day2-check ee integration-site

build: venv
	$(BIN)/ansible-galaxy collection build --force .

# LAB_DIR: the lab's directory (disk, SSH key, VM, API server; tools/lab/*.sh and inventories/lab read it too).
# LAB_KUBECONFIG: the lab's API server (tools/lab/cluster.sh, started by the demo); the reboot drains through it
demo: HOST_GROUPS = core kube lab
# The VM is started first, outside ansible-playbook, so each of its steps prints as it starts (a task shows its
# output only when it ends); demo.yml then finds it running.
# The lab API server's kube-apiserver (mk/kube.mk) is built, when missing, beside the lab VM's disk build and boot,
# which need no API server: a first demo waits for the longer of the two, not their sum (its output in
# .build/kube-build.out, shown when the build fails). The build runs through its whole course even when the VM does
# not start, so that no compiler is left running.
demo: deps
	@echo "demo: 1/2 the lab VM (first time: disk build about 2-3 min, boot about 30-90 s); meanwhile, when it is missing, the API server's build (about 3-7 min; .build/kube-build.out)"
	@mkdir -p .build; tools/kube/build.sh >.build/kube-build.out 2>&1 & kube=$$!; \
	  vm=0; LAB_DIR=$(LAB_DIR) tools/lab/start.sh --keep || vm=$$?; \
	  if ! wait $$kube; then cat .build/kube-build.out >&2; echo "demo: the kube-apiserver build failed" >&2; exit 1; fi; \
	  exit $$vm
	@echo "demo: 2/2 the whole job against the lab (ansible-playbook playbooks/demo.yml: one line per task)"
	LAB_DIR=$(LAB_DIR) LAB_KUBECONFIG=$(LAB_DIR)/run/kubeconfig \
	  $(BIN)/ansible-playbook -i inventories/lab/hosts.yml playbooks/demo.yml

clean:
	rm -rf .build tests/output *.tar.gz
