#!/usr/bin/env python3
"""check_docs.py — every option the user docs give a command exists in that command's --help.

    check_docs.py ROOT CHANFLOW TRAIN_DIGITS TRAIN_FASHION

Reads README.md, docs/getting_started.md, docs/exec.md and docs/architecture.md. A line of a code
block that runs a command (`chanflow run ...`, `.../train_fashion ...`, `scripts/bootstrap.sh ...`)
names options for that command (up to a `|`, `&&`, `;` or `#`); a prose paragraph that mentions
exactly one command names options for it (`scripts/demo.sh` passes its arguments to
`train_fashion`, so it counts as `train_fashion`). Each such `--option` must appear in the command's
--help output. Paragraphs that mention no command, or several, are not checked. Exits 1 listing
every option that is missing.
"""

import re
import subprocess
import sys
from pathlib import Path

DOCS = ("README.md", "docs/getting_started.md", "docs/exec.md", "docs/architecture.md")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# (command, pattern of a mention), most specific first: the first match at a position wins.
MENTIONS = (
    ("chanflow run", re.compile(r"\bchanflow run\b")),
    ("chanflow check", re.compile(r"\bchanflow check\b")),
    ("chanflow dot", re.compile(r"\bchanflow dot\b")),
    ("chanflow trace summary", re.compile(r"\bchanflow trace summary\b")),
    ("chanflow trace html", re.compile(r"\bchanflow trace html\b")),
    ("chanflow", re.compile(r"\bchanflow(?= --)")),
    # An example's directory and output paths (examples/train_fashion/, out/train_fashion/) count.
    ("train_fashion", re.compile(r"\btrain_fashion\b|\bscripts/demo\.sh\b")),
    ("train_digits", re.compile(r"\btrain_digits\b")),
    ("scripts/bootstrap.sh", re.compile(r"\bscripts/bootstrap\.sh\b")),
    ("scripts/bench.py", re.compile(r"\bscripts/bench\.py\b")),
)


def help_texts(root, chanflow, train_digits, train_fashion):
    cmds = {
        "chanflow": [chanflow, "--help"],
        "chanflow run": [chanflow, "run", "--help"],
        "chanflow check": [chanflow, "check", "--help"],
        "chanflow dot": [chanflow, "dot", "--help"],
        "chanflow trace summary": [chanflow, "trace", "summary", "--help"],
        "chanflow trace html": [chanflow, "trace", "html", "--help"],
        "train_digits": [train_digits, "--help"],
        "train_fashion": [train_fashion, "--help"],
        "scripts/bootstrap.sh": ["bash", str(root / "scripts/bootstrap.sh"), "--help"],
        "scripts/bench.py": [sys.executable, str(root / "scripts/bench.py"), "--help"],
    }
    texts = {}
    for name, argv in cmds.items():
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            sys.exit(f"check_docs: '{' '.join(argv)}' exited {p.returncode}: {p.stderr}")
        texts[name] = p.stdout
    return texts


def commands_in(text):
    """The commands a piece of text mentions, each once."""
    return {name for name, pattern in MENTIONS if pattern.search(text)}


def units(path):
    """(line number, text, is_code) for each code line and each prose paragraph of a file."""
    in_code = False
    para, start = [], 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            if para:
                yield start, " ".join(para), False
                para = []
            in_code = not in_code
            continue
        if in_code:
            yield n, line, True
        elif line.strip():
            if not para:
                start = n
            para.append(line)
        elif para:
            yield start, " ".join(para), False
            para = []
    if para:
        yield start, " ".join(para), False


def claims(root):
    """(file:line, command, option) for every option the docs attribute to one command."""
    out = []
    for rel in DOCS:
        for n, text, is_code in units(root / rel):
            where = f"{rel}:{n}"
            if is_code:
                for segment in re.split(r"\||&&|;|#", text):
                    for name, pattern in MENTIONS:
                        m = pattern.search(segment)
                        if m:
                            out += [(where, name, o) for o in OPTION.findall(segment[m.end():])]
                            break
            else:
                mentioned = commands_in(text)
                if len(mentioned) == 1:
                    name = mentioned.pop()
                    out += [(where, name, o) for o in OPTION.findall(text)]
    return out


def main():
    root, chanflow, train_digits, train_fashion = Path(sys.argv[1]), *sys.argv[2:5]
    helps = help_texts(root, chanflow, train_digits, train_fashion)
    found = claims(root)
    missing = []
    checked = {}
    for where, name, option in found:
        checked.setdefault(name, set()).add(option)
        if not re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", helps[name]):
            missing.append(f"{where}: {name} has no option {option} (not in its --help)")
    for name in sorted(checked):
        print(f"{name}: {' '.join(sorted(checked[name]))}")
    # The extraction itself must keep finding the options the README is built around.
    for name, least in (("chanflow run", 3), ("train_fashion", 6)):
        if len(checked.get(name, ())) < least:
            missing.append(f"only {len(checked.get(name, ()))} option(s) of {name} found in the "
                           f"docs (want at least {least}): has check_docs.py stopped reading them?")
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 1
    print(f"check_docs: {len(found)} option mentions, each in its command's --help")
    return 0


if __name__ == "__main__":
    sys.exit(main())
