#!/usr/bin/env bash
# Stop the lab VM started by tools/lab/start.sh and drop its overlay (--keep leaves the overlay).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
run=${LAB_DIR:-$root/.lab}/run
if [ -f "$run/qemu.pid" ]; then
  pid=$(cat "$run/qemu.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    echo "lab VM (pid $pid) stopped"
  fi
  rm -f "$run/qemu.pid"
fi
# the lab's Kubernetes API server (tools/lab/cluster.sh), when one runs
if [ -f "$run/kube/pids" ]; then
  while read -r _name pid; do kill -TERM -- "-$pid" 2>/dev/null || true; done <"$run/kube/pids"
  rm -f "$run/kube/pids"
  echo "lab API server stopped"
fi
[ "${1:-}" = "--keep" ] || rm -f "$run/overlay.qcow2"
