# vgpu_manager_image role against a real registry: Debian's docker-registry on 127.0.0.1 (free port) with htpasswd
# auth and TLS from a throw-away CA, Podman builds FROM the local base image (built here when missing), pushes,
# re-runs. The registry, its files and the images the tests built are removed at the end, also on failure.
INTEGRATION_TARGETS += registry-integration
.PHONY: registry-integration
registry-integration: HOST_GROUPS = core podman registry docker
registry-integration: deps
	$(BIN)/pytest -q -p no:cacheprovider $(PYTEST_DURATIONS) tests/integration/registry
