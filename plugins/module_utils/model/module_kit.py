# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules' main() functions share: the argument-spec pieces several modules take word for word, and the
run of a module that builds or judges data from its arguments and changes nothing. Plain Python (no Ansible
import): a module passes its own AnsibleModule in.

``K8S_AUTH`` is kubernetes.core's cluster access (documented by the doc fragment gpuvirt.provision.k8s_auth) and
``k8s_auth`` the keyword arguments of kubernetes.core's ``get_api_client`` from it; ``PERMITTED_DEVICES`` the
inputs of the modules that build KubeVirt's permitted host devices (HyperConverged or the KubeVirt CR);
``argument_spec`` joins pieces and a module's own options into one spec; ``exit_built`` is the build-then-exit
run.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

# kubernetes.core's cluster access options, as its modules take them; a kubeconfig given as its content holds a
# token, so Ansible never logs it
K8S_AUTH = dict(
    kubeconfig=dict(type='raw', no_log=True),
    context=dict(type='str'),
    validate_certs=dict(type='bool', aliases=['verify_ssl']),
)

# the inputs shared by hco_permitted_devices and kubevirt_permitted_devices: the live object, why it was not read,
# the hosts with no facts this run, and the devices wanted
PERMITTED_DEVICES = dict(
    current=dict(type='dict'),
    live_unread=dict(type='str', default=''),
    unknown_hosts=dict(type='list', elements='str', default=[]),
    pci_devices=dict(type='list', elements='dict', default=[]),
    mediated_devices=dict(type='list', elements='dict', default=[]),
)


def argument_spec(*pieces, **options):
    """One argument_spec: a copy of each shared piece, in order, then the module's own ``options`` (a name given
    twice is an error, so that no module silently changes a shared option)."""
    spec = {}
    for piece in pieces + (options,):
        for name, option in piece.items():
            if name in spec:
                raise ValueError('option %s is given twice' % name)
            spec[name] = copy.deepcopy(option)
    return spec


def k8s_auth(params):
    """The keyword arguments of kubernetes.core's ``get_api_client`` from a module's ``K8S_AUTH`` options (an
    option left unset falls back to its K8S_AUTH_* variable there)."""
    return dict((name, params[name]) for name in K8S_AUTH)


def exit_built(module, build, errors, failure=None, warnings=None):
    """The run of a module that builds or judges data and changes nothing: ``build(module.params)`` returns the
    result's fields, and the module exits unchanged with them. An exception among ``errors`` (a class or a tuple;
    ``()`` where the build refuses nothing) fails the module with its message, plus the fields ``failure(exc)``
    returns (none without ``failure``). ``warnings``: the result's key whose list of texts the module also warns,
    in order, before it exits (the key ``warnings`` itself is Ansible's own, so never this one)."""
    try:
        result = build(module.params)
    except errors as exc:
        module.fail_json(msg=str(exc), **(failure(exc) if failure else {}))
    for warning in result[warnings] if warnings else ():
        module.warn(warning)
    module.exit_json(changed=False, **result)
