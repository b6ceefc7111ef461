# -*- coding: utf-8 -*-
# Copyright: gpuvirt.provision maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read side of ``cluster_facts.Client`` through kubernetes.core's client: one copy for the modules that read
the cluster in one execution (cluster_facts, kubevirt_devices_facts). A kind that discovery does not find is
``None`` (k8s_info's ``api_found`` false); every refusal of the server, or a connection that fails, is a
``k8s_apply.Refused`` with the server's status and words, which the pure code above it turns into its message.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests import k8s_client
from ansible_collections.gpuvirt.provision.plugins.module_utils.manifests.k8s_apply import Refused


class Requests(object):
    """``list_objects`` and ``get_object`` for ``cluster_facts.Client``, over a kubernetes.core client ``k8s``."""

    def __init__(self, k8s):
        self.k8s = k8s

    def resource(self, api_version, kind):
        """The kind's resource, or None where discovery finds no exact match (k8s_info's api_found false)."""
        try:
            return self.k8s.resource(kind, api_version)
        except (k8s_client.ResourceNotFoundError, k8s_client.ResourceNotUniqueError):
            return None
        except k8s_client.DynamicApiError as exc:
            raise Refused(exc.status, exc.reason, to_text(exc.body))
        except k8s_client.ApiException as exc:
            raise Refused(exc.status, exc.reason, to_text(exc.body))
        except k8s_client.ConnectionProblem as exc:
            raise Refused(None, to_text(exc))

    def _get(self, resource, **params):
        try:
            answer = self.k8s.client.get(resource, serialize=False, **params)
        except k8s_client.DynamicApiError as exc:
            raise Refused(exc.status, exc.reason, to_text(exc.body))
        except k8s_client.ConnectionProblem as exc:
            raise Refused(None, to_text(exc))
        return json.loads(to_text(answer.data))

    def list_objects(self, api_version, kind, field_selector, limit=None):
        resource = self.resource(api_version, kind)
        if resource is None:
            return None
        params = {'field_selector': field_selector} if field_selector else {}
        if limit:
            params['limit'] = limit
        return self._get(resource, **params).get('items') or []

    def get_object(self, api_version, kind, name):
        resource = self.resource(api_version, kind)
        if resource is None:
            raise Refused(None, 'the API server serves no %s %s' % (api_version, kind))
        try:
            return self._get(resource, name=name)
        except Refused as exc:
            if exc.status == 404:
                return None
            raise
