#!/usr/bin/env python3
"""Writes the checked-in inputs of the hostile-input corpus (tests/hostile/{parser,verifier,exec,
npy}/). Their expectations are in cases.json, which run_hostile.py checks; inputs too large for
git are written at test time by hostile_gen.GENERATORS instead. Run from anywhere:
  /usr/bin/python3 tests/hostile/make_corpus.py
Deterministic: running it again rewrites the same bytes.
"""
import os
import random

from hostile_gen import (DT, HERE, block, chan_var, channel_chain, create, field_bytes, field_varint,
                         fill, forever_loop, go, nested_groups, npy, op, pb_block, pb_fill_op,
                         pb_ok_program, pb_tensor_var, recv, send, tensor_var, varint, while_op)

written = []


def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    written.append(rel)


def text(rel, comment, body):
    write(rel, "".join(f"# {line}\n" for line in comment.split("\n")) + body)


def binop(type_, x, y, out):
    return op(type_, inputs=[("X", [x]), ("Y", [y])], outputs=[("Out", [out])])


def two_fills(dtype, a, b, type_, out_dtype=None):
    """r = type_(x, y) with x = a, y = b of dtype; r declared out_dtype (default dtype)."""
    return block(0, -1, [tensor_var("x", dtype, [1]), tensor_var("y", dtype, [1]),
                         tensor_var("r", out_dtype or dtype, [1])],
                 [fill("x", DT[dtype], a), fill("y", DT[dtype], b), binop(type_, "x", "y", "r")])


def fill_prog(dtype, value):
    return block(0, -1, [tensor_var("r", dtype, [1])], [fill("r", DT[dtype], value)])


def cast_prog(src, dst, value):
    return block(0, -1, [tensor_var("x", src, [1]), tensor_var("r", dst, [1])],
                 [fill("x", DT[src], value),
                  op("cast", inputs=[("X", ["x"])], outputs=[("Out", ["r"])],
                     attrs=[("in_dtype", "INT", DT[src]), ("out_dtype", "INT", DT[dst])])])


# ---- exec: programs that load and verify; what running them does --------------------------------
OK = two_fills("INT64", 40.0, 2.0, "elementwise_add")
text("exec/ok_add.pbtxt", "r = 40 + 2 (INT64): the positive control. Fetch r -> 42.", OK)

text("exec/deadlock_recv.pbtxt", "Block 0 receives on a channel nobody sends on.",
     block(0, -1, [chan_var("ch", "INT64", 0), tensor_var("r", "INT64", [1]), tensor_var("ok", "BOOL", [1])],
           [create("ch", "INT64", 0), recv("ch", "r", "ok")]))

text("exec/deadlock_go.pbtxt",
     "A go block waits on `a`, block 0 on `b`: both parked, nothing can wake them.",
     block(0, -1, [chan_var("a", "INT64", 0), chan_var("b", "INT64", 0), tensor_var("r", "INT64", [1]),
                   tensor_var("ok", "BOOL", [1])],
           [create("a", "INT64", 0), create("b", "INT64", 0), go(1), recv("b", "r", "ok")])
     + block(1, 0, [tensor_var("v", "INT64", [1]), tensor_var("s", "BOOL", [1])], [recv("a", "v", "s")]))

CH_R = [chan_var("ch", "INT64", 1), tensor_var("r", "INT64", [1]), tensor_var("ok", "BOOL", [1])]
close = op("channel_close", inputs=[("Channel", ["ch"])])
text("exec/send_on_closed.pbtxt", "Close, then send: Go panics; chanflow refuses with an error.",
     block(0, -1, CH_R, [create("ch", "INT64", 1), fill("r", 3, 1.0), close, send("ch", "r")]))
text("exec/close_twice.pbtxt", "Close a channel twice.",
     block(0, -1, CH_R, [create("ch", "INT64", 1), close, close]))
text("exec/recv_nil.pbtxt", "Receive on a channel variable never created (nil): blocks forever.",
     block(0, -1, CH_R, [recv("ch", "r", "ok")]))
