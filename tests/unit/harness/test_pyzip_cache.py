"""The tests' and the lab guest's bytecode cache for modules imported from a zip (tools/pyzip/gpuvirt_pyzip_cache.py).

What it must never do is change what runs: a cached code object is used only for the same path inside the zip, the
same source and the same interpreter, and the cache is used only from a private directory of the user's own.
"""
import importlib.util
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


def _private(tmp_path):
    directory = tmp_path / 'cache'
    directory.mkdir(mode=0o700)
    os.chmod(directory, 0o700)
    return str(directory)


def test_the_same_source_at_the_same_path_in_another_zip_is_compiled_once(cache, tmp_path):
    directory = _private(tmp_path)
    counting = Counting()
    first = cache.cached_compile(directory, counting, '/tmp/a/payload.zip/pkg/m.py', b'X = 1\n')
    second = cache.cached_compile(directory, counting, '/tmp/b/payload.zip/pkg/m.py', b'X = 1\n')
    assert counting.calls == ['/tmp/a/payload.zip/pkg/m.py']
    assert first.co_consts == second.co_consts
    namespace = {}
    exec(second, namespace)  # pylint: disable=exec-used
    assert namespace['X'] == 1


def test_changed_source_or_another_path_inside_the_zip_is_compiled_again(cache, tmp_path):
    directory = _private(tmp_path)
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
    directory = _private(tmp_path)
    counting = Counting()
    cache.cached_compile(directory, counting, '/t/payload.zip/m.py', b'X = 1\n')
    (entry,) = os.listdir(directory)
    Path(directory, entry).write_bytes(b'\x00')
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
    target = _private(tmp_path)
    link = tmp_path / 'link'
    link.symlink_to(target)
    assert cache.install({'GPUVIRT_PYZIP_CACHE_DIR': str(link)}) is None


def test_without_the_variable_only_the_lab_guests_own_directory_counts(cache):
    assert cache.cache_dir({}) == '/var/cache/gpuvirt-lab-pyzip/%d' % os.getuid()
    assert cache.cache_dir({'GPUVIRT_PYZIP_CACHE_DIR': '/x'}) == '/x'


def test_an_interpreter_with_the_variable_caches_what_it_imports_from_a_zip_and_runs_it_alike(tmp_path):
    """End to end, as the virtual environment's .pth starts it: two interpreters import one module from two zips."""
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
        done = subprocess.run([sys.executable, '-c', program], env=env, capture_output=True, text=True, check=True)
        results.append(done.stdout.split())
    assert results == [['42', 'True'], ['42', 'True']]
    assert os.stat(directory).st_mode & 0o777 == 0o700
    # one entry per file imported from the zip (the package and its module), written by the first run only
    assert len(os.listdir(directory)) == 2
