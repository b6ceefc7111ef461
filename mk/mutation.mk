# Mutation testing: each scope's files (tools/mutation/scopes.json) broken one small change at a time in a copy of
# the tree, the scope's tests run against each; the mutants they still pass are printed (docs/testing.md,
# "Mutation testing"). CPU heavy and not part of `make test`. MUTATION_ARGS: --scope NAME (repeatable),
# --limit N --seed S (a seeded sample per scope), --list.
MUTATION_ARGS ?=
.PHONY: mutation
mutation: venv collection
	nice $(PY) tools/mutation/mutate.py $(MUTATION_ARGS)
