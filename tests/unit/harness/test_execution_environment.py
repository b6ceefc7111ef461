# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-builder create` must turn execution-environment.yml into a complete build context.

The image itself is built from the same file by `make ee` (tools/ee/build-ee.sh, tests/integration/ee) on a local
base image; what differs there (build arguments only) is in docs/awx.md. Here: the published context, and the helm
step it carries (a pinned release, its sha256 checked by ee/install_helm.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.mark.skipif(shutil.which("ansible-builder") is None, reason="ansible-builder is in requirements-dev.txt")
def test_builder_creates_context_with_pinned_dependencies(tmp_path):
    proc = subprocess.run(
        # the file named: without it ansible-builder names it after whichever engine this machine has (a Dockerfile where
        # only Docker is installed), and the test would depend on the machine
        ["ansible-builder", "create", "-f", os.path.join(ROOT, "execution-environment.yml"), "-c", str(tmp_path),
         "--output-filename", "Containerfile"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (tmp_path / "Containerfile").read_text()
    assert "quay.io/centos/centos:stream9" in containerfile
    assert "ansible-core==2.19.14" in containerfile
    collections = yaml.safe_load((tmp_path / "_build" / "requirements.yml").read_text())["collections"]
    names = {c["name"]: c["version"] for c in collections}
    assert names["kubernetes.core"] == "6.2.0"
    # every collection pinned exactly, so the EE matches what the tests ran against
    assert all(v[0].isdigit() for v in names.values())
    python_reqs = (tmp_path / "_build" / "requirements.txt").read_text()
    assert "kubernetes==37.0.2" in python_reqs
    # helm (kubernetes.core.helm runs the binary): a pinned release, checked against its published sha256
    assert "ARG HELM_URL=https://get.helm.sh/helm-v3.19.0-linux-amd64.tar.gz" in containerfile
    assert re.search(r"^ARG HELM_SHA256=[0-9a-f]{64}$", containerfile, re.M), containerfile
    assert 'RUN $PYCMD /tmp/install_helm.py "$HELM_URL" "$HELM_SHA256"' in containerfile
    assert (tmp_path / "_build" / "helm" / "install_helm.py").is_file()


def _helm_archive(tmp_path):
    binary = tmp_path / "linux-amd64" / "helm"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\necho helm\n")
    archive = tmp_path / "helm.tar.gz"
    with tarfile.open(str(archive), "w:gz") as tar:
        tar.add(str(binary), arcname="linux-amd64/helm")
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def test_install_helm_installs_the_archive_whose_digest_matches(tmp_path):
    archive, digest = _helm_archive(tmp_path)
    dest = tmp_path / "bin-helm"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "ee", "install_helm.py"), archive.as_uri(), digest,
                           str(dest)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert dest.read_text() == "#!/bin/sh\necho helm\n" and os.access(str(dest), os.X_OK)


def test_install_helm_refuses_an_archive_whose_digest_differs(tmp_path):
    archive, digest = _helm_archive(tmp_path)
    dest = tmp_path / "bin-helm"
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "ee", "install_helm.py"), archive.as_uri(), wrong,
                           str(dest)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "sha256 %s, expected %s" % (digest, wrong) in proc.stderr
    assert not dest.exists()


def test_ee_python_pins_match_user_requirements():
    def pins(path):
        with open(path, encoding="utf-8") as handle:
            return {ln.split("==")[0].lower(): ln.split("==")[1].strip()
                    for ln in handle if "==" in ln and not ln.startswith("#")}
    user = pins(os.path.join(ROOT, "requirements.txt"))
    ee = pins(os.path.join(ROOT, "ee", "requirements.txt"))
    for name, version in ee.items():
        assert user.get(name) == version, "%s pinned differently in ee/requirements.txt" % name
