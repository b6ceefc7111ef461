# The AWX execution environment, built here with ansible-builder from execution-environment.yml on a local
# debootstrap base (tools/ee/build-ee.sh: build arguments for the base, the package manager, a local Galaxy and a
# stand-in helm; cached by a content hash, a second run returns at once), the controller side's ansible-runner in
# its own virtual environment (.build/ee/runner, the EE's pin), then jobs run as AWX runs them:
# ansible-runner transmit | podman run EE ansible-runner worker | ansible-runner process (tests/integration/ee),
# against a GPU host stand-in reached over SSH (the Machine credential) and the real API server.
EE_IMAGE       ?= localhost/gpuvirt-provision-ee:test
# the GPU host stand-in the jobs reach over SSH: molecule's Debian 12 systemd image (built once, reused) plus the
# OpenSSH server (tools/ee/Containerfile.sshhost; Podman's layer cache makes a second build a no-op)
EE_SSH_HOST_IMAGE ?= localhost/gpuvirt-ee-ssh-host
# the build host of the vgpu_image job: the SSH host plus podman and skopeo (tools/ee/Containerfile.buildhost), and
# the small base its nested build starts FROM (tools/ee/Containerfile.buildbase); both from Podman's layer cache
EE_BUILD_HOST_IMAGE ?= localhost/gpuvirt-ee-build-host
EE_BUILD_BASE_IMAGE ?= localhost/gpuvirt-ee-build-base
EE_RUNNER_VENV := $(ROOT)/.build/ee/runner
INTEGRATION_TARGETS += ee
.PHONY: ee ee-image
ee-image: HOST_GROUPS += core podman
ee-image: deps
	tools/ee/build-ee.sh $(EE_IMAGE)
	tools/images/build-base-image.sh gpuvirt-debian12-systemd --systemd
	podman build -q --network host -t $(EE_SSH_HOST_IMAGE) -f tools/ee/Containerfile.sshhost tools/ee >/dev/null
	podman build -q --network host -t $(EE_BUILD_HOST_IMAGE) -f tools/ee/Containerfile.buildhost tools/ee >/dev/null
	podman build -q --network host -t $(EE_BUILD_BASE_IMAGE) -f tools/ee/Containerfile.buildbase tools/ee >/dev/null

$(EE_RUNNER_VENV)/.installed: execution-environment.yml
	python3 -m venv $(EE_RUNNER_VENV)
	$(EE_RUNNER_VENV)/bin/pip install -q --disable-pip-version-check \
	  "$$(sed -n 's/^ *package_pip: *\(ansible-runner==.*\)$$/\1/p' execution-environment.yml)"
	touch $@

ee: HOST_GROUPS = core kube podman registry
ee: ee-image $(EE_RUNNER_VENV)/.installed kube-apiserver
	GPUVIRT_EE_IMAGE=$(EE_IMAGE) GPUVIRT_EE_SSH_HOST_IMAGE=$(EE_SSH_HOST_IMAGE) GPUVIRT_EE_RUNNER=$(EE_RUNNER_VENV)/bin/ansible-runner \
	  GPUVIRT_EE_BUILD_HOST_IMAGE=$(EE_BUILD_HOST_IMAGE) GPUVIRT_EE_BUILD_BASE_IMAGE=$(EE_BUILD_BASE_IMAGE) \
	  $(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/ee
