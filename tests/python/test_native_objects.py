"""chanflow objects in Python: one class per type index, the hierarchy, types registered after
import, repr, equality and hashing as in C++, Array/Map as Sequence/Mapping, to_object, JSON."""
import collections.abc
import math
import os
import pickle
import re

import numpy as np
import pytest

import chanflow as cf
import chanflow._native as native

BUILTIN = {"Int": int, "Float": float, "Bool": bool, "String": str}
LATE = {"testing.LateLeaf", "testing.LateRoot"}


def registry():
    """{index: (key, parent index)} of the registered types."""
    return {i: (k, p) for i, k, p in native._registered_types()}


def by_key(path):
    """The attribute of chanflow.types at a dotted type key."""
    obj = cf.types
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def to_py(v):
    """A Python value with the structure of v (Arrays as lists, Maps as lists of pairs,
    reflected objects as (type_key, fields)), to compare object graphs by content."""
    if isinstance(v, cf.Array):
        return [to_py(x) for x in v]
    if isinstance(v, cf.Map):
        return [(to_py(k), to_py(x)) for k, x in v.items()]
    if isinstance(v, cf.Object):
        return (v.type_key, {k: to_py(x) for k, x in v.fields().items()})
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return (type(v).__name__, v)


@pytest.fixture(scope="module")
def program(source_dir):
    return cf.load_program(os.path.join(source_dir, "examples", "programs", "fibonacci.pbtxt"))


def leaf(**fields):
    return native._testing_make_object("testing.Leaf", **fields)


# ---- classes by type index ----

def test_every_type_registered_at_import_has_its_class():
    types = registry()
    assert len(types) >= 17
    seen_generated = 0
    for index, (key, parent) in types.items():
        if key in LATE:
            continue
        cls = cf.object_class(key)
        assert cls is not None, ("the class bound for %s is unknown: pass it to register_wrapper"
                                 % key)
        assert cls is cf.object_class(index)
        assert by_key(key) is cls, key
        if key in BUILTIN:
            assert cls is BUILTIN[key]
            continue
        assert issubclass(cls, cf.Object), key
        if key == "Object":
            assert cls is cf.Object
            continue
        parent_cls = cf.object_class(parent)
        assert issubclass(cls, parent_cls), key
        if cls.__module__ == "chanflow.types":  # generated: named after the key
            seen_generated += 1
            assert cls.__qualname__ == key
            assert cls.__name__ == key.rsplit(".", 1)[-1]
            assert cls.__bases__ == (parent_cls,)
            assert repr(cls) == "<class 'chanflow.types.%s'>" % key
            assert key in cls.__doc__
    assert seen_generated >= 6  # ir.*, exec.Scope, TensorStorage, testing.*
    # Bound classes are their types' classes.
    assert cf.object_class("Tensor") is cf.Tensor
    assert cf.object_class("Array") is cf.Array and cf.object_class("Map") is cf.Map
    assert cf.object_class("ir.Program") is cf.Program
    assert cf.types.Object is cf.Object and cf.types.Int is int and cf.types.String is str


def test_object_class_errors():
    with pytest.raises(ValueError, match="no object type 'no.such.Type'"):
        cf.object_class("no.such.Type")
    with pytest.raises(ValueError):
        cf.object_class(16383)
    with pytest.raises(cf.TypeError, match="expected a type key"):
        cf.object_class(1.5)


def test_types_is_an_importable_namespace():
    import chanflow.types
    from chanflow.types import ir
    assert chanflow.types is cf.types
    assert ir.OpDesc is cf.object_class("ir.OpDesc")


def test_objects_surface_as_their_classes_and_isinstance_follows_the_hierarchy(program):
    block = program.blocks[0]
    assert type(block) is cf.types.ir.Block
    assert type(block.ops[0]) is cf.types.ir.OpDesc
    assert type(block.vars[0]) is cf.types.ir.VarDesc
    assert type(block.ops[0].attrs["capacity"]) is cf.types.ir.Attr
    assert type(program.blocks) is cf.Array and type(block.ops[0].inputs) is cf.Map
    assert isinstance(block, cf.Object) and not isinstance(block, cf.types.ir.OpDesc)
    assert (block.type_key, block.type_index) == ("ir.Block", registry_index("ir.Block"))
    node = native._testing_make_object("testing.Node", value=1)
    lf = leaf(value=2)
    assert type(node) is cf.types.testing.Node and type(lf) is cf.types.testing.Leaf
    assert isinstance(lf, cf.types.testing.Node) and not isinstance(node, cf.types.testing.Leaf)
    assert isinstance(cf.tensor([1]), cf.Object)
    assert cf.types.testing.Leaf.__mro__[:3] == (cf.types.testing.Leaf, cf.types.testing.Node,
                                                cf.Object)


