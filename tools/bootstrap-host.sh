#!/usr/bin/env bash
# Install the Debian packages the test suite needs on a fresh Debian 12 machine, and configure
# Podman for this sandbox (docs/testing.md: hard nofile limit 20000, crun fails on the
# hybrid cgroup layout). Idempotent: does nothing when everything is already present.
set -euo pipefail

PACKAGES=(
  pciutils            # lspci: pci_devices integration test
  podman runc buildah skopeo   # molecule podman driver, image builds, registry inspection
  debootstrap         # local base images (no image registry is reachable)
  qemu-system-x86 qemu-utils fdisk e2fsprogs   # the VM lab
  docker-registry apache2-utils openssl        # a real registry with htpasswd auth and TLS
  docker.io           # the vgpu_manager_image Docker path, against a private dockerd the tests start and stop
  rsync psmisc openssh-client
  shellcheck          # ansible-test sanity checks our shell scripts with it
  # a real kube-apiserver for the cluster tests, built from Debian's source (tools/kube/build.sh), and its etcd
  golang-go dpkg-dev make golang-github-modern-go-reflect2-dev etcd-server curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

conf=/etc/containers/containers.conf
if ! grep -q 'gpuvirt.provision' "$conf" 2>/dev/null; then
  echo "bootstrap: writing $conf"
  $SUDO mkdir -p /etc/containers
  $SUDO tee "$conf" >/dev/null <<'CONF'
# written by gpuvirt.provision tools/bootstrap-host.sh for the test sandbox
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
fi
