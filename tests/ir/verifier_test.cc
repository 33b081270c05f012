// The verifier: one program per rule, checking the exact position (block, op, op type) and the
// problem named in the message.
#include <gtest/gtest.h>

#include "test_util.h"

namespace cf = chanflow;
using cf::ir_test::expect_program_error;

namespace {

std::string tvar(const std::string& name, const std::string& dt) {
  return "vars { name: \"" + name +
         "\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: " + dt + " } } } }\n";
}
std::string cvar(const std::string& name, const std::string& dt, int cap) {
  return "vars { name: \"" + name + "\" type { type: CHANNEL channel { data_type: " + dt +
         " capacity: " + std::to_string(cap) + " } } }\n";
}
std::string blk(int idx, int parent, const std::string& body) {
  return "blocks { idx: " + std::to_string(idx) + " parent_idx: " + std::to_string(parent) + "\n" +
         body + "}\n";
}
std::string fill(const std::string& out, int dtype, double v = 0) {
  return "ops { outputs { parameter: \"Out\" arguments: \"" + out +
         "\" } type: \"fill_constant\" attrs { name: \"shape\" type: INTS ints: 1 } attrs { name: "
         "\"dtype\" type: INT i: " +
         std::to_string(dtype) + " } attrs { name: \"value\" type: FLOAT f: " + std::to_string(v) +
         " } }\n";
}
std::string create(const std::string& ch, int dt, int cap) {
  return "ops { outputs { parameter: \"Out\" arguments: \"" + ch +
         "\" } type: \"channel_create\" attrs { name: \"data_type\" type: INT i: " +
         std::to_string(dt) + " } attrs { name: \"capacity\" type: INT i: " + std::to_string(cap) +
         " } }\n";
}
std::string send(const std::string& ch, const std::string& x) {
  return "ops { inputs { parameter: \"Channel\" arguments: \"" + ch +
         "\" } inputs { parameter: \"X\" arguments: \"" + x + "\" } type: \"channel_send\" }\n";
}
std::string recv(const std::string& ch, const std::string& out, const std::string& status) {
  return "ops { inputs { parameter: \"Channel\" arguments: \"" + ch +
         "\" } outputs { parameter: \"Out\" arguments: \"" + out +
         "\" } outputs { parameter: \"Status\" arguments: \"" + status +
         "\" } type: \"channel_recv\" }\n";
}
std::string go(int sub, const std::string& x = "") {
  return "ops { " + (x.empty() ? "" : "inputs { parameter: \"X\" arguments: \"" + x + "\" } ") +
         "type: \"go\" attrs { name: \"sub_block\" type: BLOCK block_idx: " + std::to_string(sub) +
         " } }\n";
}

// Verifies `text` and expects a ProgramError at (block, op, type) whose message contains `what`.
void expect_error(const std::string& text, int block, int op, const std::string& type,
                  const std::string& what) {
  cf::Program p = cf::Program::from_text(text, "test");
  cf::ProgramError e = expect_program_error([&] { cf::verify(p); });
  const std::string msg = e.what();
  EXPECT_EQ(e.block_index(), block) << msg;
  EXPECT_EQ(e.op_index(), op) << msg;
  EXPECT_EQ(e.op_type(), type) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << "message: " << msg << "\nexpected: " << what;
  if (op >= 0) {
    const std::string pos =
        "block " + std::to_string(block) + ", op " + std::to_string(op) + " ('" + type + "')";
    EXPECT_EQ(msg.rfind(pos, 0), 0u) << msg;
  }
}

// A valid go program: the base most tests break.
std::string good_go() {
  return blk(0, -1,
             cvar("ch", "INT64", 0) + tvar("r", "INT64") + tvar("ok", "BOOL") + create("ch", 3, 0) +
                 go(1, "ch") + recv("ch", "r", "ok")) +
         blk(1, 0, tvar("v", "INT64") + fill("v", 3, 99) + send("ch", "v"));
}

}  // namespace

