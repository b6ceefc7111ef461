# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sink checks its own input: a static rule over every task file of the roles and playbooks.

Extra variables beat every other variable in Ansible, set_fact and registered results included: a value checked
in one task and kept in a fact (``__vfio_checked``, ``__gpu_operator_helm_checked``) can be replaced with
``-e`` before a later task uses it. So every argument of a task that writes a file, runs a command, reboots,
drains or deletes (a sink) must be a literal, a variable passed through a checking filter or writer in that same
expression, or an argument of one of the collection's own modules (they check their arguments themselves, with
the validators of module_utils). The decisions of such a task (its ``when``, and its blocks') may read a fact
set with set_fact only through a checking filter; a registered result may be read there (the role re-derives the
decision from it and the inputs; docs/security.md says what a replaced one could at worst do).

Every module the repository uses is classified below as a sink or not, so a new module forces a decision.
"""
from __future__ import annotations

import pathlib

import jinja2
import pytest
import yaml
from jinja2 import nodes

# imported when this file is collected, not inside a test: a test that ran before in the same process (under
# pytest-xdist, another file's on the same worker) may have installed Ansible's collection loader
# (init_plugin_loader), through which a first import of a collection submodule fails ("collection metadata was not
# loaded")
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_apply, machineconfig as mc
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.common import ManifestError

ROOT = pathlib.Path(__file__).resolve().parents[3]
TASK_FILES = sorted(list(ROOT.glob('roles/*/tasks/*.yml')) + list(ROOT.glob('roles/*/handlers/*.yml'))
                    + list(ROOT.glob('playbooks/*.yml')))

# Modules of other collections that cannot check what they are given: the check sits in the task's templates.
THIRD_PARTY_SINKS = {
    'ansible.builtin.add_host',          # puts a host in the run: the next plays prepare and reboot it
    'ansible.builtin.blockinfile',
    'ansible.builtin.command',
    'ansible.builtin.copy',
    'ansible.builtin.file',              # creates, chmods or deletes
    'ansible.builtin.git',               # clones into a path
    'ansible.builtin.group_by',          # puts a host in a group: host_prep.yml's rolling play drains and reboots it
    'ansible.builtin.reboot',            # its msg goes between double quotes on the host's shutdown command line
    'ansible.builtin.slurp',             # reads a file whose content is sent on
    'ansible.builtin.systemd_service',
    'ansible.builtin.tempfile',
    'community.docker.docker_image',
    'community.docker.docker_login',
    'ansible.builtin.include_vars',      # a file read into variables
    'kubernetes.core.helm',
    'kubernetes.core.helm_info',         # read-only, but runs the helm binary named by binary_path
    'kubernetes.core.k8s',
    'kubernetes.core.k8s_drain',
}
# Reads whose arguments choose what is read: kubernetes.core's client formats the name and namespace into the URL
# unquoted (and urllib3 resolves '..' segments), so a name such as 'x/../../api/v1/namespaces/ns/secrets/s' reads
# another object, which the task then registers and prints; and it joins the selectors with ',', so a value with a
# comma adds a requirement of its own (a drain's check of the pods left would find none). These arguments are judged,
# in the module's mapping or the task's args; a loop's items are judged where they reach one of them (item is read
# through a check there).
PATH_SINKS = {
    'kubernetes.core.k8s_info': ('api_version', 'kind', 'name', 'namespace', 'field_selectors', 'label_selectors'),
}
# The collection's own modules that write, run or bind: each checks its arguments against the validators'
# grammars itself (module_utils), so their arguments need no filter in the task.
OWN_SINKS = {
    'gpuvirt.provision.kernel_cmdline', 'gpuvirt.provision.render_file', 'gpuvirt.provision.render_manifests',
    'gpuvirt.provision.render_session', 'gpuvirt.provision.vfio_bind', 'gpuvirt.provision.vgpu_vf_profiles',
    'gpuvirt.provision.vfio_files_absent',
    'gpuvirt.provision.owned_files_absent',
    # checks every patch itself (node name, label keys and values, the owned-labels record) before any request
    'gpuvirt.provision.node_labels_apply',
    # checks every object itself (apiVersion, kind, name and namespace by their grammars, no list kind) and against
    # its table of what the roles build (kind, scope, declared namespace, name; a MachineConfig's whole content
    # rebuilt by the collection's builder) before any request; sends only server-side applies (dry runs first) under
    # a field manager of the collection's grammar (test_k8s_objects_apply_checks_the_content_it_is_given)
    'gpuvirt.provision.k8s_objects_apply',
}
NON_SINKS = {
    'ansible.builtin.assert', 'ansible.builtin.debug', 'ansible.builtin.fail', 'ansible.builtin.find',
    'ansible.builtin.import_playbook',
    'ansible.builtin.include_role', 'ansible.builtin.include_tasks', 'ansible.builtin.meta', 'ansible.builtin.ping',
    'ansible.builtin.set_fact', 'ansible.builtin.setup', 'ansible.builtin.stat',
    'ansible.builtin.validate_argument_spec',
    'ansible.builtin.wait_for',
    'gpuvirt.provision.dra_manifests', 'gpuvirt.provision.dra_preflight', 'gpuvirt.provision.gpu_holders',
    'gpuvirt.provision.gpu_operator_manifests', 'gpuvirt.provision.gpu_operator_pull_secret',
    'gpuvirt.provision.hco_permitted_devices', 'gpuvirt.provision.kubevirt_devices_plan',
    'gpuvirt.provision.kubevirt_permitted_devices', 'gpuvirt.provision.machineconfig_manifests',
    # builds the vgpu_vf MachineConfig from the hosts' plans (each config checked again by the role's grammar) and
    # the cluster's pools and nodes; writes nothing (k8s_objects applies it)
    'gpuvirt.provision.vgpu_vf_machineconfig',
    'gpuvirt.provision.launch_check', 'gpuvirt.provision.mcp_status', 'gpuvirt.provision.mdev_types', 'gpuvirt.provision.node_labels_plan',
    'gpuvirt.provision.pci_devices', 'gpuvirt.provision.preflight_host', 'gpuvirt.provision.verify_node_resources',
    'gpuvirt.provision.upgrade_plan',
    'gpuvirt.provision.verify_smoke_vm', 'gpuvirt.provision.vgpu_image_ca_file', 'gpuvirt.provision.vgpu_image_facts',
    # read-only: reads the host's boot loader files, /proc/cmdline, sysfs and /boot (and runs grubby --info=ALL or
    # sources the grub defaults file as kernel_cmdline's check mode does) and returns a plan; it checks every path
    # it reads by shape itself
    'gpuvirt.provision.host_plan',
    # read-only: lists and gets through kubernetes.core's client (the cluster role's reads); checks its apiVersions,
    # kinds and CRD names by their grammars before any request
    'gpuvirt.provision.cluster_facts',
    # read-only: a get of HCO's CRD and lists of HyperConverged or KubeVirt and of Node through kubernetes.core's
    # client (the kubevirt_devices role's reads); checks its one choice before any request
    'gpuvirt.provision.kubevirt_devices_facts',
}
# The filters that check a value (or write a text from values they check) and fail naming the variable.
CHECKING_FILTERS = {
    'gpuvirt.provision.checked', 'gpuvirt.provision.host_checked', 'gpuvirt.provision.strict_bool',
    'gpuvirt.provision.vfio_files', 'gpuvirt.provision.modprobe_blacklist', 'gpuvirt.provision.initramfs_command',
    'gpuvirt.provision.vgpu_vf_paths', 'gpuvirt.provision.vgpu_vf_unit', 'gpuvirt.provision.vgpu_vf_config',
    'gpuvirt.provision.vgpu_vf_restart_argv',
    'gpuvirt.provision.vgpu_image_tmp', 'gpuvirt.provision.vgpu_image_ref', 'gpuvirt.provision.vgpu_image_build',
    'gpuvirt.provision.vgpu_image_credential',
    # picks the collection's own VF MachineConfigs (owner labels, role label, unit) from a cluster read and checks
    # each name (DNS subdomain), uid and resourceVersion, and each pool kept (DNS label): the delete goes by uid
    'gpuvirt.provision.vgpu_vf_mc_stale',
}
# Names no launch-time variable replaces in a way that matters here: Ansible's own (omit, the check-mode flag) and
# the loop variable, whose loop expression is checked as an argument of the same task.
HARMLESS = {'omit', 'ansible_check_mode',
            # Ansible's special variable: the launch check refuses it as an extra variable (launch_vars.SPECIAL)
            'role_path'}
LOOP_KEYS = ('loop', 'with_items')
# Facts set with set_fact that a sink's decision may read raw, and why a launch-time variable of that name gains
# nothing there.
DECISION_FACTS = {
    # the cluster role refuses a gpuvirt_cluster that is not what the cluster settings give
    # (tests/unit/roles/test_cluster.py::test_a_cluster_model_given_from_outside_is_refused)
    'gpuvirt_cluster',
    # reasons already handled by a reboot in this run: replaced, they can only skip a pending reboot, which the
    # public input reboot_pending_reasons can do too
    'reboot_handled',
    # the devices selected: each address is checked by vfio_bind itself, and the public vfio_bdfs selects any
    'vfio_selected',
    # the render's nesting level (playbooks/render_open.yml, render_close.yml): an internal name, which the launch
    # check refuses from the extra variables and the inventory (launch_vars, 'internal'); replaced all the same, it
    # could only skip the open or close of the render session, and a render step without this run's session writes
    # through the render directory's own checks (render.py: names, regular files, what the collection wrote)
    '__gpuvirt_render_level',
}
TASK_KEYWORDS = {
    'name', 'when', 'register', 'loop', 'vars', 'become', 'delegate_to', 'run_once', 'changed_when', 'failed_when',
    'check_mode', 'no_log', 'until', 'retries', 'delay', 'tags', 'loop_control', 'environment', 'notify', 'listen',
    'ignore_errors', 'args', 'become_user', 'diff', 'any_errors_fatal', 'throttle', 'timeout', 'delegate_facts',
    'module_defaults', 'with_items', 'ignore_unreachable', 'block', 'rescue', 'always',
}
BLOCK_KEYS = ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers')

# Findings known and not yet fixed, each with its reason: sinks owned by other work (their owners' scope), or an
# argument that is data no check can make safer. A fixed one must leave this table (the test says so).
KNOWN = {
    # the upgrade roll: each loops over what the upgrade_plan module made of this batch's own fresh reads (not a fact
    # from an earlier task), and every name that reaches the API (node, VM, namespace, pod) is checked with
    # gpuvirt.provision.checked in the task itself; the rest is data written to the object (the allocatable as JSON
    # in an annotation, runStrategy Halted), and a restored run strategy is one of KubeVirt's, filtered in the loop
    # (upgrade_restorable, which reads the Nodes only to choose the VMs whose node is released)
    ('roles/upgrade/tasks/batch.yml', "Cordon the batch's nodes"): {'__upgrade_bplan', '__upgrade_node'},
    ('roles/upgrade/tasks/batch.yml', "Delete the batch's operand pods of an older revision, and its validators"): {
        '__upgrade_bplan'},
    ('roles/upgrade/tasks/batch.yml', 'Stop the GPU VMs whose policy is stop'): {'__upgrade_bplan', '__upgrade_vm'},
    ('roles/upgrade/tasks/batch.yml', "Uncordon the batch's nodes"): {'__upgrade_batch'},
    ('roles/upgrade/tasks/restore.yml', 'Give each stopped VM its run strategy back'): {
        '__upgrade_nodes_restore', '__upgrade_strategy', '__upgrade_vm', '__upgrade_vms_stopped'},
    # data, not argv or a path: kubernetes.core.helm writes the values to a file it passes with -f; the builder
    # module checked them, and a replaced registered result can only choose what a values file can
    ('roles/gpu_operator/tasks/helm.yml', 'Install the gpu-operator chart'): {'__gpu_operator_built'},
    ('roles/dra_driver/tasks/main.yml', 'Install the chart'): {'__dra_driver_built'},
    # the same for the upgrade's Helm step: the values are the release's own (helm get values), which the plan
    # checked against the target chart's values.yaml and for OnDelete / autoUpgrade false; data for the -f file
    ('roles/upgrade/tasks/helm.yml', 'Upgrade the Helm release to chart {{ __upgrade_plan.operator.target }}'): {
        '__upgrade_plan'},
    # the render directory: the cluster role refuses a gpuvirt_cluster that is not what gpuvirt_render_dir gives,
    # and that directory is a public input anyway
    ('roles/dra_driver/tasks/render.yml', 'Ensure the render directory exists'): {'gpuvirt_cluster'},
    ('roles/k8s_objects/tasks/render.yml', 'Ensure the render directory exists'): {'k8s_objects_render_dir'},
    # a relative directory is the inventory's (inventory_path): ansible_inventory_sources is Ansible's own, which
    # the launch check refuses as an extra variable
    ('playbooks/render_open.yml', 'Create the render directory'): {'gpuvirt_render_dir', 'ansible_inventory_sources'},
    # a read whose API version and kind a comparison picks among literals (gpuvirt_cluster's kubevirt_config only
    # chooses between HyperConverged's and the KubeVirt CR's): no value of it reaches the path
    ('roles/upgrade/tasks/kubevirt.yml', 'Read what the configuration permits after'): {'gpuvirt_cluster'},
    # objects built and checked by our modules (registered results) or by k8s_objects' own validation
    ('roles/machineconfig/tasks/pool.yml', 'Label the GPU nodes into the dedicated pool'):
        {'__machineconfig_built'},
    ('roles/k8s_objects/tasks/render_secret.yml', 'Ensure the render directory exists'): {'k8s_objects_render_dir'},
    # the lab and the gathering playbook (controller paths of the run itself)
    ('playbooks/demo.yml',
     'Build the lab disk if needed and boot the VM (first time ~2 min for the disk, ~30 s to boot)'):
        {'playbook_dir'},
    ('playbooks/demo.yml', "Start the lab's Kubernetes API server (first time builds kube-apiserver, ~3-7 min)"):
        {'ansible_playbook_python', 'lookup', 'playbook_dir'},
    ('playbooks/gather.yml', "Leave those hosts out of this run's host phases"): {'__gather_saved'},
    # the same for hosts whose facts the inventory gives (a render): a name can only take a host OUT of the host
    # phases (group gpuvirt_offline, which every host play excludes), never add one to them
    ('playbooks/gather.yml', "Leave the hosts with given facts out of this render's host phases"):
        {'__gather_saved', 'gather_given', 'gather_hosts', 'hostvars'},
    ('playbooks/gather.yml', 'Create the saved-facts directory'): {'inventory_dir'},
    ('playbooks/gather.yml', "Write this host's facts (docs/saved-facts.md)"):
        {'hostvars', 'inventory_dir', 'inventory_hostname'},
    # the lead's playbook: the OS tag read on each host
    ('playbooks/gather.yml',
     "Read the OS release (for the vGPU Manager image's OS tag)"):
        {'gpuvirt_os_tag'},
    # NOT FIXED YET (vgpu_manager_image): public inputs without a grammar of their own yet (a git URL and
    # revision, the temporary directory's parent, the builder's name, which the argument spec limits to its choices)
    ('roles/vgpu_manager_image/tasks/main.yml', 'Clone the build context'):
        {'vgpu_manager_image_context_git_repo', 'vgpu_manager_image_context_git_version'},
    ('roles/vgpu_manager_image/tasks/main.yml', 'Create the temporary build directory (mode 0700)'):
        {'vgpu_manager_image_tmp_parent'},
    ('roles/vgpu_manager_image/tasks/validate.yml', 'Check the skopeo and builder commands are there'):
        {'vgpu_manager_image_builder'},
}

_ENV = jinja2.Environment()


def _tasks(node, whens=()):
    """(task, the when conditions of the blocks around it) for every task of a task file or playbook."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item, whens)
    elif isinstance(node, dict):
        if 'hosts' in node:
            for key in BLOCK_KEYS:
                yield from _tasks(node.get(key) or [], whens)
            return
        if any(key in node for key in ('block', 'rescue', 'always')):
            inner = whens + tuple(_as_list(node.get('when')))
            for key in ('block', 'rescue', 'always'):
                yield from _tasks(node.get(key) or [], inner)
            return
        yield node, whens


def _as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def module_of(task):
    names = [key for key in task if key not in TASK_KEYWORDS]
    assert len(names) == 1, 'a task with no module or two: %r' % (task,)
    return names[0]


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def unchecked_names(template, expression=False):
    """The variables a template reads other than through a checking filter, its own Jinja locals excepted."""
    ast = _ENV.parse('{{ %s }}' % template if expression else template)
    local = {n.name for n in ast.find_all(nodes.Name) if n.ctx in ('store', 'param')}
    found = set()

    def walk(node, checked):
        if isinstance(node, nodes.Name) and node.ctx == 'load' and not checked and node.name not in local:
            found.add(node.name)
        checked = checked or (isinstance(node, nodes.Filter) and node.name in CHECKING_FILTERS)
        for child in node.iter_child_nodes():
            walk(child, checked)

    walk(ast, False)
    return found


def _set_names(node, set_facts, registered):
    if isinstance(node, list):
        for item in node:
            _set_names(item, set_facts, registered)
    elif isinstance(node, dict):
        if isinstance(node.get('register'), str):
            registered.add(node['register'])
        facts = node.get('ansible.builtin.set_fact')
        if isinstance(facts, dict):
            set_facts.update(k for k in facts if k != 'cacheable')
        for key in BLOCK_KEYS:
            if key in node:
                _set_names(node[key], set_facts, registered)


def _documents():
    return {str(path.relative_to(ROOT)): yaml.safe_load(path.read_text()) for path in TASK_FILES}


def findings(documents):
    """{(file, task name): unchecked names} over every sink task of ``documents``."""
    set_facts, registered = set(), set()
    for doc in documents.values():
        _set_names(doc, set_facts, registered)
    set_only = set_facts - registered
    out = {}
    for rel, doc in documents.items():
        for task, whens in _tasks(doc):
            module = module_of(task)
            if module not in THIRD_PARTY_SINKS and module not in OWN_SINKS and module not in PATH_SINKS:
                continue
            names = set()
            if module in PATH_SINKS:
                looped = any(key in task for key in LOOP_KEYS)
                args = dict(task.get('args') or {}, **(task[module] if isinstance(task[module], dict) else {}))
                for text in _strings([args.get(key) for key in PATH_SINKS[module]]):
                    names |= unchecked_names(text) - HARMLESS - ({'item'} if looped else set())
            if module in THIRD_PARTY_SINKS:
                looped = any(key in task for key in LOOP_KEYS)
                for text in _strings([task[module], task.get('args'), task.get('vars')]
                                     + [task.get(key) for key in LOOP_KEYS]):
                    names |= unchecked_names(text) - HARMLESS - ({'item'} if looped else set())
            # the decision: a fact set with set_fact may be an extra variable; read it through a check (a read's
            # condition decides only whether it reads: not a decision of this kind)
            for condition in (list(whens) + _as_list(task.get('when'))) if module not in PATH_SINKS else ():
                if isinstance(condition, str):
                    names |= unchecked_names(condition, expression=True) & set_only - DECISION_FACTS
            if names:
                out[(rel, task.get('name'))] = names
    return out


def test_every_module_is_classified_as_sink_or_not():
    used = {module_of(task) for doc in _documents().values() for task, _whens in _tasks(doc)}
    assert len(used) > 30, 'the task files were not read'
    classified = THIRD_PARTY_SINKS | OWN_SINKS | set(PATH_SINKS) | NON_SINKS
    assert not THIRD_PARTY_SINKS & NON_SINKS and not OWN_SINKS & NON_SINKS and not set(PATH_SINKS) & NON_SINKS
    assert used <= classified, ('modules not classified as a sink or not (add each to THIRD_PARTY_SINKS, OWN_SINKS '
                                'or NON_SINKS of this test): %s' % sorted(used - classified))


def test_every_sink_argument_is_checked_in_its_own_task():
    found = findings(_documents())
    new = {key: sorted(names - KNOWN.get(key, set())) for key, names in found.items()
           if names - KNOWN.get(key, set())}
    assert not new, ('these sink tasks read a variable, a set_fact or a registered result without a checking filter '
                     '(%s) in the same expression; an extra variable can replace it after any earlier check. Pipe '
                     'the public input through its check in the task itself:\n%s'
                     % (', '.join(sorted(CHECKING_FILTERS)),
                        '\n'.join('%s: %s: %s' % (k[0], k[1], v) for k, v in sorted(new.items()))))
    stale = {key: sorted(names - found.get(key, set())) for key, names in KNOWN.items()
             if names - found.get(key, set())}
    assert not stale, 'fixed, remove from KNOWN in this test: %s' % stale


@pytest.mark.parametrize('template, expression, expected', [
    ('{{ __vfio_checked.modprobe_path }}', False, {'__vfio_checked'}),
    ("{{ vfio_modprobe_path | gpuvirt.provision.host_checked('modprobe_d_path', 'vfio_modprobe_path') }}", False,
     set()),
    ("{{ (__vfio_ids | gpuvirt.provision.vfio_files(__vfio_softdeps, vfio_modules)).dracut }}", False, set()),
    # a check elsewhere in the expression does not cover a raw read beside it
    ("{{ (x | gpuvirt.provision.checked('semver', 'x')) ~ __y }}", False, {'__y'}),
    ("{{ __y | default(x | gpuvirt.provision.checked('semver', 'x')) }}", False, {'__y'}),
    # Ansible's lenient filters are no check
    ('{{ __reboot_flags.drain | bool }}', False, {'__reboot_flags'}),
    ("{% set r = a | gpuvirt.provision.checked('semver', 'a') %}{{ r | quote }}", False, set()),
    ("__reboot_flags.drain", True, {'__reboot_flags'}),
    ("reboot_drain | gpuvirt.provision.strict_bool('reboot_drain')", True, set()),
])
def test_the_rule_itself(template, expression, expected):
    assert unchecked_names(template, expression) == expected


def test_a_sink_reading_a_checked_fact_is_found_and_its_decision_too():
    doc = yaml.safe_load("""
- name: Check
  ansible.builtin.set_fact:
    __x_checked: {path: "{{ x_path | gpuvirt.provision.host_checked('modprobe_d_path', 'x_path') }}"}
- name: Look
  ansible.builtin.stat: {path: /x}
  register: __x_stat
- name: Write
  ansible.builtin.copy:
    dest: "{{ __x_checked.path }}"
    content: "{{ x_text }}"
  when: __x_checked.path != '' and __x_stat.stat.exists
- name: Block
  when: __x_checked.go
  block:
    - name: Run
      ansible.builtin.command:
        argv: ["{{ x_cmd | gpuvirt.provision.checked('helm_binary', 'x_cmd') }}", version]
      when: __x_stat.stat.exists
""")
    assert findings({'t.yml': doc}) == {('t.yml', 'Write'): {'__x_checked', 'x_text'},
                                        ('t.yml', 'Run'): {'__x_checked'}}


def test_k8s_objects_apply_checks_the_content_it_is_given():
    """OWN_SINKS says k8s_objects_apply checks its own input: what an earlier task's registered result could be
    replaced by (the outside review's objects) is refused by the sink itself, before any request, while what the
    builders make passes (every role's: tests/unit/plugins/modules/test_k8s_objects_apply.py)."""
    sent = []
    client = k8s_apply.Client(sent.append, sent.append, sent.append)
    built = mc.build_machineconfig('gpu', mc.iommu_kernel_args('intel'), True)
    hostile = [
        {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRoleBinding', 'metadata': {'name': 'pwn'},
         'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'cluster-admin'}},
        dict(built, spec=dict(built['spec'], config=dict(built['spec']['config'], systemd={'units': [
            {'name': 'x.service', 'enabled': True, 'contents': '[Service]\nExecStart=/bin/sh -c id\n'}]}))),
        mc.build_machineconfig('worker', mc.iommu_kernel_args('intel'), True, name='00-worker'),
        {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'kube-system'},
         'data': {'config.yaml': ''}},
    ]
    for obj in hostile:
        with pytest.raises(ManifestError):
            k8s_apply.apply_objects([obj], client, {'operator': 'nvidia-gpu-operator'})
    assert sent == []
    assert k8s_apply.checked_objects([built]) == [built]
