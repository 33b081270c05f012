"""The type stubs (python/chanflow/__init__.pyi, installed with py.typed) describe the package as
it is: every name of chanflow.__all__ is declared, every public attribute of each class is
declared (and every declared one exists), and the parameter names of functions and methods match
the signatures the native module reports."""
import ast
import builtins
import collections.abc
import enum
import os
import re

import pytest

import chanflow as cf

# Bases the stub takes from elsewhere: the attribute names each provides.
EXTERNAL_BASES = {
    "Exception": set(dir(Exception)), "ValueError": set(dir(ValueError)),
    "TimeoutError": set(dir(TimeoutError)), "builtins.TypeError": set(dir(builtins.TypeError)),
    "Sequence": set(dir(collections.abc.Sequence)), "Mapping": set(dir(collections.abc.Mapping)),
    "enum.IntEnum": set(dir(enum.IntEnum)) | {"name", "value"},  # members' properties
}


@pytest.fixture(scope="module")
def stub(source_dir):
    path = os.path.join(source_dir, "python", "chanflow", "__init__.pyi")
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


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


def runtime_params(func):
    """Parameter names (self excluded) from a pybind11 signature line, or None when overloaded
    or not a native function."""
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
    names = [p.split(":")[0].strip().lstrip("*") for p in params]
    return [n for n in names if n and n != "self"]


def stub_params(fn):
    args = fn.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return [n for n in names if n != "self"]


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
                    checked += 1
    assert checked >= 60


def test_the_stubs_are_installed_next_to_the_package():
    pkg = os.path.dirname(cf.__file__)
    assert os.path.isfile(os.path.join(pkg, "__init__.pyi"))
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