def registry_index(key):
    return next(i for i, (k, _) in registry().items() if k == key)


def test_a_type_registered_after_import_surfaces_as_its_nearest_ancestor():
    keys = {k for k, _ in registry().values()}
    assert not LATE & keys, "only this test registers the late types"
    with pytest.raises(ValueError):
        cf.object_class("testing.LateLeaf")
    native._testing_register_late_types()
    types = registry()
    late_index = registry_index("testing.LateLeaf")
    assert types[late_index][1] == registry_index("testing.Leaf")
    # Classes are fixed at import: the late type has none of its own.
    assert cf.object_class("testing.LateLeaf") is cf.types.testing.Leaf
    assert cf.object_class("testing.LateRoot") is cf.Object
    assert not hasattr(cf.types.testing, "LateLeaf")
    obj = native._testing_make_object("testing.LateLeaf", value=7, late="mine", items=[1])
    assert type(obj) is cf.types.testing.Leaf
    assert isinstance(obj, cf.types.testing.Node)
    assert (obj.type_key, obj.type_index) == ("testing.LateLeaf", late_index)
    # Its own field is still an attribute (dynamic reflection), in fields(), dir() and repr.
    assert obj.late == "mine" and obj.value == 7
    assert list(obj.fields()) == ["value", "weight", "flag", "label", "next", "items", "late"]
    assert "late" in dir(obj)
    assert repr(obj).startswith("testing.LateLeaf(value=7, ") and "late='mine'" in repr(obj)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        obj.nope  # noqa: B018
    # JSON knows the late type by its key.
    back = cf.from_json(cf.to_json(obj))
    assert back.type_key == "testing.LateLeaf" and back.late == "mine"
    assert type(back) is cf.types.testing.Leaf
    root = native._testing_make_late_root()
    assert type(root) is cf.Object and root.type_key == "testing.LateRoot"
    assert re.fullmatch(r"<testing\.LateRoot object at 0x[0-9a-f]+>", repr(root))
    assert root.fields() == {}


# ---- fields ----

def test_reflected_fields_are_read_only_attributes(program):
    op = program.blocks[0].ops[0]
    assert op.type == "channel_create"
    assert list(op.outputs["Out"]) == ["ch"]
    assert op.attrs["data_type"].value == 3 and op.attrs["data_type"].type == 0
    assert op.is_target is False
    assert list(op.fields()) == ["type", "inputs", "outputs", "attrs", "is_target"]
    for name in op.fields():
        assert name in dir(op)
    with pytest.raises(AttributeError):
        op.type = "other"
    with pytest.raises(AttributeError):
        op.brand_new = 1
    assert "reflected field 'type' (str)" in type(op).type.__doc__
    assert program.num_blocks == len(program.blocks) == 7
    v = program.blocks[0].vars[0]
    assert v.fields() == {"name": "ch", "type": 16, "data_type": 3, "dims": v.dims, "lod_level": 0,
                          "capacity": 0, "persistable": False}
    # Non-reflected objects have no fields.
    assert cf.Array([1]).fields() == {} and cf.tensor([1]).fields() == {}


def test_testing_constructor_checks_fields():
    with pytest.raises(cf.TypeError, match=r"testing\.Leaf\.value: expected an int, got 'str'"):
        leaf(value="1")
    with pytest.raises(cf.TypeError, match=r"testing\.Leaf\.items: expected a Array<Object>"):
        leaf(items=5)
    with pytest.raises(cf.TypeError, match="no field 'bogus'"):
        leaf(bogus=1)
    with pytest.raises(ValueError, match="no object type"):
        native._testing_make_object("testing.Nope")
    with pytest.raises(cf.TypeError, match="not reflected"):
        native._testing_make_object("Array")


# ---- repr ----

