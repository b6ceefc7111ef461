# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saved GPU facts: what playbooks/gather.yml discovered on a host, as a versioned file a render can read when the
host cannot be reached (a GitOps pipeline with no SSH to the GPU hosts). Format in docs/saved-facts.md.

Only discovery results are kept (the module results' own bookkeeping, such as ``invocation``, is dropped), so a
saved file holds no variable of the run and no secret. Pure Python, no Ansible imports.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

FORMAT_VERSION = 1
# the discovery facts gather.yml registers, and the module result keys kept for each
FACTS = {
    'gpuvirt_pci_devices': ('devices', 'gpus', 'nvswitches', 'gpus_by_driver', 'iommu'),
    'gpuvirt_mdev_types': ('parents', 'interfaces', 'state', 'available_types', 'message'),
    'gpuvirt_gpu_holders': ('held', 'holders', 'message', 'unreadable'),
}
SCALARS = ('gpuvirt_node_name', 'gpuvirt_os_tag')


class SavedFactsError(ValueError):
    """A saved facts file that cannot be used; the message names the file, the key and the fix."""


def to_saved(host, hostvars, source=None):
    """The saved-facts document of ``host`` from its variables (the facts gather.yml registered)."""
    doc = {'format_version': FORMAT_VERSION, 'host': host}
    if source:
        doc['source'] = source
    for fact, keys in FACTS.items():
        value = hostvars.get(fact)
        if isinstance(value, dict):
            doc[fact] = dict((k, value[k]) for k in keys if k in value)
    for fact in SCALARS:
        if isinstance(hostvars.get(fact), str):
            doc[fact] = hostvars[fact]
    return doc


def from_saved(doc, host, path):
    """The facts in a saved document for ``host``; raise SavedFactsError naming ``path`` and what is wrong."""
    if not isinstance(doc, dict):
        raise SavedFactsError('%s: expected a JSON object of saved GPU facts, got %s' % (path, type(doc).__name__))
    version = doc.get('format_version')
    if version != FORMAT_VERSION:
        raise SavedFactsError('%s: format_version %r is not %d, the one this collection reads; gather the facts '
                              'again (playbooks/gather.yml with the host reachable)' % (path, version, FORMAT_VERSION))
    if doc.get('host') != host:
        raise SavedFactsError('%s: saved for host %r, not %r; each host has its own file named after it'
                              % (path, doc.get('host'), host))
    facts = {}
    for fact, keys in FACTS.items():
        value = doc.get(fact)
        if value is None:
            continue
        if not isinstance(value, dict) or any(k not in keys for k in value):
            raise SavedFactsError('%s: %s must be an object with the keys %s' % (path, fact, ', '.join(keys)))
        facts[fact] = value
    if 'gpuvirt_pci_devices' not in facts:
        raise SavedFactsError('%s: gpuvirt_pci_devices is missing; a saved file needs at least the PCI devices'
                              % path)
    for fact in SCALARS:
        if fact in doc:
            if not isinstance(doc[fact], str):
                raise SavedFactsError('%s: %s must be a string' % (path, fact))
            facts[fact] = doc[fact]
    return facts
