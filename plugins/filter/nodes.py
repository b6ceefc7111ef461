# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_name and os_tag: what the cluster phases call a host. node_name is the one rule for a host's Kubernetes
node name (every phase uses it); os_tag is the OS tag the GPU Operator appends to the vGPU Manager version on that
node. Documentation lives in the sidecar node_name.yml and os_tag.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuvirt.provision.plugins.plugin_utils.lazy_import import LazyModule

validators = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.model.validators')
vgpu_image = LazyModule('ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.vgpu_image')


def node_name(inventory_hostname, override=None):
    """``gpuvirt_node_name`` when the host sets it, else the short inventory name (as inventory_hostname_short)."""
    if override:
        name, source = str(override), 'gpuvirt_node_name of %s' % inventory_hostname
    elif not inventory_hostname:
        raise AnsibleFilterError('node_name: no inventory host name given')
    else:
        name, source = str(inventory_hostname).split('.', maxsplit=1)[0], 'the short inventory name of %s' % (
            inventory_hostname)
    # a node name becomes part of API paths and rendered file names: a DNS-1123 subdomain (no '/', no '..')
    try:
        return validators.dns1123_subdomain(name, 'node_name (%s)' % source)
    except validators.ValidationError as exc:
        raise AnsibleFilterError('%s. Set gpuvirt_node_name on the host to its name in `kubectl get nodes`.' % exc)


def os_tag(os_release):
    try:
        return vgpu_image.os_tag_from_os_release(os_release)
    except vgpu_image.VgpuImageError as exc:
        raise AnsibleFilterError('os_tag: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'node_name': node_name, 'os_tag': os_tag}
