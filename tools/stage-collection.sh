#!/usr/bin/env bash
# Make the repository importable as ansible_collections/gpuvirt/provision.
#   link: .build/collections/ansible_collections/gpuvirt/provision -> repo root (for ansible,
#         molecule, pytest: edits are seen at once)
#   copy: .build/sanity/run.XXXXXX/ansible_collections/gpuvirt/provision (ansible-test resolves symlinks
#         and needs the real path to sit under ansible_collections/; it gets the files git knows
#         about, tracked or not ignored, in a git repository of its own)
set -euo pipefail
mode=${1:?usage: stage-collection.sh link|copy}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$mode" in
  link)
    dest="$root/.build/collections/ansible_collections/gpuvirt"
    mkdir -p "$dest"
    ln -sfn "$root" "$dest/provision"
    ;;
  copy)
    # one directory per run, so concurrent runs (developers, helpers) never share a tree
    mkdir -p "$root/.build/sanity"
    dest="$(mktemp -d "$root/.build/sanity/run.XXXXXX")/ansible_collections/gpuvirt/provision"
    mkdir -p "$dest"
    (cd "$root" && git ls-files -co --exclude-standard -z) \
      | rsync -a --from0 --ignore-missing-args --files-from=- "$root/" "$dest/"
    # A repository of its own: otherwise ansible-test finds the enclosing checkout, where .build/ is
    # ignored, and silently skips every target. Untracked files are listed by ansible-test's git source.
    git -C "$dest" init -q
    echo "$dest"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
