# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""saved_facts / from_saved_facts: GPU facts to and from the versioned file gather.yml saves (docs/saved-facts.md).
Documentation lives in the sidecars saved_facts.yml and from_saved_facts.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.module_utils import saved_facts


def to_saved_facts(hostvars, host, source=None):
    return saved_facts.to_saved(host, hostvars, source)


def from_saved_facts(doc, host, path):
    try:
        return saved_facts.from_saved(doc, host, path)
    except saved_facts.SavedFactsError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'saved_facts': to_saved_facts, 'from_saved_facts': from_saved_facts}
