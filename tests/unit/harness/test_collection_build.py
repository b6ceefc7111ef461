# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-galaxy collection build` (what `make build` runs) gives gpuvirt-provision-<version>.tar.gz with the
collection's content and without the checkout's local state (virtualenv, lab disks, staging)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


def test_build_produces_the_collection_tarball(tmp_path):
    with open(os.path.join(ROOT, 'galaxy.yml'), encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)
    galaxy_bin = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    proc = subprocess.run([galaxy_bin, 'collection', 'build', '--output-path', str(tmp_path), ROOT],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tarball = tmp_path / ('gpuvirt-provision-%s.tar.gz' % galaxy['version'])
    assert (galaxy['namespace'], galaxy['name'], galaxy['version']) == ('gpuvirt', 'provision', '0.1.0')
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for wanted in ('MANIFEST.json', 'plugins/modules/pci_devices.py', 'plugins/filter/discovery.py',
                   'roles/vfio/meta/argument_specs.yml', 'playbooks/site.yml', 'meta/runtime.yml', 'README.md'):
        assert wanted in names, wanted
    local_state = [n for n in names if n.split('/')[0] in ('.venv', '.build', '.lab', '.ci', '.git')]
    assert not local_state, local_state[:5]
