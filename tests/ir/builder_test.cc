// ProgramBuilder: every Paddle program case builds, verifies, round-trips through text and binary
// and equals its checked-in examples/programs/<name>.pbtxt; closures; guard misuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>

#include "paddle_programs.h"
#include "test_util.h"

namespace cf = chanflow;
using cf::ir_test::expect_program_error;
using cf::ir_test::read_file;

namespace {

std::string example_path(const std::string& name) {
  return std::string(CHANFLOW_PROGRAMS_DIR) + "/" + name + ".pbtxt";
}

}  // namespace

TEST(ProgramBuilder, PaddleCasesVerifyAndRoundTrip) {
  const bool regenerate = std::getenv("CHANFLOW_REGENERATE_EXAMPLES") != nullptr;
  for (const auto& c : cf::testing_programs::paddle_cases()) {
    SCOPED_TRACE(c.name);
    cf::Program p = c.build();
    EXPECT_TRUE(cf::verify(p).equals(p)) << "build() returns a verified, default-filled program";
    const std::string text = p.to_text();
    cf::Program from_text = cf::Program::from_text(text, c.name);
    EXPECT_TRUE(from_text.equals(p));
    cf::Program from_binary = cf::Program::from_binary(p.to_binary(), c.name);
    EXPECT_TRUE(from_binary.equals(p));
    EXPECT_EQ(from_binary.to_text(), text);
    if (regenerate) {
      p.save(example_path(c.name));
    }
    cf::Program file = cf::Program::from_file(example_path(c.name));
    EXPECT_TRUE(file.equals(p)) << "examples/programs/" << c.name
                                << ".pbtxt differs from the builder's program (regenerate with "
                                   "CHANFLOW_REGENERATE_EXAMPLES=1)";
    EXPECT_NO_THROW(cf::verify(file));
  }
}

TEST(ProgramBuilder, GoListsItsClosureAsX) {
  cf::Program p = cf::testing_programs::daisy_chain(3);
  // Block 0 ops: 4 channel_create, then go ops. The first go whispers from ch_1 to ch_0.
  int gos = 0;
  for (cf::OpDesc op : p.block(0)->ops) {
    if (op.type() != "go") continue;
    if (gos == 0) {
      EXPECT_EQ(op.input("X"), (std::vector<std::string>{"ch_1", "ch_0"}));
    }
    ++gos;
  }
  EXPECT_EQ(gos, 4);
}

TEST(ProgramBuilder, WhileListsReadsAndWrites) {
  cf::Program p = cf::testing_programs::daisy_chain_while(5);
  cf::OpDesc loop;
  for (cf::OpDesc op : p.block(0)->ops) {
    if (op.type() == "while") loop = op;
  }
  ASSERT_TRUE(loop.defined());
  EXPECT_EQ(loop.input("Condition"), std::vector<std::string>{"cond"});
  const auto reads = loop.input("X");
  const auto writes = loop.output("Out");
  EXPECT_NE(std::find(reads.begin(), reads.end(), "left"), reads.end());
  EXPECT_NE(std::find(reads.begin(), reads.end(), "n"), reads.end());
  EXPECT_NE(std::find(writes.begin(), writes.end(), "left"), writes.end());
  EXPECT_NE(std::find(writes.begin(), writes.end(), "i"), writes.end());
  EXPECT_NE(std::find(writes.begin(), writes.end(), "cond"), writes.end());
  // The go inside the loop binds this iteration's left and right.
  cf::Block body = p.block(loop.attr("sub_block")->as_block());
  cf::OpDesc go;
  for (cf::OpDesc op : body->ops) {
    if (op.type() == "go") go = op;
  }
  ASSERT_TRUE(go.defined());
  EXPECT_EQ(go.input("X"), (std::vector<std::string>{"right", "left"}));
}

TEST(ProgramBuilder, SelectEncodesCasesLikeFluid) {
  cf::Program p = cf::testing_programs::select_free_slot();
  cf::OpDesc sel;
  for (cf::OpDesc op : p.block(0)->ops) {
    if (op.type() == "select") sel = op;
  }
  ASSERT_TRUE(sel.defined());
  EXPECT_EQ(sel.attr("cases")->as_strings(),
            (std::vector<std::string>{"0,1,channel,x", "1,0,,"}));
  const int64_t body = sel.attr("sub_block")->as_block();
  // The select block holds, per case: fill_constant(index), equal, conditional_block.
  std::vector<std::string> types;
  for (cf::OpDesc op : p.block(body)->ops) types.push_back(op.type());
  EXPECT_EQ(types, (std::vector<std::string>{"fill_constant", "equal", "conditional_block",
                                             "fill_constant", "equal", "conditional_block"}));
}

