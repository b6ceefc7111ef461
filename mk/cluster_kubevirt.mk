# Render tests of playbooks/kubevirt.yml (kubevirt_devices, machineconfig, dra_driver roles): ansible-playbook in
# render mode from the inventories in tests/integration/cluster_kubevirt/, every file schema-validated.
INTEGRATION_TARGETS += integration-cluster-kubevirt
.PHONY: integration-cluster-kubevirt
integration-cluster-kubevirt: venv collection
	$(BIN)/pytest -q -p no:cacheprovider tests/integration/cluster_kubevirt
