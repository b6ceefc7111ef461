# GPU discovery: pci_devices against this machine's real lspci and /sys (needs pciutils).
INTEGRATION_TARGETS += discovery-integration
.PHONY: discovery-integration
discovery-integration: HOST_GROUPS = core
discovery-integration: deps
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/discovery
