# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods keep a drain from being finished.

``kubectl drain`` (k8s.io/kubectl/pkg/drain/filters.go) leaves DaemonSet-managed pods (with --ignore-daemonsets)
and mirror pods (the kubelet's static pods, annotated ``kubernetes.io/config.mirror``) on the node, and a pod that
has run to completion (phase Succeeded or Failed) holds nothing. Every other pod still on the node, including one
being deleted, means the drain has not finished.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

MIRROR_ANNOTATION = 'kubernetes.io/config.mirror'


def _daemonset_owned(meta):
    return any(isinstance(ref, dict) and ref.get('kind') == 'DaemonSet' and ref.get('controller')
               for ref in meta.get('ownerReferences') or [])


def pods_left(pods):
    """``namespace/name`` of each pod in ``pods`` (Pod objects) that keeps the drain from being finished."""
    left = []
    for pod in pods or []:
        meta = pod.get('metadata') or {}
        if _daemonset_owned(meta) or MIRROR_ANNOTATION in (meta.get('annotations') or {}):
            continue
        if (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed'):
            continue
        left.append('%s/%s' % (meta.get('namespace'), meta.get('name')))
    return sorted(left)
