# The QEMU lab (tools/lab/): one Debian 12 guest with an emulated Intel IOMMU and a stand-in PCI device.
.PHONY: lab-image lab-up lab-down lab-ssh lab-test demo-cold-check lab-day2-check

lab-image:  ## build (or reuse) the cached lab disk under .lab/images/ (root: losetup)
	tools/lab/build-image.sh

lab-up:  ## boot the lab VM (keeps an existing overlay), wait for SSH on 127.0.0.1:$${LAB_SSH_PORT:-2222}
	tools/lab/start.sh --keep

lab-down:  ## stop the lab VM and drop its overlay
	tools/lab/stop.sh

lab-ssh:  ## open a shell on the lab VM
	ssh -F $(LAB_DIR)/run/ssh_config lab-gpu-0

lab-test: venv  ## the testinfra checks of a prepared lab VM (after `make demo`; the vm scenario runs them too)
	LAB_DIR=$(LAB_DIR) $(BIN)/pytest -q -p no:cacheprovider molecule/vm/tests

# `make demo` from a clone of HEAD with an empty LAB_DIR (the disk built cold), then again: it must change nothing.
# Empties LAB_DIR first (the cached disk too); leaves the newly built disk there for the vm Molecule scenario.
demo-cold-check: HOST_GROUPS = core kube lab
demo-cold-check: deps
	LAB_DIR=$(LAB_DIR) tools/lab/demo-cold-check.sh

# A fleet that changes, on the lab VM and the lab API server: `make demo` on a fresh overlay, then the host moved
# from the passthrough pool to the container pool (check mode, the real run, a no-op second run), then retired (the
# same three); tools/lab/day2-check.sh says what each step must show. Uses the cached disk (built when missing).
lab-day2-check: HOST_GROUPS = core kube lab
lab-day2-check: deps kube-apiserver
	LAB_DIR=$(LAB_DIR) tools/lab/day2-check.sh
