# GPU discovery: pci_devices against this machine's real lspci and /sys (needs pciutils).
INTEGRATION_TARGETS += discovery-integration
.PHONY: discovery-integration
discovery-integration: venv collection
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/discovery
