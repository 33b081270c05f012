#!/usr/bin/env python3
"""Writes the malformed-program corpus: every file must make chanflow's loader or verifier throw a
ProgramError (or a clear cf::Error) containing the expected text, never crash or hang.

Text files carry their expectation on the first line ("# expect: ..."); binary files are listed in
binary_expectations.txt ("<file>: <expected text>"). Binary files are encoded from text with protoc
(`protoc --encode`), or are deliberately broken bytes. Run from this directory:
  python3 make_corpus.py
"""
import os
import random
import subprocess

from pbgen import block, chan_var, fill, op, other_var, tensor_var

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "..", "src", "ir")


def write(name, expect, text):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(f"# expect: {expect}\n" + text)


def go_prog(b1_vars, b1_ops, b0_extra_vars="", b0_extra_ops=""):
    b0 = block(0, -1, [chan_var("ch", "INT64", 0), tensor_var("r", "INT64"), tensor_var("ok", "BOOL"), b0_extra_vars],
               [op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", "INT", 3), ("capacity", "INT", 0)]),
                op("go", inputs=[("X", ["ch"])], attrs=[("sub_block", "BLOCK", 1)]),
                op("channel_recv", inputs=[("Channel", ["ch"])], outputs=[("Out", ["r"]), ("Status", ["ok"])]),
                b0_extra_ops])
    return b0 + block(1, 0, b1_vars, b1_ops)


def send(ch, x):
    return op("channel_send", inputs=[("Channel", [ch]), ("X", [x])])


GOOD = go_prog([tensor_var("v", "INT64")], [fill("v", 3, 99.0), send("ch", "v")])

