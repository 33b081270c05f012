"""The global function registry from Python: chanflow.Function, get_global_func, register_func
(plain and as a decorator), list_global_funcs, remove_global_func. Python registers and C++ calls
(inline, from a green thread, from many green threads at once), Python calls the C++ built-ins,
errors keep their class and message both ways, and bad arguments raise typed errors."""
import gc
import json
import threading
import weakref

import numpy as np
import pytest

import chanflow as cf


@pytest.fixture
def names():
    """Names a test registers; removed afterwards whatever happens."""
    registered = []
    yield registered
    for n in registered:
        cf.remove_global_func(n)


def builtin(name):
    return cf.get_global_func(name)


def plain(value):
    """A chanflow value as plain Python data, read through core.to_json (so Arrays and Maps read
    the same whichever Python class they surface as)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    doc = json.loads(builtin("core.to_json")(value))
    nodes = doc["nodes"]

    def node(i):
        if i is None:
            return None
        n = nodes[i]
        if n["type"] in ("Int", "Float", "Bool", "String"):
            return n["value"]
        if n["type"] == "Array":
            return [node(j) for j in n["items"]]
        if n["type"] == "Map":
            return {node(k): node(v) for k, v in zip(n["keys"], n["values"])}
        raise AssertionError(f"unexpected node {n}")

    return node(doc["root"])


# ---- Python calls the C++ built-ins ----

def test_builtins_are_listed_sorted_and_are_functions():
    listed = cf.list_global_funcs()
    assert listed == sorted(listed)
    for name in ("core.from_json", "core.make_array", "core.to_json", "core.type_index",
                 "core.type_key", "runtime.call_in_green_thread",
                 "runtime.map_in_green_threads"):
        assert name in listed
        f = cf.get_global_func(name)
        assert isinstance(f, cf.Function) and isinstance(f, cf.Object)
        assert f.type_key == "Function"
    assert cf.object_class("Function") is cf.Function


def test_python_calls_cpp_builtins():
    assert builtin("core.type_key")(1) == "Int"
    assert builtin("core.type_key")(2.5) == "Float"
    assert builtin("core.type_key")("s") == "String"
    assert builtin("core.type_key")(builtin("core.type_key")) == "Function"
    assert builtin("core.type_index")(True) == 6
    arr = builtin("core.make_array")(1, None, "two", [3.5])
    assert builtin("core.type_key")(arr) == "Array"
    assert plain(arr) == [1, None, "two", [3.5]]
    text = builtin("core.to_json")({"a": [1, 2]})
    assert isinstance(text, str) and json.loads(text)["format"] == "chanflow.json"
    assert plain(builtin("core.from_json")(text)) == {"a": [1, 2]}


def test_tensors_pass_through_functions():
    t = cf.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    same = builtin("runtime.call_in_green_thread")(cf.Function(lambda x: x), t)
    assert isinstance(same, cf.Tensor) and same.same_as(t)
    np.testing.assert_array_equal(same.numpy(), np.arange(6).reshape(2, 3))


def test_cpp_errors_reach_python_with_their_class():
    with pytest.raises(cf.TypeError, match=r"^core\.from_json: argument 0 must be a 'String', "
                                           r"got a 'Int'$"):
        builtin("core.from_json")(5)
    with pytest.raises(cf.TypeError, match=r"^core\.type_key: expected 1 argument, got 2$"):
        builtin("core.type_key")(1, 2)
    with pytest.raises(cf.TypeError, match="argument 0 must be an object, got null"):
        builtin("core.type_key")(None)
    with pytest.raises(cf.Error, match="from_json"):
        builtin("core.from_json")("{not json")
    # A chanflow.TypeError is also Python's TypeError.
    with pytest.raises(TypeError):
        builtin("runtime.call_in_green_thread")(1)


# ---- Python registers, C++ calls ----

def test_register_plain_and_call_through_the_registry(names):
    def add(a, b):
        return a + b
    names.append("test.py.add")
    assert cf.register_func("test.py.add", add) is add
    f = cf.get_global_func("test.py.add")
    assert isinstance(f, cf.Function)
    assert f(2, 3) == 5
    assert f("a", "b") == "ab"
    # C++ calls it: runtime.call_in_green_thread is a C++ function calling the registered one.
    assert builtin("runtime.call_in_green_thread")(f, 20, 22) == 42


def test_register_as_decorator(names):
    names.append("test.py.scale")

    @cf.register_func("test.py.scale")
    def scale(x, k=3):
        return x * k

    assert scale(2) == 6  # the decorated function is returned unchanged
    assert cf.get_global_func("test.py.scale")(2) == 6
    assert cf.get_global_func("test.py.scale")(2, 5) == 10


def test_python_function_runs_on_the_callback_thread_from_a_green_thread(names):
    seen = []

    def where():
        seen.append(threading.get_ident())
        return threading.get_ident()

    names.append("test.py.where")
    cf.register_func("test.py.where", where)
    f = cf.get_global_func("test.py.where")
    call = builtin("runtime.call_in_green_thread")
    main = threading.get_ident()
    # From an OS thread the callable runs inline; from a green thread on the callback thread.
    assert f() == main
    first = call(f)
    assert first != main
    for _ in range(20):
        assert call(f) == first  # always the same one thread
    assert len(seen) == 22


def test_many_green_threads_call_python_concurrently(names):
    calls = []

    def square(x):
        calls.append(threading.get_ident())
        return x * x

    names.append("test.py.square")
    cf.register_func("test.py.square", square)
    items = list(range(500))
    out = builtin("runtime.map_in_green_threads")(cf.get_global_func("test.py.square"), items)
    assert plain(out) == [x * x for x in items]
    assert len(calls) == 500 and len(set(calls)) == 1
    assert calls[0] != threading.get_ident()


def test_python_threads_and_green_threads_at_once(names):
    names.append("test.py.inc")
    cf.register_func("test.py.inc", lambda x: x + 1)
    f = cf.get_global_func("test.py.inc")
    mapper = builtin("runtime.map_in_green_threads")
    results = {}
    errors = []

    def worker(k):
        try:
            base = list(range(k * 100, k * 100 + 100))
            for _ in range(5):
                got = plain(mapper(f, base))
                assert got == [x + 1 for x in base]
                assert f(k) == k + 1  # inline on this Python thread too
            results[k] = True
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(results) == [0, 1, 2, 3]


def test_callables_are_accepted_as_function_arguments():
    call = builtin("runtime.call_in_green_thread")
    assert call(lambda a, b: a * b, 6, 7) == 42
    f = cf.Function(lambda: "made")
    assert isinstance(f, cf.Function) and f() == "made"
    # A Function returned from Python surfaces as chanflow.Function (the same object).
    g = builtin("core.type_key")
    back = call(cf.Function(lambda x: x), g)
    assert isinstance(back, cf.Function) and back.same_as(g)


# ---- errors both ways ----

def test_python_exception_comes_back_as_the_same_object(names):
    raised = []

    def fail(x):
        e = ValueError(f"bad value {x}")
        raised.append(e)
        raise e

    names.append("test.py.fail")
    cf.register_func("test.py.fail", fail)
    f = cf.get_global_func("test.py.fail")
    # Python -> C++ -> Python, inline.
    with pytest.raises(ValueError, match="^bad value 1$") as info:
        f(1)
    assert info.value is raised[-1]
    # Python -> C++ -> green thread -> callback thread -> Python.
    with pytest.raises(ValueError, match="^bad value 2$") as info:
        builtin("runtime.call_in_green_thread")(f, 2)
    assert info.value is raised[-1]
    # One of many green threads fails: the others finish, the failure is raised.
    with pytest.raises(ValueError, match="^bad value 3$"):
        builtin("runtime.map_in_green_threads")(
            cf.Function(lambda x: fail(x) if x == 3 else x), list(range(8)))


def test_python_exception_class_is_kept(names):
    class MyError(Exception):
        pass

    def fail():
        raise MyError("mine")

    names.append("test.py.myerror")
    cf.register_func("test.py.myerror", fail)
    with pytest.raises(MyError, match="^mine$"):
        builtin("runtime.call_in_green_thread")(cf.get_global_func("test.py.myerror"))
    with pytest.raises(KeyError):
        cf.Function(lambda: {}["missing"])()


def test_exception_without_a_traceback_keeps_its_class():
    # int('abc') called directly by the binding raises in C with no Python frame: no traceback.
    with pytest.raises(ValueError, match="invalid literal for int"):
        cf.Function(int)("abc")
    with pytest.raises(ValueError, match="invalid literal for int"):
        builtin("runtime.call_in_green_thread")(cf.Function(int), "abc")


def test_cpp_error_raised_inside_python_inside_cpp(names):
    # C++ -> Python -> C++ raising: the chanflow.TypeError crosses both boundaries.
    names.append("test.py.nested")
    cf.register_func("test.py.nested", lambda: builtin("core.from_json")(1))
    with pytest.raises(cf.TypeError, match="core.from_json: argument 0 must be a 'String'"):
        builtin("runtime.call_in_green_thread")(cf.get_global_func("test.py.nested"))


def test_unconvertible_result_is_a_type_error(names):
    names.append("test.py.badresult")
    cf.register_func("test.py.badresult", lambda: object())
    with pytest.raises(cf.TypeError, match=r"^the result of Python function "
                                           r"'test_unconvertible_result_is_a_type_error\.<locals>"
                                           r"\.<lambda>': cannot convert a Python 'object'"):
        builtin("runtime.call_in_green_thread")(cf.get_global_func("test.py.badresult"))


def self_referencing():
    items = [1]
    items.append(items)
    return items


def nested(depth):
    items = []
    for _ in range(depth):
        items = [items]
    return items


@pytest.mark.parametrize("green", [False, True])
@pytest.mark.parametrize("make,message", [
    (self_referencing, r"^the result of Python function 'self_referencing'\[1\]: the list "
                       r"contains itself$"),
    (lambda: nested(100_000), r"^the result of Python function '.*<lambda>'\[0\]\[0\].*"
                              r"\[\.\.\. \d+ more levels \.\.\.\].*: nested deeper than"),
])
def test_unconvertible_containers_in_a_result_are_a_type_error(names, make, message, green):
    names.append("test.py.badcontainer")
    f = cf.register_func("test.py.badcontainer", make)
    f = cf.get_global_func("test.py.badcontainer")
    call = builtin("runtime.call_in_green_thread") if green else (lambda g: g())
    with pytest.raises(cf.TypeError, match=message) as info:
        call(f)
    assert len(str(info.value)) < 400  # the place is abbreviated, not 100,000 steps long
    assert call(cf.Function(lambda: [1, [2]])) is not None  # the registry still works


def test_deep_nesting_is_bounded_whatever_the_recursion_limit():
    # 100,000 levels of C recursion overflow the stack: the converter stops at 10,000 levels.
    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        # 10,000 levels, or fewer where the frames are bigger (ASan) or the stack smaller.
        with pytest.raises(RecursionError,
                           match=r"nested deeper than (10000 levels|this thread.s stack allows)"):
            cf.to_object(nested(100_000))
        assert len(cf.to_object(nested(500))) == 1
    finally:
        sys.setrecursionlimit(old)


# ---- override, list, remove ----

def test_override_rules(names):
    names.append("test.py.dup")
    cf.register_func("test.py.dup", lambda: 1)
    with pytest.raises(ValueError, match="'test.py.dup' is already registered"):
        cf.register_func("test.py.dup", lambda: 2)
    with pytest.raises(ValueError, match="'test.py.dup' is already registered"):
        cf.register_func("test.py.dup")(lambda: 2)
    assert cf.get_global_func("test.py.dup")() == 1
    cf.register_func("test.py.dup", lambda: 2, override=True)
    assert cf.get_global_func("test.py.dup")() == 2

    @cf.register_func("test.py.dup", override=True)
    def three():
        return 3

    assert cf.get_global_func("test.py.dup")() == 3
    # A C++ built-in can be overridden (and the registry takes a chanflow.Function as it is).
    names.append("test.py.alias")
    cf.register_func("test.py.alias", builtin("core.type_key"))
    assert cf.get_global_func("test.py.alias").same_as(builtin("core.type_key"))


def test_list_and_remove(names):
    cf.register_func("test.py.zz", lambda: None)
    cf.register_func("test.py.aa", lambda: None)
    names.extend(["test.py.zz", "test.py.aa"])
    listed = cf.list_global_funcs()
    assert listed == sorted(listed)
    assert listed.index("test.py.aa") < listed.index("test.py.zz")
    assert cf.get_global_func("test.py.zz")() is None
    assert cf.remove_global_func("test.py.zz") is True
    assert cf.remove_global_func("test.py.zz") is False
    assert "test.py.zz" not in cf.list_global_funcs()
    assert cf.get_global_func("test.py.zz", allow_missing=True) is None
    with pytest.raises(ValueError, match="no global function named 'test.py.zz'"):
        cf.get_global_func("test.py.zz")


def test_removal_releases_the_python_callable(names):
    class Callable:
        def __call__(self):
            return 1

    c = Callable()
    ref = weakref.ref(c)
    names.append("test.py.weak")
    cf.register_func("test.py.weak", c)
    del c
    gc.collect()
    assert ref() is not None  # the registry holds it
    f = cf.get_global_func("test.py.weak")
    assert cf.remove_global_func("test.py.weak")
    gc.collect()
    assert ref() is not None  # our handle still holds it
    assert f() == 1
    del f
    gc.collect()
    assert ref() is None


# ---- bad arguments ----

def test_bad_arguments_raise_typed_errors(names):
    with pytest.raises(cf.TypeError, match=r"^get_global_func: name must be a str, got 'int'$"):
        cf.get_global_func(5)
    with pytest.raises(cf.TypeError, match=r"^register_func: name must be a str, got 'NoneType'$"):
        cf.register_func(None, lambda: 1)
    with pytest.raises(cf.TypeError, match=r"^remove_global_func: name must be a str"):
        cf.remove_global_func(b"bytes")
    with pytest.raises(ValueError, match="the name must not be empty"):
        cf.register_func("", lambda: 1)
    with pytest.raises(cf.TypeError, match=r"^register_func: f must be callable .*got 'int'$"):
        cf.register_func("test.py.notcallable", 5)
    with pytest.raises(cf.TypeError, match="the decorated object must be callable"):
        cf.register_func("test.py.notcallable")(5)
    with pytest.raises(cf.TypeError, match=r"^register_func: f must be callable .*got "
                                           r"'chanflow\._native\.Tensor'$"):
        cf.register_func("test.py.notcallable", cf.tensor(np.zeros(2)))
    assert cf.get_global_func("test.py.notcallable", allow_missing=True) is None
    with pytest.raises(cf.TypeError, match=r"^Function\(fn\): fn must be callable"):
        cf.Function(3)
    f = builtin("core.type_key")
    with pytest.raises(cf.TypeError, match=r"^Function call: argument 1: cannot convert a "
                                           r"Python 'object'"):
        f(1, object())
    with pytest.raises(cf.TypeError, match="positional arguments only, got 1 keyword"):
        f(x=1)
    with pytest.raises(cf.TypeError, match="does not fit in int64"):
        f(1 << 70)
