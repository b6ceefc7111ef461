# Module/role reference generated from DOCUMENTATION blocks and argument specs.
.PHONY: docs docs-check
docs: venv
	$(PY) tools/docs/generate_reference.py

docs-check: venv
	$(PY) tools/docs/generate_reference.py --check
