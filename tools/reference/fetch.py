# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fetch the upstream reference files listed in tools/reference/manifest.yml into .build/reference/.

Each file is downloaded from its pinned URL (the prefix https://raw.githubusercontent.com can be replaced
with $GPUVIRT_REFERENCE_MIRROR, e.g. a local mirror laid out as <owner>/<repo>/<commit>/<path>), the part
named by ``extract`` is taken out where there is one, and the result is checked against the manifest's
sha256 before it is written (temporary file + rename): a file with a wrong checksum is never left in place.
A file already present with the right checksum is not downloaded again.

Standard library only, so that it runs before the virtual environment exists.

    python3 tools/reference/fetch.py [--manifest FILE] [--dest DIR] [PATH ...]

Exit status 0 when every file is in place with its checksum, 1 otherwise (each failure is named).
"""

import argparse
import hashlib
import os
import re
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
UPSTREAM = 'https://raw.githubusercontent.com'
MIRROR_ENV = 'GPUVIRT_REFERENCE_MIRROR'
TIMEOUT = 60


class FetchError(Exception):
    """One file could not be put in place."""


class Unreachable(FetchError):
    """The server did not answer at all (offline, a firewall, a wrong mirror): the other files from it are not
    tried, each would wait for the same timeout and fail the same way."""


# what an offline run prints last: the ways to get the files without the upstream server
OFFLINE_HINT = (
    'reference: without access to %s, fetch from a mirror laid out as <owner>/<repo>/<commit>/<path>: '
    'GPUVIRT_REFERENCE_MIRROR=URL make reference (an http(s):// server or a file:/// directory); or set '
    'GPUVIRT_REFERENCE to a directory that already holds the files (tools/reference/manifest.yml lists them with '
    'their sha256)')


def load_manifest(path):
    """Read the manifest: a ``files:`` list of flat ``key: value`` mappings (the only YAML it uses)."""
    entries = []
    in_files = False
    with open(path, encoding='utf-8') as handle:
        for number, line in enumerate(handle, 1):
            text = line.rstrip('\n')
            stripped = text.strip()
            if not stripped or stripped.startswith('#') or stripped == '---':
                continue
            if text == 'files:':
                in_files = True
                continue
            match = re.match(r'^(  - |    )([a-z0-9_]+): (.+)$', text)
            if not in_files or not match:
                raise ValueError('%s:%d: unexpected line: %s' % (path, number, text))
            value = match.group(3).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
                value = value[1:-1]
            if match.group(1) == '  - ':
                entries.append({})
            elif not entries:
                raise ValueError('%s:%d: key outside a list item: %s' % (path, number, text))
            entries[-1][match.group(2)] = value
    for entry in entries:
        missing = [key for key in ('path', 'url', 'version', 'sha256') if key not in entry]
        if missing:
            raise ValueError('%s: entry %s lacks %s' % (path, entry.get('path', '?'), ', '.join(missing)))
    return entries


def source_url(url, mirror=None):
    """The URL to download from: the upstream one, or the same path under the mirror prefix."""
    if mirror and url.startswith(UPSTREAM + '/'):
        return mirror.rstrip('/') + url[len(UPSTREAM):]
    return url


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def extract_csv_annotation(data, name):
    """The value of ``metadata.annotations.<name>`` (a literal block scalar) of a CSV, plus a final newline."""
    lines = data.decode('utf-8').split('\n')
    key = re.compile(r'^( *)%s: \|[-+]?\s*$' % re.escape(name))
    for index, line in enumerate(lines):
        match = key.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        block = []
        for body in lines[index + 1:]:
            if body.strip() and len(body) - len(body.lstrip(' ')) <= indent:
                break
            block.append(body)
        while block and not block[-1].strip():
            block.pop()
        if not block:
            break
        width = min(len(body) - len(body.lstrip(' ')) for body in block if body.strip())
        return ('\n'.join(body[width:] for body in block) + '\n').encode('utf-8')
    raise FetchError('annotation %s (a literal block) not found' % name)


def extract_go_raw_string(data, key):
    """The raw-string value of map key ``"<key>"`` in Go source (raw strings cannot hold a backquote)."""
    text = data.decode('utf-8')
    match = re.search(r'^\s*"%s":\s*`' % re.escape(key), text, re.MULTILINE)
    if not match:
        raise FetchError('Go map key "%s" with a raw-string value not found' % key)
    end = text.find('`', match.end())
    if end < 0:
        raise FetchError('raw string of Go map key "%s" is not closed' % key)
    return text[match.end():end].encode('utf-8')


EXTRACTORS = {
    'csv-annotation': extract_csv_annotation,
    'go-raw-string': extract_go_raw_string,
}


def extract(entry, data):
    spec = entry.get('extract')
    if not spec:
        return data
    kind, arg = (spec.split(None, 1) + [''])[:2]
    if kind not in EXTRACTORS or not arg:
        raise FetchError('unknown extract %r' % spec)
    return EXTRACTORS[kind](data, arg.strip())


def download(url):
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # nosec - pinned URLs, checked by sha256
            return response.read()
    except urllib.error.HTTPError as err:
        raise FetchError('download of %s failed: HTTP %d %s' % (url, err.code, err.reason))
    except (urllib.error.URLError, OSError) as err:
        raise Unreachable('download of %s failed: %s' % (url, getattr(err, 'reason', err)))


def write_atomically(path, data):
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', suffix='.tmp', dir=directory)
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_if_wrong(path, expected):
    """A file at ``path`` whose checksum is not ``expected`` is removed (never left for the tests to read)."""
    if os.path.isfile(path) and file_sha256(path) != expected:
        os.unlink(path)


def fetch(entries, dest, mirror=None, log=print, unreachable=None):
    """Put every entry under ``dest``; return (downloaded, present, errors). ``unreachable``: a dict that gets
    {server: [paths not fetched from it]} for each server that did not answer (its later files are not tried)."""
    downloaded, present, errors = [], [], []
    cache = {}
    unreachable = {} if unreachable is None else unreachable
    for entry in entries:
        target = os.path.join(dest, entry['path'])
        expected = entry['sha256'].lower()
        if os.path.isfile(target) and file_sha256(target) == expected:
            present.append(entry['path'])
            continue
        url = source_url(entry['url'], mirror)
        server = urllib.parse.urlsplit(url).netloc or url.split('/', 3)[0]
        if server in unreachable:
            remove_if_wrong(target, expected)
            unreachable[server].append(entry['path'])
            continue
        try:
            if url not in cache:
                cache[url] = download(url)
            data = extract(entry, cache[url])
            actual = sha256(data)
            if actual != expected:
                raise FetchError('checksum mismatch (from %s%s): expected sha256 %s, actual sha256 %s'
                                 % (url, ', extract ' + entry['extract'] if entry.get('extract') else '',
                                    expected, actual))
            write_atomically(target, data)
        except FetchError as err:
            remove_if_wrong(target, expected)
            errors.append('%s: %s' % (entry['path'], err))
            log('reference: FAILED %s: %s' % (entry['path'], err))
            if isinstance(err, Unreachable):
                unreachable[server] = []
                log('reference: %s did not answer: the other files from it are not tried' % server)
            continue
        downloaded.append(entry['path'])
        log('reference: fetched %s (%s)' % (entry['path'], entry['version']))
    return downloaded, present, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--manifest', default=os.path.join(HERE, 'manifest.yml'))
    parser.add_argument('--dest', default=os.path.join(ROOT, '.build', 'reference'))
    parser.add_argument('paths', nargs='*', help='only these manifest paths (default: all)')
    args = parser.parse_args(argv)

    entries = load_manifest(args.manifest)
    if args.paths:
        unknown = sorted(set(args.paths) - {entry['path'] for entry in entries})
        if unknown:
            parser.error('not in %s: %s' % (args.manifest, ', '.join(unknown)))
        entries = [entry for entry in entries if entry['path'] in args.paths]
    mirror = os.environ.get(MIRROR_ENV) or None
    unreachable = {}
    downloaded, present, errors = fetch(entries, args.dest, mirror, unreachable=unreachable)
    not_tried = sum(len(paths) for paths in unreachable.values())
    print('reference: %d downloaded, %d already present, %d failed (%s)'
          % (len(downloaded), len(present), len(errors) + not_tried, args.dest))
    if errors or not_tried:
        sys.stderr.write('reference: %d file(s) could not be fetched and verified:\n  %s\n'
                         % (len(errors) + not_tried, '\n  '.join(errors)))
        for server, paths in sorted(unreachable.items()):
            if paths:
                sys.stderr.write('  and %d more from %s, not tried\n' % (len(paths), server))
        if unreachable:
            sys.stderr.write((OFFLINE_HINT % ', '.join(sorted(unreachable))) + '\n')
            if mirror:
                sys.stderr.write('reference: %s is %s now: check that it serves the files\n' % (MIRROR_ENV, mirror))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