text("exec/send_nil.pbtxt", "Send on a nil channel: blocks forever.",
     block(0, -1, CH_R, [fill("r", 3, 1.0), send("ch", "r")]))
text("exec/close_nil.pbtxt", "Close a nil channel.", block(0, -1, CH_R, [close]))


def select_prog(cases_, body=""):
    return block(0, -1, CH_R + [tensor_var("k", "INT32", [1])],
                 [fill("k", DT["INT32"], -1.0),
                  op("select", inputs=[("case_to_execute", ["k"])],
                     attrs=[("sub_block", "BLOCK", 1), ("cases", "STRINGS", cases_)])]) + block(1, 0, [], [])


text("exec/select_no_cases.pbtxt", "A select with no cases (Go's `select {}`): blocks forever.",
     select_prog([]))
text("exec/select_nil_only.pbtxt", "A select whose one case receives from a nil channel.",
     select_prog(["0,2,ch,r"]))

# Busy loops (never park): only cancellation between ops can stop them.
text("exec/while_forever.pbtxt", "while true { i += 1 }: never ends, never blocks.",
     forever_loop([], []))
text("exec/recv_while_go_spins.pbtxt",
     "Block 0 waits on a channel while a go block spins forever: no deadlock, no end.",
     block(0, -1, [chan_var("ch", "INT64", 0), tensor_var("r", "INT64", [1]), tensor_var("ok", "BOOL", [1]),
                   tensor_var("i", "INT64", [1]), tensor_var("cond", "BOOL", [1])],
           [create("ch", "INT64", 0), fill("i", 3, 0.0), fill("cond", 0, 1.0), go(1), recv("ch", "r", "ok")])
     + block(1, 0, [], [while_op("cond", 2)]) + block(2, 1, [], [op("increment", inputs=[("X", ["i"])], outputs=[("Out", ["i"])])]))
text("exec/select_while_go_spins.pbtxt",
     "Block 0 waits in a select on a channel while a go block spins forever.",
     block(0, -1, CH_R + [tensor_var("k", "INT32", [1]), tensor_var("i", "INT64", [1]), tensor_var("cond", "BOOL", [1])],
           [create("ch", "INT64", 1), fill("i", 3, 0.0), fill("cond", 0, 1.0), fill("k", 2, -1.0), go(1),
            op("select", inputs=[("case_to_execute", ["k"])],
               attrs=[("sub_block", "BLOCK", 3), ("cases", "STRINGS", ["0,2,ch,r"])])])
     + block(1, 0, [], [while_op("cond", 2)]) + block(2, 1, [], [op("increment", inputs=[("X", ["i"])], outputs=[("Out", ["i"])])])
     + block(3, 0, [], []))
text("exec/print_forever.pbtxt",
     "Prints i once (first_n 1), then loops forever: the printed line says it is running.",
     forever_loop([], [op("print", inputs=[("In", ["i"])], attrs=[("first_n", "INT", 1), ("message", "STRING", "running")])]))

# Unbounded growth: green threads, tensor bytes.
text("exec/go_in_while.pbtxt",
     "while true { go { receive on a channel nobody sends on } }: parked green threads pile up.",
     forever_loop([], [go(2)], pre_vars=[chan_var("never", "INT64", 0)], pre_ops=[create("never", "INT64", 0)],
                  extra_blocks=block(2, 1, [tensor_var("v", "INT64", [1]), tensor_var("s", "BOOL", [1])],
                                     [recv("never", "v", "s")])))
text("exec/memory_growth.pbtxt",
     "while true { send a new 256 KiB tensor into a channel of capacity 1,000,000 nobody reads }.",
     forever_loop([tensor_var("t", "FP32", [65536])], [fill("t", DT["FP32"], 1.0, (65536,)), send("big", "t")],
                  pre_vars=[chan_var("big", "FP32", 1000000)], pre_ops=[create("big", "FP32", 1000000)]))
text("exec/fill_petabyte.pbtxt", "fill_constant of shape [65536, 65536, 65536] FP32: 1 PiB.",
     block(0, -1, [tensor_var("r", "FP32", [65536, 65536, 65536])],
           [fill("r", DT["FP32"], 1.0, (65536, 65536, 65536))]))
