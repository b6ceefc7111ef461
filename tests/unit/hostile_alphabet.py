# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dangerous alphabet of docs/security.md ("Trust boundaries"): what turns a value into code, a second line,
a path out of a directory, or a denial of service, in each sink the collection writes to. The standing corpus
(tests/unit/trust/test_hostile_corpus.py) feeds it to every source."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import strategies as st

# Jinja, shell, line structure, paths, Unicode line breaks, size
TEMPLATE = ['{{ 7 * 6 }}', '{% if true %}x{% endif %}', "{{ lookup('ansible.builtin.pipe', 'id') }}"]
SHELL = ['$(id)', '`id`', ';', '&&', '|', '"', "'", '${IFS}', '\\']
LINES = ['\n', '\r', '\r\n', '\x00', '\u2028', '\x85', '\x0c']
PATHS = ['../', '../../etc/passwd', '/etc/passwd', '/']
SIZE = ['A' * 10000]
ALPHABET = TEMPLATE + SHELL + LINES + PATHS + SIZE

# what must never reach a sink that is code (Jinja, sh) or line-structured (modprobe.d, GRUB, YAML keys)
CODE_PIECES = ['{{', '{%', '$(', '`', ';', '&&', '|', '\n', '\r', '\x00', '\u2028', '\x85', '\x0c']


def spoiled(valid):
    """Each way a hostile piece spoils a valid value: after it, before it, inside it, instead of it."""
    out = []
    for piece in ALPHABET:
        mid = len(valid) // 2
        out += [valid + piece, piece + valid, valid[:mid] + piece + valid[mid:], piece]
    return out


def hostile_text(valid):
    """A hypothesis strategy around ``valid`` examples: the examples themselves, spoiled ones, and random text
    mixing the alphabet with ordinary characters."""
    pieces = st.sampled_from(ALPHABET)
    return st.one_of(
        st.sampled_from(valid),
        st.tuples(st.sampled_from(valid), pieces, st.integers(0, 64)).map(
            lambda t: t[0][:t[2]] + t[1] + t[0][t[2]:]),
        st.lists(st.one_of(pieces, st.text(max_size=6)), max_size=6).map(''.join))


def has_code(value):
    return any(p in value for p in CODE_PIECES)
