# The AWX surveys (awx/surveys/<name>.yml), generated from awx/vars.yml, awx/survey.yml and the argument specs.
.PHONY: awx-surveys awx-surveys-check
awx-surveys: venv
	$(PY) tools/awx/generate_surveys.py

awx-surveys-check: venv
	$(PY) tools/awx/generate_surveys.py --check
