"""A bytecode cache for Python modules imported from a zip: test machines and the QEMU lab guest only.

Ansible runs every module from a zip (AnsiballZ), and Python keeps no bytecode for what it imports from a zip, so
each task compiles ansible.module_utils and the collection's module_utils again. That is about a quarter of a task's
time on the lab guest under QEMU TCG (host_prep.yml with nothing to change: 60 s without, 46 s with) and about a
tenth of the CPU of the tests' playbook runs on the controller (a site.yml render: 17.9 s of user CPU without,
14.9 s with). It changes no module's behaviour: the code object is the one Python would compile from the same source.

Where it is on: a `.pth` file imports this module at every interpreter start, and it acts only when its cache
directory exists, belongs to the user and is private (0700); anyone else compiles as before.
- The lab guest (tools/lab/build-image.sh): `/var/cache/gpuvirt-lab-pyzip/<uid>`, made by the image for root and the
  lab user.
- The test machine's virtual environment (the Makefile's `venv`): `$GPUVIRT_PYZIP_CACHE_DIR`, which the Makefile sets
  under `.build/`; this module makes it (0700) when it is missing. Without the variable the module does nothing
  there, so a user's own run of the collection with the project's virtual environment is not touched.
No GPU host and no execution environment gets this.

The key is the file's path inside the zip, the interpreter's cache tag and the source, so changed source is compiled
again. A cached code object keeps the file name of the run that compiled it: a traceback may name an earlier run's
temporary zip.
"""
import hashlib
import marshal
import os
import stat
import sys
import zipimport

_ENV = 'GPUVIRT_PYZIP_CACHE_DIR'
_compile_source = getattr(zipimport, '_compile_source', None)


def cache_dir(environ=None):
    """The directory this process caches into: the variable's when set, else the lab guest's own."""
    environ = os.environ if environ is None else environ
    return environ.get(_ENV) or '/var/cache/gpuvirt-lab-pyzip/%d' % os.getuid()


def own_private_dir(path):
    """True when `path` is a directory (not a link) of this user that no one else may read or write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def cached_compile(directory, compile_source, pathname, source):
    """compile_source(pathname, source), read from or written to `directory`."""
    inner = pathname.rsplit('.zip', 1)[-1]
    key = hashlib.sha256(b'\0'.join([sys.implementation.cache_tag.encode(), inner.encode(), source])).hexdigest()
    path = os.path.join(directory, key)
    try:
        with open(path, 'rb') as cached:
            return marshal.load(cached)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = compile_source(pathname, source)
    tmp = '%s.%d' % (path, os.getpid())
    try:
        with open(tmp, 'wb') as out:
            marshal.dump(code, out)
        os.replace(tmp, path)
    except OSError:
        pass
    return code


def install(environ=None):
    """Put the cache in front of zipimport's compiler; returns the directory, or None when it stays off."""
    environ = os.environ if environ is None else environ
    if _compile_source is None:
        return None
    directory = cache_dir(environ)
    if environ.get(_ENV):
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError:
            return None
    if not own_private_dir(directory):
        return None

    def _compile(pathname, source):
        return cached_compile(directory, _compile_source, pathname, source)

    zipimport._compile_source = _compile  # pylint: disable=protected-access
    return directory


install()
