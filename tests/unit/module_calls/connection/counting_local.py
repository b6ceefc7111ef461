# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local connection, writing one line to $GPUVIRT_MODULE_CALLS for each module it runs on the host: a test
counts a play's remote module calls with it (tests/unit/roles/test_host_prep_module_calls.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
name: counting_local
short_description: The local connection, logging each module it runs (tests only)
description:
  - ansible.builtin.local, plus one line per module file it is given (C(AnsiballZ_<module>.py)), appended to the
    file named by the environment variable C(GPUVIRT_MODULE_CALLS). Pipelining must be off, so each module
    arrives as a file.
author: gpuvirt.provision maintainers (@gpuvirt)
extends_documentation_fragment:
  - connection_pipelining
'''

import os

from ansible.plugins.connection.local import Connection as LocalConnection


class Connection(LocalConnection):
    transport = 'counting_local'

    def put_file(self, in_path, out_path):
        name = os.path.basename(out_path)
        if name.startswith('AnsiballZ_'):
            with open(os.environ['GPUVIRT_MODULE_CALLS'], 'a') as f:
                f.write('module %s\n' % name[len('AnsiballZ_'):].rsplit('.', 1)[0])
        return super(Connection, self).put_file(in_path, out_path)
