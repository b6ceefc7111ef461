#!/usr/bin/env bash
# Build the lab's bootable Debian 12 disk (GRUB, serial console, systemd-networkd DHCP, SSH key login),
# cached under .lab/images/<recipe>/ so it is built once per recipe. Each lab run boots a qcow2 overlay
# on top of it (tools/lab/start.sh), so the base image stays clean.
#
#   tools/lab/build-image.sh          # prints the image path; builds it when missing (needs root: losetup)
#
# The guest starts from intel_iommu=off on purpose: Debian's kernel enables the Intel IOMMU by default, so
# only an explicit "off" lets the kernel_args role prove that its change took effect after the reboot.
set -euo pipefail
# stdout carries one line, the image path (tools/lab/start.sh reads it): every other line of this script and of
# the commands it runs goes to stderr, so no progress message can be taken for the path.
exec 3>&1 1>&2
root=$(cd "$(dirname "$0")/../.." && pwd)
lab=${LAB_DIR:-$root/.lab}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$lab/ssh"
# One SSH key per checkout; it is baked into the image, so it is part of the recipe.
[ -f "$lab/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C gpuvirt-lab -f "$lab/ssh/id_ed25519"
recipe=$( { cat "$0" "$root/tools/pyzip/gpuvirt_pyzip_cache.py"; echo "$mirror"; cat "$lab/ssh/id_ed25519.pub"; } \
  | sha256sum | cut -c1-12)
out=$lab/images/$recipe
if [ -f "$out/disk.raw" ] && [ -f "$out/.complete" ]; then
  echo "$out/disk.raw" >&3; exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "build-image.sh: building the lab disk needs root (losetup, mount)" >&2; exit 1; }

work=$(mktemp -d "$lab/build.XXXXXX")
mnt=$work/mnt
loop=""
cleanup() {
  for d in dev/pts dev proc sys ""; do mountpoint -q "$mnt/$d" 2>/dev/null && umount -l "$mnt/$d"; done
  [ -n "$loop" ] && { partx -d "$loop" 2>/dev/null || true; losetup -d "$loop" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
start=$(date +%s)
truncate -s 4G "$work/disk.raw"
echo 'type=83, bootable' | sfdisk -q "$work/disk.raw"
loop=$(losetup -f --show -P "$work/disk.raw")
# The host kernel here does not scan partition tables of loop devices by itself.
[ -e "${loop}p1" ] || partx -a "$loop"
mkfs.ext4 -q -L labroot "${loop}p1"
uuid=$(blkid -s UUID -o value "${loop}p1")
mkdir -p "$mnt" && mount "${loop}p1" "$mnt"
echo "debootstrap bookworm into the lab disk (log: $work/debootstrap.log)"
debootstrap --include=linux-image-amd64,grub-pc-bin,grub2-common,openssh-server,systemd-sysv,udev,kmod,pciutils,python3,sudo,initramfs-tools,dbus,iproute2 \
  bookworm "$mnt" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }

echo "gpuvirt-lab" >"$mnt/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 gpuvirt-lab\n' >"$mnt/etc/hosts"
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$mnt/etc/fstab"
printf '[Match]\nName=en*\n\n[Network]\nDHCP=yes\n' >"$mnt/etc/systemd/network/20-wired.network"
# Login: an unprivileged user with key-only SSH and passwordless sudo, like a provisioned server.
chroot "$mnt" useradd -m -s /bin/bash gpuvirt
install -d -m 700 -o 1000 -g 1000 "$mnt/home/gpuvirt/.ssh"
install -m 600 -o 1000 -g 1000 "$lab/ssh/id_ed25519.pub" "$mnt/home/gpuvirt/.ssh/authorized_keys"
echo 'gpuvirt ALL=(ALL) NOPASSWD:ALL' >"$mnt/etc/sudoers.d/gpuvirt" && chmod 440 "$mnt/etc/sudoers.d/gpuvirt"
printf 'PasswordAuthentication no\nUseDNS no\n' >"$mnt/etc/ssh/sshd_config.d/lab.conf"
# Boot counter: the vm scenario proves "exactly one reboot" from this file, not from timing.
cat >"$mnt/etc/systemd/system/lab-boot-counter.service" <<'UNIT'
[Unit]
Description=Count boots (gpuvirt lab)
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'mkdir -p /var/lib/lab; n=$(cat /var/lib/lab/boots 2>/dev/null || echo 0); echo $((n+1)) >/var/lib/lab/boots'
[Install]
WantedBy=multi-user.target
UNIT
chroot "$mnt" systemctl enable -q systemd-networkd lab-boot-counter.service
# Serial console only; the starting point is IOMMU off (see above).
cat >"$mnt/etc/default/grub" <<'GRUB'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200n8 intel_iommu=off"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --speed=115200"
GRUB
for d in dev dev/pts proc sys; do mount --bind "/$d" "$mnt/$d"; done
chroot "$mnt" grub-install --target=i386-pc "$loop" >/dev/null 2>&1
chroot "$mnt" update-grub >/dev/null 2>&1
# The host has no udev for the loop device, so grub.cfg names it; the guest needs the UUID.
sed -i "s#root=${loop}p1#root=UUID=$uuid#g" "$mnt/boot/grub/grub.cfg"
grep -q "root=UUID=$uuid" "$mnt/boot/grub/grub.cfg"
# Under TCG a full initramfs rebuild takes ~7 min; MODULES=dep (decided in the guest) takes ~1 min.
# Set only now: in the chroot "dep" would pick the host's loop device instead of the guest's disk.
sed -i 's/^MODULES=.*/MODULES=dep/' "$mnt/etc/initramfs-tools/initramfs.conf"
# Ansible runs each module from a zip, for which Python keeps no bytecode: under TCG compiling ansible.module_utils
# again is about a quarter of every task. The guest keeps it per user (root and gpuvirt), lab only (the file says how).
install -m 644 "$root/tools/pyzip/gpuvirt_pyzip_cache.py" "$mnt/usr/lib/python3/dist-packages/"
echo 'import gpuvirt_pyzip_cache' >"$mnt/usr/lib/python3/dist-packages/gpuvirt-pyzip-cache.pth"
install -d -m 755 "$mnt/var/cache/gpuvirt-lab-pyzip"
install -d -m 700 "$mnt/var/cache/gpuvirt-lab-pyzip/0"
install -d -m 700 -o 1000 -g 1000 "$mnt/var/cache/gpuvirt-lab-pyzip/1000"
chroot "$mnt" apt-get clean
rm -rf "$mnt/var/lib/apt/lists/"*
for d in dev/pts dev proc sys ""; do umount "$mnt/$d"; done
partx -d "$loop" 2>/dev/null || true
losetup -d "$loop"; loop=""
mkdir -p "$out"
mv "$work/disk.raw" "$out/disk.raw"
touch "$out/.complete"
echo "built $out/disk.raw in $(( $(date +%s) - start ))s"
echo "$out/disk.raw" >&3
