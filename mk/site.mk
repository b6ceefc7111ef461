# The whole job twice: playbooks/site.yml in apply mode against the real kube-apiserver (mk/kube.mk), OpenShift and
# Kubernetes flavours, every phase (verify with its smoke VM, DRA included); the second run must attempt no write
# (the server's audit log, refused attempts counted). One reset of the session's server per flavour.
INTEGRATION_TARGETS += integration-site
.PHONY: integration-site
integration-site: venv collection kube-apiserver
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/site