TEST(Verifier, AcceptsAndFillsDefaults) {
  cf::Program p = cf::Program::from_text(good_go());
  cf::Program v = cf::verify(p);
  EXPECT_FALSE(v.same_as(p));  // fill_constant's force_cpu and channel_send's copy were missing
  cf::OpDesc f = v.block(1)->ops[0];
  ASSERT_TRUE(f.attr("force_cpu").has_value());
  EXPECT_FALSE(f.attr("force_cpu")->as_bool());
  EXPECT_FALSE(v.block(1)->ops[1].attr("copy")->as_bool());
  // Verifying again changes nothing and returns the same object.
  EXPECT_TRUE(cf::verify(v).same_as(v));
}

TEST(Verifier, UnknownOpType) {
  expect_error(blk(0, -1, tvar("x", "FP32") + "ops { type: \"frobnicate\" }"), 0, 0, "frobnicate",
               "unknown op type 'frobnicate'");
}

TEST(Verifier, MissingRequiredInputOutputAndAttr) {
  expect_error(
      blk(0, -1,
          tvar("x", "FP32") + "ops { outputs { parameter: \"Out\" arguments: \"x\" } type: "
                              "\"assign\" }"),
      0, 0, "assign", "missing required input 'X'");
  expect_error(blk(0, -1,
                   cvar("ch", "FP32", 0) +
                       "ops { type: \"channel_create\" attrs { name: \"data_type\" type: "
                       "INT i: 5 } }"),
               0, 0, "channel_create", "missing required output 'Out'");
  expect_error(
      blk(0, -1,
          tvar("x", "FP32") + "ops { outputs { parameter: \"Out\" arguments: \"x\" } type: "
                              "\"fill_constant\" }"),
      0, 0, "fill_constant", "missing required attribute 'shape' (INTS)");
}

TEST(Verifier, WrongAttrTypeAndUnknownAttr) {
  expect_error(
      blk(0, -1,
          tvar("x", "FP32") + "ops { outputs { parameter: \"Out\" arguments: \"x\" } type: "
                              "\"fill_constant\" attrs { name: \"shape\" type: INT i: 1 } }"),
      0, 0, "fill_constant", "attribute 'shape' must be INTS, got INT");
  expect_error(blk(0, -1,
                   tvar("x", "FP32") + fill("x", 5) +
                       "ops { inputs { parameter: \"X\" arguments: \"x\" } outputs { "
                       "parameter: \"Out\" arguments: \"x\" } type: \"relu\" attrs { name: "
                       "\"alpha\" type: FLOAT f: 1 } }"),
               0, 1, "relu", "unknown attribute 'alpha'");
}

TEST(Verifier, AttrCheckFails) {
  expect_error(blk(0, -1, tvar("x", "FP32") + fill("x", 7)), 0, 0, "fill_constant",
               "attribute 'dtype' must be a tensor element VarType");
  expect_error(blk(0, -1, cvar("ch", "FP32", 0) + create("ch", 5, -1)), 0, 0, "channel_create",
               "attribute 'capacity' must be >= 0, got -1");
}

TEST(Verifier, UnknownParameterAndDuplicableRule) {
  expect_error(blk(0, -1,
                   tvar("x", "FP32") + fill("x", 5) +
                       "ops { inputs { parameter: \"Input\" arguments: \"x\" } outputs { "
                       "parameter: \"Out\" arguments: \"x\" } type: \"relu\" }"),
               0, 1, "relu", "unknown input parameter 'Input' (the op takes X)");
  expect_error(blk(0, -1,
                   tvar("x", "FP32") + tvar("y", "FP32") + fill("x", 5) +
                       "ops { inputs { parameter: \"X\" arguments: \"x\" arguments: \"y\" "
                       "} outputs { parameter: \"Out\" arguments: \"x\" } type: \"relu\" }"),
               0, 1, "relu", "input 'X' binds 2 variables, but takes one");
}

