# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the kernel_args role's validate path for real (ansible-playbook, as preflight.yml does): read-only, it decides
the argument list. Flags come the way a user passes them, ``-e name=value``, which ansible-core keeps as strings."""

from __future__ import annotations

from play_runner import run_play, shown

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Validate the kernel arguments (no change)
      ansible.builtin.include_role:
        name: gpuvirt.provision.kernel_args
        tasks_from: validate
    - name: Show the decided arguments
      ansible.builtin.debug:
        msg: "WANTED={{ kernel_args_wanted | to_json }}"
"""


def _run(tmp_path, *extra):
    args = ["-e", "kernel_args_iommu_vendor=intel"]
    for e in extra:
        args += ["-e", e]
    return run_play(tmp_path, PLAY, args=args)


def _wanted(out):
    return shown(out, 'WANTED')


def test_passthrough_false_as_extra_var_string_adds_no_iommu_pt(tmp_path):
    rc, out = _run(tmp_path, "kernel_args_iommu_passthrough=false")
    assert rc == 0, out
    assert _wanted(out) == ['intel_iommu=on'], out


def test_passthrough_default_adds_iommu_pt(tmp_path):
    rc, out = _run(tmp_path)
    assert rc == 0, out
    assert _wanted(out) == ['intel_iommu=on', 'iommu=pt'], out


def test_iommu_no_as_extra_var_string_adds_nothing(tmp_path):
    rc, out = _run(tmp_path, "kernel_args_iommu=no")
    assert rc == 0, out
    assert _wanted(out) == [], out


def test_flag_typo_is_refused_naming_the_variable(tmp_path):
    rc, out = _run(tmp_path, "kernel_args_iommu_passthrough=flase")
    assert rc != 0, out
    assert "kernel_args_iommu_passthrough" in out and "flase" in out, out
    assert "WANTED=" not in out, out


def test_the_derived_vendor_cannot_be_set_from_outside(tmp_path):
    # extra vars beat set_fact: -e kernel_args_vendor=none used to leave the IOMMU arguments out silently
    rc, out = _run(tmp_path, "kernel_args_vendor=none")
    assert rc != 0, out
    assert 'kernel_args_vendor is set ("none")' in " ".join(out.split()), out
    assert "kernel_args_iommu_vendor" in out and "WANTED=" not in out, out


def test_an_iommu_vendor_outside_the_choices_is_refused_naming_the_variable(tmp_path):
    # none is the derived vendor of an IOMMU turned off: given as the setting it planned no IOMMU argument, silently
    rc, out = _run(tmp_path, "kernel_args_iommu_vendor=none")
    assert rc != 0, out
    assert 'kernel_args_iommu_vendor is "none": choose auto, intel or amd' in " ".join(out.split()), out
    assert "WANTED=" not in out, out
