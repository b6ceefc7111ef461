# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the module unit tests drive a module's main(): arguments in, result dict out.

run_module() hands the arguments to AnsibleModule the way the controller does (basic._ANSIBLE_ARGS), with check
mode and diff mode as the _ansible_check_mode and _ansible_diff flags. exit_json and fail_json raise
AnsibleExitJson and AnsibleFailJson instead of printing and exiting, and the result comes back as a dict with
'failed' set ('msg' too on failure) and the module's warn() calls under 'warnings'. For a module that would run a
host command or look one up, a test can stub AnsibleModule.run_command (each command recorded, a chosen rc
answered) and AnsibleModule.get_bin_path.
"""
from __future__ import annotations

import json

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class AnsibleExitJson(Exception):
    """The module called exit_json; args[0] is the result it passed."""


class AnsibleFailJson(Exception):
    """The module called fail_json; args[0] is the result it passed, msg included."""


def set_module_args(monkeypatch, args, check=False, diff=False):
    """Make ``args`` the arguments of the next AnsibleModule, in check mode and diff mode as asked."""
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    monkeypatch.setattr(basic, '_ANSIBLE_ARGS', to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args})))
    monkeypatch.setattr(basic, '_ANSIBLE_PROFILE', 'legacy')


def run_module(monkeypatch, module, args, check=False, diff=False, commands=None, rc=0, bin_path=None):
    """Run ``module.main()`` with ``args``; return its result, with 'failed' True when it called fail_json.

    commands: a list, to stub AnsibleModule.run_command: each command is appended to it and answered with ``rc``
    (stderr 'simulated failure' when rc is not 0). None leaves run_command alone.
    bin_path: a function of a program name, standing in for AnsibleModule.get_bin_path. None leaves it alone.
    """
    set_module_args(monkeypatch, args, check, diff)
    warnings = []

    def exit_json(self, **result):
        raise AnsibleExitJson(result)

    def fail_json(self, msg, **result):
        raise AnsibleFailJson(dict(result, msg=msg))

    def run_command(self, cmd, **kw):
        commands.append(cmd)
        return rc, '', 'simulated failure' if rc else ''

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning: warnings.append(warning))
    if commands is not None:
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    if bin_path is not None:
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **kw: bin_path(name))
    result = {'warnings': warnings}
    try:
        module.main()
    except AnsibleExitJson as done:
        result.update(done.args[0], failed=False)
        return result
    except AnsibleFailJson as done:
        result.update(done.args[0], failed=True)
        return result
    raise AssertionError('%s.main() returned without calling exit_json or fail_json' % module.__name__)


def settings_args(args, reads):
    """A module that takes its phase's settings as one option (``settings``, gpu_operator_manifests): ``args``
    given flat, as the module's options were before, split into ``settings`` and the options named in ``reads``
    (what was read from the cluster or a file)."""
    out = {'settings': dict((k, v) for k, v in args.items() if k not in reads)}
    out.update((k, v) for k, v in args.items() if k in reads)
    return out


def argument_spec_of(monkeypatch, module):
    """The argument spec ``module.main()`` gives AnsibleModule (it is stopped there, nothing runs)."""
    seen = {}

    class Stop(Exception):
        pass

    def capture(argument_spec, **kw):
        seen.update(argument_spec)
        raise Stop()

    monkeypatch.setattr(module, 'AnsibleModule', capture)
    try:
        module.main()
    except Stop:
        return seen
    raise AssertionError('%s.main() did not make its AnsibleModule' % module.__name__)
