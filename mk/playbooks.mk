# The product playbooks: syntax-check of every playbook against both inventories, preflight against a
# good and bad inventories (this machine as the GPU hosts, facts given), site.yml stopping in preflight; preflight's
# node check in apply mode against the real API server (mk/kube.mk).
INTEGRATION_TARGETS += integration-playbooks
.PHONY: integration-playbooks
integration-playbooks: venv collection kube-apiserver
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/playbooks
