"""Runs one pytest file for ctest: pytest -q -p no:cacheprovider <file>.

pytest's exit status 5 ("no tests collected") is turned into a failure: a suite that collects
nothing is broken (a renamed function, a module-level skip), not green.
"""
import sys

import pytest

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: run_pytest.py <test file>")
    status = pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]])
    if status == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(f"run_pytest: {sys.argv[1]} collected no tests: the suite is broken", file=sys.stderr)
        sys.exit(1)
    sys.exit(int(status))
