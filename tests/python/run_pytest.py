"""Runs one pytest file for ctest: pytest -q -rs -p no:cacheprovider <file>.

A file either runs tests, or is skipped as a whole because an *optional peer* is not installed, or
is broken:

- Optional peers are the Python modules of `scripts/bootstrap.sh --dev` that some tests compare
  against (OPTIONAL_PEERS below). A file that skips at module level through
  `pytest.importorskip(<optional peer>)` exits with SKIP_STATUS, which ctest reports as "Skipped"
  (the test's SKIP_RETURN_CODE), and says on stderr which module and which Debian package it
  needs. Single tests skipped inside a file are listed by pytest's `-rs` summary with their reason.
- Anything else that collects no test (a renamed function, a module-level skip for another reason,
  a missing module that is not an optional peer) is a failure: pytest's exit status 5 ("no tests
  collected") becomes 1.

CHANFLOW_TEST_HIDE_MODULES=torch,mypy makes the named modules unimportable, here and in every
Python process the tests start, as on a machine with only the base set of `scripts/bootstrap.sh`
(CI runs the Python suites once so). Each hidden module is shadowed by a package, in a directory
put first on sys.path and PYTHONPATH, whose import raises ModuleNotFoundError.
"""
import os
import re
import sys
import tempfile

import pytest

# module -> the Debian package that provides it (both in `scripts/bootstrap.sh --dev`).
OPTIONAL_PEERS = {"torch": "python3-torch", "mypy": "python3-mypy"}
# ctest's SKIP_RETURN_CODE for these tests (python/CMakeLists.txt); 77 is automake's "skipped".
SKIP_STATUS = 77
# pytest.importorskip's skip message: "could not import 'torch': No module named 'torch'".
IMPORT_SKIP = re.compile(r"could not import '([\w.]+)'")


def hide_modules(names):
    """Shadows each module of `names` by one that raises ModuleNotFoundError when imported."""
    shadow = tempfile.mkdtemp(prefix="chanflow-hidden-modules-")
    for name in names:
        os.mkdir(os.path.join(shadow, name))
        message = f"No module named {name!r} (hidden by CHANFLOW_TEST_HIDE_MODULES)"
        with open(os.path.join(shadow, name, "__init__.py"), "w", encoding="utf-8") as f:
            f.write(f"raise ModuleNotFoundError({message!r}, name={name!r})\n")
    sys.path.insert(0, shadow)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (shadow, os.environ.get("PYTHONPATH", "")) if p)


class ModuleSkips:
    """Records the reasons of skips raised while a file was collected (module-level skips)."""

    def __init__(self):
        self.reasons = []

    def pytest_collectreport(self, report):
        if report.skipped:
            # longrepr of a collection skip is (path, line, "Skipped: <reason>").
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            self.reasons.append(reason)


def main(test_file):
    hidden = [m for m in os.environ.get("CHANFLOW_TEST_HIDE_MODULES", "").split(",") if m]
    if hidden:
        hide_modules(hidden)
    skips = ModuleSkips()
    status = pytest.main(["-q", "-rs", "-p", "no:cacheprovider", test_file], plugins=[skips])
    if status != pytest.ExitCode.NO_TESTS_COLLECTED:
        return int(status)
    matches = [IMPORT_SKIP.search(r) for r in skips.reasons]
    peers = {m.group(1).split(".")[0] for m in matches if m}
    # Every module-level skip names an optional peer (one file may need several).
    if skips.reasons and all(matches) and peers <= OPTIONAL_PEERS.keys():
        for peer in sorted(peers):
            print(f"run_pytest: {test_file} skipped: it needs the optional peer '{peer}' (Debian "
                  f"package {OPTIONAL_PEERS[peer]}, installed by scripts/bootstrap.sh --dev)",
                  file=sys.stderr)
        return SKIP_STATUS
    why = "; ".join(skips.reasons) if skips.reasons else "no test function found"
    print(f"run_pytest: {test_file} collected no tests: the suite is broken ({why})",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: run_pytest.py <test file>")
    sys.exit(main(sys.argv[1]))
