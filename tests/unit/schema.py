# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate Kubernetes objects against the real upstream schemas.

No API server can run on the test machines, so what we would send to a cluster is checked against
what the cluster would check it with:

* custom resources (ClusterPolicy, HyperConverged, KubeVirt, MachineConfig, Subscription, ...) against
  the ``openAPIV3Schema`` of the real CRDs in ``$GPUVIRT_REFERENCE/crds/`` (never copied into the repo);
* built-in kinds (Namespace, Secret, ConfigMap, ResourceClaimTemplate, ...) with kubernetes-validate
  in strict mode.

Validation is *strict* for CRDs too: a property that the schema does not declare is an error (the API
server would silently prune it, which is how a typo in a field name turns into a setting that never
takes effect). An object of a kind we hold no schema for raises; it never passes silently.
"""

from __future__ import annotations

import copy
import glob
import os

import jsonschema
import kubernetes_validate
import yaml

DEFAULT_K8S_VERSION = "1.34.0"

# The KubeVirt VM/VMI/KubeVirt schemas exist upstream only as Go strings (see reference/README.md);
# the extracted files hold just the openAPIV3Schema, so their group/version/kind come from here.
_SCHEMA_ONLY_FILES = {
    "virtualmachine-openAPIV3Schema": ("kubevirt.io/v1", "VirtualMachine"),
    "virtualmachineinstance-openAPIV3Schema": ("kubevirt.io/v1", "VirtualMachineInstance"),
    "kubevirt-openAPIV3Schema": ("kubevirt.io/v1", "KubeVirt"),
}


class SchemaError(Exception):
    """An object does not conform to its schema; ``errors`` lists every violation."""

    def __init__(self, doc, errors):
        self.errors = errors
        meta = doc.get("metadata") or {}
        name = "%s/%s %s" % (doc.get("apiVersion"), doc.get("kind"), meta.get("name"))
        super().__init__("%s is invalid:\n  %s" % (name, "\n  ".join(errors)))


def reference_dir():
    """Where the upstream reference files are read from, in this order: ``$GPUVIRT_REFERENCE`` (an override,
    taken as it is), else ``.build/reference`` when it holds ``crds/`` (what ``make reference`` fetches), else a
    reference folder beside the checkout (``../shared/reference``). The Makefile computes the same default."""
    override = os.environ.get("GPUVIRT_REFERENCE")
    if override:
        return override
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    fetched = os.path.join(root, ".build", "reference")
    if os.path.isdir(os.path.join(fetched, "crds")):
        return fetched
    return os.path.normpath(os.path.join(root, "..", "shared", "reference"))


def reference_file(*parts):
    """The first of the reference folders (``$GPUVIRT_REFERENCE``, ``.build/reference``, the folder beside the
    checkout) that holds ``parts``, or None. Machine captures are not fetched by ``make reference``, so a capture may
    sit in another folder than the upstream files."""
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    for base in (os.environ.get("GPUVIRT_REFERENCE"), os.path.join(root, ".build", "reference"),
                 os.path.normpath(os.path.join(root, "..", "shared", "reference"))):
        if base and os.path.exists(os.path.join(base, *parts)):
            return os.path.join(base, *parts)
    return None


def reference_text(*parts):
    """The text of the upstream reference file ``parts`` (a path under ``reference_dir()``)."""
    with open(os.path.join(reference_dir(), *parts), encoding="utf-8") as handle:
        return handle.read()


def _strict(schema):
    """Return a copy of an OpenAPI v3 schema made usable and strict for jsonschema.

    * ``nullable: true`` becomes a JSON-schema null type;
    * objects that declare ``properties`` and neither ``additionalProperties`` nor
      ``x-kubernetes-preserve-unknown-fields`` reject unknown properties (what ``kubectl
      --validate=strict`` reports and the API server would otherwise prune).
    """
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("nullable") and "type" in node:
                node["type"] = [node["type"], "null"]
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    # A CRD's root ``metadata`` schema may only constrain name/generateName; the API server validates the
    # rest against ObjectMeta (namespace, labels, annotations...), so strictness must not apply there.
    meta = schema.get("properties", {}).get("metadata")
    if isinstance(meta, dict) and meta.get("additionalProperties") is False:
        del meta["additionalProperties"]
    return schema


def _load_crd_schemas(root):
    """Map (apiVersion, kind) -> list of (source file, strict schema)."""
    schemas = {}
    for path in sorted(glob.glob(os.path.join(root, "crds", "*.yaml"))):
        base = os.path.basename(path)
        with open(path, encoding="utf-8") as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d]
        for doc in docs:
            if doc.get("kind") == "CustomResourceDefinition":
                group = doc["spec"]["group"]
                kind = doc["spec"]["names"]["kind"]
                for version in doc["spec"]["versions"]:
                    schema = (version.get("schema") or {}).get("openAPIV3Schema")
                    if schema:
                        key = ("%s/%s" % (group, version["name"]), kind)
                        schemas.setdefault(key, []).append((base, _strict(schema)))
            elif "openAPIV3Schema" in doc:
                for marker, key in _SCHEMA_ONLY_FILES.items():
                    if "-%s-" % marker in base:
                        schemas.setdefault(key, []).append((base, _strict(doc["openAPIV3Schema"])))
                        break
    return schemas


def _drop_nulls(node):
    if isinstance(node, dict):
        return {k: _drop_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_drop_nulls(v) for v in node]
    return node


_CACHE = {}


def crd_schemas():
    root = reference_dir()
    if root not in _CACHE:
        if not os.path.isdir(os.path.join(root, "crds")):
            raise RuntimeError(
                "reference CRDs not found under %s/crds; run `make reference` or set GPUVIRT_REFERENCE "
                "to a reference folder" % root
            )
        _CACHE[root] = _load_crd_schemas(root)
    return _CACHE[root]


def known_kinds():
    """The (apiVersion, kind) pairs validated against CRD schemas (built-in kinds come on top)."""
    return sorted(crd_schemas())


def validate(doc, k8s_version=DEFAULT_K8S_VERSION, crd_sources=None):
    """Raise SchemaError unless ``doc`` conforms to its real schema.

    ``crd_sources`` optionally restricts CRD validation to schema files whose name contains one of the
    given strings (e.g. ``["v26.7.0"]`` to validate a ClusterPolicy against that release only);
    by default the object must satisfy every stored release of its CRD.
    """
    if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
        raise SchemaError(doc if isinstance(doc, dict) else {}, ["not a Kubernetes object (apiVersion/kind missing)"])
    key = (doc["apiVersion"], doc["kind"])
    candidates = crd_schemas().get(key)
    if candidates:
        if crd_sources:
            candidates = [c for c in candidates if any(s in c[0] for s in crd_sources)]
            if not candidates:
                raise SchemaError(doc, ["no CRD schema for %s/%s matches %s" % (key + (crd_sources,))])
        # The API server prunes null values of non-nullable fields before validating (CRD
        # defaulting rules); nullable ones accept null anyway, so dropping every null is equivalent.
        pruned = _drop_nulls(doc)
        errors = []
        for source, schema in candidates:
            validator = jsonschema.Draft7Validator(schema)
            for err in sorted(validator.iter_errors(pruned), key=lambda e: list(e.absolute_path)):
                where = ".".join(str(p) for p in err.absolute_path) or "<root>"
                errors.append("%s: %s (schema %s)" % (where, err.message, source))
        if errors:
            raise SchemaError(doc, errors)
        return
    try:
        kubernetes_validate.validate(doc, k8s_version, strict=True)
    except kubernetes_validate.SchemaNotFoundError as exc:
        raise SchemaError(doc, ["no schema known for %s %s: %s" % (key[0], key[1], exc)])
    except kubernetes_validate.ValidationError as exc:
        raise SchemaError(doc, [str(exc)])


def validate_file(path, k8s_version=DEFAULT_K8S_VERSION, crd_sources=None):
    """Validate every document of a YAML file; returns the documents."""
    with open(path, encoding="utf-8") as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d is not None]
    if not docs:
        raise SchemaError({}, ["%s holds no YAML document" % path])
    for doc in docs:
        validate(doc, k8s_version, crd_sources)
    return docs
