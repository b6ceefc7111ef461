# Copyright (c) gpuvirt.provision contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The user documentation must stay true to the code.

- every troubleshooting heading quotes a message the collection really emits;
- every relative link points to an existing file;
- every role variable a pool guide names is an option of that role.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
SOURCE_DIRS = ("plugins", "roles", "playbooks")
SOURCE_SUFFIXES = {".py", ".yml", ".yaml", ".j2"}
HEADING = re.compile(r"^### `([^`]+)`\s*$", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LEADING_NAME = re.compile(r"^([a-z][a-z0-9_]*)(?:$|[.:= ])")
ROLE_PREFIXES = {
    "gpu_operator_": "gpu_operator",
    "node_labels_": "node_labels",
    "verify_": "verify",
    "kubevirt_devices_": "kubevirt_devices",
    "machineconfig_": "machineconfig",
    "dra_driver_": "dra_driver",
    "vgpu_manager_image_": "vgpu_manager_image",
    "kernel_args_": "kernel_args",
    "nouveau_": "nouveau",
    "vfio_": "vfio",
    "reboot_": "reboot",
}


def collapse(text):
    """Runs of whitespace to one space (YAML folded lines, wrapped Python strings)."""
    return " ".join(text.split())


def source_texts():
    """Collapsed text of every source file that can emit a message."""
    texts = []
    for top in SOURCE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                texts.append(collapse(path.read_text(encoding="utf-8", errors="replace")))
    return texts


def doc_files():
    """The user documentation pages."""
    return sorted(DOCS.glob("*.md")) + sorted((DOCS / "pools").glob("*.md"))


def role_options(role):
    """Option names of a role (its main entry point; every entry point for vfio)."""
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    entry_points = specs["argument_specs"]
    names = ["main"] if role != "vfio" else list(entry_points)
    options = set()
    for name in names:
        options.update((entry_points.get(name) or {}).get("options") or {})
    return options


def test_troubleshooting_headings_quote_real_messages():
    """Each `### `fragment`` heading occurs in some source file."""
    headings = HEADING.findall((DOCS / "troubleshooting.md").read_text(encoding="utf-8"))
    assert len(headings) >= 20, f"troubleshooting.md has {len(headings)} entries, expected at least 20"
    texts = source_texts()
    missing = [frag for frag in headings if not any(collapse(frag) in text for text in texts)]
    assert not missing, f"fragments found in no file under {', '.join(SOURCE_DIRS)}: {missing}"


def test_relative_links_resolve():
    """Relative links of docs/*.md and docs/pools/*.md point to existing files."""
    broken = []
    for doc in doc_files():
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = target.split("#", 1)[0]
            if path and not (doc.parent / path).is_file():
                broken.append(f"{doc.relative_to(DOCS)} -> {target}")
    assert not broken, f"broken links: {broken}"


def test_pool_guides_name_real_role_variables():
    """Role variables in inline code of the pool guides are options in the role's argument_specs."""
    options = {}
    unknown = []
    for doc in sorted((DOCS / "pools").glob("*.md")):
        prose = FENCE.sub("", doc.read_text(encoding="utf-8"))
        for span in CODE_SPAN.findall(prose):
            match = LEADING_NAME.match(span.strip())
            if not match:
                continue
            name = match.group(1)
            role = next((r for p, r in ROLE_PREFIXES.items() if name.startswith(p)), None)
            if role is None:
                continue
            if role not in options:
                options[role] = role_options(role)
            if name not in options[role]:
                unknown.append(f"{doc.name}: {name} (role {role})")
    assert not unknown, f"variables not in the role's argument_specs: {unknown}"
