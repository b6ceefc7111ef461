# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-galaxy collection build` (what `make build` runs) gives gpuvirt-provision-<version>.tar.gz with the
collection's content and without the checkout's local state or a user's own files.

The build runs for real, on a copy of the git-tracked tree with what a user's working checkout holds planted in it:
the render output, their inventory with its Vault file (the README has them copy the example to inventories/prod),
the lab's disks, the virtualenv and the staging. Building the checkout itself would test whatever this checkout
happens to hold."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))

# what a user's checkout holds that is theirs or the machine's, never the collection's: each planted file, and the
# folder that must be left out with it
PLANTED = {
    'rendered/x.yaml': 'rendered',
    'rendered/kustomization.yaml': 'rendered',
    'inventories/prod/hosts.yml': 'inventories/prod',
    'inventories/prod/group_vars/all/vault.yml': 'inventories/prod',
    'inventories/staging/hosts.yml': 'inventories/staging',
    'inventories/example-site/hosts.yml': 'inventories/example-site',
    'inventories/exampl/hosts.yml': 'inventories/exampl',
    'inventories/hosts.yml': 'inventories/hosts.yml',
    '.lab/x': '.lab',
    '.build/collections/x': '.build',
    '.venv/bin/python': '.venv',
    '.cache/x': '.cache',
    '.github/workflows/ci.yml': '.github',
    'tests/output/junit.xml': 'tests/output',
    'gpuvirt-provision-0.0.9.tar.gz': 'gpuvirt-provision-0.0.9.tar.gz',
}

# what an installed collection needs to run site.yml against a copy of the example inventory
NEEDED = (
    'MANIFEST.json', 'README.md', 'meta/runtime.yml',
    'plugins/modules/pci_devices.py', 'plugins/filter/discovery.py', 'plugins/module_utils/model/fleet.py',
    'roles/vfio/meta/argument_specs.yml', 'roles/cluster/defaults/main.yml',
    'playbooks/site.yml', 'playbooks/summary.yml',
    'inventories/example/hosts.yml', 'inventories/example/group_vars/all/cluster.yml',
    'inventories/example/.gpuvirt_facts/gpu-p01.example.com.json',
)


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """The names in the tarball built from the tracked tree plus PLANTED."""
    src = tmp_path_factory.mktemp('checkout') / 'provision'
    tracked = subprocess.run(['git', '-C', ROOT, 'ls-files', '-z'], capture_output=True, check=True).stdout
    for rel in tracked.decode().split('\0'):
        if rel and os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(src / os.path.dirname(rel), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), src / rel)
    for rel in PLANTED:
        os.makedirs(src / os.path.dirname(rel), exist_ok=True)
        (src / rel).write_text('planted\n')
    with open(src / 'galaxy.yml', encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)
    out = tmp_path_factory.mktemp('dist')
    galaxy_bin = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    proc = subprocess.run([galaxy_bin, 'collection', 'build', '--output-path', str(out), str(src)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (galaxy['namespace'], galaxy['name'], galaxy['version']) == ('gpuvirt', 'provision', '0.1.0')
    with tarfile.open(out / ('gpuvirt-provision-%s.tar.gz' % galaxy['version'])) as tar:
        return set(tar.getnames())


def test_the_tarball_holds_what_a_user_needs(built):
    missing = [n for n in NEEDED if n not in built]
    assert not missing, 'the built collection lacks %s' % missing


@pytest.mark.parametrize('planted', sorted(PLANTED))
def test_the_tarball_leaves_out_local_and_user_files(built, planted):
    folder = PLANTED[planted]
    leaked = sorted(n for n in built if n == folder or n.startswith(folder + '/'))
    assert not leaked, 'galaxy.yml build_ignore lets %s into the tarball: %s' % (planted, leaked[:5])


def test_no_inventory_but_the_example(built):
    others = sorted(n for n in built if n.startswith('inventories/') and n.split('/')[1] != 'example')
    assert not others, others[:5]