TEST(ProgramBuilder, RecvReturnsValueAndStatus) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(cf::DType::kFloat32, 2);
  auto [v, ok] = b.channel_recv(ch);
  EXPECT_EQ(v.dtype(), cf::DType::kFloat32);
  EXPECT_EQ(ok.dtype(), cf::DType::kBool);
  EXPECT_TRUE(ch.is_channel());
  EXPECT_THROW(ch.dtype(), cf::TypeError);
  EXPECT_NO_THROW(b.build());
}

TEST(ProgramBuilder, EveryComputeOpVerifies) {
  cf::ProgramBuilder b;
  cf::Var x = b.fill_constant({2, 3}, cf::DType::kFloat32, 1.5);
  cf::Var y = b.fill_constant({2, 3}, cf::DType::kFloat32, 2);
  b.elementwise_add(x, y);
  b.elementwise_sub(x, y);
  b.elementwise_mul(x, y);
  b.elementwise_div(x, y);
  b.elementwise_max(x, y);
  b.elementwise_min(x, y);
  cf::Var c = b.equal(x, y);
  b.not_equal(x, y);
  b.less_than(x, y);
  b.less_equal(x, y);
  b.greater_than(x, y);
  b.greater_equal(x, y);
  b.logical_and(c, c);
  b.logical_or(c, c);
  b.logical_not(c);
  b.increment(x, 2);
  b.scale(x, 2, 1);
  EXPECT_EQ(b.cast(x, cf::DType::kInt32).dtype(), cf::DType::kInt32);
  b.matmul(x, b.transpose(y, {1, 0}));
  b.relu(x);
  b.sigmoid(x);
  b.tanh(x);
  b.softmax(x);
  b.reduce_sum(x, {1});
  b.reduce_mean(x, {});
  b.reshape(x, {3, 2});
  b.print(x, "x = ");
  cf::Var cond = b.fill_constant({1}, cf::DType::kBool, 1);
  {
    auto guard = b.conditional_block(cond);
    b.assign(x, y);
  }
  cf::Program p = b.build();
  std::set<std::string> types;
  for (cf::OpDesc op : p.block(0)->ops) types.insert(op.type());
  EXPECT_GE(types.size(), 29u);
  EXPECT_TRUE(cf::Program::from_text(p.to_text()).equals(p));
}

TEST(ProgramBuilder, MisuseIsReported) {
  cf::ProgramBuilder b;
  cf::Var x = b.fill_constant({1}, cf::DType::kFloat64, 1);
  cf::Var ch = b.make_channel(cf::DType::kInt64, 0);
  EXPECT_THROW(b.channel_send(x, x), cf::TypeError);      // not a channel
  EXPECT_THROW(b.channel_send(ch, x), cf::TypeError);     // FP64 on an INT64 channel
  EXPECT_THROW(b.elementwise_add(ch, x), cf::TypeError);  // channel as a tensor
  EXPECT_THROW(b.var(x.name(), cf::DType::kBool), cf::Error);
  EXPECT_THROW((void)b.while_loop(x), cf::TypeError);          // condition not BOOL
  cf::ProgramBuilder other;
  EXPECT_THROW(other.assign(x), cf::Error);               // a Var of another builder
  cf::Var inner;
  {
    auto g = b.go();
    inner = b.fill_constant({1}, cf::DType::kFloat64, 2);
  }
  EXPECT_THROW(b.assign(inner), cf::Error);  // declared in the go block: not visible here
  {
    auto g = b.go();
    EXPECT_THROW(b.build(), cf::Error);  // a guard is open
  }
  EXPECT_NO_THROW(b.build());
}

TEST(ProgramBuilder, GuardsClosedOutOfOrderFailBuild) {
  cf::ProgramBuilder b;
  auto outer = std::make_unique<cf::BlockGuard>(b.go());
  cf::BlockGuard inner = b.go();
  EXPECT_THROW(outer->close(), cf::Error);
  inner.close();
  outer.reset();
  EXPECT_THROW(b.build(), cf::Error);
}

TEST(ProgramBuilder, SelectRejectsTwoDefaultsAndEmptySelect) {
  {
    cf::ProgramBuilder b;
    auto sel = b.select();
    { auto d = sel.case_default(); }
    EXPECT_THROW(sel.case_default(), cf::Error);
  }
  {
    cf::ProgramBuilder b;
    { auto sel = b.select(); }
    EXPECT_THROW(b.build(), cf::Error);
  }
}

TEST(ProgramBuilder, ChannelOfChannels) {
  cf::ProgramBuilder b;
  cf::Var chch = b.make_channel(cf::VarType::kChannel, 1);
  cf::Var ch = b.make_channel(cf::DType::kInt32, 0);
  b.channel_send(chch, ch);
  auto [got, ok] = b.channel_recv(chch);
  EXPECT_TRUE(got.is_channel());
  cf::Program p = b.build();
  EXPECT_TRUE(cf::Program::from_binary(p.to_binary()).equals(p));
}
