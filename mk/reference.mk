# Upstream reference files (CRDs, Helm values, OLM, examples, pci.ids, vgpu-device-manager configs) pinned in
# tools/reference/manifest.yml, fetched and checksum-verified into .build/reference/.
# GPUVIRT_REFERENCE_MIRROR=URL replaces https://raw.githubusercontent.com (a mirror laid out as owner/repo/commit/path).
.PHONY: reference

reference:  ## fetch the pinned upstream reference files into .build/reference (python3, standard library only)
	python3 tools/reference/fetch.py --dest $(ROOT)/.build/reference
