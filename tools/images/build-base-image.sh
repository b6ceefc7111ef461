#!/usr/bin/env bash
# Build a local Debian 12 (bookworm) container image with debootstrap and import it into Podman.
# No container registry is reachable from the test machines, so every image we run or build FROM
# starts here.  Idempotent: an existing image with the same recipe hash is reused.
#
#   tools/images/build-base-image.sh NAME [--systemd] [--packages "p1 p2"]
#
#   --systemd   add systemd, dbus, python3, sudo, kmod, udev, iproute2 (runs /sbin/init under
#               `podman run --systemd=always`; what Molecule's podman driver uses)
set -euo pipefail
name=${1:?usage: build-base-image.sh NAME [--systemd] [--packages "p1 p2"]}
shift
extra=""
systemd=0
while [ $# -gt 0 ]; do
  case "$1" in
    --systemd) systemd=1 ;;
    --packages) extra="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
include="ca-certificates"
[ "$systemd" -eq 1 ] && include="$include,systemd,systemd-sysv,dbus,python3,python3-apt,sudo,iproute2,kmod,udev"
[ -n "$extra" ] && include="$include,${extra// /,}"
recipe=$(printf '%s|%s|%s' "$include" "$mirror" "v1" | sha256sum | cut -c1-12)

# One build per image at a time: make test's last stage runs the Molecule default scenario and the EE target side by
# side, and both ask for gpuvirt-debian12-systemd; the second waits here, then finds the image up to date.
exec 9>"${TMPDIR:-/tmp}/gpuvirt-base-image-${name//[^A-Za-z0-9._-]/_}.lock"
flock 9

if podman image exists "$name" && \
   [ "$(podman image inspect -f '{{ index .Labels "gpuvirt.recipe" }}' "$name" 2>/dev/null)" = "$recipe" ]; then
  echo "image $name is up to date (recipe $recipe)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "debootstrap bookworm ($include) -> $name"
debootstrap --variant=minbase --include="$include" bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2; exit 1; }
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
cmd='CMD ["/bin/bash"]'
[ "$systemd" -eq 1 ] && cmd='CMD ["/sbin/init"]'
tar -C "$work/rootfs" -c . | podman import \
  --change "LABEL gpuvirt.recipe=$recipe" --change "$cmd" - "$name" >/dev/null
echo "built $name (recipe $recipe)"
