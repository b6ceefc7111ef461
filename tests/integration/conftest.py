# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the integration targets: the real Kubernetes API server (kube_cluster.py)."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# this directory's helpers (kube_cluster, ...) and the unit tests' shared ones (schema, vf_fleet, example_render)
sys.path.insert(0, os.path.join(HERE, '..', 'unit'))
sys.path.insert(0, HERE)

# pylint: disable-next=wrong-import-position
from ansible_collections.gpuvirt.provision.plugins.module_utils.model import launch_names as _inventory_only  # noqa: E402

# The playbooks these tests run get ansible_python_interpreter as an extra variable (this machine's interpreter
# discovery can find a broken shim), some also the connection and become settings of a host stand-in. The
# launch check refuses Ansible's own variables as extra variables unless the controller's owner allows them
# (docs/security.md, "Launch time"); the test harness is that owner here. It also allows the inputs of one host
# (launch_names.INVENTORY_ONLY: node names, pools, the host roles' paths) as extra variables: the harnesses point
# the host roles at temporary trees that way; the tests of the refusal clear the allowance.
# verify_expected: the verify tests give the phase the expectations the fleet view would compute (a run-time name)
os.environ['GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS'] = ','.join(sorted(
    set(filter(None, os.environ.get('GPUVIRT_LAUNCH_ALLOW_EXTRA_VARS', '').split(',')))
    | set('ansible_python_interpreter,ansible_become,ansible_connection,verify_expected'.split(','))
    | set(_inventory_only.INVENTORY_ONLY)))

from kube_cluster import kube, kube_server  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