text("exec/fill_shape_overflow.pbtxt",
     "fill_constant of shape [2^31-1] x 4: the element count overflows 64 bits.",
     block(0, -1, [tensor_var("r", "FP32")], [fill("r", DT["FP32"], 1.0, (2147483647,) * 4)]))
text("exec/capacity_int_max.pbtxt",
     "A channel of capacity 2^31-1 carries one value: the buffer must not be allocated up front.\n"
     "Fetch r -> 5.",
     block(0, -1, [chan_var("ch", "INT64", 2147483647), tensor_var("r", "INT64", [1]), tensor_var("ok", "BOOL", [1]),
                   tensor_var("v", "INT64", [1])],
           [create("ch", "INT64", 2147483647), fill("v", 3, 5.0), send("ch", "v"), recv("ch", "r", "ok")]))

# Nested objects freed at the end of the run (recursive release).
text("exec/chan_chain_10k.pbtxt", "A chain of 10,000 channels of channels (fetch i -> 10000).",
     channel_chain(10000, in_go=False))
text("exec/chan_chain_1m.pbtxt", "A chain of 1,000,000 channels of channels (fetch i -> 1000000).",
     channel_chain(1000000, in_go=False))
text("exec/chan_chain_in_go_10k.pbtxt",
     "The chain of 10,000 channels built and freed by a go block, on a green thread's stack\n"
     "(fetch i -> 10000).",
     channel_chain(10000, in_go=True))

# Numbers: float -> integer conversions, integer division, declared dtypes.
text("exec/fill_int32_2p31.pbtxt", "fill_constant INT32 with value 2147483647: the float attr is 2^31.",
     fill_prog("INT32", 2147483648.0))
text("exec/fill_int8_200.pbtxt", "fill_constant INT8 200.", fill_prog("INT8", 200.0))
text("exec/fill_uint8_neg1.pbtxt", "fill_constant UINT8 -1.", fill_prog("UINT8", -1.0))
text("exec/fill_int32_nan.pbtxt", "fill_constant INT32 NaN.", fill_prog("INT32", float("nan")))
text("exec/fill_int64_inf.pbtxt", "fill_constant INT64 inf.", fill_prog("INT64", float("inf")))
text("exec/fill_int32_max_float.pbtxt",
     "fill_constant INT32 2147483520, the largest float below 2^31: fits (fetch r -> 2147483520).",
     fill_prog("INT32", 2147483520.0))
text("exec/fill_int8_min.pbtxt", "fill_constant INT8 -128: fits (fetch r -> -128).", fill_prog("INT8", -128.0))
text("exec/cast_nan_int32.pbtxt", "cast FP32 NaN -> INT32 (NumPy on x86-64: -2147483648).",
     cast_prog("FP32", "INT32", float("nan")))
text("exec/cast_1e20_int64.pbtxt", "cast FP32 1e20 -> INT64 (NumPy on x86-64: -9223372036854775808).",
     cast_prog("FP32", "INT64", 1e20))
text("exec/cast_nan_int8.pbtxt", "cast FP64 NaN -> INT8 (NumPy: 0).", cast_prog("FP64", "INT8", float("nan")))
text("exec/cast_neg1e20_int16.pbtxt", "cast FP32 -1e20 -> INT16 (NumPy: 0).", cast_prog("FP32", "INT16", -1e20))
text("exec/div_int_by_zero.pbtxt", "elementwise_div INT32 1 / 0.", two_fills("INT32", 1.0, 0.0, "elementwise_div"))
text("exec/div_int_truncates.pbtxt", "elementwise_div INT32 -7 / 2: truncates toward zero (fetch r -> -3, int32).",
     two_fills("INT32", -7.0, 2.0, "elementwise_div"))
text("exec/div_int64_min_by_neg1.pbtxt",
     "elementwise_div INT64 -2^63 / -1: the one quotient that overflows (x86's idiv traps on it).",
     two_fills("INT64", -9223372036854775808.0, -1.0, "elementwise_div"))
