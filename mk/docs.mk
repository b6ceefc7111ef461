# Module/role reference generated from DOCUMENTATION blocks and argument specs.
.PHONY: docs docs-check
docs: venv
	$(PY) tools/docs/generate_reference.py
	$(PY) tools/launch_names.py

docs-check: venv
	$(PY) tools/docs/generate_reference.py --check
	$(PY) tools/launch_names.py --check
