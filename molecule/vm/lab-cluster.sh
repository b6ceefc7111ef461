#!/usr/bin/env bash
# Start or stop the Kubernetes API server the lab host is a node of (molecule/vm): the real kube-apiserver and etcd
# of tools/kube/apiserver.py, seeded with cluster-objects.yml. The reboot role drains the lab host through it as the
# least-privilege automation account; verify.yml reads the server's audit log.
#   lab-cluster.sh start RUN_DIR PYTHON   # writes RUN_DIR/kubeconfig (the automation's) and RUN_DIR/kube/audit.log
#   lab-cluster.sh stop RUN_DIR PYTHON
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
api=$here/../../tools/kube/apiserver.py
run=$2
py=${3:-python3}
case $1 in
  start)
    "$0" stop "$run" "$py"
    mkdir -p "$run"
    rm -rf "$run/kube" "$run/kubeconfig"
    "$py" "$api" start "$run/kube" >"$run/kube-start.log" 2>&1 || { cat "$run/kube-start.log" >&2; exit 1; }
    "$py" "$api" seed "$run/kube" "$here/cluster-objects.yml"
    install -m 0600 "$run/kube/kubeconfig-automation" "$run/kubeconfig" ;;
  stop)
    if [ -d "$run/kube" ]; then "$py" "$api" stop "$run/kube"; fi ;;
  *) echo "usage: $0 start|stop RUN_DIR [PYTHON]" >&2; exit 2 ;;
esac
