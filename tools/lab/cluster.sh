#!/usr/bin/env bash
# The Kubernetes API server the lab host is a node of: the real kube-apiserver and etcd of tools/kube/apiserver.py
# (built by tools/kube/build.sh), seeded with a file of objects. The reboot role drains the lab host through it
# and the cluster phases of `make demo` apply to it, as the least-privilege automation account
# (docs/rbac/gpuvirt-automation.yml); the server's audit log (RUN_DIR/kube/audit.log) shows every write.
#   cluster.sh start RUN_DIR PYTHON OBJECTS.yml   # fresh server; writes RUN_DIR/kubeconfig (the automation's),
#                                                 # RUN_DIR/kubeconfig-helm (the Helm identity's,
#                                                 # docs/rbac/gpuvirt-automation-helm.yml) and RUN_DIR/bin/helm
#   cluster.sh ensure RUN_DIR PYTHON OBJECTS.yml  # keep a running one (prints "already running"), else start
#   cluster.sh stop RUN_DIR [PYTHON]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
api=$root/tools/kube/apiserver.py
run=$2
py=${3:-python3}
running() {
  # (a server started before the Helm identity and the helm stand-in were part of the lab is started afresh)
  [ -f "$run/kube/pids" ] && [ -f "$run/kubeconfig" ] && [ -f "$run/kubeconfig-helm" ] && [ -x "$run/bin/helm" ] \
    || return 1
  while read -r _name pid; do kill -0 "$pid" 2>/dev/null || return 1; done <"$run/kube/pids"
}
case $1 in
  ensure)
    if running; then echo "lab cluster already running ($run/kubeconfig)"; exit 0; fi
    "$0" start "$run" "$py" "$4" ;;
  start)
    [ -x "$root/.build/kube/bin/kube-apiserver" ] || "$root/tools/kube/build.sh"
    "$0" stop "$run" "$py"
    mkdir -p "$run"
    rm -rf "${run:?}/kube" "$run/kubeconfig" "$run/kubeconfig-helm" "${run:?}/bin" "$run/helm-calls.jsonl"
    "$py" "$api" start "$run/kube" >"$run/kube-start.log" 2>&1 || { cat "$run/kube-start.log" >&2; exit 1; }
    "$py" "$api" seed "$run/kube" "$4"
    install -m 0600 "$run/kube/kubeconfig-automation" "$run/kubeconfig"
    install -m 0600 "$run/kube/kubeconfig-helm" "$run/kubeconfig-helm"
    # No helm binary can be had here (not in Debian 12, no internet): `make demo` installs the GPU Operator through
    # the recorded stand-in the tests use (tests/integration/fake_helm.py: checks the argv and every value key
    # against the chart's values.yaml from the reference folder, writes the release Secret and the chart's
    # ClusterPolicy through this API server; templates nothing), logging each call to RUN_DIR/helm-calls.jsonl.
    reference=$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import apiserver; print(apiserver.reference_dir())' \
      "$root/tools/kube")
    mkdir -p "$run/bin"
    printf '#!/bin/bash\n# the recorded stand-in for helm (tools/lab/cluster.sh)\nFAKE_HELM_LOG=%q FAKE_HELM_REFERENCE=%q exec %q %q "$@"\n' \
      "$run/helm-calls.jsonl" "$reference" "$py" "$root/tests/integration/fake_helm.py" >"$run/bin/helm"
    chmod 0755 "$run/bin/helm"
    : >"$run/helm-calls.jsonl"
    echo "lab cluster started ($run/kubeconfig)" ;;
  stop)
    if [ -d "$run/kube" ]; then "$py" "$api" stop "$run/kube"; fi ;;
  *) echo "usage: $0 start|ensure RUN_DIR PYTHON OBJECTS.yml | stop RUN_DIR [PYTHON]" >&2; exit 2 ;;
esac
