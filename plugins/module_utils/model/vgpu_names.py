# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vGPU type names and the boards they belong to, judged one way everywhere (preflight, the vGPU config builder,
resource names, type discovery). Pure Python.

A type is reported as "NVIDIA A10-12Q" (older releases: "GRID T4-1Q"); vgpu-device-manager configs use the short
name "A10-12Q". The board model is the part before the profile: A10 for A10-12Q, A100 for A100-1-5C (MIG-backed),
A100D for A100D-4C. The "D" types are the A100 80GB's: an A100D type fits a board pci.ids names [A100 ...].
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_PREFIX = re.compile(r'^(GRID|NVIDIA)\s+')
# board model, then -<size>[-<memory>]<series letters>: A10-12Q, A100-1-5C, A100D-4C
_TYPE_MODEL = re.compile(r'([A-Za-z0-9]+?)(?:-\d+(?:-\d+)?[A-Z]+)')
_BRACKETED = re.compile(r'\[([^\]]+)\]')


def short_type_name(type_name):
    """The name vgpu-device-manager configs use: "GRID "/"NVIDIA " prefix dropped ("NVIDIA A10-12Q" -> "A10-12Q")."""
    return _PREFIX.sub('', (type_name or '').strip())


def full_type_name(short_name):
    """The mdev type name the vGPU Manager will report for a config's type, before it is loaded: current vGPU
    releases spell it "NVIDIA <board>-<profile>" (NVIDIA's OpenShift Virtualization guide, "Add GPU Resources to the
    HyperConverged Custom Resource": mdevNameSelector "NVIDIA A10-24Q" for the config type A10-24Q)."""
    return 'NVIDIA ' + short_type_name(short_name)


def reported_short_name(vtype):
    """Short name of one type as mdev_types reports it (a dict with ``short_name`` and/or ``name``); '' if none."""
    return vtype.get('short_name') or short_type_name(vtype.get('name') or '')


def type_model(type_name):
    """The board a vGPU type belongs to (A10 for "NVIDIA A10-12Q"), or None when the name has another shape."""
    match = _TYPE_MODEL.fullmatch(short_type_name(type_name))
    return match.group(1) if match else None


def board_models(gpus):
    """Upper-case tokens of the bracketed marketing names of ``gpus`` (pci_devices entries), VFs left out:
    'GA102GL [A10]' -> {'A10'}, 'GA100 [A100 PCIe 80GB]' -> {'A100', 'PCIE', '80GB'}."""
    models = set()
    for gpu in gpus or []:
        if gpu.get('is_vf'):
            continue
        for part in _BRACKETED.findall(gpu.get('device_name') or ''):
            models.update(tok.upper() for tok in re.split(r'[\s/]+', part) if tok)
    return models


def model_on_boards(model, models):
    """Whether board model ``model`` (from ``type_model``) is among ``models`` (from ``board_models``); a "D"
    model (A100D) is the board without the D."""
    model = model.upper()
    return model in models or model.rstrip('D') in models