TEST(Verifier, UndeclaredVariable) {
  std::string text = good_go();
  text.replace(text.find("send"), 0, "");
  expect_error(blk(0, -1, cvar("ch", "INT64", 0) + create("ch", 3, 0) + go(1, "ch")) +
                   blk(1, 0, send("ch", "nowhere")),
               1, 0, "channel_send",
               "input 'X' names variable 'nowhere', which is not declared in block 1 or its "
               "ancestors (blocks 0)");
}

TEST(Verifier, VariableOfASiblingBlockIsNotVisible) {
  expect_error(blk(0, -1, cvar("ch", "INT64", 0) + create("ch", 3, 0) + go(1) + go(2)) +
                   blk(1, 0, tvar("v", "INT64") + fill("v", 3)) + blk(2, 0, send("ch", "v")),
               2, 0, "channel_send", "names variable 'v', which is not declared in block 2");
}

TEST(Verifier, SubBlockRules) {
  expect_error(blk(0, -1, go(5)), 0, 0, "go",
               "attribute 'sub_block' names block 5, but sub-blocks are 1..0");
  expect_error(blk(0, -1, go(0)), 0, 0, "go", "must name a sub-block (index >= 1), got 0");
  expect_error(blk(0, -1, go(2)) + blk(1, 0, "") + blk(2, 1, ""), 0, 0, "go",
               "names block 2, whose parent_idx is 1, not this op's block 0");
  expect_error(blk(0, -1, go(1) + go(1)) + blk(1, 0, ""), 0, 1, "go",
               "block 1 is already the sub-block of block 0, op 0");
}

TEST(Verifier, BlockStructure) {
  expect_error(blk(0, 3, ""), 0, -1, "", "its parent_idx must be -1, got 3");
  expect_error(blk(0, -1, "") + blk(2, 0, ""), 1, -1, "", "the block at position 1 has idx 2");
  expect_error(blk(0, -1, "") + blk(1, 7, ""), 1, -1, "", "parent_idx 7 names no block");
  expect_error(blk(0, -1, "") + blk(1, 1, ""), 1, -1, "", "the block is its own parent");
  expect_error(blk(0, -1, "") + blk(1, 2, "") + blk(2, 1, ""), 1, -1, "",
               "the block is its own ancestor (parent chain 1 -> 2 -> 1)");
  expect_error(blk(0, -1, tvar("x", "FP32") + tvar("x", "FP64")), 0, -1, "",
               "variable 'x' is declared twice in the block");
  expect_error(blk(0, -1, "vars { name: \"t\" type { type: LOD_TENSOR } }"), 0, -1, "",
               "variable 't' is a LOD_TENSOR without an element type");
  expect_error(blk(0, -1,
                   "vars { name: \"c\" type { type: CHANNEL channel { data_type: "
                   "READER capacity: 0 } } }"),
               0, -1, "", "variable 'c' is a CHANNEL without a valid element type");
  expect_error(blk(0, -1, cvar("c", "FP32", -2)), 0, -1, "", "negative capacity -2");
}

TEST(Verifier, ChannelOpsNeedChannels) {
  expect_error(blk(0, -1,
                   tvar("notch", "FP32") + tvar("r", "FP32") + tvar("ok", "BOOL") +
                       recv("notch", "r", "ok")),
               0, 0, "channel_recv",
               "input 'Channel' is variable 'notch' of type LOD_TENSOR FP32, but it must be a "
               "CHANNEL variable");
  expect_error(blk(0, -1,
                   tvar("notch", "FP32") +
                       "ops { inputs { parameter: \"Channel\" arguments: \"notch\" } type: "
                       "\"channel_close\" }"),
               0, 0, "channel_close", "must be a CHANNEL variable");
  expect_error(blk(0, -1, tvar("notch", "FP32") + create("notch", 5, 0)), 0, 0, "channel_create",
               "output 'Out' is variable 'notch' of type LOD_TENSOR FP32");
}

