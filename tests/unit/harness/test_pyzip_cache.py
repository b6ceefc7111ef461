"""The tests' and the lab guest's bytecode cache for modules imported from a zip (tools/pyzip/gpuvirt_pyzip_cache.py).

What it must never do is change what runs: a cached code object is used only for the same path inside the zip, the
same source and the same interpreter, and the cache is used only from a private directory of the user's own.
"""
import importlib.util
import marshal
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / 'tools' / 'pyzip' / 'gpuvirt_pyzip_cache.py'


def _load():
    spec = importlib.util.spec_from_file_location('pyzip_cache_under_test', SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name='cache')
def _cache(monkeypatch):
    import zipimport
    original = getattr(zipimport, '_compile_source')
    # loading the file runs its install() against this process's environment: keep zipimport as it was
    monkeypatch.delenv('GPUVIRT_PYZIP_CACHE_DIR', raising=False)
    module = _load()
    monkeypatch.setattr(zipimport, '_compile_source', original)
    return module


class Counting:
    def __init__(self):
        self.calls = []

    def __call__(self, pathname, source):
        self.calls.append(pathname)
        return compile(source, pathname, 'exec')


def _private(tmp_path, cache):
    directory = tmp_path / 'cache'
    directory.mkdir(mode=0o700)
    os.chmod(directory, 0o700)
    fd = cache.open_private_dir(str(directory))
    assert fd is not None
    return fd


def test_the_same_source_at_the_same_path_in_another_zip_is_compiled_once(cache, tmp_path):
    directory = _private(tmp_path, cache)
    counting = Counting()
    first = cache.cached_compile(directory, counting, '/tmp/a/payload.zip/pkg/m.py', b'X = 1\n')
    second = cache.cached_compile(directory, counting, '/tmp/b/payload.zip/pkg/m.py', b'X = 1\n')
    assert counting.calls == ['/tmp/a/payload.zip/pkg/m.py']
    assert first.co_consts == second.co_consts
    namespace = {}
    exec(second, namespace)  # pylint: disable=exec-used
    assert namespace['X'] == 1


def test_changed_source_or_another_path_inside_the_zip_is_compiled_again(cache, tmp_path):
    directory = _private(tmp_path, cache)
    counting = Counting()
    cache.cached_compile(directory, counting, '/t/payload.zip/pkg/m.py', b'X = 1\n')
    changed = cache.cached_compile(directory, counting, '/t/payload.zip/pkg/m.py', b'X = 2\n')
    other = cache.cached_compile(directory, counting, '/t/payload.zip/pkg/n.py', b'X = 1\n')
    assert len(counting.calls) == 3
    namespace = {}
    exec(changed, namespace)  # pylint: disable=exec-used
    assert namespace['X'] == 2
    assert other.co_filename == '/t/payload.zip/pkg/n.py'


def test_a_damaged_cache_file_is_compiled_again_and_replaced(cache, tmp_path):
    directory = _private(tmp_path, cache)
    counting = Counting()
    cache.cached_compile(directory, counting, '/t/payload.zip/m.py', b'X = 1\n')
    (entry,) = os.listdir(tmp_path / 'cache')
    Path(tmp_path, 'cache', entry).write_bytes(b'\x00')
    code = cache.cached_compile(directory, counting, '/t/payload.zip/m.py', b'X = 1\n')
    assert len(counting.calls) == 2
    namespace = {}
    exec(code, namespace)  # pylint: disable=exec-used
    assert namespace['X'] == 1


@pytest.mark.parametrize('mode', [0o755, 0o770, 0o701])
def test_a_directory_others_may_use_is_not_a_cache(cache, tmp_path, mode):
    directory = tmp_path / 'shared'
    directory.mkdir()
    os.chmod(directory, mode)
    assert cache.install({'GPUVIRT_PYZIP_CACHE_DIR': str(directory)}) is None


def test_a_link_to_a_private_directory_is_not_a_cache(cache, tmp_path):
    _private(tmp_path, cache)
    link = tmp_path / 'link'
    link.symlink_to(tmp_path / 'cache')
    assert cache.install({'GPUVIRT_PYZIP_CACHE_DIR': str(link)}) is None


