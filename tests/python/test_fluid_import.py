"""chanflow.fluid is an attribute after a plain `import chanflow` (as paddle.fluid after
`import paddle`), imported lazily: `import chanflow` does not import it. Each check runs in a
fresh interpreter so no earlier test has imported chanflow.fluid already."""

import json
import subprocess
import sys

SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import chanflow
t1 = time.perf_counter()
loaded_at_import = 'chanflow.fluid' in sys.modules
fluid = chanflow.fluid
t2 = time.perf_counter()
try:
    chanflow.no_such_attribute
    missing = 'no error'
except AttributeError as e:
    missing = str(e)
print(json.dumps({
    'loaded_at_import': loaded_at_import,
    'same_module': fluid is sys.modules['chanflow.fluid'],
    'has_executor': hasattr(fluid, 'Executor') and hasattr(fluid.layers, 'py_reader'),
    'import_chanflow_s': t1 - t0, 'first_fluid_s': t2 - t1, 'missing': missing}))
"""


def run(script):
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fluid_is_a_lazy_attribute():
    r = run(SCRIPT)
    assert r["loaded_at_import"] is False
    assert r["same_module"] and r["has_executor"]
    assert "no_such_attribute" in r["missing"]


def test_import_fluid_first_then_chanflow_has_no_cycle():
    r = run("import chanflow.fluid as f, chanflow, json; "
            "print(json.dumps({'ok': chanflow.fluid is f}))")
    assert r["ok"]
