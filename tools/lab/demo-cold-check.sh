#!/usr/bin/env bash
# `make demo-cold-check`: `make demo` as a new user (or CI's fresh machine) runs it, twice.
#   1. Stop the lab and empty its directory (LAB_DIR, .lab): no cached disk, no SSH key, no overlay, no API server.
#   2. Clone HEAD's committed tree into a temporary directory. CI's machine has nothing else but what `make test`
#      builds before this target (.venv; .build/kube, whose build another lane may still be running): those two are
#      linked in, so that `make demo` there finds them as CI's would (its build of kube-apiserver waits for the
#      other lane's, tools/kube/build.sh's lock), and everything else (the staged collection, the lab disk, the VM,
#      the API server) the clone makes itself.
#   3. `make demo` there: the disk is built cold through tools/lab/start.sh. The run must pass, reboot the lab host
#      once, say so in its summary, and list the writes it made to the lab API server (cordon, uncordon, node
#      labels; the GPU Operator's release and ClusterPolicy, written by the recorded helm stand-in as the Helm
#      identity), run the verify phase, and say that helm was the recorded stand-in and that it ran `upgrade -i`.
#   4. `make demo` again: it must change nothing and say so (summary, cluster writes, no helm upgrade), recap
#      changed=0.
# The disk stays cached in LAB_DIR for the vm Molecule scenario (same recipe: same script, mirror and SSH key); the
# VM and the API server are stopped at the end. Each run's output is kept in LAB_DIR/demo-cold-check/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lab=${LAB_DIR:-$root/.lab}
work=$(mktemp -d)
cleanup() {
  LAB_DIR=$lab "$root/tools/lab/stop.sh" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

LAB_DIR=$lab "$root/tools/lab/stop.sh" >/dev/null 2>&1 || true
rm -rf "$lab"
git clone -q --no-hardlinks "$root" "$work/repo"
clone=$work/repo
ln -s "$(readlink -f "$root/.venv")" "$clone/.venv"
mkdir -p "$clone/.build" "$root/.build/kube"
ln -s "$(readlink -f "$root/.build/kube")" "$clone/.build/kube"
# the venv was built from these requirements (make venv compares their times with its stamp)
touch -r "$root/.venv/.installed" "$clone/requirements.txt" "$clone/requirements-dev.txt"
logs=$work/logs
mkdir -p "$logs"

fail() {
  echo "demo-cold-check: $1 (output: $lab/demo-cold-check/$2.log)" >&2
  mkdir -p "$lab/demo-cold-check" && cp "$logs"/*.log "$lab/demo-cold-check/"
  tail -60 "$logs/$2.log" >&2
  exit 1
}
# judged on the log with its whitespace collapsed: the YAML callback wraps a long message line at a space
has() { tr -s '[:space:]' ' ' <"$logs/$1.log" | grep -qF -- "$2" || fail "run '$1' lacks: $2" "$1"; }
lacks() { ! tr -s '[:space:]' ' ' <"$logs/$1.log" | grep -qF -- "$2" || fail "run '$1' has: $2" "$1"; }
# the PLAY RECAP line of a host: "lab-gpu-0 : ok=.. changed=N unreachable=0 failed=0 ..."
recap() { grep -E "^$2 +: ok=" "$logs/$1.log" | tail -1; }

for run in cold again; do
  start=$(date +%s)
  echo "demo-cold-check: make demo ($run) in $clone, LAB_DIR=$lab"
  # JSON results: one line per message (the YAML format wraps long lines, which the checks below grep)
  (cd "$clone" && ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 ANSIBLE_CALLBACK_RESULT_FORMAT=json LAB_DIR=$lab make demo) >"$logs/$run.log" 2>&1 \
    || fail "make demo ($run) failed" "$run"
  echo "demo-cold-check: make demo ($run) passed in $(( $(date +%s) - start ))s"
  for host in localhost lab-gpu-0; do
    recap "$run" "$host" | grep -qE 'unreachable=0 +failed=0' || fail "$host failed: $(recap "$run" "$host")" "$run"
  done
done

# the cold run built the disk (there was none) and booted it
ls "$lab"/images/*/.complete >/dev/null 2>&1 || fail "no lab disk was built" cold
# it prepared the host with one reboot, and the summary says so (summary.yml's line for the host)
has cold 'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep ran; changed: '
has cold '; rebooted: yes ('
lacks cold 'changed: nothing; rebooted: no'
# what it wrote to the cluster, listed: at least the drain's cordon and uncordon and the node labels (all patches of
# the Node); nothing refused
has cold 'patch nodes lab-gpu-0'
# the drain's uncordon happened: the node is schedulable again (a node patch of the labels alone would pass the line
# above; the reboot role once skipped its uncordon after every reboot and only the vm scenario's audit log saw it)
unschedulable=$("$root/.build/kube/bin/kubectl" --kubeconfig "$lab/run/kubeconfig" get node lab-gpu-0 \
  -o 'jsonpath={.spec.unschedulable}') || fail "could not read node lab-gpu-0 from the lab API server" cold
[ -z "$unschedulable" ] || [ "$unschedulable" = false ] || fail "node lab-gpu-0 is still cordoned after the run" cold
lacks cold 'REFUSED ('
lacks cold 'Cluster: nothing changed'
# every phase ran, the GPU Operator through the helm stand-in (the release as Helm 3 stores it, the chart's
# ClusterPolicy), as the Helm identity; and the run says helm was a stand-in
has cold 'TASK [gpuvirt.provision.gpu_operator : '
has cold 'TASK [gpuvirt.provision.verify : '
has cold '(helm) create secrets gpu-operator/sh.helm.release.v1.gpu-operator.v1'
has cold '(helm) create clusterpolicies cluster-policy'
has cold 'Helm: the recorded stand-in tests/integration/fake_helm.py, not helm'
# shellcheck disable=SC2016  # the backquotes are the summary's own
has cold 'including `helm upgrade -i` (the release installed or changed)'
has cold 'Verify: no node is expected to advertise a resource'
lacks cold 'Not run: '
has cold 'vGPU Manager image (nothing to build: no vGPU host)'
has cold 'vGPU profiles on VFs (nothing to set: no vendor-specific VFIO vGPU host)'
# the cold run said what it was doing while the disk was built and the VM booted
has cold 'demo: 1/2 the lab VM'
has cold 'lab: booting the VM'

# the second run changed nothing, and says so: host preparation planned the host, found its plan empty and did not
# roll it (playbooks/host_prep.yml, plan then roll)
has again 'lab-gpu-0 (node lab-gpu-0, pool vm-passthrough): host prep left the host alone (plan empty:'
has again "initramfs as the pool's row wants them); changed: nothing; rebooted: no"
has again 'Cluster: nothing changed (this run wrote nothing to the lab API server)'
lacks again 'written: '
# shellcheck disable=SC2016  # the backquotes are the summary's own
has again 'no `helm upgrade -i` (the release was up to date)'
lacks again 'REFUSED ('
for host in localhost lab-gpu-0; do
  recap again "$host" | grep -qE ' changed=0 ' || fail "second run changed $host: $(recap again "$host")" again
done
mkdir -p "$lab/demo-cold-check" && cp "$logs"/*.log "$lab/demo-cold-check/"
echo "demo-cold-check: passed (cold run, then a second run that changed nothing)"
