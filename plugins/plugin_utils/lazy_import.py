# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module_utils module for the filter plugins, imported when a filter first uses it, not when its file loads.

Ansible's Jinja2Loader loads every file of plugins/filter to find one filter by name (a file may hold several), in
each task's worker, and the collection loader compiles every module it imports from source. So a filter file that
imports its module_utils at the top made every task that used any of our filters compile all of them. With this, a
worker compiles only what the filters it calls use. The launch check lookup still loads everything once in the
controller's process (``load_all``), which every worker then inherits."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

_ALL = []


class LazyModule(object):
    """Stands for the module ``name``; the first attribute read imports it."""

    __slots__ = ('_lazy_name', '_lazy_module')

    def __init__(self, name):
        object.__setattr__(self, '_lazy_name', name)
        object.__setattr__(self, '_lazy_module', None)
        _ALL.append(self)

    def _lazy_load(self):
        module = object.__getattribute__(self, '_lazy_module')
        if module is None:
            module = importlib.import_module(object.__getattribute__(self, '_lazy_name'))
            object.__setattr__(self, '_lazy_module', module)
        return module

    def __getattr__(self, attr):
        return getattr(self._lazy_load(), attr)

    def __setattr__(self, attr, value):
        raise AttributeError('%s is read-only here' % object.__getattribute__(self, '_lazy_name'))


def late(lazy, name):
    """A function that calls ``lazy.name`` with its arguments, looked up at the call: for tables of checks built when
    a filter file loads, which must not import the module then."""
    def call(*args, **kwargs):
        return getattr(lazy, name)(*args, **kwargs)
    call.__name__ = name
    return call


def load_all():
    """Import every module a LazyModule stands for (the launch check lookup, in the controller's process)."""
    for lazy in list(_ALL):
        lazy._lazy_load()  # pylint: disable=protected-access
    return len(_ALL)
