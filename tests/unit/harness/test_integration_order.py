# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make integration` starts every registered integration target once, longest first (Makefile
INTEGRATION_LONGEST_FIRST), and a target that list does not name after those (docs/testing.md, "CI time")."""
from __future__ import annotations

import os
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def started(*variables):
    """The targets `make integration` starts, in order (make -n prints the run-in-lanes line, and runs it: its
    makes get -n too)."""
    proc = subprocess.run(['make', '-n', '-C', ROOT, 'integration'] + list(variables), capture_output=True, text=True,
                          check=False)
    # the targets after the lane count of tools/run-in-lanes.sh, which starts them in this order
    (line,) = [ln for ln in proc.stdout.splitlines() if 'tools/run-in-lanes.sh' in ln]
    return line.split('tools/run-in-lanes.sh', 1)[1].split()[1:]


def registered():
    proc = subprocess.run(['make', '-pq', '-C', ROOT, 'integration'], capture_output=True, text=True, check=False)
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith('INTEGRATION_TARGETS :=')]
    return line.split(':=', 1)[1].split()


def test_every_registered_target_starts_once_the_long_ones_first():
    order = started()
    assert sorted(order) == sorted(registered()) and len(order) == len(set(order)), order
    # the two longest (last measured) start together, cluster_operator first (with the upgrade roll's tests the
    # longest: in make test's last stage it starts beside the cold demo check); the EE and discovery targets come
    # after the cluster ones
    assert order[:2] == ['integration-cluster-operator', 'integration-cluster-kubevirt'], order
    assert order.index('integration-playbooks') < order.index('ee') and order[-1] == 'discovery-integration', order
    # ee with its cold image build (about 6 minutes on a fresh machine) is longer than integration-site: started
    # after it, ee would be the last target and run alone on one core (docs/testing.md, "CI time")
    assert order.index('ee') < order.index('integration-site'), order


def test_the_order_follows_the_list_whatever_the_registration_order_and_unnamed_targets_come_last():
    # INTEGRATION_TARGETS given on the command line stands for the mk/ fragments registering in another order and a
    # fragment registering a target the list does not name (bench, a phony target of mk/bench.mk)
    assert started('INTEGRATION_TARGETS=bench integration-site ee integration-cluster-operator') == [
        'integration-cluster-operator', 'ee', 'integration-site', 'bench']
