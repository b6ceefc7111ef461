#!/usr/bin/env bash
# Run make targets LANES at a time, in the order given: a target starts when a lane frees, first listed first. Each
# target's output is printed whole when it ends, with its wall time; the exit status is 1 when any target failed
# (after all of them ran).
#
#   tools/run-in-lanes.sh LANES TARGET...      # make's own -jN does not keep that order (below)
#
# Why not `make -jLANES TARGET...`: GNU make puts jobs that wait for a free job slot on a list it takes from the
# newest end, so with more targets than slots the targets listed last start first. make test's last stage lists its
# longest targets first so that they do not end alone on one core; under make -j2 they started last.
set -uo pipefail
lanes=$1; shift
make_cmd=${MAKE:-make}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export HOST_BOOTSTRAPPED=1 make_cmd out
# the inner script's $1, $out and $make_cmd are its own (expanded by the bash xargs starts, not here)
# shellcheck disable=SC2016
printf '%s\n' "$@" | xargs -P "$lanes" -I{} bash -c '
  start=$(date +%s)
  $make_cmd --no-print-directory "$1" >"$out/$1.log" 2>&1; rc=$?
  { cat "$out/$1.log"; echo "lanes: make $1 ended after $(( $(date +%s) - start ))s, exit $rc"; } | flock "$out" cat
  exit $(( rc ? 1 : 0 ))' lane {} || exit 1
