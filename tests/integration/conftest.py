# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the integration targets: the real Kubernetes API server (kube_cluster.py)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kube_cluster import kube, kube_server  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
