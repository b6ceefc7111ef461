#!/usr/bin/env bash
# Build kube-apiserver and kubectl 1.20 from Debian bookworm's own `kubernetes` source package (every Go
# dependency vendored, so it builds offline from the Debian mirror alone) and cache the two binaries under
# .build/kube/bin. A second call with the binaries present does nothing.
#
# Two patches are needed with Go >= 1.18 (docs/testing.md, "A real API server"):
#  1. the vendored github.com/modern-go/reflect2 1.0.1 crashes at run time under Go >= 1.18: use Debian's 1.0.2;
#  2. the vendored OpenAPI type validators treat a value equal to its type's zero value as null, which since
#     Go 1.18 is true for "": every empty string in a custom resource would be refused. Only nil is null.
# The source is fetched with a private apt configuration (own sources list and lists directory under
# .build/kube/apt), so the machine's /etc/apt is not changed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KUBE=${GPUVIRT_KUBE_DIR:-$ROOT/.build/kube}
BIN=$KUBE/bin
MIRROR=${GPUVIRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubectl" ]; then
  exit 0
fi
# One build of this directory at a time: make test's last stage starts its lanes at once, and `make demo` builds in
# the background while the lab disk is built, so a second caller waits for the first and finds the binaries.
mkdir -p "$KUBE"
exec 9>"$KUBE/.build.lock"
if ! flock -n 9; then
  echo "build.sh: another build of $BIN is under way; waiting for it"
  flock 9
fi
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubectl" ]; then
  exit 0
fi

for tool in go dpkg-source etcd openssl rsync make; do
  command -v "$tool" >/dev/null || {
    echo "build.sh: '$tool' not found; run tools/bootstrap-host.sh (installs golang-go dpkg-dev etcd-server openssl rsync make)" >&2
    exit 2
  }
done
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2
[ -d "$REFLECT2" ] || { echo "build.sh: $REFLECT2 missing: install golang-github-modern-go-reflect2-dev" >&2; exit 2; }

start=$(date +%s)
APT=$KUBE/apt
SRC=$KUBE/src
rm -rf "$SRC"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$SRC" "$BIN"
echo "deb-src $MIRROR bookworm main" > "$APT/sources.list"
aptopts=(-q -o "Dir::Etc::SourceList=$APT/sources.list" -o Dir::Etc::SourceParts=/nonexistent
         -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache" -o APT::Sandbox::User=root)
apt-get "${aptopts[@]}" update >/dev/null
(cd "$SRC" && apt-get "${aptopts[@]}" source --download-only kubernetes >/dev/null)
dsc=$(ls "$SRC"/kubernetes_*.dsc)
dpkg-source --no-check -x "$dsc" "$SRC/tree" >/dev/null
tree=$SRC/tree

# patch 1: reflect2 1.0.2 from Debian
rm -rf "$tree/vendor/github.com/modern-go/reflect2"
cp -r "$REFLECT2" "$tree/vendor/github.com/modern-go/reflect2"
rm -f "$tree/vendor/github.com/modern-go/reflect2/go.mod" "$tree/vendor/github.com/modern-go/reflect2/go.sum"

# patch 2: only nil is null in the OpenAPI type validators
for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
  [ -f "$tree/$f" ] || continue
  python3 - "$tree/$f" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
# the upstream line: `if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {`
new, n = re.subn(r"if data == nil \|\| reflect\.DeepEqual\(reflect\.Zero\(reflect\.TypeOf\(data\)\), reflect\.ValueOf\(data\)\) \{",
                 "if data == nil {", text)
if n != 1:
    sys.exit("build.sh: zero-value check not found in %s (source changed?)" % path)
open(path, "w").write(new)
PY
done

export GOPATH=$KUBE/gopath GOCACHE=$KUBE/gocache CGO_ENABLED=0 GOFLAGS='' GO111MODULE=off
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$tree" "$GOPATH/src/k8s.io/kubernetes"
echo "build.sh: building kube-apiserver and kubectl from $(basename "$dsc") (cold: ~7 min on 2 cores)"
(cd "$GOPATH/src/k8s.io/kubernetes" && make WHAT="cmd/kube-apiserver cmd/kubectl" >"$KUBE/build.log" 2>&1) || {
  tail -40 "$KUBE/build.log" >&2; exit 1; }
out=$(cd "$GOPATH/src/k8s.io/kubernetes" && pwd -P)/_output
install -m 0755 "$(find "$out" -type f -name kube-apiserver | head -1)" "$BIN/kube-apiserver"
install -m 0755 "$(find "$out" -type f -name kubectl | head -1)" "$BIN/kubectl"
"$BIN/kube-apiserver" --version
rm -rf "$SRC" "$GOPATH" "$GOCACHE"
echo "build.sh: built in $(( $(date +%s) - start ))s; binaries cached in $BIN"
