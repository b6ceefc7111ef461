# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a relative path a user gives (gpuvirt_render_dir) points: the inventory's directory, else the directory
ansible-playbook was started in. Never the directory of the playbook or of the installed collection: a playbook
run by its collection name (gpuvirt.provision.site) lives in the collection's install path, and a render written
there is lost with the next install. Pure Python, no Ansible imports."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


class PathError(ValueError):
    """A path that cannot be resolved; the message names the variable and the fix."""


def inventory_base(sources, cwd=None):
    """The directory a relative path is resolved against: the first inventory source (``ansible_inventory_sources``,
    absolute paths as ansible-playbook gives them) that is a directory (itself) or a file (its directory); when no
    source is either (no -i, or an inline list such as ``-i host1,``), ``cwd`` (the working directory)."""
    for source in sources or []:
        if not isinstance(source, str) or ',' in source:
            continue
        if os.path.isdir(source):
            return os.path.abspath(source)
        if os.path.isfile(source):
            return os.path.dirname(os.path.abspath(source))
    return os.path.abspath(cwd or os.getcwd())


def user_path(path, sources, name='path', cwd=None):
    """``path`` as an absolute, normalised path: ``~`` expanded, a relative one joined to ``inventory_base``.
    An empty path stays empty (the variable is unset); anything but text is refused, naming ``name``."""
    if path is None or path == '':
        return ''
    if not isinstance(path, str):
        raise PathError('%s is %r; expected a path (text)' % (name, path))
    if '\0' in path:
        raise PathError('%s contains a NUL character; expected a path' % name)
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(inventory_base(sources, cwd), path)
    return os.path.normpath(path)
