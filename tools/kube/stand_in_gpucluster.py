# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in CRD for the GPU Operator's ``GPUCluster`` (nvidia.com/v1alpha1), for the schema tests and the real
API server of the cluster tests.

Why a stand-in: the reference folder holds the GPU Operator's ClusterPolicy and NVIDIADriver CRDs, not the
GPUCluster's, and upstream files are never copied into this repository. So the schema is written here, by hand,
from the Go types it is generated from: NVIDIA/gpu-operator v26.7.0, ``api/nvidia/v1alpha1/gpucluster_types.go``
(GPUClusterSpec, DRADriverSpec, DRADriverGPUsSpec, DRADriverComputeDomainsSpec, DRADriverKubeletPluginSpec,
DRADriverHealthcheckSpec, DRADriverControllerSpec, HostPathsSpec, GPUClusterStatus and the kubebuilder markers:
scope Cluster, short name ``gc``, status subresource, ``draDriver`` required, ``image`` pattern
``^[a-zA-Z0-9\\-]+$``, healthcheck port 1..65535, ``status.state`` ready/notReady/disabled). The fields whose
types are the v1 ClusterPolicy's (``dcgm``, ``dcgmExporter``, ``daemonsets``, ``env``, ``resources``) are left open
(``x-kubernetes-preserve-unknown-fields``): the collection does not set them beyond what the CSV's alm-examples
carry. The CRD's one CEL rule (XValidation ``self.metadata.name == 'gpu-cluster'``) cannot run on the 1.20 test
server; ``SINGLETON_NAME`` holds it for the tests.

Self-contained on purpose (``tools/kube/apiserver.py`` is not changed): a test creates it with
``Cluster.create_crd(GPUCLUSTER_CRD)`` and deletes it after.
"""
from __future__ import annotations

import copy

GROUP = 'nvidia.com'
VERSION = 'v1alpha1'
KIND = 'GPUCluster'
PLURAL = 'gpuclusters'
CRD_NAME = PLURAL + '.' + GROUP
SINGLETON_NAME = 'gpu-cluster'

_OPEN = {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
_ENV = {'type': 'array', 'items': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}
_KUBELET_PLUGIN = {
    'type': 'object',
    'properties': {
        'env': _ENV,
        'resources': _OPEN,
        'healthcheck': {
            'type': 'object',
            'properties': {
                'enabled': {'type': 'boolean', 'default': True},
                'port': {'type': 'integer', 'format': 'int32', 'minimum': 1, 'maximum': 65535},
            },
        },
    },
}

SCHEMA = {
    'type': 'object',
    'properties': {
        'apiVersion': {'type': 'string'},
        'kind': {'type': 'string'},
        'metadata': {'type': 'object'},
        'spec': {
            'type': 'object',
            'required': ['draDriver'],
            'properties': {
                'draDriver': {
                    'type': 'object',
                    'properties': {
                        'repository': {'type': 'string'},
                        'image': {'type': 'string', 'pattern': '^[a-zA-Z0-9\\-]+$'},
                        'version': {'type': 'string'},
                        'imagePullPolicy': {'type': 'string'},
                        'imagePullSecrets': {'type': 'array', 'items': {'type': 'string'}},
                        'featureGates': {'type': 'object', 'additionalProperties': {'type': 'boolean'}},
                        'gpus': {'type': 'object', 'properties': {'kubeletPlugin': _KUBELET_PLUGIN}},
                        'computeDomains': {
                            'type': 'object',
                            'properties': {
                                'enabled': {'type': 'boolean', 'default': True},
                                'controller': {'type': 'object', 'properties': {'env': _ENV, 'resources': _OPEN}},
                                'kubeletPlugin': _KUBELET_PLUGIN,
                            },
                        },
                    },
                },
                'dcgm': _OPEN,
                'dcgmExporter': _OPEN,
                'hostPaths': {
                    'type': 'object',
                    'properties': {
                        'driverInstallDir': {'type': 'string'},
                        'kubeletRootDir': {'type': 'string', 'default': '/var/lib/kubelet'},
                    },
                },
                'daemonsets': _OPEN,
            },
        },
        'status': {
            'type': 'object',
            'required': ['state'],
            'properties': {
                'state': {'type': 'string', 'enum': ['ready', 'notReady', 'disabled']},
                'namespace': {'type': 'string'},
                'conditions': {'type': 'array', 'items': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}},
            },
        },
    },
}

GPUCLUSTER_CRD = {
    'apiVersion': 'apiextensions.k8s.io/v1',
    'kind': 'CustomResourceDefinition',
    'metadata': {'name': CRD_NAME, 'labels': {'gpuvirt.test/stand-in': 'true'}},
    'spec': {
        'group': GROUP,
        'scope': 'Cluster',
        'names': {'kind': KIND, 'listKind': KIND + 'List', 'plural': PLURAL, 'singular': 'gpucluster',
                  'shortNames': ['gc']},
        'versions': [{'name': VERSION, 'served': True, 'storage': True, 'subresources': {'status': {}},
                      'schema': {'openAPIV3Schema': SCHEMA}}],
    },
}


def crd():
    """A fresh copy of the stand-in CRD."""
    return copy.deepcopy(GPUCLUSTER_CRD)
