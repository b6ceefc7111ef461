# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writes "play <name>" to $GPUVIRT_MODULE_CALLS as each play starts, so the module lines the counting_local
connection writes there fall under the play that ran them (tests only)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
name: play_marks
type: aggregate
short_description: Marks each play's start in the module call log (tests only)
description:
  - Appends C(play <name>) to the file named by the environment variable C(GPUVIRT_MODULE_CALLS) as each play
    starts.
author: gpuvirt.provision maintainers (@gpuvirt)
'''

import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'play_marks'
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        with open(os.environ['GPUVIRT_MODULE_CALLS'], 'a') as f:
            f.write('play %s\n' % play.get_name().strip())