def test_repr(program):
    assert repr(cf.Array([])) == "Array([])"
    assert repr(cf.Map()) == "Map({})"
    nested = cf.to_object([1, 2.5, "x", None, True, (3,), {"k": [4]}])
    assert repr(nested) == "Array([1, 2.5, 'x', None, True, Array([3]), Map({'k': Array([4])})])"
    lf = leaf(value=1, weight=0.5, flag=True, label="a", next=cf.Array([2]), items=[3])
    assert repr(lf) == ("testing.Leaf(value=1, weight=0.5, flag=True, label='a', next=Array([2]), "
                        "items=Array([3]))")
    op = program.blocks[0].ops[0]
    assert repr(op) == ("ir.OpDesc(type='channel_create', inputs=Map({}), outputs=Map({'Out': "
                        "Array(['ch'])}), attrs=Map({'data_type': ir.Attr(type=0, value=3), "
                        "'capacity': ir.Attr(type=0, value=0)}), is_target=False)")
    m = cf.Map({"a": 1})
    assert repr(m.keys()) == "Map.keys(['a'])" and repr(m.items()) == "Map.items([('a', 1)])"


# ---- equality and hashing ----

def test_equality_and_hash_are_cpps_identity_for_objects(program):
    b1, b2 = program.blocks[0], program.blocks[0]
    assert b1 is not b2 and b1 == b2 and hash(b1) == hash(b2) and b1.same_as(b2)
    assert program.blocks[0] != program.blocks[1]
    a, a2 = cf.Array([1, 2]), cf.Array([1, 2])
    assert a != a2 and not a.same_as(a2) and a.same_elements(cf.Array(a))
    assert not a.same_elements(cf.Array([1, 2]))  # the items are other Int objects
    assert a == a and a.same_as(a) and not a.same_as(1)
    assert (a == [1, 2]) is False
    t = cf.tensor([1.0])
    assert {t: 1}[cf.to_object([t])[0]] == 1
    # In sets and dicts, the wrappers of one object are one key.
    s = {b1, b2, program.blocks[1], a, a}
    assert len(s) == 3
    d = {program.blocks[0]: "first"}
    assert d[program.blocks[0]] == "first"
    # Strings and boxed scalars are Python values: by value.
    arr = cf.Array(["x", 1, 1.5, True])
    assert arr[0] == "x" and hash(arr[0]) == hash("x") and type(arr[1]) is int
    assert type(arr[3]) is bool and type(arr[2]) is float


def test_map_keys_compare_as_in_cpp():
    m = cf.Map([(1, "int"), (True, "bool"), (1.0, "float"), ("1", "str")])
    assert len(m) == 4  # Int, Bool, Float and String are four keys, unlike a dict
    assert (m[1], m[True], m[1.0], m["1"]) == ("int", "bool", "float", "str")
    assert m[np.int64(1)] == "int" and m[np.bool_(True)] == "bool" and m[np.float32(1)] == "float"
    z = cf.Map([(0.0, "zero")])
    assert z[-0.0] == "zero"  # -0.0 == 0.0
    nan = cf.Map([(float("nan"), "nan")])
    assert float("nan") not in nan and len(nan) == 1
    assert [v for v in nan.values()] == ["nan"]
    assert [type(k) for k in nan] == [float] and math.isnan(next(iter(nan.keys())))
    key = cf.Array([1])
    by_identity = cf.Map([(key, "a")])
    assert by_identity[key] == "a" and cf.Array([1]) not in by_identity
    with pytest.raises(KeyError):
        by_identity[[1]]  # a new Array


# ---- Array ----

def test_array_is_a_sequence():
    a = cf.Array(x * 10 for x in range(5))
    assert isinstance(a, collections.abc.Sequence)
    assert len(a) == 5 and list(a) == [0, 10, 20, 30, 40]
    assert a[0] == 0 and a[-1] == 40 and a[-5] == 0 and a[np.int64(2)] == 20
    for bad in (5, -6, 1 << 70):
        with pytest.raises(IndexError):
            a[bad]
    with pytest.raises(cf.TypeError, match="indices must be integers or slices, not 'str'"):
        a["0"]
    for s in (slice(1, 3), slice(None, None, -1), slice(-2, None), slice(0, 5, 2), slice(4, 1),
              slice(-100, 100, 3)):
        part = a[s]
        assert type(part) is cf.Array and list(part) == [0, 10, 20, 30, 40][s]
    assert list(reversed(a)) == [40, 30, 20, 10, 0]
    assert 20 in a and 25 not in a and object() not in a and [1] not in a
    assert 20.0 not in a and True not in cf.Array([1])  # C++ equality: another type
    assert a.index(30) == 3 and a.index(0, 0, 1) == 0 and a.count(10) == 1 and a.count("x") == 0
    with pytest.raises(ValueError):
        a.index(30, 0, 3)
    with pytest.raises(ValueError):
        a.index(99)
    with pytest.raises(TypeError):
        a[0] = 1
    with pytest.raises(AttributeError):
        a.append(1)
    assert bool(cf.Array()) is False and bool(a) is True
    it = iter(cf.Array([1, 2]))
    assert next(it) == 1 and next(it) == 2
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(cf.TypeError, match=r"Array\(items\): expected an iterable, got 'int'"):
        cf.Array(5)
    with pytest.raises(cf.TypeError, match=r"Array\(items\)\[1\]: cannot convert a Python "
                                           r"'object'"):
        cf.Array([1, object()])
    big = cf.Array(range(100000))
    assert len(big) == 100000 and big[-1] == 99999 and sum(big) == sum(range(100000))