def test_a_relative_directory_or_a_missing_parent_is_not_a_cache(cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cache.install({'GPUVIRT_PYZIP_CACHE_DIR': 'rel'}) is None and not (tmp_path / 'rel').exists()
    # only the directory itself is made, never its parents (they would take the umask's mode)
    assert cache.install({'GPUVIRT_PYZIP_CACHE_DIR': str(tmp_path / 'a' / 'b')}) is None
    assert not (tmp_path / 'a').exists()


def _cached_once(cache, tmp_path):
    """A private cache directory holding one entry (X = 1): its descriptor, the compiler counting, the entry's name."""
    fd = _private(tmp_path, cache)
    counting = Counting()
    cache.cached_compile(fd, counting, '/t/payload.zip/m.py', b'X = 1\n')
    (entry,) = os.listdir(tmp_path / 'cache')
    return fd, counting, entry


def _x_of(cache, fd, counting):
    """X as the cache's code for the same source sets it (1 unless something planted were served)."""
    namespace = {}
    exec(cache.cached_compile(fd, counting, '/t/payload.zip/m.py', b'X = 1\n'), namespace)  # pylint: disable=exec-used
    return namespace['X']


PLANTED = marshal.dumps(compile('X = 666\n', 'p', 'exec'))


def test_entries_are_read_through_the_directory_checked_at_start(cache, tmp_path):
    # the directory swapped for a link to another one after the check: the cache still reads the one it opened
    fd, counting, entry = _cached_once(cache, tmp_path)
    planted = tmp_path / 'planted'
    planted.mkdir(mode=0o700)
    (planted / entry).write_bytes(PLANTED)
    (tmp_path / 'cache').rename(tmp_path / 'moved')
    (tmp_path / 'cache').symlink_to(planted)
    assert _x_of(cache, fd, counting) == 1 and len(counting.calls) == 1


def test_an_entry_that_is_a_link_is_compiled_again(cache, tmp_path):
    fd, counting, entry = _cached_once(cache, tmp_path)
    (tmp_path / 'elsewhere').write_bytes(PLANTED)
    (tmp_path / 'cache' / entry).unlink()
    (tmp_path / 'cache' / entry).symlink_to(tmp_path / 'elsewhere')
    assert _x_of(cache, fd, counting) == 1 and len(counting.calls) == 2


def test_the_key_holds_the_optimisation_level(tmp_path):
    # code compiled under -O (asserts dropped) is never served to an interpreter without it
    env = dict(os.environ, PYTHONPATH=str(SOURCE.parent), GPUVIRT_PYZIP_CACHE_DIR=str(tmp_path / 'c'))
    payload = tmp_path / 'p.zip'
    with zipfile.ZipFile(payload, 'w') as archive:
        archive.writestr('m.py', 'def f():\n    assert False, "asserted"\n    return "no assert"\n')
    program = ('import sys, gpuvirt_pyzip_cache; sys.path.insert(0, %r); import m\n'
               'try:\n    print(m.f())\nexcept AssertionError as e:\n    print(e)' % str(payload))
    outs = [subprocess.run([sys.executable, '-S'] + flags + ['-c', program], env=env, capture_output=True, text=True,
                           check=True).stdout.strip() for flags in (['-O'], [])]
    assert outs == ['no assert', 'asserted']


def test_without_the_variable_only_the_lab_guests_own_directory_counts(cache):
    assert cache.cache_dir({}) == '/var/cache/gpuvirt-lab-pyzip/%d' % os.getuid()
    assert cache.cache_dir({'GPUVIRT_PYZIP_CACHE_DIR': '/x'}) == '/x'


def test_an_interpreter_with_the_variable_caches_what_it_imports_from_a_zip_and_runs_it_alike(tmp_path):
    """End to end, as the virtual environment's .pth starts it: two interpreters import one module from two zips
    (-S: this file's copy, not one a .pth of the running environment imported first)."""
    directory = tmp_path / 'made-by-the-hook'
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'gpuvirt_pyzip_cache.py').write_bytes(SOURCE.read_bytes())
    results = []
    for run in ('a', 'b'):
        payload = tmp_path / run / 'payload.zip'
        payload.parent.mkdir()
        with zipfile.ZipFile(payload, 'w') as archive:
            archive.writestr('pkg/__init__.py', '')
            archive.writestr('pkg/m.py', 'def answer():\n    return 40 + 2\n')
        program = ('import sys, gpuvirt_pyzip_cache; sys.path.insert(0, %r); import pkg.m; '
                   'print(pkg.m.answer(), gpuvirt_pyzip_cache.install() is not None)' % str(payload))
        env = dict(os.environ, PYTHONPATH=str(site), GPUVIRT_PYZIP_CACHE_DIR=str(directory))
        done = subprocess.run([sys.executable, '-S', '-c', program], env=env, capture_output=True, text=True, check=True)
        results.append(done.stdout.split())
    assert results == [['42', 'True'], ['42', 'True']]
    assert os.stat(directory).st_mode & 0o777 == 0o700
    # one entry per file imported from the zip (the package and its module), written by the first run only
    assert len(os.listdir(directory)) == 2
