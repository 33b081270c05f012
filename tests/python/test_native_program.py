"""chanflow.Program: loading, saving, from_blocks typed by the op schemas, verify, op_schema."""
import os
import re

import pytest

import chanflow as cf
from conftest import VT, block, op, tvar


def text_of(attrs, type_="fill_constant"):
    p = cf.Program.from_blocks([block(0, -1, [tvar("x")],
                                      [op(type_, outputs=[("Out", ["x"])], attrs=attrs)])])
    return p.to_text()


def test_load_text_binary_and_save_round_trip(source_dir, tmp_path):
    path = os.path.join(source_dir, "examples", "programs", "go_op.pbtxt")
    p = cf.Program.load(path)
    assert p.num_blocks == 2
    assert cf.Program.from_text(p.to_text()) == p
    data = p.to_binary()
    assert isinstance(data, bytes)
    assert cf.Program.from_binary(data) == p
    for name in ("copy.pb", "copy.pbtxt"):
        p.save(tmp_path / name)  # os.PathLike accepted
        assert cf.Program.load(str(tmp_path / name)) == p
    assert p != cf.Program.from_blocks([block(0, -1)])
    with pytest.raises(TypeError):
        hash(p)


def test_load_errors_are_program_errors_naming_the_source(tmp_path):
    with pytest.raises(cf.ProgramError, match="mine.pbtxt:1"):
        cf.Program.from_text("blocks { idx: zzz }", source="mine.pbtxt")
    with pytest.raises(cf.ProgramError, match="<binary>"):
        cf.Program.from_binary(b"\xff\xff\xff")
    with pytest.raises(cf.Error):
        cf.Program.load(str(tmp_path / "missing.pbtxt"))
    with pytest.raises(TypeError):
        cf.Program.from_binary("text, not bytes")


def test_attribute_types_come_from_the_schema():
    # fill_constant: shape INTS, dtype INT, value FLOAT (an int given), force_cpu BOOLEAN.
    t = text_of([("shape", [2, 3]), ("dtype", VT.FP32), ("value", 7), ("force_cpu", False)])
    assert "type: INTS" in t and "type: INT\n" in t and "type: FLOAT" in t
    assert "type: BOOLEAN" in t
    # arg_max's axis is LONG in the schema, even for a small value.
    t = text_of([("axis", 1)], type_="arg_max")
    assert "type: LONG" in t and "l: 1" in t


def test_unknown_attributes_are_typed_by_their_python_value():
    t = text_of([("b", True), ("i", 5), ("big", 1 << 40), ("f", 0.5), ("s", "x"),
                 ("li", [1, 2]), ("lf", [1, 2.5]), ("ls", ["a"]), ("lb", [True]), ("e", [])],
                type_="my_unregistered_op")
    for name, kind in [("b", "BOOLEAN"), ("i", "INT"), ("big", "LONG"), ("f", "FLOAT"),
                       ("s", "STRING"), ("li", "INTS"), ("lf", "FLOATS"), ("ls", "STRINGS"),
                       ("lb", "BOOLEANS"), ("e", "INTS")]:
        assert re.search(f'name: "{name}"\n *type: {kind}\n', t), (name, kind)
    # A framework attribute keeps its framework type on any op.
    assert re.search('name: "op_role"\n *type: INT\n', text_of([("op_role", 0)]))


def test_block_ref():
    assert cf.BlockRef(2).idx == 2 and cf.BlockRef(2) == cf.BlockRef(2)
    assert repr(cf.BlockRef(1)) == "BlockRef(1)"
    with pytest.raises(ValueError):
        cf.BlockRef(-1)
    p = cf.Program.from_blocks([
        block(0, -1, [tvar("c", VT.BOOL, [1])],
              [op("fill_constant", outputs=[("Out", ["c"])],
                  attrs=[("shape", [1]), ("dtype", VT.BOOL), ("value", 0.0)]),
               op("while", inputs=[("X", []), ("Condition", ["c"])],
                  attrs=[("sub_block", cf.BlockRef(1))])]),
        block(1, 0)])
    p.verify()
    assert "type: BLOCK" in p.to_text() and "block_idx: 1" in p.to_text()
    with pytest.raises(cf.TypeError, match=r"block 0, op 0 \('while'\), attribute 'sub_block'"):
        cf.Program.from_blocks([block(0, -1, [], [op("while", attrs=[("sub_block", 1)])])])


