# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install the helm binary into the execution environment: download URL, check its sha256, unpack linux-amd64/helm.

Run by execution-environment.yml (additional_build_steps) as ``python3 install_helm.py URL SHA256 [DEST]``; a digest
that does not match stops the build before anything is installed.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import urllib.request

DEST = '/usr/local/bin/helm'
MEMBER = 'linux-amd64/helm'


def main(url, sha256, dest=DEST):
    with urllib.request.urlopen(url, timeout=120) as response:  # nosec - pinned URL, digest checked below
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256.lower():
        sys.stderr.write('helm archive %s: sha256 %s, expected %s\n' % (url, digest, sha256))
        return 1
    with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as archive:
        member = archive.getmember(MEMBER)
        if not member.isfile():
            sys.stderr.write('helm archive %s: %s is not a file\n' % (url, MEMBER))
            return 1
        source = archive.extractfile(member)
        with open(dest, 'wb') as handle:
            handle.write(source.read())
    os.chmod(dest, 0o755)
    return 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:4]))