text("exec/int8_gets_fp32.pbtxt", "scale of an FP32 tensor written into a variable declared INT8.",
     block(0, -1, [tensor_var("x", "FP32", [1]), tensor_var("r", "INT8", [1])],
           [fill("x", DT["FP32"], 1.5), op("scale", inputs=[("X", ["x"])], outputs=[("Out", ["r"])],
                                           attrs=[("scale", "FLOAT", 2.0)])]))
text("exec/int64_plus_fp32.pbtxt", "elementwise_add of INT64 and FP32 written into a variable declared INT64.",
     block(0, -1, [tensor_var("x", "INT64", [1]), tensor_var("y", "FP32", [1]), tensor_var("r", "INT64", [1])],
           [fill("x", 3, 1.0), fill("y", 5, 0.5), binop("elementwise_add", "x", "y", "r")]))

# ---- verifier: programs that parse but are not well formed --------------------------------------
GO1 = [chan_var("ch", "INT64", 0), tensor_var("r", "INT64", [1]), tensor_var("ok", "BOOL", [1])]


def go_sub(idx):
    return block(0, -1, GO1, [create("ch", "INT64", 0),
                              op("go", attrs=[("sub_block", "BLOCK", idx)]), recv("ch", "r", "ok")])


text("verifier/sub_block_self.pbtxt", "Block 1's while names block 1 as its body.",
     block(0, -1, [tensor_var("c", "BOOL", [1])], [fill("c", 0, 1.0), while_op("c", 1)])
     + block(1, 0, [], [while_op("c", 1)]))
text("verifier/sub_block_zero.pbtxt", "A go op in block 0 whose sub_block is block 0.", go_sub(0))
text("verifier/sub_block_negative.pbtxt", "A go op whose sub_block is -1.", go_sub(-1) + block(1, 0, [], []))
text("verifier/sub_block_int_max.pbtxt", "A go op whose sub_block is 2147483647.", go_sub(2147483647) + block(1, 0, [], []))
text("verifier/parent_cycle_referenced.pbtxt",
     "Blocks 1 and 2 are each other's parent, and block 0's go op starts block 1.",
     go_sub(1) + block(1, 2, [], []) + block(2, 1, [], []))
text("verifier/undeclared_condition.pbtxt", "A while whose Condition is not declared.",
     block(0, -1, [], [while_op("nope", 1)]) + block(1, 0, [], []))
text("verifier/undeclared_select_channel.pbtxt", "A select case on an undeclared channel.",
     select_prog(["0,2,nowhere,r"]))
text("verifier/undeclared_go_arg.pbtxt", "A go op binding an undeclared variable.",
     block(0, -1, [], [go(1, ["ghost"])]) + block(1, 0, [], []))
text("verifier/fill_dtype_999.pbtxt", "fill_constant with dtype 999 (no such VarType).",
     block(0, -1, [tensor_var("r", "INT64", [1])],
           [op("fill_constant", outputs=[("Out", ["r"])], attrs=[("shape", "INTS", [1]), ("dtype", "INT", 999), ("value", "FLOAT", 1.0)])]))
