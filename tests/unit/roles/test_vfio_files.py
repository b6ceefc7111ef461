# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vfio role's persistent files for real (ansible-playbook, every path under a temporary root): valid input
gives the bytes hosts already carry, and a value that does not fit its grammar (a module name with a quote, an id
with a trailing newline, a path outside modprobe.d) stops the role naming it, before any file is written. The
dracut file is sourced by bash as root when the initramfs is built, so such a value would be root code on the
host."""

from __future__ import annotations

import json

import pytest

from play_runner import run_play
from sysfs_tree import SysfsTree

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the vfio role
      ansible.builtin.include_role:
        name: gpuvirt.provision.vfio
"""

HEADER = '# Managed by gpuvirt.provision (vfio role).\n'
# the bytes the role wrote before its files had one writer (hosts configured then must see no change)
MODPROBE = (HEADER + 'options vfio-pci ids=10de:1aef,10de:2236\n' + 'softdep nouveau pre: vfio-pci\n'
            'softdep nvidia pre: vfio-pci\nsoftdep nvidiafb pre: vfio-pci\nsoftdep snd_hda_intel pre: vfio-pci\n')
DRACUT = HEADER + 'add_drivers+=" vfio vfio_iommu_type1 vfio_pci "\n'
INITRAMFS_TOOLS = ('# BEGIN gpuvirt.provision vfio\nvfio\nvfio_iommu_type1\nvfio_pci\n'
                   '# END gpuvirt.provision vfio\n')
# one module a line, as systemd-modules-load reads it (modules-load.d(5))
MODULES_LOAD = HEADER + 'vfio\nvfio_iommu_type1\nvfio_pci\n'

PATHS = {
    'vfio_modprobe_path': 'etc/modprobe.d/gpuvirt-vfio.conf',
    'vfio_modules_load_path': 'etc/modules-load.d/gpuvirt-vfio.conf',
    'vfio_dracut_path': 'etc/dracut.conf.d/gpuvirt-vfio.conf',
    'vfio_initramfs_modules_path': 'etc/initramfs-tools/modules',
}


def _run(tmp_path, os_family='Debian', **overrides):
    root = tmp_path / 'root'
    for rel in PATHS.values():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
    tree = SysfsTree(tmp_path / 'sys')
    extra = {
        'vfio_gpus': False, 'vfio_runtime_bind': False, 'vfio_initramfs_rebuild': False,
        'vfio_persistent_ids': ['10de:2236', '10de:1aef'], 'vfio_sysfs_root': tree.root,
        'ansible_facts': {'os_family': os_family},
    }
    extra.update((var, str(root / rel)) for var, rel in PATHS.items())
    extra.update(overrides)
    rc, out = run_play(tmp_path, PLAY, extra)
    return rc, out, root