@pytest.mark.parametrize("attrs,pattern", [
    ([("dtype", 1 << 31)], r"attribute 'dtype': 2147483648 does not fit INT"),
    ([("shape", [1, 1 << 33])], r"attribute 'shape'\[1\]: 8589934592 does not fit INT \(int32\)"),
    ([("value", "one")], r"attribute 'value': FLOAT needs a float, got 'str'"),
    ([("value", 1e300)], r"does not fit FLOAT"),
    ([("force_cpu", 1)], r"attribute 'force_cpu': BOOLEAN needs a bool"),
    ([("shape", 3)], r"attribute 'shape': INTS needs a list"),
    ([("x", object())], r"cannot make an attribute of 'object'"),
    ([("x", [1, "a"])], r"a list attribute holds"),
])
def test_bad_attribute_values_name_block_op_and_attribute(attrs, pattern):
    with pytest.raises(cf.TypeError, match=r"block 0, op 0 \('fill_constant'\)") as info:
        text_of(attrs)
    assert info.match(pattern)


@pytest.mark.parametrize("blocks,pattern", [
    (None, "blocks: expected a list"),
    ([{"idx": 0, "vars": [{"name": "x", "dims": "2"}]}], r"var 0 \('x'\) dims: expected a list"),
    ([{"idx": 0, "vars": [{"dims": [1]}]}], "missing key 'name'"),
    ([{"idx": 0, "vars": [{"name": "x", "shape": [1]}]}], "unknown key 'shape'"),
    ([{"idx": 0, "ops": [{"type": "assign", "inputs": [("X", "x")]}]}],
     r"op 0 \('assign'\) inputs\[0\] \('X'\) names: expected a list"),
    ([{"idx": 0, "ops": [{"type": "assign", "inputs": [("X", [3])]}]}], r"names\[0\]"),
    ([{"idx": 0, "ops": [{"inputs": []}]}], "missing key 'type'"),
    (["block"], r"blocks\[0\]: expected a dict"),
    ([{"idx": "0"}], "idx: expected an int"),
])
def test_bad_structures_are_type_errors(blocks, pattern):
    with pytest.raises(cf.TypeError, match=pattern):
        cf.Program.from_blocks(blocks)


def test_defaults_and_dict_forms():
    p = cf.Program.from_blocks([{"vars": [{"name": "x", "data_type": VT.FP32}],
                                 "ops": [{"type": "assign", "inputs": {"X": ["x"]},
                                          "outputs": {"Out": ["x"]}, "attrs": {}}]}])
    t = p.to_text()
    assert "idx: 0" in t and "parent_idx: -1" in t and "LOD_TENSOR" in t
    p.verify()


def test_verify_raises_program_error_with_position():
    p = cf.Program.from_blocks([block(0, -1, [tvar("x")],
                                      [op("assign", [("X", ["x"])], [("Out", ["x"])]),
                                       op("assign", [("X", ["nope"])], [("Out", ["x"])])])])
    with pytest.raises(cf.ProgramError) as info:
        p.verify()
    e = info.value
    assert (e.block, e.op, e.op_type) == (0, 1, "assign")
    assert "nope" in str(e)
    assert cf.ProgramError("x").block == -1 and cf.ProgramError("x").op_type == ""


def test_op_schema():
    s = cf.op_schema("channel_send")
    assert s["inputs"] == ["Channel", "X"] and s["outputs"] == ["Status"]
    assert s["attrs"]["copy"] == (6, False)
    assert cf.op_schema("channel_create")["attrs"]["data_type"] == (0, None)  # required
    assert cf.op_schema("arg_max")["attrs"]["axis"][0] == 9  # LONG
    assert cf.op_schema("no_such_op") is None
    assert cf.op_schema("reduce_sum")["attrs"]["dim"] == (3, [0])  # INTS
    assert cf.op_schema("reduce_mean")["attrs"]["keep_dim"] == (6, False)


# The Python type of a default of each attribute type (tests/ir has the numbers: AttrType).
DEFAULT_TYPES = {0: int, 1: float, 2: str, 3: list, 4: list, 5: list, 6: bool, 7: list,
                 8: cf.BlockRef, 9: int}


def test_op_schema_of_every_registered_op():
    types = cf.op_types()
    assert types == sorted(types) and len(types) >= 40
    assert {"reduce_sum", "reduce_mean", "channel_create", "go", "select"} <= set(types)
    for t in types:
        s = cf.op_schema(t)  # converts every attribute default, whatever its type
        assert s is not None, t
        assert all(isinstance(n, str) for n in s["inputs"] + s["outputs"]), t
        for name, (attr_type, default) in s["attrs"].items():
            assert attr_type in DEFAULT_TYPES, (t, name, attr_type)
            if default is not None:
                assert isinstance(default, DEFAULT_TYPES[attr_type]), (t, name, default)
                if attr_type == 8:
                    continue
                # The default is a value from_blocks takes for the attribute.
                cf.Program.from_blocks([{"ops": [{"type": t, "attrs": {name: default}}]}])
