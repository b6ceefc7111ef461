# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-builder create` must turn execution-environment.yml into a complete build context.

Building the image itself needs the base image from quay.io, which the test machines cannot pull;
the build context is what CI can check for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.mark.skipif(shutil.which("ansible-builder") is None, reason="ansible-builder is in requirements-dev.txt")
def test_builder_creates_context_with_pinned_dependencies(tmp_path):
    proc = subprocess.run(
        ["ansible-builder", "create", "-f", os.path.join(ROOT, "execution-environment.yml"), "-c", str(tmp_path)],
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


def test_ee_python_pins_match_user_requirements():
    def pins(path):
        with open(path, encoding="utf-8") as handle:
            return {ln.split("==")[0].lower(): ln.split("==")[1].strip()
                    for ln in handle if "==" in ln and not ln.startswith("#")}
    user = pins(os.path.join(ROOT, "requirements.txt"))
    ee = pins(os.path.join(ROOT, "ee", "requirements.txt"))
    for name, version in ee.items():
        assert user.get(name) == version, "%s pinned differently in ee/requirements.txt" % name