TEST(Verifier, TypeMismatchOnSendAndRecv) {
  expect_error(blk(0, -1,
                   cvar("ch", "FP64", 0) + tvar("v", "FP32") + create("ch", 6, 0) + fill("v", 5) +
                       send("ch", "v")),
               0, 2, "channel_send",
               "input 'X' is variable 'v' (LOD_TENSOR FP32), but channel 'ch' carries FP64 "
               "tensors (type mismatch)");
  expect_error(blk(0, -1,
                   cvar("ch", "FP64", 0) + tvar("v", "INT32") + tvar("ok", "BOOL") +
                       create("ch", 6, 0) + recv("ch", "v", "ok")),
               0, 1, "channel_recv", "output 'Out' is variable 'v' (LOD_TENSOR INT32)");
  expect_error(blk(0, -1,
                   cvar("ch", "FP64", 0) + tvar("v", "FP64") + tvar("ok", "INT32") +
                       create("ch", 6, 0) + recv("ch", "v", "ok")),
               0, 1, "channel_recv", "output 'Status' is variable 'ok' (LOD_TENSOR INT32)");
  // A type mismatch carries its kind, a nested TypeError (the Python module raises
  // chanflow.TypeError for it); other verification errors carry none.
  auto nested_kind = [](const std::string& text) -> std::string {
    try {
      cf::verify(cf::Program::from_text(text, "test"));
    } catch (const cf::ProgramError& e) {
      try {
        std::rethrow_if_nested(e);
      } catch (const cf::TypeError& t) {
        EXPECT_STREQ(t.what(), e.what());
        return "TypeError";
      } catch (...) {
        return "other";
      }
      return "none";
    }
    return "no error";
  };
  EXPECT_EQ(nested_kind(blk(0, -1,
                            cvar("ch", "FP64", 0) + tvar("v", "FP32") + create("ch", 6, 0) +
                                fill("v", 5) + send("ch", "v"))),
            "TypeError");
  EXPECT_EQ(nested_kind(blk(0, -1,
                            cvar("ch", "FP64", 0) + tvar("v", "INT32") + tvar("ok", "BOOL") +
                                create("ch", 6, 0) + recv("ch", "v", "ok"))),
            "TypeError");
  EXPECT_EQ(nested_kind(blk(0, -1, cvar("ch", "FP64", 0) + create("ch", 6, 3))), "none");
  // channel_create's attributes must match the declaration.
  expect_error(blk(0, -1, cvar("ch", "FP64", 0) + create("ch", 5, 0)), 0, 0, "channel_create",
               "attribute 'data_type' is FP32, but channel variable 'ch' is declared CHANNEL of "
               "FP64");
  expect_error(blk(0, -1, cvar("ch", "FP64", 0) + create("ch", 6, 3)), 0, 0, "channel_create",
               "attribute 'capacity' is 3, but channel variable 'ch' is declared with capacity 0");
}

namespace {
std::string select_prog(const std::string& cases, const std::string& case_var_type = "INT32") {
  return blk(0, -1,
             cvar("ch", "FP64", 1) + tvar("x", "FP64") + tvar("k", case_var_type) +
                 tvar("notch", "FP64") + create("ch", 6, 1) + fill("x", 6, 10) +
                 "ops { inputs { parameter: \"case_to_execute\" arguments: \"k\" } type: "
                 "\"select\" attrs { name: \"sub_block\" type: BLOCK block_idx: 1 } "
                 "attrs { name: \"cases\" type: STRINGS " +
                 cases + " } }\n") +
         blk(1, 0, "");
}
}  // namespace

