#!/usr/bin/env bash
# Boot the lab VM: a fresh qcow2 overlay on the cached base disk (built when missing), QEMU TCG with q35,
# an emulated Intel IOMMU and the `edu` PCI device (1234:11e8) standing in for the GPU (no VGA device: QEMU's
# stdvga is vendor 1234 too, and would be taken for a GPU bound to a host driver). Waits for SSH.
#
#   tools/lab/start.sh [--keep]     # --keep: reuse the existing overlay (state survives) if there is one
#
# Writes LAB_DIR/run/ssh_config (host lab-gpu-0).
# Environment: LAB_DIR (.lab), LAB_SSH_PORT (2222), LAB_MEM (2048), LAB_SMP (2), LAB_BOOT_TIMEOUT (300).
# /dev/kvm on these machines is a nested implementation where guests crawl: TCG is faster and reliable.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lab=${LAB_DIR:-$root/.lab}
run=$lab/run
port=${LAB_SSH_PORT:-2222}
keep=0; [ "${1:-}" = "--keep" ] && keep=1
# progress goes to stderr: a caller that reads stdout (demo.yml's task) sees only the final lines, a terminal
# (make demo) sees each step as it starts
echo "lab: the base disk (cached under $lab/images; built when missing, the first time about 2-3 min:" \
     "debootstrap, GRUB, SSH key)" >&2
base=$("$root/tools/lab/build-image.sh")
mkdir -p "$run"
if [ -f "$run/qemu.pid" ] && kill -0 "$(cat "$run/qemu.pid")" 2>/dev/null; then
  echo "lab VM already running (pid $(cat "$run/qemu.pid"), ssh port $(cat "$run/port"))"; exit 0
fi
if [ "$keep" -eq 0 ] || [ ! -f "$run/overlay.qcow2" ]; then
  rm -f "$run/overlay.qcow2" "$run/serial.log"
  qemu-img create -q -f qcow2 -F raw -b "$base" "$run/overlay.qcow2"
fi
echo "$port" >"$run/port"
# the lab's ssh config (`ssh -F LAB_DIR/run/ssh_config lab-gpu-0`; the testinfra checks of molecule/vm/tests use it)
cat >"$run/ssh_config" <<CONFIG
Host lab-gpu-0
  HostName 127.0.0.1
  Port $port
  User gpuvirt
  IdentityFile $lab/ssh/id_ed25519
  IdentitiesOnly yes
  BatchMode yes
  ConnectTimeout 30
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
CONFIG
start=$(date +%s)
echo "lab: booting the VM (QEMU TCG, no KVM: about 30-90 s until SSH answers; serial log: $run/serial.log)" >&2
qemu-system-x86_64 -name gpuvirt-lab -accel tcg -cpu max -smp "${LAB_SMP:-2}" -m "${LAB_MEM:-2048}" \
  -machine q35,kernel-irqchip=split -device intel-iommu,intremap=on,caching-mode=on -device edu,addr=0x10 \
  -drive file="$run/overlay.qcow2",if=virtio,format=qcow2 \
  -netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$port"-:22 -device virtio-net-pci,netdev=n0 \
  -vga none -display none -serial file:"$run/serial.log" -monitor none \
  -pidfile "$run/qemu.pid" -daemonize
ssh_opts=(-i "$lab/ssh/id_ed25519" -p "$port" -o BatchMode=yes -o ConnectTimeout=5
          -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR)
deadline=$(( start + ${LAB_BOOT_TIMEOUT:-300} ))
until ssh "${ssh_opts[@]}" gpuvirt@127.0.0.1 true 2>/dev/null; do
  if ! kill -0 "$(cat "$run/qemu.pid")" 2>/dev/null; then
    echo "lab VM exited during boot; serial log tail:" >&2; tail -30 "$run/serial.log" >&2; exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "lab VM not reachable over SSH after ${LAB_BOOT_TIMEOUT:-300}s; serial log tail:" >&2
    tail -30 "$run/serial.log" >&2; exit 1
  fi
  sleep 2
  waited=$(( $(date +%s) - start ))
  # one line every 15 s, so a slow boot shows it is still going
  if [ "$waited" -ge 15 ] && [ $(( waited % 15 )) -lt 2 ]; then echo "lab: still booting (${waited}s)" >&2; fi
done
echo "lab VM up in $(( $(date +%s) - start ))s: ssh ${ssh_opts[*]} gpuvirt@127.0.0.1 (serial log: $run/serial.log)"
