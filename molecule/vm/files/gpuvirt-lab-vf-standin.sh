#!/bin/sh
# Lab stand-in for the sysfs of NVIDIA's vGPU Manager on a vendor-VFIO GPU (no NVIDIA device can be emulated): one
# L40S-like PF 0000:41:00.0 on the "nvidia" driver with two VFs enabled, each with nvidia/creatable_vgpu_types and
# nvidia/current_vgpu_type = 0, as the driver shows them right after it loads (docs/pools/vendor-vfio.md, "The host
# interface"). Plain files: they take any write (refusals are covered by the unit tests' stand-in,
# tests/unit/vf_driver.py). Laid out under /run (a tmpfs, so empty after a reboot, as the driver's state is) by
# molecule/vm/converge.yml and again at every boot by gpuvirt-lab-vf-standin.service, standing in for the driver
# loading. Built beside the root and renamed into place, so a reader never sees half of it.
set -eu
root=${1:-/run/gpuvirt-vf-standin}
[ -e "$root" ] && { echo "stand-in already laid out under $root"; exit 0; }
tmp=$(mktemp -d "$(dirname "$root")/.gpuvirt-vf-standin.XXXXXX")
dev=devices/pci0000:40
mkdir -p "$tmp/$dev" "$tmp/bus/pci/devices" "$tmp/bus/pci/drivers/nvidia"
function_dir() {  # <bdf>: a PCI function of the L40S (10de:26b9, class 0302) on the nvidia driver
  d=$tmp/$dev/$1
  mkdir -p "$d"
  printf '0x030200\n' >"$d/class"
  printf '0x10de\n' >"$d/vendor"
  printf '0x26b9\n' >"$d/device"
  ln -s "../../../$dev/$1" "$tmp/bus/pci/devices/$1"
  ln -s ../../../bus/pci/drivers/nvidia "$d/driver"
}
pf=0000:41:00.0
function_dir "$pf"
printf '2\n' >"$tmp/$dev/$pf/sriov_totalvfs"
printf '2\n' >"$tmp/$dev/$pf/sriov_numvfs"
n=0
for vf in 0000:41:00.4 0000:41:00.5; do
  function_dir "$vf"
  ln -s "../$pf" "$tmp/$dev/$vf/physfn"
  ln -s "../$vf" "$tmp/$dev/$pf/virtfn$n"
  mkdir "$tmp/$dev/$vf/nvidia"
  printf 'ID    : vGPU Name\n1153  : NVIDIA L40S-12Q\n1155  : NVIDIA L40S-24Q\n1156  : NVIDIA L40S-48Q\n' \
    >"$tmp/$dev/$vf/nvidia/creatable_vgpu_types"
  printf '0\n' >"$tmp/$dev/$vf/nvidia/current_vgpu_type"
  n=$((n + 1))
done
# said before the rename, so the journal has this line before any line of a reader that found the files
echo "stand-in driver files appear under $root"
mv -T "$tmp" "$root"