TEST(Verifier, SelectCases) {
  EXPECT_NO_THROW(
      cf::verify(cf::Program::from_text(select_prog("strings: \"0,1,ch,x\" strings: \"1,0,,\""))));
  expect_error(select_prog("strings: \"0,1,ch\""), 0, 2, "select",
               "case 0: select case \"0,1,ch\": has 3 comma-separated field(s), not 4");
  expect_error(select_prog("strings: \"0,0,,\" strings: \"1,0,,\""), 0, 2, "select",
               "case 1: a select has at most one default case");
  expect_error(select_prog("strings: \"0,1,ch,x\" strings: \"5,0,,\""), 0, 2, "select",
               "case 1 (\"5,0,,\") has index 5; case indices must be 0, 1, 2 ... in order");
  expect_error(select_prog("strings: \"0,7,ch,x\""), 0, 2, "select", "kind '7' is not 0, 1 or 2");
  expect_error(select_prog("strings: \"0,1,notch,x\""), 0, 2, "select",
               "case 0 channel is variable 'notch' of type LOD_TENSOR FP64, but it must be a "
               "CHANNEL variable");
  expect_error(select_prog("strings: \"0,2,ch,ghost\""), 0, 2, "select",
               "case 0 variable names variable 'ghost', which is not declared");
  expect_error(select_prog("strings: \"0,2,ch,k\""), 0, 2, "select",
               "case 0 (receive) target is variable 'k' (LOD_TENSOR INT32), but channel 'ch' "
               "carries FP64 tensors (type mismatch)");
  expect_error(select_prog("strings: \"0,1,ch,x\"", "FP32"), 0, 2, "select",
               "input 'case_to_execute' is variable 'k' (LOD_TENSOR FP32), but it must be an "
               "INT32 or INT64 tensor");
  expect_error(
      blk(0, -1,
          tvar("k", "INT32") + "ops { inputs { parameter: \"case_to_execute\" arguments: \"k\" } "
                               "type: \"select\" attrs { name: \"sub_block\" type: BLOCK "
                               "block_idx: 1 } attrs { name: \"cases\" type: STRINGS } }") +
          blk(1, 0, ""),
      0, 0, "select", "attribute 'cases' is empty");
}

TEST(Verifier, ControlFlowConditions) {
  expect_error(blk(0, -1,
                   tvar("c", "INT32") + fill("c", 2, 1) +
                       "ops { inputs { parameter: \"Condition\" arguments: \"c\" } type: "
                       "\"while\" attrs { name: \"sub_block\" type: BLOCK block_idx: 1 } "
                       "}") +
                   blk(1, 0, ""),
               0, 1, "while",
               "input 'Condition' is variable 'c' (LOD_TENSOR INT32), but it must be a BOOL "
               "tensor");
  expect_error(
      blk(0, -1,
          tvar("c", "FP32") + "ops { inputs { parameter: \"X\" arguments: \"c\" } type: "
                              "\"conditional_block\" attrs { name: \"sub_block\" type: BLOCK "
                              "block_idx: 1 } attrs { name: \"is_scalar_condition\" type: BOOLEAN "
                              "b: true } }") +
          blk(1, 0, ""),
      0, 0, "conditional_block", "a scalar condition must be a BOOL tensor");
  expect_error(blk(0, -1, tvar("x", "FP32") + fill("x", 3)), 0, 0, "fill_constant",
               "output 'Out' is variable 'x' (LOD_TENSOR FP32), but the op fills INT64");
  expect_error(blk(0, -1,
                   cvar("ch", "FP32", 0) + tvar("x", "FP32") + create("ch", 5, 0) +
                       "ops { inputs { parameter: \"X\" arguments: \"ch\" } outputs { "
                       "parameter: \"Out\" arguments: \"x\" } type: \"assign\" }"),
               0, 1, "assign", "channels and tensors do not mix");
}

