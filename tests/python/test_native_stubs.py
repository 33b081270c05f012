"""The type stubs (chanflow/__init__.pyi, installed with py.typed) describe the package as it
is: every name of chanflow.__all__ is declared, every public attribute of each class is declared
(and every declared one exists), and the parameter names and defaults of functions and methods
match the signatures the native module reports.

The stub checked is the package's own (next to chanflow/__init__.py: the build tree's, the one
installed), which python/gen_op_stubs.py generates from python/chanflow/__init__.pyi and the C++
op list: its op section must declare exactly chanflow.graph_ops, each with its kind's native
signature, and it must be what the generator makes of the current sources."""
import ast
import builtins
import collections.abc
import enum
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

import chanflow as cf

# Bases the stub takes from elsewhere: the attribute names each provides.
EXTERNAL_BASES = {
    "Exception": set(dir(Exception)), "ValueError": set(dir(ValueError)),
    "TimeoutError": set(dir(TimeoutError)), "builtins.TypeError": set(dir(builtins.TypeError)),
    "KeyError": set(dir(KeyError)),
    "Sequence": set(dir(collections.abc.Sequence)), "Mapping": set(dir(collections.abc.Mapping)),
    "enum.IntEnum": set(dir(enum.IntEnum)) | {"name", "value"},  # members' properties
}


PACKAGE_STUB = os.path.join(os.path.dirname(cf.__file__), "__init__.pyi")