# ---- Map ----

def test_map_is_a_mapping():
    m = cf.Map({"a": 1, "b": [2, 3]}, c=None)
    assert isinstance(m, collections.abc.Mapping)
    assert len(m) == 3 and list(m) == ["a", "b", "c"]
    assert m["a"] == 1 and list(m["b"]) == [2, 3] and m["c"] is None
    with pytest.raises(KeyError):
        m["z"]
    with pytest.raises(KeyError):
        m[object()]
    assert m.get("a") == 1 and m.get("z") is None and m.get("z", 5) == 5 and m.get([1], 0) == 0
    assert "a" in m and "z" not in m and object() not in m
    keys, values, items = m.keys(), m.values(), m.items()
    assert len(keys) == len(values) == len(items) == 3
    assert list(keys) == ["a", "b", "c"] and "b" in keys and "z" not in keys
    assert [to_py(v) for v in values] == [("int", 1), [("int", 2), ("int", 3)], ("NoneType", None)]
    assert 1 in values and ("a", 1) in items and ("a", 2) not in items and "a" not in items
    assert dict(cf.Map({"x": 1})) == {"x": 1}
    assert list(cf.Map([("k", 1), ("j", 2)]).items()) == [("k", 1), ("j", 2)]
    again = cf.Map(m)
    assert not again.same_as(m) and list(again.items())[0] == ("a", 1)
    with pytest.raises(TypeError):
        m["a"] = 2
    with pytest.raises(cf.TypeError, match="not a .key, value. pair"):
        cf.Map([1, 2])
    with pytest.raises(cf.TypeError, match=r"Map\(items\): expected a mapping"):
        cf.Map(5)
    with pytest.raises(cf.TypeError, match=r"Map\(items\) key"):
        cf.Map({object(): 1})
    big = cf.Map({i: str(i) for i in range(10000)})
    assert len(big) == 10000 and big[9999] == "9999" and list(big)[:3] == [0, 1, 2]


# ---- to_object ----

def test_to_object_conversions():
    assert cf.to_object(None) is None
    for v in (True, False, 0, -5, 1 << 62, 2.5, "text", ""):
        out = cf.to_object(v)
        assert out == v and type(out) is type(v)
    assert type(cf.to_object(np.bool_(True))) is bool
    assert cf.to_object(np.int8(-3)) == -3 and type(cf.to_object(np.uint32(7))) is int
    assert cf.to_object(np.float16(0.5)) == 0.5 and type(cf.to_object(np.float32(1))) is float
    assert type(cf.to_object(np.array([1, 2]))) is cf.Tensor
    t = cf.to_object((1, [2, (3,)], {"k": {"n": 1}}))
    assert to_py(t) == [("int", 1), [("int", 2), [("int", 3)]],
                        [(("str", "k"), [(("str", "n"), ("int", 1))])]]
    arr = cf.Array([1])
    assert cf.to_object(arr).same_as(arr)
    assert cf.to_object({(1, 2): "tuple key"}).keys().__len__() == 1
    s = "\udcff bytes \x00 nul"  # a surrogate-escaped byte (0xff) and a NUL survive
    assert cf.to_object([s])[0] == s