TEST(Verifier, IllTypedProgramsFromJsonDoNotCrash) {
  // A JSON program whose op attribute holds a String where an Int is declared.
  cf::Program p = cf::Program::from_text(good_go());
  std::string json = p.to_json();
  const std::string needle = "\"type\":\"Int\",\"value\":99";
  (void)needle;
  cf::AttrMap attrs;
  attrs.set(cf::String("sub_block"),
            cf::Attr(cf::make_object<cf::AttrObj>(int64_t{8}, cf::String("1"))));
  cf::Program q = cf::Program::make(
      {cf::Block::make(0, -1, {},
                       {cf::OpDesc::from_maps("go", cf::ArgumentMap(), cf::ArgumentMap(), attrs)}),
       cf::Block::make(1, 0, {}, {})});
  cf::ProgramError e = expect_program_error([&] { cf::verify(q); });
  EXPECT_NE(std::string(e.what()).find("ill-formed"), std::string::npos) << e.what();
  cf::Program r = cf::Program::from_json(cf::Program::make({}).to_json());
  EXPECT_THROW(cf::verify(r), cf::ProgramError);
  EXPECT_THROW(cf::verify(cf::Program()), cf::ProgramError);
}

namespace {
// x (FP32) -> fill_constant -> arg_max(x) with the given attribute text into `idx`.
std::string arg_max_prog(const std::string& attrs) {
  return blk(0, -1,
             tvar("x", "FP32") + tvar("idx", "INT64") + fill("x", 5, 1) +
                 "ops { inputs { parameter: \"X\" arguments: \"x\" } outputs { parameter: "
                 "\"Out\" arguments: \"idx\" } type: \"arg_max\" " +
                 attrs + " }");
}
}  // namespace

TEST(Verifier, ArgMaxAttributes) {
  // Good: only axis (LONG, as Paddle writes its int64 attribute); the defaults are filled.
  cf::Program v =
      cf::verify(cf::Program::from_text(arg_max_prog("attrs { name: \"axis\" type: LONG l: -1 }")));
  cf::OpDesc op = v.block(0)->ops[1];
  EXPECT_EQ(op.attr("axis")->as_int(), -1);
  EXPECT_FALSE(op.attr("keepdims")->as_bool());
  EXPECT_FALSE(op.attr("flatten")->as_bool());
  EXPECT_EQ(op.attr("dtype")->as_int(), 3);  // INT64
  // Good: every attribute, INT32 indices, and Paddle's older dtype default -1.
  for (const char* dtype : {"2", "3", "-1"}) {
    EXPECT_NO_THROW(cf::verify(cf::Program::from_text(arg_max_prog(
        "attrs { name: \"axis\" type: LONG l: 0 } attrs { name: \"keepdims\" type: BOOLEAN b: "
        "true } attrs { name: \"flatten\" type: BOOLEAN b: true } attrs { name: \"dtype\" type: "
        "INT i: " +
        std::string(dtype) + " }"))))
        << dtype;
  }
  // Bad: axis missing, axis of the wrong type, an index type other than INT32/INT64, an unknown
  // attribute, keepdims not a BOOLEAN.
  expect_error(arg_max_prog(""), 0, 1, "arg_max", "missing required attribute 'axis' (LONG)");
  expect_error(arg_max_prog("attrs { name: \"axis\" type: INT i: 1 }"), 0, 1, "arg_max",
               "attribute 'axis' must be LONG, got INT");
  expect_error(arg_max_prog("attrs { name: \"axis\" type: LONG l: 1 } attrs { name: \"dtype\" "
                            "type: INT i: 5 }"),
               0, 1, "arg_max",
               "attribute 'dtype' must be INT32 (2) or INT64 (3) (-1: INT64), got 5");
  expect_error(arg_max_prog("attrs { name: \"axis\" type: LONG l: 1 } attrs { name: \"dtype\" "
                            "type: INT i: -2 }"),
               0, 1, "arg_max", "attribute 'dtype' must be INT32 (2) or INT64 (3)");
  expect_error(arg_max_prog("attrs { name: \"axis\" type: LONG l: 1 } attrs { name: \"keep_dim\" "
                            "type: BOOLEAN b: true }"),
               0, 1, "arg_max",
               "unknown attribute 'keep_dim' (the op has axis, keepdims, flatten, dtype)");
  expect_error(arg_max_prog("attrs { name: \"axis\" type: LONG l: 1 } attrs { name: \"keepdims\" "
                            "type: INT i: 1 }"),
               0, 1, "arg_max", "attribute 'keepdims' must be BOOLEAN, got INT");
}

