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
- The test machine's virtual environment (the Makefile's `venv`): `$GPUVIRT_PYZIP_CACHE_DIR`, an absolute path,
  which the Makefile sets under `.build/`; this module makes it (0700, its parent must exist) when it is missing.
  Without the variable the module does nothing there, so a user's own run of the collection with the project's
  virtual environment is not touched.
The directory is opened once (no link followed) and checked then; every entry is read and written through that
descriptor (an entry must be a regular file of the user's), each written to a new file of a random name and renamed.
No GPU host and no execution environment gets this.

The key is the file's path inside the zip, the interpreter (cache tag, bytecode magic number), the optimisation level
and the source, so changed source is compiled again. A cached code object keeps the file name of the run that
compiled it: a traceback may name an earlier run's temporary zip.
"""
import marshal
import os
import stat
import sys
import zipimport
from importlib import _bootstrap_external

_ENV = 'GPUVIRT_PYZIP_CACHE_DIR'
_compile_source = getattr(zipimport, '_compile_source', None)
# what a code object depends on besides its source and where it stands: the interpreter (its cache tag and bytecode
# format) and the optimisation level (-O, PYTHONOPTIMIZE) zipimport compiles at
_INTERPRETER = b'\0'.join([sys.implementation.cache_tag.encode(), _bootstrap_external.MAGIC_NUMBER,
                           str(sys.flags.optimize).encode()])
_MAX_ENTRY = 16 * 1024 * 1024


def cache_dir(environ=None):
    """The directory this process caches into: the variable's when set, else the lab guest's own."""
    environ = os.environ if environ is None else environ
    return environ.get(_ENV) or '/var/cache/gpuvirt-lab-pyzip/%d' % os.getuid()


def open_private_dir(path):
    """A descriptor of ``path`` when it is an absolute path to a directory (not a link) of this user that no one
    else may read or write, else None. Every later read and write goes through the descriptor, so a directory
    swapped for another (or a link) after this check is never followed."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) != 0o700:
        os.close(fd)
        return None
    return fd


def _read_entry(dir_fd, key):
    """The code object cached under ``key``, or None (missing, not a regular file of this user, damaged)."""
    try:
        fd = os.open(key, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, 'rb') as entry:
        st = os.fstat(entry.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > _MAX_ENTRY:
            return None
        try:
            return marshal.loads(entry.read(_MAX_ENTRY + 1))
        except (EOFError, ValueError, TypeError):
            return None


def _write_entry(dir_fd, key, code):
    """Cache ``code`` under ``key``: written to a new file of a random name (O_EXCL), then renamed over ``key``."""
    tmp = '.%s.%s' % (key, os.urandom(8).hex())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    except OSError:
        return
    try:
        with os.fdopen(fd, 'wb') as out:
            marshal.dump(code, out)
        os.replace(tmp, key, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


def cached_compile(dir_fd, compile_source, pathname, source):
    """compile_source(pathname, source), read from or written to the directory ``dir_fd``."""
    # imported here, not at start: every Python start of the environment imports this module, cache on or off, and
    # hashlib (OpenSSL) is most of what that would cost
    import hashlib  # pylint: disable=import-outside-toplevel
    inner = pathname.rsplit('.zip', 1)[-1]
    key = hashlib.sha256(b'\0'.join([_INTERPRETER, inner.encode(), source])).hexdigest()
    code = _read_entry(dir_fd, key)
    if code is None:
        code = compile_source(pathname, source)
        _write_entry(dir_fd, key, code)
    return code


def install(environ=None):
    """Put the cache in front of zipimport's compiler; returns the directory, or None when it stays off."""
    environ = os.environ if environ is None else environ
    if _compile_source is None:
        return None
    directory = cache_dir(environ)
    if environ.get(_ENV) and os.path.isabs(directory):
        # the directory itself only (its parent must exist): a parent made here would take the umask's mode
        try:
            os.mkdir(directory, 0o700)
        except OSError:
            pass
    dir_fd = open_private_dir(directory)
    if dir_fd is None:
        return None

    def _compile(pathname, source):
        return cached_compile(dir_fd, _compile_source, pathname, source)

    zipimport._compile_source = _compile  # pylint: disable=protected-access
    return directory


install()
