#!/usr/bin/env bash
# Install the Debian packages the chosen make targets need on a Debian 12 machine. Idempotent: does nothing when
# they are already present. It lists the packages first and, run from a terminal outside CI, asks before
# installing (GPUVIRT_BOOTSTRAP_YES=1 skips the question).
#   tools/bootstrap-host.sh [--list] [GROUP...]     GROUP: core kube podman lab registry docker; none = all
# `make test` (CI) needs every group; `make molecule` core kube podman lab; `make integration` core kube podman
# registry docker; `make demo` core kube lab; `make kube-apiserver` and the cluster targets core kube; `make ee` core
# kube podman registry; `make registry-integration` core podman registry docker; `make discovery-integration` core;
# `make unit` none. --list prints the packages of the groups and installs nothing.
# Podman's settings for the sandbox are not written to /etc: they live in tools/containers.conf, which
# the Makefile passes to Podman through CONTAINERS_CONF for the targets that run it.
set -euo pipefail

declare -A GROUPS_PACKAGES=(
  # lspci (pci_devices integration test), shell checks (ansible-test sanity), the lab's file copies and ssh
  [core]="pciutils shellcheck rsync psmisc openssh-client"
  # a real kube-apiserver for the cluster tests, built from Debian's source (tools/kube/build.sh), and its etcd
  [kube]="golang-go dpkg-dev make golang-github-modern-go-reflect2-dev etcd-server curl"
  # molecule's podman driver, image builds, registry inspection; local base images (no image registry reachable)
  [podman]="podman runc buildah skopeo debootstrap"
  # the VM lab (its disk is built with debootstrap)
  [lab]="qemu-system-x86 qemu-utils fdisk e2fsprogs debootstrap"
  # a real registry with htpasswd auth and TLS
  [registry]="docker-registry apache2-utils openssl"
  # the vgpu_manager_image Docker path, against a private dockerd the tests start and stop
  [docker]="docker.io"
)
ALL_GROUPS=(core kube podman lab registry docker)

list_only=false
if [ "${1:-}" = "--list" ]; then
  list_only=true
  shift
fi
groups=("$@")
[ "${#groups[@]}" -gt 0 ] || groups=("${ALL_GROUPS[@]}")

packages=()
for g in "${groups[@]}"; do
  if [ -z "${GROUPS_PACKAGES[$g]+set}" ]; then
    echo "bootstrap: unknown group '$g'; use one of: ${ALL_GROUPS[*]}" >&2
    exit 2
  fi
  read -r -a pkgs <<<"${GROUPS_PACKAGES[$g]}"
  for p in "${pkgs[@]}"; do
    # a package two groups need is listed once
    [[ " ${packages[*]-} " == *" $p "* ]] || packages+=("$p")
  done
done

if $list_only; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: these Debian packages will be installed (apt-get${SUDO:+ through sudo}) for ${groups[*]}:"
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
