# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check_mode/diff_mode attributes shared, word for word, by several modules. A module whose behaviour needs
other words keeps its own ``attributes:`` block."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # gpuvirt.provision.attributes: modules that build or judge objects from their input (the role applies them)
    DOCUMENTATION = r'''
attributes:
  check_mode:
    description: Builds or evaluates data only; nothing on a host or cluster changes in any mode.
    support: full
  diff_mode:
    description: Not supported; the role that applies or renders the result shows the diff.
    support: none
'''

    # gpuvirt.provision.attributes.read_only: discovery modules that only read the host
    READ_ONLY = r'''
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
'''

    # gpuvirt.provision.attributes.builds_only: modules that build one object and show no diff
    BUILDS_ONLY = r'''
attributes:
  check_mode:
    description: Builds data only; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''

    # gpuvirt.provision.attributes.reads_data: modules that judge the data earlier tasks read and pass them
    READS_DATA = r'''
attributes:
  check_mode:
    description: Reads only the data it is given; nothing changes in any mode.
    support: full
  diff_mode:
    description: Not supported.
    support: none
'''