// A channel_create rebuilt from JSON with null entries where names and values belong: the
// channel-element inference that runs before the ops are checked must skip them, and the op's
// own check reports them.
TEST(Verifier, NullEntriesInAChannelCreateFromJsonDoNotCrash) {
  cf::Array<cf::VarDesc> vars{cf::VarDesc::make("ch", 16, -1, {}, 0, 0, false)};
  cf::AttrMap attrs;
  attrs.set(cf::String("data_type"), cf::Attr::i(7));
  cf::ArgumentMap outs;
  outs.set(cf::String("Out"), cf::Array<cf::String>{cf::String("ch")});
  const cf::Program good = cf::Program::make({cf::Block::make(
      0, -1, vars, {cf::OpDesc::from_maps("channel_create", cf::ArgumentMap(), outs, attrs)})});
  EXPECT_NO_THROW(cf::verify(good));
  const std::string json = good.to_json();
  // The JSON names nodes by index: "Out" -> its name list -> "ch"; "data_type" -> its Attr -> 7.
  const std::vector<std::pair<std::string, std::string>> nulls = {
      {"\"values\":[6]", "\"values\":[null]"},                  // "Out": null
      {"\"items\":[5]", "\"items\":[null]"},                    // "Out": [null]
      {"\"values\":[10]", "\"values\":[null]"},                 // "data_type": null
      {"\"type\":0,\"value\":9", "\"type\":0,\"value\":null"},  // an INT with no value
  };
  for (const auto& [from, to] : nulls) {
    std::string bad = json;
    const size_t at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from << " in " << json;
    bad.replace(at, from.size(), to);
    cf::Program p;
    try {
      p = cf::Program::from_json(bad);
    } catch (const cf::Error&) {
      continue;  // rejected while loading: nothing reaches the verifier
    }
    expect_program_error([&] { cf::verify(p); });
  }
}

// A channel_create whose data_type is not something a channel carries is reported at that op,
// not as a type mismatch of a send checked before it.
TEST(Verifier, BadChannelCreateElementIsReportedAtTheCreate) {
  const std::string text =
      blk(0, -1,
          "vars { name: \"ch\" type { type: CHANNEL } }" + tvar("x", "FP32") + fill("x", 5, 1) +
              "ops { type: \"channel_send\" inputs { parameter: \"Channel\" arguments: \"ch\" } "
              "inputs { parameter: \"X\" arguments: \"x\" } }" +
              create("ch", 8, 0));
  cf::ProgramError e = expect_program_error([&] { cf::verify(cf::Program::from_text(text)); });
  EXPECT_EQ(e.op_type(), "channel_create") << e.what();
}

// Fluid's framework attribute op_role_var was a STRING in its first version, STRINGS later.
TEST(Verifier, OpRoleVarIsAStringOrStrings) {
  for (const std::string attr : {"attrs { name: \"op_role_var\" type: STRINGS }",
                                 "attrs { name: \"op_role_var\" type: STRING s: \"\" }",
                                 "attrs { name: \"use_mkldnn\" type: BOOLEAN b: false }"}) {
    const std::string text = blk(0, -1,
                                 tvar("x", "FP32") +
                                     "ops { outputs { parameter: \"Out\" arguments: \"x\" } type: "
                                     "\"fill_constant\" attrs { name: \"shape\" type: INTS ints: "
                                     "1 } attrs { name: \"dtype\" type: INT i: 5 } " +
                                     attr + " }");
    EXPECT_NO_THROW(cf::verify(cf::Program::from_text(text))) << attr;
  }
}