def _files(root):
    """Every file under the temporary root, relative path to text."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob('*')) if p.is_file()}


def test_debian_files_keep_their_bytes(tmp_path):
    rc, out, root = _run(tmp_path)
    assert rc == 0, out
    assert _files(root) == {PATHS['vfio_modprobe_path']: MODPROBE, PATHS['vfio_modules_load_path']: MODULES_LOAD,
                            PATHS['vfio_initramfs_modules_path']: INITRAMFS_TOOLS}, out


def test_dracut_file_keeps_its_bytes(tmp_path):
    rc, out, root = _run(tmp_path, os_family='RedHat')
    assert rc == 0, out
    assert _files(root)[PATHS['vfio_dracut_path']] == DRACUT, out
    assert PATHS['vfio_initramfs_modules_path'] not in _files(root), out


def test_the_modules_load_file_has_one_module_a_line(tmp_path):
    # a literal backslash-n between the names made one line that names no module: nothing loaded at boot
    rc, out, root = _run(tmp_path)
    assert rc == 0, out
    lines = (root / PATHS['vfio_modules_load_path']).read_text().splitlines()
    assert lines[1:] == ['vfio', 'vfio_iommu_type1', 'vfio_pci'], lines


def test_upper_case_ids_are_written_in_lower_case(tmp_path):
    rc, out, root = _run(tmp_path, vfio_persistent_ids=['10DE:2236'])
    assert rc == 0, out
    assert 'options vfio-pci ids=10de:2236\n' in (root / PATHS['vfio_modprobe_path']).read_text(), out


# The unit tests of the grammars and the writer cover the whole hostile alphabet; here one value per variable,
# each as a real run (the dracut branch: its file is the one bash sources).
HOSTILE = [
    ('vfio_modules', ['vfio_pci" ; touch /PWNED ; x="']),
    ('vfio_modules', 'vfio_pci'),
    ('vfio_softdep_drivers', ['nouveau pre: vfio-pci\ninstall nvidia /bin/sh']),
    ('vfio_persistent_ids', ['10de:2236\n']),
    ('vfio_device_ids', ['10de:22;36']),
    # paths under the temporary root (ROOT/): a role that took them would write there, not on this machine
    ('vfio_modprobe_path', 'ROOT/etc/profile.d/gpuvirt-vfio.sh'),
    ('vfio_modules_load_path', 'ROOT/etc/modules-load.d/../../root/.bashrc'),
    ('vfio_dracut_path', 'ROOT/etc/dracut.conf.d/gpuvirt vfio.conf'),
]


@pytest.mark.parametrize('var,value', HOSTILE)
def test_a_hostile_value_stops_the_role_before_any_file_is_written(tmp_path, var, value):
    if isinstance(value, str) and value.startswith('ROOT/'):
        value = str(tmp_path / 'root' / value[len('ROOT/'):])
        for rel in ('etc/profile.d', 'root'):  # so that only the rule keeps the role from writing there
            (tmp_path / 'root' / rel).mkdir(parents=True)
    rc, out, root = _run(tmp_path, os_family='RedHat', **{var: value})
    assert rc != 0, out
    assert _files(root) == {}, out
    assert var in out, out
    # the value is named, as Python or JSON quotes it (a newline shows as \\n)
    shown = value[-1] if isinstance(value, list) else value
    assert repr(shown) in out or json.dumps(shown) in out, out
    assert 'Claim the devices for vfio-pci' not in out, out


def test_the_initramfs_tools_block_refuses_a_hostile_module_on_debian(tmp_path):
    rc, out, root = _run(tmp_path, vfio_modules=['vfio', 'vfio_pci\ninstall vfio_pci /bin/sh -c "touch /PWNED"'])
    assert rc != 0, out
    assert _files(root) == {}, out
    assert 'vfio_modules[1]' in out, out


def test_a_hostile_driver_name_from_sysfs_is_refused_before_any_file(tmp_path):
    # a driver name the inputs never checked (the device's driver link, named by whoever loaded the driver): the
    # inspection shows a driver name outside the kernel module grammar as "?" and counts the device as held by it,
    # so the role stops in its checks, even where vfio_rebind_drivers names it, before the first file is written
    # (the writer, vfio_files, would refuse it too: tests/unit/plugins/module_utils/host/test_modprobe.py)
    tree = SysfsTree(tmp_path / 'sys')
    tree.device('0000:41:00.0', '0302', '10de', '2236', driver='x;reboot', group=7)
    rc, out, root = _run(tmp_path, vfio_sysfs_root=tree.root, vfio_bdfs=['0000:41:00.0'],
                         vfio_rebind_drivers=['x;reboot'])
    assert rc != 0, out
    assert 'is held by driver ?' in out and 'nothing was changed' in out, out
    assert _files(root) == {}, out


# Extra variables beat set_fact: a launcher could give the role's internal facts (the checked paths, the rendered
# texts, the ids) from outside. Each writing task computes its path and text through the checks itself, so such a
# variable either changes nothing or is refused by the writer; nothing is ever written from it.
def test_rendered_texts_given_from_outside_are_not_what_is_written(tmp_path):
    hostile = {'modprobe': 'install nvidia /bin/sh -c "id > /tmp/pwned"\n',
               'modules_load': 'vfio\n', 'initramfs_tools': 'x', 'dracut': 'add_drivers+="$(id > /tmp/x)"\n'}
    rc, out, root = _run(tmp_path, os_family='RedHat', __vfio_files=hostile)
    assert rc == 0, out
    files = _files(root)
    assert files[PATHS['vfio_modprobe_path']] == MODPROBE, out
    assert files[PATHS['vfio_dracut_path']] == DRACUT, out
    assert not any('install' in text or '$(' in text for text in files.values()), files


def test_checked_paths_given_from_outside_are_not_where_anything_is_written(tmp_path):
    elsewhere = tmp_path / 'root' / 'etc' / 'profile.d'
    elsewhere.mkdir(parents=True)
    # the ids and drivers as the inputs give them (they only ever reach the writer, which checks them); the module
    # names and the paths hostile
    checked = {'device_ids': [], 'persistent_ids': ['10de:2236', '10de:1aef'],
               'softdep_drivers': ['nouveau', 'nvidia', 'nvidiafb', 'snd_hda_intel'],
               'modules': ['vfio_pci" ; id ; x="'],
               'modprobe_path': str(elsewhere / 'gpuvirt.sh'), 'modules_load_path': str(elsewhere / 'a.sh'),
               'dracut_path': str(elsewhere / 'b.sh'), 'initramfs_modules_path': str(elsewhere / 'c.sh')}
    rc, out, root = _run(tmp_path, os_family='RedHat', __vfio_checked=checked)
    assert rc == 0, out
    assert list(elsewhere.iterdir()) == [], out
    files = _files(root)
    assert files == {PATHS['vfio_modprobe_path']: MODPROBE, PATHS['vfio_modules_load_path']: MODULES_LOAD,
                     PATHS['vfio_dracut_path']: DRACUT}, out


def test_ids_given_from_outside_meet_the_writer_and_nothing_is_written(tmp_path):
    rc, out, root = _run(tmp_path, os_family='RedHat',
                         __vfio_ids=['10de:2236\ninstall nvidia /bin/sh -c id'], __vfio_softdeps=['nouveau'])
    assert rc != 0, out
    assert 'vfio_files: ' in out and 'install nvidia' in out, out
    assert _files(root) == {}, out
