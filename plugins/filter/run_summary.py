# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lines of the end-of-run summaries (playbooks/summary.yml, playbooks/demo.yml, the kubevirt_devices role's
report): each says what ran and what it changed, from what the phases left, never what they were meant to do.
Documentation lives in the sidecars summary_host_line.yml, summary_kubevirt_line.yml and summary_phases_line.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _join(items, empty):
    items = [str(i) for i in items or [] if str(i)]
    return ', '.join(items) if items else empty


def summary_host_line(entry, report=None, vf_report=None, expected=None):
    """One line for a host of the fleet view (gpu_hosts): pool (and the vGPU interface where it picks the row), what
    host preparation did on it, the VF profiles (rows of vf_profiles: vendor-VFIO), and what its node is expected to
    advertise."""
    report, vf_report = report or {}, vf_report or {}
    traits = entry.get('traits') or {}
    interface = ''
    if entry.get('interface_reason'):
        interface = ', vGPU interface %s: %s' % (entry.get('interface') or 'not known', entry['interface_reason'])
    if 'left_alone' in report:
        prep = 'left the host alone (%s)' % report['left_alone']
    else:
        prep = 'ran' if report else 'not run'
    changed = _join(report.get('changed'), 'nothing') if report else 'nothing (not run)'
    rebooted = ('yes (%s)' % '; '.join(report.get('reboot_reasons') or [])) if report.get('rebooted') else 'no'
    vf = ''
    if traits.get('vf_profiles'):
        vf = ' VF profiles: %s;' % (_join(vf_report.get('vfs'), 'none') if vf_report.get('ran') else 'not set')
    if expected:
        expects = ', '.join('%s x%s' % kv for kv in expected.items())
    elif entry.get('gathered'):
        expects = 'nothing (no NVIDIA GPU in its facts)'
    else:
        expects = 'unknown (no GPU facts: run gather.yml first)'
    return '%s (node %s, pool %s%s): host prep %s; changed: %s; rebooted: %s;%s expects %s' % (
        entry.get('host'), entry.get('node'), entry.get('pool'), interface, prep, changed, rebooted, vf, expects)


def _describe_config(report):
    """What a built KubeVirt / HyperConverged object sets beside the permitted devices."""
    parts = []
    gates = (report or {}).get('featureGates')
    if gates:
        names = sorted(gates) if not isinstance(gates, dict) else sorted(k for k, v in gates.items() if v)
        parts.append('feature gates %s' % ', '.join(names))
    mdev = (report or {}).get('mediatedDevicesConfiguration')
    if isinstance(mdev, dict) and 'enabled' in mdev:
        parts.append('mediated device configuration %s' % ('on' if mdev['enabled'] else 'off'))
    return parts


def summary_kubevirt_line(resource_names, config='kubevirt', mode='apply', would_change=None, applied=None,
                          report=None, check_mode=False):
    """The kubevirt_devices role's report: what the HyperConverged / KubeVirt CR permits after the run, and whether
    this run wrote it (and what besides the devices: the GPU feature gate, the mediated device switch)."""
    what = 'HyperConverged' if config == 'hco' else 'KubeVirt CR'
    permits = ('permits %s' % ', '.join(resource_names)) if resource_names else \
        'permits no GPU device (no host of the run wants one)'
    also = _describe_config(report)
    sets = (' (with %s)' % '; '.join(also)) if also else ''
    if mode == 'render':
        outcome = 'rendered%s' % sets
    elif applied:
        outcome = ('would be updated%s (--check: not written)' if check_mode else 'updated by this run%s') % sets
    elif would_change:
        outcome = 'would be updated%s (not written: a preview)' % sets
    else:
        outcome = 'already as wanted, not written%s' % sets
    return '%s %s; %s' % (what, permits, outcome)


def summary_phases_line(phases):
    """``phases``: ``[{name, ran, note}]`` in run order; ``ran`` false with a ``note`` saying why. One line: the
    phases that ran (with their note), then those that did not and why."""
    ran, skipped = [], []
    for phase in phases or []:
        note = phase.get('note') or ''
        if phase.get('ran'):
            ran.append('%s (%s)' % (phase['name'], note) if note else phase['name'])
        else:
            skipped.append('%s (%s)' % (phase['name'], note or 'not run'))
    line = 'Ran: %s.' % _join(ran, 'no phase')
    if skipped:
        line += ' Not run: %s.' % '; '.join(skipped)
    return line


class FilterModule(object):
    def filters(self):
        return {'summary_host_line': summary_host_line, 'summary_kubevirt_line': summary_kubevirt_line,
                'summary_phases_line': summary_phases_line}
