# A real kube-apiserver (1.20, built once from Debian's `kubernetes` source package into .build/kube/bin) and etcd,
# for the cluster apply tests (tests/integration/kube_cluster.py starts and stops them). Cold build ~3-7 min.
KUBE_BIN := $(ROOT)/.build/kube/bin
.PHONY: kube-apiserver
kube-apiserver: HOST_GROUPS += core kube
kube-apiserver: host
	@tools/kube/build.sh
