# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of a phase as one read-only record: the part every phase shares.

A phase lists its settings once, as ``Field`` rows (name, argument spec type, default, the list's element type or
the choices, the inventory variable it comes from, and an optional check of its own). From that one list come the
record class (``record_class``: named, read-only fields, each checked when a record is made, a refusal naming the
field's variable), the suboptions of the module option that carries the settings (``argument_spec``) and the one
way from that option's dict to a record (``build``). Each phase's module keeps its list and its cross-field checks
(model/upgrade_settings.py, manifests/gpu_operator_settings.py); docs/architecture.md, "The settings of a phase",
says the path.

Plain Python (no Ansible import).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpuvirt.provision.plugins.module_utils.model import validators
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.table_row import REQUIRED, TableRow, row_class
from ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators import ValidationError

Field = row_class('Field', (
    ('name', REQUIRED), ('type', REQUIRED), ('default', None), ('elements', None), ('choices', None),
    ('variable', REQUIRED), ('check', None),
), 'One setting of a phase: its name, type (an argument spec type), default, the list\'s element type or the '
   'choices (a tuple, or a function that returns it when asked: a table\'s names, a row added at run time '
   'counting), the inventory variable it comes from, and ``check``: None, or a function of the typed value that '
   'returns it or raises ValidationError with its own sentence (run before the choices are compared).')


def grammar(check, variable):
    """A field's ``check`` by one of the validators' grammars (``check(value, name)``: dns1123_label,
    dns1123_subdomain, ...), its refusal naming ``variable``."""
    return lambda value: check(value, variable)


def choices_of(field):
    """The field's choices as a tuple (asked now when they are a function), or None."""
    choices = field.choices() if callable(field.choices) else field.choices
    return None if choices is None else tuple(choices)


def _number_text(value):
    """An int or a float as the text a str option would hold (580 -> '580'); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return str(value)


def _text(value, refusal):
    """``value`` as a str option holds it (a number as its text); ValidationError ``refusal`` for anything else."""
    text = value if isinstance(value, str) else _number_text(value)
    if text is None:
        raise ValidationError(refusal)
    return text


def _element(field, item):
    """One item of a list field as its ``elements`` type takes it."""
    var = field.variable
    if field.elements == 'str':
        return _text(item, '%s holds %s, not a string' % (var, validators.shown(item, 200)))
    if field.elements == 'dict' and not isinstance(item, dict):
        raise ValidationError('%s holds %s, not a mapping' % (var, validators.shown(item, 200)))
    return item


def typed(field, value):
    """``value`` as ``field`` takes it, or ValidationError naming the field's variable."""
    var = field.variable
    if field.type == 'str':
        value = _text(value, '%s is %s, not a string' % (var, validators.shown(value, 200)))
    elif field.type == 'int':
        # an int setting is a count (upgrade_serial): a whole number of 1 or more
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError('%s is %s, not a whole number >= 1' % (var, validators.shown(value, 200)))
    elif field.type == 'bool':
        if not isinstance(value, bool):
            raise ValidationError('%s is %s, not true or false' % (var, validators.shown(value, 200)))
    elif field.type == 'dict':
        if not isinstance(value, dict):
            raise ValidationError('%s is %s, not a mapping' % (var, validators.shown(value, 200)))
    elif field.type == 'list':
        if not isinstance(value, list):
            raise ValidationError('%s is %s, not a list' % (var, validators.shown(value, 200)))
        value = [_element(field, item) for item in value]
    if field.check is not None:
        value = field.check(value)
    choices = choices_of(field)
    if choices is not None and value not in choices:
        raise ValidationError('%s is %s, not one of %s' % (var, validators.shown(value, 200), ', '.join(choices)))
    return value


class SettingsRecord(TableRow):
    """Base of a phase's settings record: its ``FIELDS`` are checked when a record is made, then ``_check`` (the
    phase's checks across fields). ``PHASE`` names the settings in a refusal ("the upgrade settings"); ``ERROR``,
    when set, is the phase's builders' error class a refusal is raised as (ValidationError's sentence kept)."""
    FIELDS = ()
    PHASE = 'the settings'
    ERROR = None
    __slots__ = ()

    def __init__(self, **values):
        try:
            self._set_fields(values)
        except ValidationError as exc:
            if self.ERROR is None:
                raise
            raise self.ERROR(str(exc))

    def _set_fields(self, values):
        names = [f.name for f in self.FIELDS]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValidationError('%s have no %s; they are %s'
                                  % (self.PHASE, ', '.join(str(k)[:64] for k in unknown[:5]),
                                     ', '.join(names)))
        for field in self.FIELDS:
            value = values.get(field.name)
            value = copy.deepcopy(field.default) if value is None else typed(field, copy.deepcopy(value))
            object.__setattr__(self, field.name, value)
        self._check()

    def _check(self):
        """The phase's checks across fields (a subclass's); raise with a sentence that names the variables."""

    @classmethod
    def of(cls, value, name='settings'):
        """The record of this class from the module's ``settings`` option, or a record of it as it is (``build``)."""
        return build(cls, value, name)

    @classmethod
    def schema(cls):
        """The suboptions of the module option ``settings``, from this class's fields (``argument_spec``)."""
        return argument_spec(cls.FIELDS)


def record_class(class_name, base, fields, doc):
    """The record class of ``fields`` on ``base`` (a SettingsRecord subclass; a test adds a field at run time the
    same way)."""
    return type(class_name, (base,), {
        'FIELDS': tuple(fields), 'COLUMNS': tuple((f.name, f.default) for f in fields),
        '__slots__': tuple(f.name for f in fields), '__doc__': doc})


def build(record, value, name='settings'):
    """The one way to a record of the class ``record``: ``value`` is such a record (returned as it is: it was
    checked when made) or the plain dict the module's ``settings`` option holds (None: every default)."""
    if isinstance(value, record):
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        problem = '%s is %s, not a mapping of %s' % (name, validators.shown(value, 200), record.PHASE)
        raise (record.ERROR or ValidationError)(problem)
    return record(**value)


def argument_spec(fields):
    """The suboptions of the module option ``settings`` (AnsibleModule's argument spec form), from ``fields``."""
    spec = {}
    for field in fields:
        entry = {'type': field.type}
        if field.default is not None:
            entry['default'] = copy.deepcopy(field.default)
        if field.elements is not None:
            entry['elements'] = field.elements
        if field.choices is not None:
            entry['choices'] = list(choices_of(field))
        spec[field.name] = entry
    return spec


def documentation_differences(fields, suboptions):
    """What a doc fragment's ``settings`` suboptions say otherwise than ``fields`` (names, types, element types,
    defaults, choices, a description): [] when they agree. The phases' drift tests call it."""
    out = []
    names = [f.name for f in fields]
    for name in sorted(set(suboptions) ^ set(names)):
        out.append('%s: %s' % (name, 'documented, not a field' if name in suboptions else 'a field, not documented'))
    for field in fields:
        doc = suboptions.get(field.name)
        if doc is None:
            continue
        wanted = {'type': field.type, 'elements': field.elements, 'default': field.default,
                  'choices': list(choices_of(field)) if field.choices is not None else None}
        for key, value in wanted.items():
            if doc.get(key) != value:
                out.append('%s: %s is %r in the documentation, %r in FIELDS' % (field.name, key, doc.get(key), value))
        if not doc.get('description'):
            out.append('%s: no description' % field.name)
    return out
