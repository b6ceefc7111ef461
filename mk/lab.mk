# The QEMU lab (tools/lab/): one Debian 12 guest with an emulated Intel IOMMU and a stand-in PCI device.
.PHONY: lab-image lab-up lab-down lab-ssh

lab-image:  ## build (or reuse) the cached lab disk under .lab/images/ (root: losetup)
	tools/lab/build-image.sh

lab-up:  ## boot the lab VM (keeps an existing overlay), wait for SSH on 127.0.0.1:$${LAB_SSH_PORT:-2222}
	tools/lab/start.sh --keep

lab-down:  ## stop the lab VM and drop its overlay
	tools/lab/stop.sh

lab-ssh:  ## open a shell on the lab VM
	ssh -i .lab/ssh/id_ed25519 -p $${LAB_SSH_PORT:-2222} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null gpuvirt@127.0.0.1
