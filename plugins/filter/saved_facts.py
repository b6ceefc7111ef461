# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""saved_facts / from_saved_facts: GPU facts to and from the versioned file gather.yml saves (docs/saved-facts.md);
live_facts: a live discovery result checked against the same schema. Documentation lives in the sidecars
saved_facts.yml, from_saved_facts.yml and live_facts.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.utils import unsafe_proxy
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

saved_facts = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.host.saved_facts')


def to_saved_facts(hostvars, host, source=None):
    try:
        return saved_facts.to_saved(host, hostvars, source)
    except saved_facts.SavedFactsError as e:
        raise AnsibleFilterError(str(e))


def from_saved_facts(doc, host, path):
    """The checked facts, as data only: a saved string is never a template. ansible-core 2.19 does not trust
    what a lookup or filter returns as a template; wrap_var also marks the values unsafe for the older cores this
    collection supports (in 2.19 it removes any template trust, recursively)."""
    try:
        return unsafe_proxy.wrap_var(saved_facts.from_saved(doc, host, path))
    except saved_facts.SavedFactsError as e:
        raise AnsibleFilterError(str(e))


def live_facts(result, host, fact):
    """A registered discovery result, unchanged, once what a saved file would keep of it passes the schema."""
    try:
        return saved_facts.check_live(result, host, fact)
    except saved_facts.SavedFactsError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'saved_facts': to_saved_facts, 'from_saved_facts': from_saved_facts, 'live_facts': live_facts}
