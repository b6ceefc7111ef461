# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Kubernetes objects may carry a credential. The answer comes from the objects themselves, never from a
variable: extra variables beat every other variable in Ansible, so a protection that read one could be turned off
by whoever launches the job. Unknown shapes count as credentials (fail closed)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def holds_credential(obj):
    """True for a Secret (the kind in any case, or its plural, which the k8s modules also resolve), for a list kind
    (``List``, ``SecretList``: its items may be Secrets) and for anything that is not an object with a string kind."""
    if not isinstance(obj, dict):
        return True
    kind = obj.get('kind')
    if not isinstance(kind, str):
        return True
    kind = kind.lower()
    return kind in ('secret', 'secrets') or kind.endswith('list')


def any_holds_credential(objects):
    """True when any object of ``objects`` may carry a credential, or when ``objects`` is not a list."""
    if not isinstance(objects, (list, tuple)):
        return True
    return any(holds_credential(obj) for obj in objects)
