# Tests of playbooks/kubevirt.yml (kubevirt_devices, machineconfig, dra_driver roles): ansible-playbook in
# render mode from the inventories in tests/integration/cluster_kubevirt/, every file schema-validated; and in apply
# mode against a real kube-apiserver (mk/kube.mk) as the least-privilege identity (DRA alone on the stand-in: 1.20
# has no resource.k8s.io/v1).
INTEGRATION_TARGETS += integration-cluster-kubevirt
.PHONY: integration-cluster-kubevirt
integration-cluster-kubevirt: venv collection kube-apiserver
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/cluster_kubevirt