def test_to_object_errors_name_the_place():
    with pytest.raises(cf.TypeError, match=r"to_object\(value\)\[1\]\['k'\]\[0\]: cannot convert "
                                           r"a Python 'complex'"):
        cf.to_object([0, {"k": [1j]}])
    with pytest.raises(cf.TypeError, match=r"to_object\(value\) key 1j"):
        cf.to_object({1j: 0})
    with pytest.raises(cf.TypeError, match=r"\[0\]: the int 36893488147419103232 does not fit"):
        cf.to_object([1 << 65])
    with pytest.raises(cf.TypeError, match="does not fit in int64"):
        cf.to_object(np.uint64(1 << 63))
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match=r"to_object\(value\)\[1\]: the list contains itself"):
        cf.to_object(loop)
    d = {}
    d["self"] = d
    with pytest.raises(ValueError, match="the dict contains itself"):
        cf.to_object(d)
    deep = []
    for _ in range(100000):
        deep = [deep]
    with pytest.raises(RecursionError, match="nested deeper than Python's recursion limit"):
        cf.to_object(deep)
    with pytest.raises(ValueError, match="lone surrogate"):
        cf.to_object("\ud800")
    shared = [1]
    assert len(cf.to_object([shared, shared])) == 2  # shared, not cyclic


# ---- JSON ----

def test_nested_containers_survive_a_json_round_trip():
    value = [1, -2, 2.5, float("inf"), float("-inf"), float("nan"), True, False, None, "",
             "ünïcode ✓", [], {}, [[[1]]], {"a": {"b": [1, {"c": None}]}, "n": 1},
             {1: "int key", 1.0: "float key"}]
    text = cf.to_json(value)
    assert isinstance(text, str) and '"format":"chanflow.json"' in text
    back = cf.from_json(text)
    assert type(back) is cf.Array
    assert to_py(back) == to_py(cf.to_object(value))
    assert cf.to_json(back) == text  # the same graph saves to the same text
    assert cf.from_json(text.encode()) is not None  # bytes too
    for scalar in (None, 5, "s", 1.5, True):
        assert cf.from_json(cf.to_json(scalar)) == scalar


def test_shared_objects_stay_shared_through_json():
    inner = cf.Array([1, 2])
    back = cf.from_json(cf.to_json([inner, inner, cf.Array([1, 2])]))
    assert back[0].same_as(back[1]) and not back[0].same_as(back[2])


def test_reflected_objects_survive_a_json_round_trip(program):
    back = cf.from_json(cf.to_json(program))
    assert type(back) is cf.Program and back == program and not back.same_as(program)
    tail = leaf(value=1, weight=float("nan"), label="tail")
    head = leaf(value=2, weight=-0.25, flag=True, label="head ✓", next=tail,
                items=[tail, {"k": float("inf")}, None])
    back = cf.from_json(cf.to_json(head))
    assert type(back) is cf.types.testing.Leaf and to_py(back) == to_py(head)
    assert back.next.same_as(back.items[0]) and math.isnan(back.next.weight)
    op = program.blocks[0].ops[0]
    assert to_py(cf.from_json(cf.to_json(op))) == to_py(op)
    # Pickling goes through JSON.
    assert to_py(pickle.loads(pickle.dumps(head))) == to_py(head)
    assert pickle.loads(pickle.dumps(program)) == program
    assert list(pickle.loads(pickle.dumps(cf.Array([1, "a"])))) == [1, "a"]


def test_json_errors_are_typed():
    for bad, pattern in [("not json", "malformed JSON"), ("{}", "not a chanflow object graph"),
                         ('{"format": "chanflow.json", "version": 99, "root": null, "nodes": []}',
                          "unsupported version"),
                         ('{"format": "chanflow.json", "version": 1, "root": 0, "nodes": '
                          '[{"type": "no.Such"}]}', "node 0"),
                         ('{"format": "chanflow.json", "version": 1, "root": 0, "nodes": '
                          '[{"type": "Array", "items": [0]}]}', "node 0")]:
        with pytest.raises(cf.JSONError, match=pattern) as info:
            cf.from_json(bad)
        assert isinstance(info.value, ValueError) and isinstance(info.value, cf.Error)
    with pytest.raises(cf.TypeError, match="expected a str or bytes, got 'int'"):
        cf.from_json(5)
    with pytest.raises(cf.TypeError, match="type 'Tensor' has no reflection"):
        cf.to_json([cf.tensor([1])])
    with pytest.raises(cf.TypeError, match=r"to_json\(obj\)\[0\]: cannot convert"):
        cf.to_json([object()])
    with pytest.raises(cf.JSONError, match="not valid UTF-8"):
        cf.to_json("\udcff")
    with pytest.raises(cf.TypeError, match="cannot pickle a chanflow 'Tensor' object"):
        pickle.dumps(cf.tensor([1]))
