#!/usr/bin/env bash
# Install the Debian packages the test suite needs on a fresh Debian 12 machine. Idempotent: does
# nothing when everything is already present. It lists the packages first and, run from a terminal
# outside CI, asks before installing (GPUVIRT_BOOTSTRAP_YES=1 skips the question).
# Podman's settings for the sandbox are not written to /etc: they live in tools/containers.conf, which
# the Makefile passes to Podman through CONTAINERS_CONF for the targets that run it.
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
  echo "bootstrap: these Debian packages will be installed (apt-get${SUDO:+ through sudo}):"
  printf '  %s\n' "${missing[@]}"
  if [ -z "${CI:-}" ] && [ -t 0 ] && [ "${GPUVIRT_BOOTSTRAP_YES:-}" != 1 ]; then
    read -r -p "bootstrap: proceed? [y/N] " answer
    case "$answer" in
      [yY] | [yY][eE][sS]) ;;
      *) echo "bootstrap: nothing installed" >&2; exit 1 ;;
    esac
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
