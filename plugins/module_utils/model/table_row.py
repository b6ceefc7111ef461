# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A row of one of the collection's tables (the pool table, the platform table): named fields with defaults.

A table's row class lists its columns once, in ``COLUMNS``: ``(name, default)`` pairs, ``REQUIRED`` for a column
every row must give. Rows are built with keywords only, so a new column with a default edits no existing row, and
a misspelt column is refused when the module is imported, naming it. Rows are read-only and compare by value.
Plain Python (no Ansible import), importable on every Python the collection's module_utils run on.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy


class _Required(object):
    __slots__ = ()

    def __repr__(self):
        return 'REQUIRED'


REQUIRED = _Required()


class TableRow(object):
    """Base of a table's row class; a subclass sets ``COLUMNS`` and ``__slots__`` (the column names)."""
    COLUMNS = ()
    __slots__ = ()

    def __init__(self, **values):
        names = [name for name, default in self.COLUMNS]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise TypeError('%s: unknown column %s; the columns are %s'
                            % (type(self).__name__, ', '.join(unknown), ', '.join(names)))
        for name, default in self.COLUMNS:
            if name in values:
                value = values[name]
            elif default is REQUIRED:
                raise TypeError('%s %r: the column %s has no default; give it'
                                % (type(self).__name__, values.get('name'), name))
            else:
                value = copy.deepcopy(default)
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError('%s rows are read-only: build a new row with replace()' % type(self).__name__)

    def as_dict(self):
        """The row as a plain dict, column order kept (a copy: changing it changes no row)."""
        return dict((name, copy.deepcopy(getattr(self, name))) for name, default in self.COLUMNS)

    # the name the namedtuple rows had: callers written for them keep working
    _asdict = as_dict

    def replace(self, **values):
        """A new row with ``values`` over this row's."""
        merged = self.as_dict()
        merged.update(values)
        return type(self)(**merged)

    def __eq__(self, other):
        return type(self) is type(other) and self.as_dict() == other.as_dict()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((type(self).__name__, getattr(self, 'name', None)))

    def __repr__(self):
        return '%s(%s)' % (type(self).__name__,
                           ', '.join('%s=%r' % (name, getattr(self, name)) for name, default in self.COLUMNS))


def row_class(class_name, columns, doc=''):
    """A TableRow subclass with ``columns`` (``(name, default)`` pairs, ``REQUIRED`` for no default)."""
    return type(class_name, (TableRow,), {'COLUMNS': tuple(columns), '__slots__': tuple(n for n, d in columns),
                                          '__doc__': doc})
