# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab API server (tools/kube/apiserver.py, which `make demo` and the cluster tests start) refuses a reference
folder without the upstream CRDs before it starts anything: one message naming the missing files and the two ways
to get them, not a traceback from deep inside the CRD loader."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def test_a_missing_reference_folder_is_named_with_the_fix(tmp_path):
    env = dict(os.environ, GPUVIRT_REFERENCE=str(tmp_path / 'no-reference'))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'kube', 'apiserver.py'), 'start',
                           str(tmp_path / 'server')], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert 'Traceback' not in proc.stderr, proc.stderr
    assert 'gpu-operator-v26.7.0-nvidia.com_clusterpolicies.yaml' in proc.stderr
    assert '`make reference`' in proc.stderr and 'GPUVIRT_REFERENCE' in proc.stderr
    # nothing was started: no etcd or kube-apiserver process recorded
    assert not (tmp_path / 'server' / 'pids').exists()