@pytest.fixture(scope="module")
def stub_text():
    with open(PACKAGE_STUB, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def stub(stub_text):
    return ast.parse(stub_text, filename=PACKAGE_STUB)


@pytest.fixture(scope="module")
def gen(source_dir):
    """python/gen_op_stubs.py as a module."""
    path = os.path.join(source_dir, "python", "gen_op_stubs.py")
    spec = importlib.util.spec_from_file_location("gen_op_stubs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(source_dir, *parts):
    with open(os.path.join(source_dir, *parts), encoding="utf-8") as f:
        return f.read()


def top_level(stub):
    """{name: node} of what the stub declares at module level."""
    out = {}
    for node in stub.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return out


def members(cls_node):
    """{name: node} declared in a class body (methods, properties, annotations, enum values)."""
    out = {}
    for node in cls_node.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return out


def declared_names(name, classes):
    """Every attribute name a stub class declares, its stub and external bases included."""
    node = classes[name]
    names = set(members(node))
    for base in node.bases:
        text = ast.unparse(base)
        text = re.sub(r"\[.*\]$", "", text)  # Sequence[Any] -> Sequence
        if text in classes:
            names |= declared_names(text, classes)
        else:
            assert text in EXTERNAL_BASES, "unknown base %s of %s" % (text, name)
            names |= EXTERNAL_BASES[text]
    return names


def runtime_signature(func):
    """[(name, default text or None)] (self excluded) from a native function's signature line
    (pybind11's "f(self: T, x: int = 0) -> R", or the binding's own "f(x=0) -> R"), or None when
    overloaded or not a native function."""
    doc = getattr(func, "__doc__", None) or ""
    m = re.match(r"\w+\((.*)\) ->", doc.split("\n", 1)[0])
    if m is None:
        return None
    params, depth, cur = [], 0, ""
    for ch in m.group(1):
        if ch in "[(<":
            depth += 1
        elif ch in "])>":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur)
    out = []
    for p in params:
        name = re.match(r"\s*\**(\w*)", p).group(1)
        default = p.split("=", 1)[1].strip() if "=" in p else None
        if name and name != "self":
            out.append((name, default))
    return out


def runtime_params(func):
    """Parameter names (self excluded) of a native function, or None (see runtime_signature)."""
    sig = runtime_signature(func)
    return None if sig is None else [name for name, _default in sig]


def stub_signature(fn):
    """[(name, default text or None)] of a stub function (self excluded); "..." for an elided
    default."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    if args.vararg:
        out.append((args.vararg, None))
    if args.kwarg:
        out.append((args.kwarg, None))
    return [(a.arg, None if d is None else ast.unparse(d)) for a, d in out if a.arg != "self"]


def stub_params(fn):
    return [name for name, _default in stub_signature(fn)]


def check_defaults(fn, func, what):
    """The stub gives a default exactly where the native function has one; a default the stub
    spells out (not "...") is the native one."""
    expected = runtime_signature(func)
    for (name, stub_default), (_, native_default) in zip(stub_signature(fn), expected):
        assert (stub_default is None) == (native_default is None), \
            "%s: parameter %s: default %s in the stub, %s natively" % (
                what, name, stub_default, native_default)
        if stub_default not in (None, "..."):
            assert stub_default == native_default, "%s: parameter %s: default %s, natively %s" % (
                what, name, stub_default, native_default)


def is_overloaded(fn):
    return any(ast.unparse(d) == "overload" for d in fn.decorator_list)


def test_the_stub_parses_and_declares_every_exported_name(stub):
    declared = top_level(stub)
    missing = [n for n in cf.__all__ if n not in declared]
    assert not missing, "names of chanflow.__all__ without a stub entry: %s" % missing
    assert "__version__" in declared
    # Nothing is declared that the package does not have.
    extra = [n for n in declared if not n.startswith("_") and not hasattr(cf, n)]
    assert not extra, "stub entries the package lacks: %s" % extra


def test_every_public_attribute_of_each_class_is_declared_and_exists(stub):
    classes = {n: node for n, node in top_level(stub).items() if isinstance(node, ast.ClassDef)}
    for name in classes:
        runtime = getattr(cf, name)
        public = {a for a in dir(runtime) if not a.startswith("_")}
        declared = declared_names(name, classes)
        assert not public - declared, "%s: undeclared %s" % (name, sorted(public - declared))
        own = {a for a in members(classes[name]) if not a.startswith("_")}
        assert not own - public, "%s: declared but missing %s" % (name, sorted(own - public))


def test_parameter_names_match_the_native_signatures(stub):
    checked = 0
    for name, node in top_level(stub).items():
        if isinstance(node, ast.FunctionDef) and not is_overloaded(node):
            expected = runtime_params(getattr(cf, name))
            if expected is not None:
                assert stub_params(node) == expected, name
                check_defaults(node, getattr(cf, name), name)
                checked += 1
        if isinstance(node, ast.ClassDef):
            runtime_cls = getattr(cf, name)
            for member, fn in members(node).items():
                if not isinstance(fn, ast.FunctionDef) or is_overloaded(fn):
                    continue
                if any(ast.unparse(d) == "property" for d in fn.decorator_list):
                    continue
                attr = runtime_cls.__dict__.get(member, getattr(runtime_cls, member, None))
                if isinstance(attr, staticmethod):
                    attr = attr.__func__
                expected = runtime_params(attr)
                if expected is not None:
                    assert stub_params(fn) == expected, "%s.%s" % (name, member)
                    check_defaults(fn, attr, "%s.%s" % (name, member))
                    checked += 1
    assert checked >= 60 + len(cf.graph_ops)


def test_the_stubs_are_installed_next_to_the_package():
    pkg = os.path.dirname(cf.__file__)
    assert os.path.isfile(os.path.join(pkg, "__init__.pyi"))
    assert os.path.isfile(os.path.join(pkg, "py.typed"))


# Arguments for the required parameters of constructors that report no native signature.
CONSTRUCTOR_ARGS = {"graph": cf.Graph}


def test_constructors_without_a_native_signature_take_the_stub_parameters(stub):
    """Calling such a constructor with every stub parameter by keyword (defaults as the stub
    spells them) works; a misspelled keyword does not, so the call checks the names."""
    classes = {n: node for n, node in top_level(stub).items() if isinstance(node, ast.ClassDef)}
    called = []
    for name, node in classes.items():
        init = members(node).get("__init__")
        runtime_cls = getattr(cf, name)
        if not isinstance(init, ast.FunctionDef) or runtime_params(runtime_cls.__init__):
            continue
        kwargs = {}
        for param, default in stub_signature(init):
            if default is None:
                assert param in CONSTRUCTOR_ARGS, "%s(%s): add a sample argument" % (name, param)
                kwargs[param] = CONSTRUCTOR_ARGS[param]()
            else:
                assert default != "...", "%s(%s): spell the default out" % (name, param)
                kwargs[param] = ast.literal_eval(default)
        obj = runtime_cls(**kwargs)
        if kwargs:
            with pytest.raises(builtins.TypeError):
                runtime_cls(**kwargs, no_such_parameter=None)
        if hasattr(obj, "close"):
            obj.close()
        called.append(name)
    assert {"Graph", "GoMachine", "TapeMachine"} <= set(called)


def stub_all(text):
    """The stub's __all__ (it must have exactly one)."""
    found = [node for node in ast.parse(text).body
             if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"]
    assert len(found) == 1
    return ast.literal_eval(found[0].value)


def test_the_stub_declares_all_as_the_package_exports(stub_text):
    """`from chanflow import *` gives a type checker what it gives at run time (the ops named
    like builtins, sum ..., stay out)."""
    names = stub_all(stub_text)
    assert len(names) == len(set(names))
    extra = sorted(set(names) - set(cf.__all__))
    assert not extra, ("public names of the stub that chanflow.__all__ lacks (export them in "
                       "chanflow/__init__.py, or give them a leading _ in the stub): %s" % extra)
    assert sorted(names) == sorted(cf.__all__)
    assert "sum" not in names and "add" in names


def op_section(gen, text):
    """The functions between the generated section's markers, as a module."""
    lines = text.splitlines()
    begin, end = lines.index(gen.OPS_BEGIN), lines.index(gen.OPS_END)
    assert lines.count(gen.OPS_BEGIN) == 1 and lines.count(gen.OPS_END) == 1 and begin < end
    return ast.parse("\n".join(lines[begin + 1:end]))


def test_the_generated_op_section_declares_exactly_the_graph_ops(gen, stub_text):
    section = op_section(gen, stub_text)
    assert all(isinstance(node, ast.FunctionDef) for node in section.body)
    assert [fn.name for fn in section.body] == list(cf.graph_ops)
    kinds = {name: (kind, doc) for name, kind, doc in cf._native._graph_ops}
    by_kind = {}
    for fn in section.body:
        kind, doc = kinds[fn.name]
        # The kind's native parameters and defaults, as the op's own signature line says.
        native = runtime_signature(getattr(cf, fn.name))
        assert stub_signature(fn) == native, fn.name
        assert ast.unparse(fn.returns) == "Node", fn.name
        assert ast.get_docstring(fn) == doc, fn.name
        # Every op of a kind is typed alike.
        by_kind.setdefault(kind, set()).add(ast.unparse(fn.args))
    assert all(len(v) == 1 for v in by_kind.values()), by_kind
    assert set(by_kind) == set(gen.KIND_SIGNATURES), "a kind no op uses, or an unknown one"
    params = {kind: [a.arg for a in ast.parse("def f%s: ..." % sig).body[0].args.args]
              for kind, sig in gen.KIND_SIGNATURES.items()}
    assert params["binary"] == ["a", "b"] and params["reduce"] == ["a", "axes", "keepdims"]


def test_the_package_stub_is_generated_from_the_current_sources(gen, source_dir, stub_text):
    source = read(source_dir, "python", "chanflow", "__init__.pyi")
    op_list = read(source_dir, "include", "chanflow", "graph", "op_list.h")
    assert stub_text == gen.generate(source, op_list), (
        "the build tree's chanflow/__init__.pyi is stale: rebuild chanflow_python")
    # The source keeps placeholders, never the ops by hand.
    assert source.count(gen.OPS_PLACEHOLDER) == 1 and source.count(gen.ALL_PLACEHOLDER) == 1
    by_hand = set(gen.declared_names(ast.parse(source)))
    assert not by_hand & set(cf.graph_ops)


def test_an_op_added_to_the_list_is_declared_by_itself(gen, source_dir):
    source = read(source_dir, "python", "chanflow", "__init__.pyi")
    op_list = read(source_dir, "include", "chanflow", "graph", "op_list.h")
    # A new group, listed in CHANFLOW_GRAPH_OPS, with ops of two kinds; a commented-out entry
    # and one of a group the root macro does not expand are not ops.
    extended = op_list.replace(
        "#define CHANFLOW_GRAPH_OPS(X)      \\",
        "#define CHANFLOW_GRAPH_EXTRA_OPS(X) \\\n"
        "  X(unary, softsign, \"a / (1 + |a|), \\\"smooth\\\" sign.\") \\\n"
        "  /* X(unary, hidden, \"no\") */ \\\n"
        "  X(reduce, prod, \"Product over axes.\")\n"
        "// X(unary, commented, \"no\")\n"
        "#define CHANFLOW_GRAPH_UNUSED_OPS(X) X(unary, unused, \"no\")\n"
        "#define CHANFLOW_GRAPH_OPS(X)      \\\n  CHANFLOW_GRAPH_EXTRA_OPS(X) \\")
    assert extended != op_list
    text = gen.generate(source, extended)
    section = op_section(gen, text).body
    assert [fn.name for fn in section] == ["softsign", "prod"] + list(cf.graph_ops)
    assert "def softsign(a: Node) -> Node:" in text
    assert "def prod" + gen.KIND_SIGNATURES["reduce"] + ":" in text
    assert ast.get_docstring(section[0]) == 'a / (1 + |a|), "smooth" sign.'
    names = stub_all(text)
    assert "softsign" in names and "prod" in names and "unused" not in names
    assert "softsign" not in gen.generate(source, op_list)


@pytest.mark.parametrize("change, message", [
    (("X(binary, add,", "X(ternary, add,"), "kind 'ternary', which has no stub signature"),
    (("X(binary, sub,", "X(binary, add,"), "op add is listed twice"),
    (("X(binary, mul,", "X(binary, tensor,"), "ops named like a declaration"),
    (("  CHANFLOW_GRAPH_LINALG_OPS(X)", "  CHANFLOW_GRAPH_LINEAR_OPS(X)"),
     "expands CHANFLOW_GRAPH_LINEAR_OPS, which is not defined"),
    (('X(unary, neg, "Elementwise -a.")', "X(unary, neg)"), "cannot parse"),
    (("#define CHANFLOW_GRAPH_OPS(X)", "#define CHANFLOW_GRAPH_ALL_OPS(X)"),
     "expands CHANFLOW_GRAPH_OPS, which is not defined"),
])
def test_the_generator_refuses_what_it_cannot_declare(gen, source_dir, change, message):
    source = read(source_dir, "python", "chanflow", "__init__.pyi")
    op_list = read(source_dir, "include", "chanflow", "graph", "op_list.h")
    assert change[0] in op_list
    with pytest.raises(gen.GenerationError, match=re.escape(message)):
        gen.generate(source, op_list.replace(change[0], change[1], 1))


def test_the_generator_needs_each_placeholder_once(gen, source_dir):
    source = read(source_dir, "python", "chanflow", "__init__.pyi")
    op_list = read(source_dir, "include", "chanflow", "graph", "op_list.h")
    for placeholder in (gen.OPS_PLACEHOLDER, gen.ALL_PLACEHOLDER):
        with pytest.raises(gen.GenerationError, match="found it 0 times"):
            gen.generate(source.replace(placeholder, "#"), op_list)
        with pytest.raises(gen.GenerationError, match="found it 2 times"):
            gen.generate(source + placeholder + "\n", op_list)


def test_the_generator_command_writes_the_stub(gen, source_dir, tmp_path, stub_text):
    out = tmp_path / "__init__.pyi"
    status = gen.main(["--stub", os.path.join(source_dir, "python", "chanflow", "__init__.pyi"),
                       "--op-list", os.path.join(source_dir, "include", "chanflow", "graph",
                                                 "op_list.h"),
                       "--output", str(out)])
    assert status == 0
    assert out.read_text(encoding="utf-8") == stub_text
    assert [p.name for p in tmp_path.iterdir()] == ["__init__.pyi"]


# Graph API calls a type checker must accept, then (one per line, from BAD_FROM on) calls it must
# reject.
MYPY_PROGRAM = """\
from typing import Any
import numpy as np
import chanflow as cf
from chanflow import *

g = cf.Graph()
x = g.input("x", "float32", (2, 3))
w = g.input("w", np.float32, [3, 4])
b = g.constant(np.zeros(4, np.float32), name="b")
h: cf.Node = cf.relu(x @ w + b)
loss = cf.mean(cf.square(h - 1.0))
parts = [cf.sum(h, axes=(0,), keepdims=True), cf.max(h, 1), cf.argmax(h), cf.transpose(h),
         cf.reshape(h, (-1,)), cf.cast(h, "int32"), cf.softmax(h), add(x, 1), 2.0 * h,
         np.float32(1) - abs(h) ** 2, -h / 3]
(dw,) = cf.grad(loss, [w])
def fn(ctx: cf.OpContext, a: cf.Tensor) -> "np.ndarray[Any, Any]":
    ctx.check()
    return np.asarray(a)
p = g.apply(fn, [h], h.shape, "float32", name="p", context=True)
feed = {x: np.ones((2, 3), np.float32), w: np.ones((3, 4), np.float32)}
with cf.GoMachine(g, window=2, workers=2) as m:
    m.run(feed, timeout=5)
    value: cf.Tensor = m.result(loss)
    rows: list[list[cf.Tensor]] = m.stream([feed, feed], [loss, dw])
cf.TapeMachine(g).run(feed, timeout=None)
ops: tuple[str, ...] = cf.graph_ops
n: int = sum([1, 2])  # the builtin: the star import does not bring cf.sum
cf.relu(1.0)
cf.softmax(h, axis="x")
cf.GoMachine(g, windw=3)
cf.add("a", h)
cf.sum(h, keepdim=True)
cf.TapeMachine(g).run([feed], timeout="5")
"""
BAD_FROM = MYPY_PROGRAM.splitlines().index("cf.relu(1.0)") + 1


def test_mypy_checks_graph_code_against_the_stub(tmp_path):
    """mypy --strict finds nothing in the stub, accepts the graph API used right and rejects each
    wrong call. Skipped where mypy is not installed (Debian: python3-mypy)."""
    pytest.importorskip("mypy")
    program = tmp_path / "use_graph.py"
    program.write_text(MYPY_PROGRAM, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(cf.__file__)))
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
           "--cache-dir", str(tmp_path / "cache")]
    stub_check = subprocess.run(cmd + [PACKAGE_STUB], capture_output=True, text=True, env=env)
    assert stub_check.returncode == 0, stub_check.stdout + stub_check.stderr
    run = subprocess.run(cmd + [str(program)], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    errors = [line for line in run.stdout.splitlines() if ": error: " in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    bad = list(range(BAD_FROM, len(MYPY_PROGRAM.splitlines()) + 1))
    assert lines == bad, textwrap.indent(run.stdout + run.stderr, "  ")
