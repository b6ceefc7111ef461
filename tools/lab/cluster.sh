#!/usr/bin/env bash
# The Kubernetes API server the lab host is a node of: the real kube-apiserver and etcd of tools/kube/apiserver.py
# (built by tools/kube/build.sh), seeded with a file of objects. The reboot role drains the lab host through it
# and the cluster phases of `make demo` apply to it, as the least-privilege automation account
# (docs/rbac/gpuvirt-automation.yml); the server's audit log (RUN_DIR/kube/audit.log) shows every write.
#   cluster.sh start RUN_DIR PYTHON OBJECTS.yml   # fresh server; writes RUN_DIR/kubeconfig (the automation's)
#   cluster.sh ensure RUN_DIR PYTHON OBJECTS.yml  # keep a running one (prints "already running"), else start
#   cluster.sh stop RUN_DIR [PYTHON]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
api=$root/tools/kube/apiserver.py
run=$2
py=${3:-python3}
running() {
  [ -f "$run/kube/pids" ] && [ -f "$run/kubeconfig" ] || return 1
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
    rm -rf "$run/kube" "$run/kubeconfig"
    "$py" "$api" start "$run/kube" >"$run/kube-start.log" 2>&1 || { cat "$run/kube-start.log" >&2; exit 1; }
    "$py" "$api" seed "$run/kube" "$4"
    install -m 0600 "$run/kube/kubeconfig-automation" "$run/kubeconfig"
    echo "lab cluster started ($run/kubeconfig)" ;;
  stop)
    if [ -d "$run/kube" ]; then "$py" "$api" stop "$run/kube"; fi ;;
  *) echo "usage: $0 start|ensure RUN_DIR PYTHON OBJECTS.yml | stop RUN_DIR [PYTHON]" >&2; exit 2 ;;
esac
