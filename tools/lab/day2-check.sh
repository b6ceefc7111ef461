#!/usr/bin/env bash
# `make lab-day2-check`: a fleet that changes, on the QEMU lab VM and the lab API server (docs/day2.md).
#   1. A fresh overlay on the cached lab disk, then `make demo`: the host converged as a passthrough host (vfio
#      files, IOMMU kernel arguments, nouveau blacklist; one reboot), its node labelled in the lab API server.
#   2. The host moves to the container pool (the same inventory with lab-gpu-0 in gpu_container): with a
#      VirtualMachineInstance on its node the run is refused before any change, naming it; then
#      host_prep.yml --check --diff previews the take-back and changes nothing; the real run takes back the vfio
#      files and the kernel arguments the collection added, rebuilds the initramfs, reboots once (drained and
#      uncordoned through the lab API server) and keeps the nouveau blacklist (the container row leaves it); on the
#      host: no gpuvirt vfio file, the running kernel without the IOMMU arguments, the stand-in device off vfio-pci;
#      a second run plans the host empty and changes nothing.
#   3. the nodes phase labels the node for the container pool; then retire.yml takes the host out of the fleet:
#      --check changes nothing; the real run takes back the nouveau blacklist (the last thing the collection wrote
#      on the host; no reboot: nothing changes on the running host) and takes the owned labels off the node, which
#      stays schedulable; the host keeps nothing of the collection's but its (empty) record; a second
#      run changes nothing.
# Needs what `make demo` needs (it is run first). About 20-30 minutes of one core under QEMU TCG. Each run's output
# is kept in LAB_DIR/day2-check/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lab=${LAB_DIR:-$root/.lab}
export LAB_DIR=$lab
work=$(mktemp -d)
logs=$work/logs
mkdir -p "$logs"
cleanup() {
  "$root/tools/lab/stop.sh" >/dev/null 2>&1 || true
  mkdir -p "$lab/day2-check"
  cp "$logs"/*.log "$lab/day2-check/" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "lab-day2-check: $1 (output: $lab/day2-check/$2.log)" >&2
  tail -60 "$logs/$2.log" >&2
  exit 1
}
# judged on the log with its whitespace collapsed (the YAML callback wraps a long line at a space)
has() { tr -s '[:space:]' ' ' <"$logs/$1.log" | grep -qF -- "$2" || fail "run '$1' lacks: $2" "$1"; }
lacks() { ! tr -s '[:space:]' ' ' <"$logs/$1.log" | grep -qF -- "$2" || fail "run '$1' has: $2" "$1"; }
recap() { grep -E "^$2 +: ok=" "$logs/$1.log" | tail -1; }
# the plan line a run printed for the lab host (host_prep plan / retire plan)
plan_line() { grep -o "$2 plan for lab-gpu-0: [^\"]*" "$logs/$1.log" | head -1; }
ok_recap() {
  for host in localhost lab-gpu-0; do
    recap "$1" "$host" | grep -qE 'unreachable=0 +failed=0' || fail "$host failed: $(recap "$1" "$host")" "$1"
  done
}
changed_none() {
  for host in localhost lab-gpu-0; do
    recap "$1" "$host" | grep -qE ' changed=0 ' || fail "run '$1' changed $host: $(recap "$1" "$host")" "$1"
  done
}
on_host() { ssh -F "$lab/run/ssh_config" lab-gpu-0 "$@"; }
# the lab disk's boot counter (tools/lab/build-image.sh counts every boot)
boot() { on_host 'cat /var/lib/lab/boots'; }
kubectl() { "$root/.build/kube/bin/kubectl" --kubeconfig "$lab/run/kubeconfig" "$@"; }
playbook() {
  local name=$1; shift
  echo "lab-day2-check: ansible-playbook $* ($name)"
  (cd "$root" && ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 ANSIBLE_CALLBACK_RESULT_FORMAT=json \
    LAB_KUBECONFIG="$lab/run/kubeconfig" .venv/bin/ansible-playbook "$@") >"$logs/$name.log" 2>&1 \
    || fail "ansible-playbook $name failed" "$name"
  ok_recap "$name"
}

# 1. the passthrough host, as make demo leaves it (a fresh overlay: no state of an earlier run)
"$root/tools/lab/stop.sh" >/dev/null 2>&1 || true
rm -f "$lab/run/overlay.qcow2"
echo "lab-day2-check: make demo (the host as a passthrough host)"
(cd "$root" && ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 ANSIBLE_CALLBACK_RESULT_FORMAT=json make demo) \
  >"$logs/demo.log" 2>&1 || fail "make demo failed" demo
ok_recap demo
on_host 'test -f /etc/modprobe.d/gpuvirt-vfio.conf && grep -qw intel_iommu=on /proc/cmdline' \
  || fail "the demo left no passthrough host (vfio file or IOMMU argument missing)" demo
labels_before=$(kubectl get node lab-gpu-0 -o jsonpath='{.metadata.labels}')
case $labels_before in *nvidia.com/gpu.workload.config*) ;; *) fail "the demo did not label the node" demo ;; esac

# 2. passthrough -> container: the same inventory, the host in the container pool (its passthrough settings gone)
inventory=$work/container.yml
"$root/.venv/bin/python" - "$root/inventories/lab/hosts.yml" "$inventory" <<'PY'
import sys
import yaml
with open(sys.argv[1]) as f:
    inv = yaml.safe_load(f)
children = inv['all']['children']
children.pop('gpu_vm_passthrough')
children['gpu_container'] = {'hosts': {'lab-gpu-0': None},
                             'vars': {'gpuvirt_discovery_vendor_ids': ['10de', '1234'], 'gpuvirt_allow_no_gpu': True,
                                      'reboot_timeout': 600,
                                      'reboot_drain': "{{ lookup('ansible.builtin.env', 'LAB_KUBECONFIG') | length > 0 }}"}}
# the key and the render directory stay where the lab's are (the copy lives in a temporary directory)
lab = children['lab']['hosts']['lab-gpu-0']
lab['ansible_ssh_private_key_file'] = "{{ lookup('ansible.builtin.env', 'LAB_DIR') }}/ssh/id_ed25519"
with open(sys.argv[2], 'w') as f:
    yaml.safe_dump(inv, f, sort_keys=False)
PY
# a VM on the node: the pool change is refused before any change, naming it (the vfio take-back reads the
# VirtualMachineInstances: its GPU would leave vfio-pci at the next boot)
cat >"$work/vmi.yml" <<'VMI'
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Namespace
    metadata: {name: gpu-vms}
  - apiVersion: kubevirt.io/v1
    kind: VirtualMachineInstance
    metadata: {name: guest-0, namespace: gpu-vms}
    spec:
      domain:
        devices:
          hostDevices: [{name: gpu0, deviceName: devices.kubevirt.io/edu}]
    status: {nodeName: lab-gpu-0, phase: Running}
VMI
"$root/.venv/bin/python" "$root/tools/kube/apiserver.py" seed "$lab/run/kube" "$work/vmi.yml" >/dev/null
boot_before=$(boot)
echo "lab-day2-check: ansible-playbook host_prep.yml with a VM on the node (move-vm, must be refused)"
(cd "$root" && ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 LAB_KUBECONFIG="$lab/run/kubeconfig" \
  .venv/bin/ansible-playbook -i "$inventory" "$root/playbooks/host_prep.yml") >"$logs/move-vm.log" 2>&1 \
  && fail "the pool change went on with a VM on the node" move-vm
has move-vm 'gpu-vms/guest-0'
has move-vm 'Nothing was changed'
[ "$(boot)" = "$boot_before" ] || fail "the refused pool change rebooted the host" move-vm
on_host 'test -f /etc/modprobe.d/gpuvirt-vfio.conf' || fail "the refused pool change removed the vfio file" move-vm
# the VM is gone (its Namespace stays: no namespace controller runs beside the lab's API server to finalize it)
"$root/.build/kube/bin/kubectl" --kubeconfig "$lab/run/kube/kubeconfig-admin" -n gpu-vms \
  delete virtualmachineinstances.kubevirt.io guest-0 --wait=false >/dev/null

playbook move-check -i "$inventory" "$root/playbooks/host_prep.yml" --check --diff
has move-check 'host_prep plan for lab-gpu-0: kernel_args remove /etc/default/grub.d/90-gpuvirt-kernel-args.cfg'
has move-check 'vfio_absent remove /etc/modprobe.d/gpuvirt-vfio.conf'
[ "$(boot)" = "$boot_before" ] || fail "host_prep --check rebooted the host" move-check
on_host 'test -f /etc/modprobe.d/gpuvirt-vfio.conf' || fail "host_prep --check removed the vfio file" move-check

playbook move -i "$inventory" "$root/playbooks/host_prep.yml"
has move 'host_prep plan for lab-gpu-0: kernel_args remove'
recap move lab-gpu-0 | grep -qE ' changed=[1-9]' || fail "the pool change changed nothing: $(recap move lab-gpu-0)" move
[ "$(boot)" = $((boot_before + 1)) ] || fail "the pool change did not reboot the host exactly once" move
on_host '! ls /etc/modprobe.d/gpuvirt-vfio.conf /etc/modules-load.d/gpuvirt-vfio.conf 2>/dev/null | grep -q .' \
  || fail "a vfio file of the collection is still on the host" move
on_host '! grep -qw intel_iommu=on /proc/cmdline && ! grep -qw iommu=pt /proc/cmdline' \
  || fail "the running kernel still has the IOMMU arguments the collection added" move
# shellcheck disable=SC2016  # expanded on the host
on_host 'test "$(basename "$(readlink /sys/bus/pci/devices/0000:00:10.0/driver 2>/dev/null)")" != vfio-pci' \
  || fail "the stand-in device is still bound to vfio-pci" move
# shellcheck disable=SC2016  # expanded on the host
on_host '! lsinitramfs /boot/initrd.img-"$(uname -r)" | grep -q "gpuvirt-vfio"' \
  || fail "the initramfs still carries the vfio file" move
# the container row leaves the nouveau blacklist (docs/day2.md): still there
on_host 'test -f /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf' || fail "the pool change took the nouveau blacklist" move
unschedulable=$(kubectl get node lab-gpu-0 -o 'jsonpath={.spec.unschedulable}')
[ -z "$unschedulable" ] || [ "$unschedulable" = false ] || fail "node lab-gpu-0 still cordoned after the pool change" move

# the preview was the plan the real run then carried out
[ "$(plan_line move-check host_prep)" = "$(plan_line move host_prep)" ] \
  || fail "check mode showed another plan than the real run's: $(plan_line move-check host_prep)" move
playbook move-again -i "$inventory" "$root/playbooks/host_prep.yml"
has move-again 'host_prep plan for lab-gpu-0: nothing to change'
changed_none move-again

# the rest of the pool change (docs/day2.md): the nodes phase labels the node for its new pool
playbook move-nodes -i "$inventory" "$root/playbooks/nodes.yml" -e '{"gpuvirt_cluster_mode": "apply"}'
[ "$(kubectl get node lab-gpu-0 -o 'jsonpath={.metadata.labels.nvidia\.com/gpu\.workload\.config}')" = container ] \
  || fail "the nodes phase did not label the node for the container pool" move-nodes
labels_before=$(kubectl get node lab-gpu-0 -o jsonpath='{.metadata.labels}')

# 3. retire
retire=(-i "$inventory" "$root/playbooks/retire.yml" -e '{"retire_hosts": ["lab-gpu-0"], "gpuvirt_cluster_mode": "apply"}')
boot_before=$(boot)
playbook retire-check "${retire[@]}" --check --diff
[ "$(boot)" = "$boot_before" ] || fail "retire --check rebooted the host" retire-check
on_host 'test -f /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf' || fail "retire --check removed the blacklist" retire-check
[ "$(kubectl get node lab-gpu-0 -o jsonpath='{.metadata.labels}')" = "$labels_before" ] \
  || fail "retire --check changed the node's labels" retire-check

has retire-check 'retire plan for lab-gpu-0: nouveau_blacklist remove /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'

playbook retire "${retire[@]}"
[ "$(plan_line retire-check retire)" = "$(plan_line retire retire)" ] \
  || fail "check mode showed another plan than the real run's: $(plan_line retire-check retire)" retire
has retire 'retire: lab-gpu-0: took back /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf'
# taking back the blacklist alone needs no reboot (nothing changes on the running host; docs/day2.md): the plan says
# none, and the host is neither drained nor rebooted
lacks retire 'retire plan for lab-gpu-0: nouveau_blacklist remove /etc/modprobe.d/gpuvirt-blacklist-nouveau.conf; initramfs rebuild (reboot needed)'
[ "$(boot)" = "$boot_before" ] || fail "retire rebooted the host for a take-back that needs no reboot" retire
on_host '! ls /etc/modprobe.d/gpuvirt-* /etc/modules-load.d/gpuvirt-* /etc/default/grub.d/*gpuvirt* 2>/dev/null | grep -q .' \
  || fail "a file of the collection is still on the retired host" retire
labels_after=$(kubectl get node lab-gpu-0 -o jsonpath='{.metadata.labels}')
case $labels_after in *nvidia.com/gpu.workload.config*|*nvidia.com/gpu.deploy*) fail "the node keeps the collection's labels: $labels_after" retire ;; esac
case $labels_after in *kubernetes.io/hostname*) ;; *) fail "retire took a label the collection never wrote: $labels_after" retire ;; esac
unschedulable=$(kubectl get node lab-gpu-0 -o 'jsonpath={.spec.unschedulable}')
[ -z "$unschedulable" ] || [ "$unschedulable" = false ] || fail "node lab-gpu-0 still cordoned after retire" retire

playbook retire-again "${retire[@]}"
has retire-again 'retire plan for lab-gpu-0: nothing to change'
changed_none retire-again
echo "lab-day2-check: passed (passthrough -> container with one reboot, a no-op second run; retire without a" \
  "reboot (the blacklist alone), a no-op second run)"
