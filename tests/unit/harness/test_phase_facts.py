# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every playbook that reads the host facts gathers them first, and site.yml gathers them once.

In AWX each phase is its own job, a separate ansible-playbook run: the facts gather.yml registered in the
preflight job are gone in the next one. So a playbook a user can run (playbooks/*.yml, not the phase bodies
phase_*.yml that only site.yml and the phase playbooks import) must have gather.yml's plays before any play that
reads the fleet view (the gpuvirt.provision.gpu_hosts filter) or a host fact by name. The import tree is read from
the YAML, following import_playbook as ansible-playbook does (relative to the importing file).
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS = ROOT / 'playbooks'
GATHER = 'gather.yml'
# what gather.yml registers (docs/contracts.md), and the fleet view built from it
READS_FACTS = re.compile(r'gpuvirt\.provision\.gpu_hosts\b|\bgpuvirt_(pci_devices|mdev_types|gpu_holders|os_tag)\b')
# plays that read the view before gather.yml on purpose, and why (file, play name)
BEFORE_GATHER = {
    # the inventory's rules (one pool per host, node names, the KubeVirt version gate on the rows the inventory
    # names) are checked before any host is contacted; the later plays of preflight read the gathered facts
    ('preflight.yml', 'Preflight - inputs and cluster access'),
    # a report of what this run did: run alone, it says "unknown (no GPU facts: run gather.yml first)" per host
    ('summary.yml', 'Summary of the run'),
    # the fleet view for the inventory's GPU node names only (their order, upgrade_nodes checked against them); what
    # the roll decides on it reads from the cluster (nodes, DaemonSet pods, VMIs), never a GPU fact of a host
    ('upgrade.yml', 'Upgrade - plan, then roll the GPU nodes'),
}
# playbooks that read the view only in the plays above (no gather.yml needed)
NO_GATHER = {'demo.yml', 'summary.yml', 'upgrade.yml'}


def expand(path):
    """The plays ``path`` runs, in order, as ``(file name, play)``: import_playbook followed recursively."""
    for entry in yaml.safe_load(path.read_text()) or []:
        target = entry.get('ansible.builtin.import_playbook') or entry.get('import_playbook')
        if target:
            yield from expand((path.parent / target).resolve())
        else:
            yield path.name, entry


def unguarded_reads(path):
    """The plays of ``path`` that read host facts with no gather.yml play before them (minus BEFORE_GATHER)."""
    gathered, bad = False, []
    for name, play in expand(path):
        if name == GATHER:
            gathered = True
        elif not gathered and READS_FACTS.search(yaml.safe_dump(play)) and (name, play.get('name')) not in BEFORE_GATHER:
            bad.append('%s: %s' % (name, play.get('name')))
    return bad


def gathers(path):
    """How many times ``path`` runs gather.yml's discovery play."""
    return sum(1 for name, play in expand(path)
               if name == GATHER and play.get('name') == 'Gather GPU facts on the GPU hosts')


def user_playbooks():
    return sorted(p for p in PLAYBOOKS.glob('*.yml') if not p.name.startswith('phase_'))


def test_every_playbook_gathers_the_facts_before_it_reads_them():
    bad = {p.name: unguarded_reads(p) for p in user_playbooks()}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, (
        'plays that read the host facts (the fleet view, gpuvirt_pci_devices, ...) with no gather.yml before them: '
        '%s. Run alone (an AWX job, the command line) they see no facts; import gather.yml first, as '
        'playbooks/<phase>.yml imports it before phase_<phase>.yml' % bad)


def test_the_phases_that_read_facts_are_found_and_each_gathers_once():
    readers = {p.name for p in user_playbooks()
               if any(READS_FACTS.search(yaml.safe_dump(play)) for name, play in expand(p) if name != GATHER)}
    # the cluster phases and the vGPU hosts' phases of the AWX workflow (awx/vars.yml) all read them
    assert readers >= {'nodes.yml', 'operator.yml', 'vgpu_image.yml', 'vgpu_vf.yml', 'kubevirt.yml', 'verify.yml',
                       'preflight.yml', 'site.yml'}
    for name in sorted(readers - NO_GATHER):
        assert gathers(PLAYBOOKS / name) == 1, name


def test_site_gathers_once():
    # site.yml imports the phase bodies: preflight's gather.yml is the only one (each import of gather.yml costs a
    # second or more of every site.yml run even when it skips every host)
    assert gathers(PLAYBOOKS / 'site.yml') == 1
    imports = [e['ansible.builtin.import_playbook'] for e in yaml.safe_load((PLAYBOOKS / 'site.yml').read_text())]
    assert GATHER not in imports and not [i for i in imports if i.startswith('phase_') and gathers(PLAYBOOKS / i)]


def test_each_phase_playbook_is_gather_then_its_body():
    bodies = sorted(PLAYBOOKS.glob('phase_*.yml'))
    phases = ('nodes', 'operator', 'vgpu_image', 'vgpu_vf', 'kubevirt', 'verify')
    assert {b.name for b in bodies} >= {'phase_%s.yml' % n for n in phases}
    for body in bodies:
        phase = PLAYBOOKS / body.name[len('phase_'):]
        entries = yaml.safe_load(phase.read_text())
        imports = [e['ansible.builtin.import_playbook'] for e in entries if 'ansible.builtin.import_playbook' in e]
        assert imports == [GATHER, body.name], phase.name
        # between them, only the KubeVirt version gate site.yml's preflight applies (vgpu_vf.yml run alone): the
        # cluster role's own entry points, nothing of the phase's
        for play in entries:
            if 'ansible.builtin.import_playbook' not in play:
                roles = [t['ansible.builtin.include_role'] for t in play['tasks']]
                assert phase.name == 'vgpu_vf.yml' and len(roles) == len(play['tasks']), phase.name
                assert [(r['name'], r.get('tasks_from', 'main')) for r in roles] == [
                    ('gpuvirt.provision.cluster', 'main'), ('gpuvirt.provision.cluster', 'kubevirt_gate')], phase.name
