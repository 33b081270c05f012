// Op schemas: every op of issue 5 is registered with Fluid's parameter names; registry rules;
// the exec layer's extension hook.
#include <gtest/gtest.h>

#include <thread>

#include "test_util.h"

namespace cf = chanflow;

TEST(OpSchema, EveryIssueOpIsRegistered) {
  const auto& reg = cf::OpSchemaRegistry::global();
  for (const char* type : {"fill_constant",
                           "assign",
                           "elementwise_add",
                           "elementwise_sub",
                           "elementwise_mul",
                           "elementwise_div",
                           "elementwise_max",
                           "elementwise_min",
                           "equal",
                           "not_equal",
                           "less_than",
                           "less_equal",
                           "greater_than",
                           "logical_and",
                           "logical_or",
                           "logical_not",
                           "increment",
                           "scale",
                           "cast",
                           "matmul",
                           "relu",
                           "sigmoid",
                           "tanh",
                           "softplus",
                           "softmax",
                           "reduce_sum",
                           "reduce_mean",
                           "arg_max",
                           "reshape",
                           "transpose",
                           "print",
                           "while",
                           "conditional_block",
                           "go",
                           "select",
                           "channel_create",
                           "channel_send",
                           "channel_recv",
                           "channel_close"}) {
    EXPECT_NE(reg.find(type), nullptr) << type;
  }
  EXPECT_EQ(reg.find("no_such_op"), nullptr);
}

TEST(OpSchema, FluidParameterNames) {
  const auto& reg = cf::OpSchemaRegistry::global();
  const cf::OpSchema* send = reg.find("channel_send");
  ASSERT_NE(send->input("Channel"), nullptr);
  EXPECT_TRUE(send->input("Channel")->required);
  EXPECT_NE(send->input("X"), nullptr);
  EXPECT_FALSE(send->output("Status")->required);
  EXPECT_FALSE(send->attr("copy")->make_default().as_bool());
  const cf::OpSchema* recv = reg.find("channel_recv");
  EXPECT_NE(recv->output("Out"), nullptr);
  EXPECT_NE(recv->output("Status"), nullptr);
  const cf::OpSchema* sel = reg.find("select");
  EXPECT_TRUE(sel->input("X")->duplicable);
  EXPECT_TRUE(sel->input("case_to_execute")->required);
  EXPECT_TRUE(sel->attr("cases")->required());
  EXPECT_EQ(sel->block_attrs(), std::vector<std::string>{"sub_block"});
  const cf::OpSchema* w = reg.find("while");
  EXPECT_TRUE(w->input("Condition")->required);
  EXPECT_EQ(w->attr("sub_block")->type, cf::AttrType::kBlock);
  const cf::OpSchema* fill = reg.find("fill_constant");
  EXPECT_TRUE(fill->attr("shape")->required());
  EXPECT_EQ(fill->attr("dtype")->make_default().as_int(), 5);            // FP32
  EXPECT_EQ(fill->attr("dtype")->check(cf::Attr::i(7)).empty(), false);  // LOD_TENSOR: no
  EXPECT_EQ(fill->attr("dtype")->check(cf::Attr::i(3)), "");
  EXPECT_EQ(reg.find("conditional_block")->input("X")->duplicable, true);
  // arg_max: Paddle's names and types (axis is int64 there: LONG, required).
  const cf::OpSchema* am = reg.find("arg_max");
  EXPECT_TRUE(am->input("X")->required);
  EXPECT_TRUE(am->output("Out")->required);
  EXPECT_TRUE(am->attr("axis")->required());
  EXPECT_EQ(am->attr("axis")->type, cf::AttrType::kLong);
  EXPECT_FALSE(am->attr("keepdims")->make_default().as_bool());
  EXPECT_FALSE(am->attr("flatten")->make_default().as_bool());
  EXPECT_EQ(am->attr("dtype")->make_default().as_int(), 3);  // INT64
  EXPECT_EQ(am->attr("dtype")->check(cf::Attr::i(2)), "");
  EXPECT_EQ(am->attr("dtype")->check(cf::Attr::i(-1)), "");
  EXPECT_NE(am->attr("dtype")->check(cf::Attr::i(5)), "");
  EXPECT_NE(am->attr("dtype")->check(cf::Attr::i(0)), "");
}

TEST(OpSchemaRegistry, AddRules) {
  auto reg = cf::OpSchemaRegistry::with_builtin_ops();
  const size_t n = reg->size();
  const cf::OpSchema& s = reg->add(cf::OpSchema("my_op").input("X").output("Out").attr(
      "alpha", cf::AttrType::kFloat, [] { return cf::Attr::f(1); }));
  EXPECT_EQ(s.id(), static_cast<int>(n));
  EXPECT_EQ(reg->size(), n + 1);
  EXPECT_THROW(reg->add(cf::OpSchema("my_op")), cf::Error);
  EXPECT_THROW(reg->add(cf::OpSchema("")), cf::Error);
  EXPECT_THROW(reg->add(cf::OpSchema("dup").input("X").input("X")), cf::Error);
  EXPECT_THROW(
      reg->add(cf::OpSchema("dup2").attr("a", cf::AttrType::kInt).attr("a", cf::AttrType::kInt)),
      cf::Error);
  // The global registry is untouched.
  EXPECT_EQ(cf::OpSchemaRegistry::global().find("my_op"), nullptr);
}

namespace {
struct FakeKernel : cf::OpExtension {
  explicit FakeKernel(int v) : value(v) {}
  int value;
};
}  // namespace

TEST(OpSchemaRegistry, ExtensionHookForTheExecutor) {
  auto reg = cf::OpSchemaRegistry::with_builtin_ops();
  const cf::OpSchema* add = reg->find("elementwise_add");
  EXPECT_EQ(add->extension(), nullptr);
  add->set_extension(std::make_shared<FakeKernel>(42));
  auto ext = std::dynamic_pointer_cast<const FakeKernel>(add->extension());
  ASSERT_NE(ext, nullptr);
  EXPECT_EQ(ext->value, 42);
  // Concurrent readers and a writer (TSan would flag a race).
  std::thread writer([&] {
    for (int i = 0; i < 100; ++i) add->set_extension(std::make_shared<FakeKernel>(i));
  });
  for (int i = 0; i < 100; ++i) EXPECT_NE(add->extension(), nullptr);
  writer.join();
}

TEST(OpSchemaRegistry, ConcurrentLookups) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 1000; ++i) {
        ASSERT_NE(cf::OpSchemaRegistry::global().find("go"), nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
}
