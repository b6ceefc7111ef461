#!/usr/bin/env bash
# Start or stop the in-memory Kubernetes API stand-in the lab's drain test talks to (molecule/vm).
#   fake-cluster.sh start RUN_DIR PYTHON   # serves cluster-objects.yml; writes RUN_DIR/kubeconfig, logs events
#   fake-cluster.sh stop RUN_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run=$2
case $1 in
  start)
    "$0" stop "$run"
    mkdir -p "$run"
    rm -f "$run/kubeconfig" "$run/cluster-events.jsonl"
    setsid "$3" "$here/../../tests/integration/cluster_kubevirt/fake_apiserver.py" "$here/cluster-objects.yml" \
      "$run/kubeconfig" "$run/cluster-events.jsonl" >"$run/fake-api.log" 2>&1 </dev/null &
    echo $! >"$run/fake-api.pid"
    for _ in $(seq 1 50); do [ -s "$run/kubeconfig" ] && exit 0; sleep 0.2; done
    echo "fake API did not start: $(cat "$run/fake-api.log")" >&2; exit 1 ;;
  stop)
    if [ -f "$run/fake-api.pid" ]; then kill "$(cat "$run/fake-api.pid")" 2>/dev/null || true; rm -f "$run/fake-api.pid"; fi ;;
  *) echo "usage: $0 start|stop RUN_DIR [PYTHON]" >&2; exit 2 ;;
esac
