#!/usr/bin/env bash
# ansible-test bootstraps pip in its sanity venvs with a script downloaded from
# ci-files.testing.ansible.com, which this network cannot reach. Put a stand-in in the cache path
# ansible-test looks for (~/.ansible/test/cache/get_pip_<ver>.py): it uses the interpreter's own
# ensurepip, then installs the pinned packages ansible-test asks for from PyPI.
set -euo pipefail
python=${1:?usage: ansible-test-offline.sh PYTHON}
pip_version=$("$python" - <<'PY'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
import sys
cfg = NativePythonConfig(version='%d.%d' % sys.version_info[:2], path=sys.executable)
print(get_venv_packages(cfg)['pip'])
PY
)
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$cache")"
cat > "$cache" <<'PY'
# Offline stand-in for get-pip.py, written by gpuvirt.provision tools/ansible-test-offline.sh.
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])
if any(not a.startswith('-') for a in args):
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
PY
echo "$cache"
