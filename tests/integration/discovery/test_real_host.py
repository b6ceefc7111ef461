# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pci_devices against this machine's real lspci and /sys, through ansible-playbook; the result is checked
against `lspci -n` and /sys read directly. Needs pciutils (CI installs it: a missing lspci fails there, tool_gate.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

from tool_gate import need

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - gpuvirt.provision.pci_devices:
        vendors: {vendors}
      register: pci
    - ansible.builtin.copy:
        content: "{{{{ pci | to_json }}}}"
        dest: {out}
"""


def lspci_n():
    """{bdf: (class, vendor, device)} from `lspci -Dn` (the terse numeric format)."""
    out = subprocess.run(['lspci', '-Dn'], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r'^(\S+) ([0-9a-f]{4}): ([0-9a-f]{4}):([0-9a-f]{4})', line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_pci_devices_agrees_with_lspci_and_sys(tmp_path):
    need('lspci', 'pciutils')
    truth = lspci_n()
    assert truth, 'lspci -Dn listed no device'
    vendors = sorted(set(v for dummy, v, dummy2 in truth.values()))
    out = tmp_path / 'pci.json'
    (tmp_path / 'play.yml').write_text(PLAYBOOK.format(vendors=json.dumps(vendors), out=out))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    bin_dir = os.path.dirname(sys.executable)
    proc = subprocess.run([os.path.join(bin_dir, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local',
                           '-e', 'ansible_python_interpreter=' + sys.executable, str(tmp_path / 'play.yml')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout
    res = json.loads(out.read_text())
    assert res['changed'] is False
    got = {d['bdf']: (d['class_id'], d['vendor_id'], d['device_id']) for d in res['devices']}
    assert got == truth
    for d in res['devices']:
        base = os.path.join('/sys/bus/pci/devices', d['bdf'])
        driver = os.path.basename(os.readlink(base + '/driver')) if os.path.exists(base + '/driver') else None
        group = os.path.basename(os.readlink(base + '/iommu_group')) if os.path.exists(base + '/iommu_group') else None
        assert (d['driver'], d['iommu_group']) == (driver, group), d['bdf']
        with open(base + '/vendor') as f:
            assert f.read().strip() == '0x' + d['vendor_id']
    groups = os.listdir('/sys/kernel/iommu_groups') if os.path.isdir('/sys/kernel/iommu_groups') else []
    assert res['iommu']['enabled'] is bool(groups) and res['iommu']['groups'] == len(groups)
    if not groups:
        assert res['iommu']['message'].startswith('IOMMU is off')
