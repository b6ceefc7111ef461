#!/usr/bin/env bash
# Build the execution environment from execution-environment.yml with ansible-builder 3, on the test machine:
# no registry, Galaxy or helm download can be reached here, so the same definition is built with build arguments
# (the published definition keeps its standard base image, Galaxy and the pinned helm release):
#   EE_BASE_IMAGE   a Debian 12 base made with debootstrap (tools/images/build-base-image.sh: python3 3.11,
#                   python3-venv, openssh-client), plus a Python 3.11 virtual environment /usr/local/ee first on
#                   PATH (tools/ee/Containerfile.base)
#   PYCMD           /usr/local/ee/bin/python3: ansible-builder installs pip with `python -m ensurepip`, which
#                   Debian disables for its system Python (its ensurepip exits 1 outside a virtual environment)
#   PKGMGR          /usr/bin/apt-get instead of dnf (the base already has python3.11; no bindep entry of ours
#                   or of the collections we install names a Debian package)
#   ANSIBLE_GALAXY_CLI_COLLECTION_OPTS   --server pointing at tools/ee/galaxy_server.py on 127.0.0.1, which serves
#                   the collections the `ansible` package installed in .venv (the versions the tests run)
#   HELM_URL, HELM_SHA256   a stand-in helm archive (tests/integration/fake_helm.py as linux-amd64/helm), served
#                   by the same server and checked by the same ee/install_helm.py step
# Python packages come from PyPI through pip inside the build (the build containers trust the machine's CA
# bundle through a read-only mount, which does not end up in the image).
# Cached: the image carries the hash of everything that goes into it (label gpuvirt.ee.hash); a second run with
# nothing changed returns at once.
#   tools/ee/build-ee.sh [IMAGE]       (default localhost/gpuvirt-provision-ee:test)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
image=${1:-localhost/gpuvirt-provision-ee:test}
base=localhost/gpuvirt-ee-base
bin=$root/.venv/bin
# where the `ansible` package installed its collections (not PYTHONPATH's staged collection)
site=$("$bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[ -d "$site/ansible_collections/kubernetes/core" ] || { echo "no collections under $site" >&2; exit 1; }

tools/images/build-base-image.sh "$base-debian" --packages "python3 python3-venv openssh-client"
podman build -q --network none -t "$base" -f tools/ee/Containerfile.base tools/ee >/dev/null
base_id=$(podman image inspect -f '{{ .Id }}' "$base")
hash=$( (cat execution-environment.yml ee/* meta/ee-* tools/ee/build-ee.sh tools/ee/galaxy_server.py tools/ee/Containerfile.base \
           tests/integration/fake_helm.py requirements.txt requirements-dev.txt; echo "$base_id") \
        | sha256sum | cut -c1-16)
if podman image exists "$image" && \
   [ "$(podman image inspect -f '{{ index .Labels "gpuvirt.ee.hash" }}' "$image" 2>/dev/null)" = "$hash" ]; then
  echo "image $image is up to date (hash $hash)"
  exit 0
fi

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# the helm stand-in: a Python script named linux-amd64/helm in a release-shaped archive
mkdir -p "$work/files/linux-amd64"
{ echo '#!/usr/bin/env python3'; cat tests/integration/fake_helm.py; } >"$work/files/linux-amd64/helm"
chmod 755 "$work/files/linux-amd64/helm"
tar -C "$work/files" -czf "$work/files/helm-stand-in-linux-amd64.tar.gz" linux-amd64/helm
helm_sha=$(sha256sum "$work/files/helm-stand-in-linux-amd64.tar.gz" | cut -d' ' -f1)

"$bin/python" tools/ee/galaxy_server.py "$site" "$work/files" "$work/port" 2>"$work/galaxy.log" &
server=$!
for _ in $(seq 300); do [ -s "$work/port" ] && break; sleep 0.2; done
[ -s "$work/port" ] || { cat "$work/galaxy.log" >&2; echo "the local Galaxy server did not start" >&2; exit 1; }
port=$(cat "$work/port")

printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$work/pip.conf"
echo "ansible-builder build -> $image (hash $hash)"
if ! "$bin/ansible-builder" build -f execution-environment.yml -c "$work/context" -t "$image" -v 2 \
    --build-arg EE_BASE_IMAGE="$base" \
    --build-arg PKGMGR=/usr/bin/apt-get \
    --build-arg PYCMD=/usr/local/ee/bin/python3 \
    --build-arg ANSIBLE_GALAXY_CLI_COLLECTION_OPTS="--server http://127.0.0.1:$port/api/" \
    --build-arg HELM_URL="http://127.0.0.1:$port/files/helm-stand-in-linux-amd64.tar.gz" \
    --build-arg HELM_SHA256="$helm_sha" \
    --extra-build-cli-args "--network host --label gpuvirt.ee.hash=$hash \
 -v $work/pip.conf:/etc/pip.conf:ro -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro" \
    >"$work/build.log" 2>&1; then
  tail -60 "$work/build.log" >&2
  echo "--- local Galaxy server log" >&2
  tail -20 "$work/galaxy.log" >&2
  exit 1
fi
echo "built $image (hash $hash)"
