# Tests of playbooks/operator.yml, nodes.yml and verify.yml (gpu_operator, node_labels, verify roles):
# ansible-playbook in render mode from the inventories in tests/integration/cluster_operator/, every file
# schema-validated; and in apply mode against a real kube-apiserver (mk/kube.mk) as the least-privilege identity.
INTEGRATION_TARGETS += integration-cluster-operator
.PHONY: integration-cluster-operator
# Podman: the OpenShift vendor-VFIO roll's host is a container of the Debian 12 systemd image (its test builds it)
integration-cluster-operator: HOST_GROUPS = core kube podman
integration-cluster-operator: venv collection kube-apiserver
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/cluster_operator