cases = {
    "unknown_op.pbtxt": ("unknown op type 'frobnicate'",
        go_prog([tensor_var("v", "INT64")], [fill("v", 3, 99.0), op("frobnicate", inputs=[("X", ["v"])])])),
    "missing_attr.pbtxt": ("missing required attribute 'shape'",
        go_prog([tensor_var("v", "INT64")], [op("fill_constant", outputs=[("Out", ["v"])], attrs=[("dtype", "INT", 3)]), send("ch", "v")])),
    "wrong_attr_type.pbtxt": ("attribute 'shape' must be INTS, got INT",
        go_prog([tensor_var("v", "INT64")], [op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", "INT", 1), ("dtype", "INT", 3)]), send("ch", "v")])),
    "attr_value_field_mismatch.pbtxt": ("is declared INT but has a 'f' value",
        GOOD.replace("i: 3\n", "f: 3.0\n", 1)),
    "unknown_attr.pbtxt": ("unknown attribute 'colour'",
        go_prog([tensor_var("v", "INT64")], [op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", "INTS", [1]), ("dtype", "INT", 3), ("colour", "STRING", "red")]), send("ch", "v")])),
    "undeclared_var.pbtxt": ("names variable 'missing', which is not declared",
        go_prog([], [send("ch", "missing")])),
    "bad_sub_block_index.pbtxt": ("names block 9, but sub-blocks are 1..1",
        GOOD.replace("block_idx: 1", "block_idx: 9")),
    "sub_block_wrong_parent.pbtxt": ("whose parent_idx is 1, not this op's block 0",
        GOOD.replace("block_idx: 1", "block_idx: 2") + block(2, 1, [], [])),
    "sub_block_shared.pbtxt": ("block 1 is already the sub-block of block 0, op 1",
        GOOD.replace('    type: "channel_recv"\n', '    type: "channel_recv"\n  }\n' + op("go", attrs=[("sub_block", "BLOCK", 1)]).rstrip("\n").rstrip("}").rstrip() + "\n", 1)),
    "cyclic_parents.pbtxt": ("is its own ancestor",
        block(0, -1, [], []) + block(1, 2, [], []) + block(2, 3, [], []) + block(3, 1, [], [])),
    "self_parent.pbtxt": ("the block is its own parent",
        block(0, -1, [], []) + block(1, 1, [], [])),
    "block0_parent.pbtxt": ("its parent_idx must be -1, got 0",
        block(0, 0, [], [])),
    "blocks_out_of_order.pbtxt": ("the block at position 0 has idx 1",
        block(1, -1, [], []) + block(0, -1, [], [])),
    "parent_out_of_range.pbtxt": ("parent_idx 42 names no block",
        block(0, -1, [], []) + block(1, 42, [], [])),
    "recv_non_channel.pbtxt": ("input 'Channel' is variable 'r' of type LOD_TENSOR INT64, but it must be a CHANNEL variable",
        GOOD.replace('parameter: "Channel"\n      arguments: "ch"\n    }\n    outputs {\n      parameter: "Out"',
                     'parameter: "Channel"\n      arguments: "r"\n    }\n    outputs {\n      parameter: "Out"')),
    "send_type_mismatch.pbtxt": ("but channel 'ch' carries INT64 tensors (type mismatch)",
        go_prog([tensor_var("v", "FP32")], [fill("v", 5, 99.0), send("ch", "v")])),
    "recv_type_mismatch.pbtxt": ("output 'Out' is variable 'r' (LOD_TENSOR FP64)",
        GOOD.replace('name: "r"\n    type {\n      type: LOD_TENSOR\n      lod_tensor {\n        tensor {\n          data_type: INT64',
                     'name: "r"\n    type {\n      type: LOD_TENSOR\n      lod_tensor {\n        tensor {\n          data_type: FP64')),
    "status_not_bool.pbtxt": ("output 'Status' is variable 'ok' (LOD_TENSOR INT32)",
        GOOD.replace('name: "ok"\n    type {\n      type: LOD_TENSOR\n      lod_tensor {\n        tensor {\n          data_type: BOOL',
                     'name: "ok"\n    type {\n      type: LOD_TENSOR\n      lod_tensor {\n        tensor {\n          data_type: INT32')),
    "channel_create_mismatch.pbtxt": ("attribute 'data_type' is FP64, but channel variable 'ch' is declared CHANNEL of INT64",
        GOOD.replace("i: 3\n", "i: 6\n", 1)),
    "channel_negative_capacity.pbtxt": ("negative capacity -4",
        GOOD.replace("capacity: 0", "capacity: -4")),
    "tensor_without_dtype.pbtxt": ("is a LOD_TENSOR without an element type",
        block(0, -1, [other_var("t", "LOD_TENSOR")], [])),
    "duplicate_var.pbtxt": ("variable 'v' is declared twice",
        go_prog([tensor_var("v", "INT64"), tensor_var("v", "INT64")], [fill("v", 3, 99.0), send("ch", "v")])),
    "duplicate_attr.pbtxt": ("attribute 'dtype' appears twice",
        go_prog([tensor_var("v", "INT64")], [op("fill_constant", outputs=[("Out", ["v"])], attrs=[("shape", "INTS", [1]), ("dtype", "INT", 3), ("dtype", "INT", 3)]), send("ch", "v")])),
    "duplicate_parameter.pbtxt": ("parameter 'X' appears twice in inputs",
        go_prog([tensor_var("v", "INT64")], [fill("v", 3, 99.0), op("channel_send", inputs=[("Channel", ["ch"]), ("X", ["v"]), ("X", ["v"])])])),
    "non_duplicable_two_args.pbtxt": ("input 'Channel' binds 2 variables, but takes one",
        go_prog([tensor_var("v", "INT64")], [fill("v", 3, 99.0), op("channel_send", inputs=[("Channel", ["ch", "ch"]), ("X", ["v"])])])),
    "missing_op_type.pbtxt": ("op without a 'type'",
        block(0, -1, [], ["  ops {\n    inputs {\n      parameter: \"X\"\n    }\n  }\n"])),
    "missing_idx.pbtxt": ("block without 'idx'",
        "blocks {\n  parent_idx: -1\n}\n"),
    "empty_program.pbtxt": ("the program has no blocks", ""),
    "unknown_field.pbtxt": ("has no field named \"opz\"",
        "blocks {\n  idx: 0\n  parent_idx: -1\n  opz {\n    type: \"go\"\n  }\n}\n"),
    "unknown_enum.pbtxt": ("Unknown enumeration value of \"LOD_TENSORS\"",
        block(0, -1, [tensor_var("x", "FP32").replace("LOD_TENSOR", "LOD_TENSORS")], [])),
    "out_of_range_int.pbtxt": ("Integer out of range",
        "blocks {\n  idx: 99999999999999999999\n  parent_idx: -1\n}\n"),
    "truncated.pbtxt": ("Expected",
        GOOD[: len(GOOD) // 2]),
    "unbalanced_braces.pbtxt": ("Expected identifier",
        GOOD + "blocks {\n  idx: 2\n  parent_idx: 1\n"),
    "while_condition_not_bool.pbtxt": ("input 'Condition' is variable 'c' (LOD_TENSOR INT32), but it must be a BOOL tensor",
        block(0, -1, [tensor_var("c", "INT32")], [fill("c", 2, 1.0), op("while", inputs=[("Condition", ["c"])], attrs=[("sub_block", "BLOCK", 1)])]) + block(1, 0, [], [])),
    "select_two_defaults.pbtxt": ("a select has at most one default case",
        None),
    "select_bad_case_format.pbtxt": ("has 3 comma-separated field(s), not 4", None),
    "select_bad_kind.pbtxt": ("kind '3' is not 0, 1 or 2", None),
    "select_case_not_channel.pbtxt": ("case 0 channel is variable 'x' of type LOD_TENSOR FP64, but it must be a CHANNEL variable", None),
    "select_case_index_order.pbtxt": ("has index 3; case indices must be 0, 1, 2 ... in order", None),
    "sibling_var.pbtxt": ("names variable 'v', which is not declared in block 2",
        block(0, -1, [chan_var("ch", "INT64", 0)], [op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", "INT", 3), ("capacity", "INT", 0)]),
                                                    op("go", attrs=[("sub_block", "BLOCK", 1)]), op("go", attrs=[("sub_block", "BLOCK", 2)])])
        + block(1, 0, [tensor_var("v", "INT64")], [fill("v", 3, 1.0)]) + block(2, 0, [], [send("ch", "v")])),
}


def select_prog(cases_):
    return block(0, -1, [chan_var("ch", "FP64", 1), tensor_var("x", "FP64"), tensor_var("k", "INT32")],
                 [op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", "INT", 6), ("capacity", "INT", 1)]),
                  fill("x", 6, 10.0), fill("k", 2, -1.0),
                  op("select", inputs=[("X", ["x"]), ("case_to_execute", ["k"])],
                     attrs=[("sub_block", "BLOCK", 1), ("cases", "STRINGS", cases_)])]) + block(1, 0, [], [])


selects = {
    "select_two_defaults.pbtxt": ["0,0,,", "1,0,,"],
    "select_bad_case_format.pbtxt": ["0,1,ch"],
    "select_bad_kind.pbtxt": ["0,3,ch,x"],
    "select_case_not_channel.pbtxt": ["0,1,x,x"],
    "select_case_index_order.pbtxt": ["0,1,ch,x", "3,0,,"],
}
for name, (expect, text) in cases.items():
    if text is None:
        text = select_prog(selects[name])
    write(name, expect, text)

# garbage text: random bytes (fixed seed), not valid UTF-8 or syntax
rng = random.Random(5)
with open(os.path.join(HERE, "garbage.pbtxt"), "wb") as f:
    f.write(b"# expect: \n" + bytes(rng.randrange(256) for _ in range(512)))

# ---- binary ----
def encode(text):
    return subprocess.run(["protoc", f"--proto_path={PROTO_DIR}", "--encode=chanflow.ir.pb.ProgramDesc",
                           "program.proto"], input=text.encode(), capture_output=True, check=True).stdout


good_bin = encode(GOOD)
binaries = {
    "truncated.pb": ("not a valid program in the binary format", good_bin[: len(good_bin) // 2 + 1]),
    "garbage.pb": ("not a valid program in the binary format", bytes(rng.randrange(256) for _ in range(300))),
    "invalid_wire_type.pb": ("not a valid program in the binary format", b"\x0f" + good_bin),
    "oversized_length.pb": ("not a valid program in the binary format", b"\x0a\xff\xff\xff\xff\x0f" + good_bin),
    "text_as_binary.pb": ("", GOOD.encode()),
    "empty.pb": ("the program has no blocks", b""),
    "unknown_op.pb": ("unknown op type 'frobnicate'", encode(cases["unknown_op.pbtxt"][1])),
    "type_mismatch.pb": ("(type mismatch)", encode(cases["send_type_mismatch.pbtxt"][1])),
    "cyclic_parents.pb": ("is its own ancestor", encode(cases["cyclic_parents.pbtxt"][1])),
    "bad_select.pb": ("a select has at most one default case", encode(select_prog(selects["select_two_defaults.pbtxt"]))),
    "missing_op_type.pb": ("op without a 'type'", encode(cases["missing_op_type.pbtxt"][1])),
}
with open(os.path.join(HERE, "binary_expectations.txt"), "w") as f:
    f.write("# <file>: <text the error message must contain> (empty: any ProgramError)\n")
    for name, (expect, data) in binaries.items():
        with open(os.path.join(HERE, name), "wb") as g:
            g.write(data)
        f.write(f"{name}: {expect}\n")
print(len(cases) + 1, "text,", len(binaries), "binary")