text("verifier/channel_dtype_999.pbtxt", "channel_create with data_type 999.",
     block(0, -1, [chan_var("ch", "INT64", 0)],
           [op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", "INT", 999), ("capacity", "INT", 0)])]))
text("verifier/capacity_string.pbtxt", "channel_create whose capacity is a STRING.",
     block(0, -1, [chan_var("ch", "INT64", 0)],
           [op("channel_create", outputs=[("Out", ["ch"])], attrs=[("data_type", "INT", 3), ("capacity", "STRING", "lots")])]))
text("verifier/capacity_attr_neg1.pbtxt", "channel_create with capacity -1.",
     block(0, -1, [chan_var("ch", "INT64", 0)], [create("ch", "INT64", -1)]))
text("verifier/capacity_var_2p62.pbtxt", "A channel variable declared with capacity 2^62.",
     block(0, -1, [chan_var("ch", "INT64", 1 << 62)], [create("ch", "INT64", 0)]))
text("verifier/sub_block_as_int.pbtxt", "A go op whose sub_block attr is an INT, not a BLOCK.",
     block(0, -1, [], [op("go", attrs=[("sub_block", "INT", 1)])]) + block(1, 0, [], []))
text("verifier/dims_neg5.pbtxt", "A variable declared with dims [-5].",
     block(0, -1, [tensor_var("x", "FP32", [-5]), tensor_var("r", "INT64", [1])], [fill("r", 3, 5.0)]))
text("verifier/dims_2p40.pbtxt", "A variable declared with dims [2^40, 2^40] (only declared, never filled).",
     block(0, -1, [tensor_var("x", "FP32", [1 << 40, 1 << 40]), tensor_var("r", "INT64", [1])], [fill("r", 3, 5.0)]))
text("verifier/fill_shape_neg5.pbtxt", "fill_constant with shape [-5].",
     block(0, -1, [tensor_var("r", "FP32")], [fill("r", DT["FP32"], 1.0, (-5,))]))
text("verifier/recv_into_channel_of_wrong_kind.pbtxt",
     "Sends an INT64 tensor into a channel of channels.",
     block(0, -1, [chan_var("ch", "CHANNEL", 1), tensor_var("v", "INT64", [1])],
           [create("ch", "CHANNEL", 1), fill("v", 3, 1.0), send("ch", "v")]))

# ---- parser: text ---------------------------------------------------------------------------------
OK_TEXT = "# a valid program\n" + OK
write("parser/nul_in_string.pbtxt", OK_TEXT.replace('name: "r"', 'name: "r\x00x"', 1))
write("parser/nul_at_start.pbtxt", b"\x00" + OK_TEXT.encode())
write("parser/escaped_nul_name.pbtxt", OK_TEXT.replace('"r"', '"r\\000x"'))
write("parser/invalid_utf8_op_type.pbtxt",
      OK_TEXT.encode().replace(b'"elementwise_add"', b'"elementwise_\xff\xfeadd"'))
write("parser/overlong_utf8_name.pbtxt", OK_TEXT.encode().replace(b'"r"', b'"\xc0\xaf"'))
write("parser/escaped_invalid_utf8.pbtxt", OK_TEXT.replace('"r"', '"\\377"'))
write("parser/unterminated_string.pbtxt", OK_TEXT.replace('name: "r"', 'name: "r', 1))
write("parser/deep_braces.pbtxt", "blocks " + "{ " * 30000 + "}" * 30000)
write("parser/deep_unknown_field.pbtxt", "blocks { idx: 0 parent_idx: -1 x " + "{ y " * 20000 + "}" * 20000 + " }")
write("parser/huge_int_idx.pbtxt", "blocks { idx: 18446744073709551616 parent_idx: -1 }")
write("parser/float_as_idx.pbtxt", "blocks { idx: 1e300 parent_idx: -1 }")
write("parser/long_number.pbtxt", "blocks { idx: " + "9" * 20000 + " parent_idx: -1 }")
write("parser/truncated_mid_token.pbtxt", OK_TEXT[: OK_TEXT.index("elementwise_add") + 7])
write("parser/only_comment.pbtxt", "# nothing but a comment\n")

# ---- parser: binary -------------------------------------------------------------------------------
GOOD_PB = pb_ok_program()
write("parser/ok.pb", GOOD_PB)
write("parser/deep_groups.pb", GOOD_PB + nested_groups(100000))
write("parser/deep_groups_in_op.pb",
      pb_block(0, -1, [pb_tensor_var("r", DT["INT64"], [1])],
               [pb_fill_op("r", DT["INT64"], 5.0) + nested_groups(20000)]))
write("parser/unclosed_group.pb", GOOD_PB + varint((15 << 3) | 3) * 10)
write("parser/truncated_varint.pb", b"\x0a\x05\x08" + b"\xff" * 20)
write("parser/overlong_varint.pb", b"\x0a\x0c\x08" + b"\xff" * 10 + b"\x01")
write("parser/length_past_end.pb", b"\x0a\xe8\x07\x08\x00\x10\x7f")
write("parser/length_2p62.pb", b"\x0a" + varint(1 << 62) + GOOD_PB)
write("parser/enum_out_of_range.pb",
      pb_block(0, -1, [pb_tensor_var("x", 999, [1])], []))
write("parser/var_type_out_of_range.pb",
      pb_block(0, -1, [pb_tensor_var("x", DT["FP32"], [1], var_type=99999)], []))
write("parser/negative_idx.pb", pb_block(-1, -1))
write("parser/nul_in_name.pb",
      pb_block(0, -1, [pb_tensor_var("r\x00x", DT["INT64"], [1])], [pb_fill_op("r\x00x", DT["INT64"], 5.0)]))
write("parser/nul_in_error_name.pb",
      pb_block(0, -1, [], [pb_fill_op("ghost\x00name", DT["INT64"], 5.0)]))
write("parser/escape_seq_in_error_name.pbtxt",
      block(0, -1, [], [fill("\\033[2J\\033[31mred", DT["INT64"], 5.0)]))
write("parser/invalid_utf8_attr.pb",
      pb_block(0, -1, [pb_tensor_var("r", DT["INT64"], [1])],
               [pb_fill_op("r", DT["INT64"], 5.0),
                field_bytes(1, field_bytes(1, "In") + field_bytes(2, "r")) + field_bytes(3, "print") +
                field_bytes(4, field_bytes(1, "message") + field_varint(2, 2) + field_bytes(5, b"\xff\xfe\xfd"))]))
write("parser/empty_block_messages.pb", field_bytes(1, b"") * 1000)
write("parser/dims_2p62_packed.pb",
      pb_block(0, -1, [pb_tensor_var("x", DT["FP32"], [1 << 62, 1 << 62], packed=True),
                       pb_tensor_var("r", DT["INT64"], [1])], [pb_fill_op("r", DT["INT64"], 5.0)]))
rng = random.Random(18)
write("parser/random_bytes.pb", bytes(rng.randrange(256) for _ in range(4096)))
write("parser/ok_then_garbage.pb", GOOD_PB + bytes(rng.randrange(256) for _ in range(64)))

# ---- .npy feeds (for exec/feed_target.pbtxt's x: INT64 [3]; y = x + x) --------------------------
text("exec/feed_target.pbtxt", "y = x + x for a fed x (INT64 [3]). Feed [1, 2, 3] -> y = [2, 4, 6].",
     block(0, -1, [tensor_var("x", "INT64", [3]), tensor_var("y", "INT64", [3])],
           [binop("elementwise_add", "x", "x", "y")]))
I8 = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
DATA = b"".join(v.to_bytes(8, "little", signed=True) for v in (1, 2, 3))
write("npy/ok.npy", npy(I8, DATA))
write("npy/bad_magic.npy", npy(I8, DATA, magic=b"\x93NUMPX"))
write("npy/empty.npy", b"")
write("npy/magic_only.npy", b"\x93NUMPY\x01\x00")
write("npy/header_not_dict.npy", npy("[1, 2, 3]", DATA))
write("npy/header_len_past_end.npy", npy(I8, DATA, header_len=65535))
write("npy/header_nul.npy", npy("{'descr': '<i8\x00', 'fortran_order': False, 'shape': (3,), }", DATA))
write("npy/huge_shape.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", DATA))
write("npy/shape_2p40.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1099511627776,), }", DATA))
write("npy/negative_shape.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (-3,), }", DATA))
write("npy/truncated_data.npy", npy(I8, DATA[:20]))
write("npy/trailing_data.npy", npy(I8, DATA + b"\x00" * 8))
write("npy/object_dtype.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", DATA))
write("npy/complex_dtype.npy", npy("{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }", DATA * 2))
write("npy/float32_into_int64.npy",
      npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", b"\x00\x00\x80\x3f" * 3))
write("npy/version_9.npy", npy(I8, DATA, version=(9, 0)))
write("npy/deep_tuple.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': " + "(" * 10000 + ")" * 10000 + ", }", DATA))

print(f"{len(written)} files written under {HERE}")
