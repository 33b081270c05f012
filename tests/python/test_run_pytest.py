"""run_pytest.py, the runner of every Python suite under ctest: a file skipped for a missing
optional peer is reported as skipped (exit 77, the module and its Debian package named); a file
that collects nothing for any other reason fails; CHANFLOW_TEST_HIDE_MODULES hides modules from
the suite and from the processes it starts."""
import os
import subprocess
import sys

import pytest

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_pytest.py")


def run(tmp_path, source, hide=None):
    test = tmp_path / "test_subject.py"
    test.write_text(source, encoding="utf-8")
    env = dict(os.environ)
    env.pop("CHANFLOW_TEST_HIDE_MODULES", None)
    if hide is not None:
        env["CHANFLOW_TEST_HIDE_MODULES"] = hide
    return subprocess.run([sys.executable, RUNNER, str(test)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_a_passing_file_passes(tmp_path):
    p = run(tmp_path, "def test_one():\n    assert True\n")
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_failing_file_fails(tmp_path):
    p = run(tmp_path, "def test_one():\n    assert False\n")
    assert p.returncode == 1, p.stdout + p.stderr


def test_a_file_without_tests_is_broken(tmp_path):
    p = run(tmp_path, "def helper():\n    pass\n")
    assert p.returncode == 1
    assert "collected no tests: the suite is broken (no test function found)" in p.stderr


def test_a_module_level_skip_for_another_reason_is_broken(tmp_path):
    p = run(tmp_path, "import pytest\npytest.skip('not today', allow_module_level=True)\n"
                      "def test_one():\n    pass\n")
    assert p.returncode == 1
    assert "the suite is broken" in p.stderr and "not today" in p.stderr


def test_a_missing_module_that_is_not_an_optional_peer_is_broken(tmp_path):
    p = run(tmp_path, "import pytest\npytest.importorskip('chanflow_no_such_module')\n"
                      "def test_one():\n    pass\n")
    assert p.returncode == 1
    assert "chanflow_no_such_module" in p.stderr


@pytest.mark.parametrize("peer,package", [("torch", "python3-torch"), ("mypy", "python3-mypy")])
def test_a_hidden_optional_peer_skips_the_file_visibly_by_name(tmp_path, peer, package):
    p = run(tmp_path, f"import pytest\n{peer} = pytest.importorskip({peer!r})\n"
                      "def test_one():\n    pass\n", hide=peer)
    assert p.returncode == 77, p.stdout + p.stderr
    assert f"needs the optional peer '{peer}' (Debian package {package}" in p.stderr


def test_hidden_modules_are_hidden_from_child_processes_too(tmp_path):
    p = run(tmp_path, "import subprocess, sys\n"
                      "def test_child_cannot_import_numpy():\n"
                      "    c = subprocess.run([sys.executable, '-c', 'import numpy'],\n"
                      "                       capture_output=True, text=True)\n"
                      "    assert c.returncode == 1\n"
                      "    assert 'hidden by CHANFLOW_TEST_HIDE_MODULES' in c.stderr\n",
            hide="numpy")
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_skip_inside_a_file_is_listed_with_its_reason(tmp_path):
    p = run(tmp_path, "import pytest\n"
                      "def test_runs():\n    pass\n"
                      "def test_needs_mypy():\n    pytest.importorskip('mypy')\n", hide="mypy")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SKIPPED" in p.stdout and "could not import 'mypy'" in p.stdout
