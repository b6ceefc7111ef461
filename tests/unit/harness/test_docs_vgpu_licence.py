# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A vGPU guest needs an NVIDIA licence, which the collection does not provide: the vGPU pool's page says how to hand
the guest its NLS client configuration token (a Secret through cloud-init) and what fails without it."""
from __future__ import annotations

import pathlib

DOCS = pathlib.Path(__file__).resolve().parents[3] / 'docs' / 'pools'


def _section(text, title):
    start = text.index(title)
    rest = text[start + len(title):]
    ends = [i for i in (rest.find('\n## '), rest.find('\n### ')) if i >= 0]
    return rest[:min(ends)] if ends else rest


def test_the_vgpu_page_says_how_a_guest_gets_its_licence_and_what_fails_without_it():
    section = _section((DOCS / 'vgpu.md').read_text(encoding='utf-8'), "### The guest's licence")
    # NVIDIA License System User Guide, "Configuring a Licensed Client": the token goes in
    # /etc/nvidia/ClientConfigToken (Linux), then nvidia-gridd restarts
    assert '/etc/nvidia/ClientConfigToken/' in section and 'nvidia-gridd' in section
    # supplied as a credential: a Secret, through KubeVirt's cloudInitNoCloud secretRef
    assert 'kind: Secret' in section and 'cloudInitNoCloud: {secretRef:' in section
    # what fails without it (Virtual GPU Client Licensing User Guide, "How NVIDIA vGPU Software Licensing Is Enforced")
    assert 'Without a licence' in section and 'degraded' in section
    # the vendor-VFIO page's VMs are vGPUs too: the vGPU page names it
    assert 'vendor-vfio.md' in section
