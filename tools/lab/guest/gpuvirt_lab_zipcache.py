"""The lab guest's bytecode cache for modules imported from a zip (installed by tools/lab/build-image.sh).

Lab only; no GPU host gets this. Ansible runs every module from a zip (AnsiballZ), and Python keeps no bytecode for
what it imports from a zip, so each task compiles ansible.module_utils and the collection's module_utils again.
Under QEMU TCG that is about a quarter of a task's time (measured: host_prep.yml with nothing to change, 60 s
without, 46 s with). This hook keeps the compiled code in the user's own directory, which the image creates (0700,
owned by that user); a user without one compiles as before. The key is the file's path inside the zip and its
source, so changed source is compiled again. A cached code object keeps the file name of the run that compiled it:
a traceback may name an earlier run's temporary zip.
"""
import hashlib
import marshal
import os
import stat
import sys
import zipimport

CACHE_DIR = '/var/cache/gpuvirt-lab-pyzip/%d' % os.getuid()
_compile_source = getattr(zipimport, '_compile_source', None)


def _own_private_dir(path):
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def _cached_compile(pathname, source):
    inner = pathname.rsplit('.zip', 1)[-1]
    key = hashlib.sha256(b'\0'.join([sys.implementation.cache_tag.encode(), inner.encode(), source])).hexdigest()
    path = os.path.join(CACHE_DIR, key)
    try:
        with open(path, 'rb') as cached:
            return marshal.load(cached)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile_source(pathname, source)
    tmp = '%s.%d' % (path, os.getpid())
    try:
        with open(tmp, 'wb') as out:
            marshal.dump(code, out)
        os.replace(tmp, path)
    except OSError:
        pass
    return code


if _compile_source is not None and _own_private_dir(CACHE_DIR):
    zipimport._compile_source = _cached_compile  # pylint: disable=protected-access
