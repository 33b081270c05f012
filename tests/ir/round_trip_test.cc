// Round trips: text -> objects -> text/binary/JSON -> objects keep every field.
#include <gtest/gtest.h>

#include "paddle_programs.h"
#include "test_util.h"

namespace cf = chanflow;

namespace {
cf::Program seed() {
  return cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_select_op.pbtxt");
}
}  // namespace

TEST(ProgramRoundTrip, Text) {
  cf::Program p = seed();
  const std::string text = p.to_text();
  cf::Program q = cf::Program::from_text(text);
  EXPECT_TRUE(q.equals(p));
  EXPECT_EQ(q.to_text(), text);
}

TEST(ProgramRoundTrip, Binary) {
  cf::Program p = seed();
  const std::string bytes = p.to_binary();
  cf::Program q = cf::Program::from_binary(bytes);
  EXPECT_TRUE(q.equals(p));
  EXPECT_EQ(q.to_binary(), bytes);
}

TEST(ProgramRoundTrip, JsonThroughCoreReflection) {
  cf::Program p = seed();
  const std::string json = cf::to_json(p);
  EXPECT_EQ(json, p.to_json());
  EXPECT_NE(json.find("\"ir.Program\""), std::string::npos);
  EXPECT_NE(json.find("\"ir.OpDesc\""), std::string::npos);
  cf::Program q = cf::Program::from_json(json);
  EXPECT_TRUE(q.equals(p));
  EXPECT_EQ(q.to_text(), p.to_text());
  // through the generic loader as well
  cf::ObjectRef any = cf::from_json(json);
  ASSERT_NE(any.as<cf::ProgramObj>(), nullptr);
  EXPECT_TRUE(cf::downcast<cf::Program>(any).equals(p));
}

TEST(ProgramRoundTrip, JsonOfANonProgramIsRejected) {
  EXPECT_THROW(cf::Program::from_json(cf::to_json(cf::String("x"))), cf::ProgramError);
}

TEST(ProgramRoundTrip, EveryAttributeTypeAndVarKind) {
  cf::OpDesc op = cf::OpDesc::make("custom", {{"X", {"a", "b"}}}, {{"Out", {"c"}}},
                                   {{"i", cf::Attr::i(-7)},
                                    {"f", cf::Attr::f(0.1)},
                                    {"s", cf::Attr::s("hello, world")},
                                    {"ints", cf::Attr::ints({1, -2, 3})},
                                    {"floats", cf::Attr::floats({0.5, -1.25})},
                                    {"strings", cf::Attr::strings({"a", "", "c"})},
                                    {"b", cf::Attr::b(true)},
                                    {"bools", cf::Attr::bools({true, false})},
                                    {"block", cf::Attr::block(0)},
                                    {"l", cf::Attr::l(int64_t{1} << 40)}});
  cf::Array<cf::VarDesc> vars{
      cf::VarDesc::tensor("a", cf::VarType::kFP16, {2, -1}, true),
      cf::VarDesc::tensor("b", cf::VarType::kInt8),
      cf::VarDesc::tensor("c", cf::VarType::kUInt8),
      cf::VarDesc::channel("ch", cf::VarType::kChannel, 3),
      cf::VarDesc::other("scopes", cf::VarType::kStepScopes),
  };
  cf::Program p = cf::Program::make({cf::Block::make(0, -1, vars, {op})});
  cf::Program t = cf::Program::from_text(p.to_text());
  cf::Program b = cf::Program::from_binary(p.to_binary());
  cf::Program j = cf::Program::from_json(p.to_json());
  EXPECT_TRUE(t.equals(p)) << p.to_text() << "\n---\n" << t.to_text();
  EXPECT_TRUE(b.equals(p));
  EXPECT_TRUE(j.equals(p));
  EXPECT_EQ(t.block(0)->ops[0].attr("l")->as_int(), int64_t{1} << 40);
}

TEST(ProgramRoundTrip, UnrepresentableValuesAreErrors) {
  cf::OpDesc op = cf::OpDesc::make("custom", {}, {}, {{"big", cf::Attr::i(int64_t{1} << 40)}});
  cf::Program p = cf::Program::make({cf::Block::make(0, -1, {}, {op})});
  EXPECT_THROW(p.to_text(), cf::ProgramError);
  EXPECT_THROW(p.to_binary(), cf::ProgramError);
}

// Paddle's make_channel declared CHANNEL variables with no 'channel { ... }' description (the
// element type lived on channel_create). Such a variable loads, so it must save and reload: the
// saver once wrote an empty description that the loader then rejected (found by fuzz_ir_binary).
TEST(ProgramRoundTrip, ChannelVariableWithoutDescription) {
  const cf::Program p = cf::Program::from_text(R"(
blocks { idx: 0 parent_idx: -1 vars { name: "ch" type { type: CHANNEL } } }
)");
  EXPECT_TRUE(cf::Program::from_text(p.to_text()).equals(p));
  EXPECT_TRUE(cf::Program::from_binary(p.to_binary()).equals(p));
  EXPECT_TRUE(cf::Program::from_json(p.to_json()).equals(p));
  // A capacity with no element type has no spelling in the format: an error, not a bad file.
  const cf::Program odd = cf::Program::make({cf::Block::make(
      0, -1,
      {cf::VarDesc::make("ch", static_cast<int64_t>(cf::VarType::kChannel), -1, {}, 0, 3, false)},
      {})});
  EXPECT_THROW(odd.to_text(), cf::ProgramError);
}

TEST(ProgramRoundTrip, LargeBuilderProgram) {
  cf::Program p = cf::testing_programs::daisy_chain(300);
  EXPECT_TRUE(cf::Program::from_binary(p.to_binary()).equals(p));
  EXPECT_TRUE(cf::Program::from_json(p.to_json()).equals(p));
}

// arg_max's LONG axis survives every format, in the fuzz seed and in the flagship's evaluation
// program (the fuzz targets' invariants, run here on both files).
TEST(ProgramRoundTrip, ArgMaxPrograms) {
  for (const char* rel :
       {"/fuzz/ir/corpus/text/programs_arg_max.pbtxt", "/examples/training/mlp_eval.pbtxt"}) {
    SCOPED_TRACE(rel);
    cf::Program p = cf::Program::from_file(std::string(CHANFLOW_SOURCE_DIR) + rel);
    EXPECT_TRUE(cf::Program::from_text(p.to_text()).equals(p));
    EXPECT_TRUE(cf::Program::from_binary(p.to_binary()).equals(p));
    cf::Program v = cf::verify(p);
    EXPECT_TRUE(cf::verify(v).same_as(v));
    EXPECT_TRUE(cf::Program::from_json(v.to_json()).equals(v));
    EXPECT_NE(p.to_text().find("type: LONG"), std::string::npos);
  }
}
