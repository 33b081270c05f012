// append_backward: gradients of programs built from the op table's rows, checked against central
// finite differences of the forward program in float64; Paddle's naming; the errors.
#include "chanflow/ops/backward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/tensor/random.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;
using cf::Var;

namespace {

using Feeds = std::map<std::string, Tensor>;

double loss_of(cf::Executor& ex, const cf::Program& p, const std::string& loss, const Feeds& f) {
  return ex.run(p, f, {loss}).at(loss).cast(DType::kFloat64).item<double>();
}

// Checks every gradient append_backward gives for `params` against central differences.
void expect_grads_match(const cf::Program& forward, const std::string& loss, const Feeds& feeds,
                        const std::vector<std::string>& params, double tol = 1e-6) {
  cf::BackwardResult r = cf::append_backward(forward, loss, params);
  ASSERT_EQ(r.params_and_grads.size(), params.size());
  std::vector<std::string> fetch;
  for (const auto& [p, g] : r.params_and_grads) {
    EXPECT_EQ(g, p + "@GRAD");
    fetch.push_back(g);
  }
  cf::Executor ex;
  std::map<std::string, Tensor> got = ex.run(r.program, feeds, fetch);
  for (const auto& [p, g] : r.params_and_grads) {
    const Tensor base = feeds.at(p);
    const Tensor grad = got.at(g);
    ASSERT_EQ(grad.shape(), base.shape()) << g;
    for (int64_t k = 0; k < base.numel(); ++k) {
      const double h = 1e-6;
      Feeds plus = feeds, minus = feeds;
      Tensor tp = base.clone(), tm = base.clone();
      tp.data<double>()[k] += h;
      tm.data<double>()[k] -= h;
      plus[p] = tp;
      minus[p] = tm;
      const double fd =
          (loss_of(ex, forward, loss, plus) - loss_of(ex, forward, loss, minus)) / (2 * h);
      const double an = grad.contiguous().data<double>()[k];
      EXPECT_NEAR(an, fd, tol * std::max(1.0, std::abs(fd))) << g << "[" << k << "]";
    }
  }
}

// x (4, 5) -> mul W1 (5, 3) -> + b1 (axis 1) -> relu -> mul W2 (3, 2) -> tanh -> sigmoid ->
// square -> mean.
struct Mlp {
  cf::Program program;
  Feeds feeds;
};
Mlp mlp() {
  cf::ProgramBuilder b;
  Var x = b.var("x", DType::kFloat64, {4, 5});
  b.parameter("w1", DType::kFloat64, {5, 3});
  b.parameter("b1", DType::kFloat64, {3});
  b.parameter("w2", DType::kFloat64, {3, 2});
  for (const char* n : {"h", "h2", "h3", "h4", "h5", "h6", "h7", "loss"}) {
    b.var(n, DType::kFloat64, {});
  }
  b.append_op("mul", {{"X", {"x"}}, {"Y", {"w1"}}}, {{"Out", {"h"}}});
  b.append_op("elementwise_add", {{"X", {"h"}}, {"Y", {"b1"}}}, {{"Out", {"h2"}}},
              {{"axis", Attr::i(1)}});
  b.append_op("relu", {{"X", {"h2"}}}, {{"Out", {"h3"}}});
  b.append_op("mul", {{"X", {"h3"}}, {"Y", {"w2"}}}, {{"Out", {"h4"}}});
  b.append_op("tanh", {{"X", {"h4"}}}, {{"Out", {"h5"}}});
  b.append_op("sigmoid", {{"X", {"h5"}}}, {{"Out", {"h6"}}});
  b.append_op("square", {{"X", {"h6"}}}, {{"Out", {"h7"}}});
  b.append_op("mean", {{"X", {"h7"}}}, {{"Out", {"loss"}}});
  (void)x;
  Mlp m{b.build(), {}};
  m.feeds["x"] = cf::normal({4, 5}, 0, 1, 1, DType::kFloat64);
  m.feeds["w1"] = cf::normal({5, 3}, 0, 1, 2, DType::kFloat64);
  m.feeds["b1"] = cf::normal({3}, 0, 1, 3, DType::kFloat64);
  m.feeds["w2"] = cf::normal({3, 2}, 0, 1, 4, DType::kFloat64);
  return m;
}

TEST(AppendBackward, MlpGradientsMatchFiniteDifferences) {
  Mlp m = mlp();
  expect_grads_match(m.program, "loss", m.feeds, {"w1", "b1", "w2"});
}

// The executor's built-in ops with gradient rules in the op table, one program each: every
// parameter's gradient against central differences.
struct OneOp {
  const char* name;
  std::function<void(cf::ProgramBuilder&)> build;  // writes "y" from "a" (and "b")
  cf::Shape a, b;
};

TEST(AppendBackward, BuiltinOpsGradientsMatchFiniteDifferences) {
  const std::vector<OneOp> cases = {
      {"reduce_sum",
       [](cf::ProgramBuilder& b) {
         b.append_op("reduce_sum", {{"X", {"a"}}}, {{"Out", {"y"}}}, {{"dim", Attr::ints({1})}});
       },
       {2, 3, 4},
       {}},
      {"reduce_mean_keep_dim",
       [](cf::ProgramBuilder& b) {
         b.append_op("reduce_mean", {{"X", {"a"}}}, {{"Out", {"y"}}},
                     {{"dim", Attr::ints({0, -1})}, {"keep_dim", Attr::b(true)}});
       },
       {2, 3, 4},
       {}},
      {"reduce_sum_all",
       [](cf::ProgramBuilder& b) {
         b.append_op("reduce_sum", {{"X", {"a"}}}, {{"Out", {"y"}}},
                     {{"reduce_all", Attr::b(true)}});
       },
       {2, 3},
       {}},
      {"reshape",
       [](cf::ProgramBuilder& b) {
         b.append_op("reshape", {{"X", {"a"}}}, {{"Out", {"r"}}}, {{"shape", Attr::ints({3, 4})}});
         b.append_op("elementwise_mul", {{"X", {"r"}}, {"Y", {"r"}}}, {{"Out", {"y"}}});
       },
       {2, 6},
       {}},
      {"transpose",
       [](cf::ProgramBuilder& b) {
         b.append_op("transpose", {{"X", {"a"}}}, {{"Out", {"r"}}},
                     {{"axis", Attr::ints({2, 0, 1})}});
         b.append_op("elementwise_mul", {{"X", {"r"}}, {"Y", {"b"}}}, {{"Out", {"y"}}});
       },
       {2, 3, 4},
       {4, 2, 3}},
      {"elementwise_div_axis",
       [](cf::ProgramBuilder& b) {
         b.append_op("elementwise_div", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}},
                     {{"axis", Attr::i(1)}});
       },
       {2, 3, 4},
       {3}},
      {"elementwise_max",
       [](cf::ProgramBuilder& b) {
         b.append_op("elementwise_max", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}});
       },
       {3, 4},
       {3, 4}},
      {"elementwise_min_broadcast",
       [](cf::ProgramBuilder& b) {
         b.append_op("elementwise_min", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}});
       },
       {3, 4},
       {4}},
      {"softplus",
       [](cf::ProgramBuilder& b) {
         b.append_op("softplus", {{"X", {"a"}}}, {{"Out", {"y"}}});
       },
       {5},
       {}},
      {"softmax",
       [](cf::ProgramBuilder& b) {
         b.append_op("softmax", {{"X", {"a"}}}, {{"Out", {"r"}}});
         b.append_op("elementwise_mul", {{"X", {"r"}}, {"Y", {"b"}}}, {{"Out", {"y"}}});
       },
       {2, 5},
       {2, 5}},
      {"scale",
       [](cf::ProgramBuilder& b) {
         b.append_op("scale", {{"X", {"a"}}}, {{"Out", {"r"}}},
                     {{"scale", Attr::f(-2.5)}, {"bias", Attr::f(1.0)}});
         b.append_op("elementwise_mul", {{"X", {"r"}}, {"Y", {"r"}}}, {{"Out", {"y"}}});
       },
       {4},
       {}},
      {"sign_times_a",  // y = sign(a) * a = |a|: sign's own gradient is zero
       [](cf::ProgramBuilder& b) {
         b.append_op("sign", {{"X", {"a"}}}, {{"Out", {"r"}}});
         b.append_op("elementwise_mul", {{"X", {"r"}}, {"Y", {"a"}}}, {{"Out", {"y"}}});
       },
       {2, 3},
       {}},
      {"matmul",
       [](cf::ProgramBuilder& b) {
         b.append_op("matmul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}});
       },
       {3, 4},
       {4, 2}},
      {"matmul_transposed_alpha",
       [](cf::ProgramBuilder& b) {
         b.append_op("matmul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}},
                     {{"transpose_X", Attr::b(true)},
                      {"transpose_Y", Attr::b(true)},
                      {"alpha", Attr::f(0.5)}});
       },
       {4, 3},
       {2, 4}},
      {"matmul_batched",
       [](cf::ProgramBuilder& b) {
         b.append_op("matmul", {{"X", {"a"}}, {"Y", {"b"}}}, {{"Out", {"y"}}},
                     {{"transpose_Y", Attr::b(true)}});
       },
       {2, 3, 4},
       {2, 5, 4}},
  };
  uint64_t seed = 10;
  for (const OneOp& c : cases) {
    SCOPED_TRACE(c.name);
    cf::ProgramBuilder b;
    b.parameter("a", DType::kFloat64, c.a);
    std::vector<std::string> params{"a"};
    Feeds f{{"a", cf::normal(c.a, 0, 1, seed++, DType::kFloat64)}};
    if (!c.b.empty()) {
      b.parameter("b", DType::kFloat64, c.b);
      params.push_back("b");
      // Away from zero: elementwise_div's divisor.
      f["b"] = cf::uniform(c.b, 0.5, 2.0, seed++, DType::kFloat64);
    }
    for (const char* n : {"r", "y", "s", "loss"}) b.var(n, DType::kFloat64, {});
    c.build(b);
    // loss = mean(y * y) keeps every gradient non-trivial.
    b.append_op("elementwise_mul", {{"X", {"y"}}, {"Y", {"y"}}}, {{"Out", {"s"}}});
    b.append_op("mean", {{"X", {"s"}}}, {{"Out", {"loss"}}});
    expect_grads_match(b.build(), "loss", f, params);
  }
}

// sign's gradient: zeros of X's shape (fill_zeros_like of Out@GRAD; Paddle scaled it by 0).
TEST(AppendBackward, SignsGradientIsZeros) {
  cf::ProgramBuilder b;
  b.parameter("w", DType::kFloat64, {3});
  for (const char* n : {"s", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("sign", {{"X", {"w"}}}, {{"Out", {"s"}}});
  b.append_op("mean", {{"X", {"s"}}}, {{"Out", {"loss"}}});
  cf::BackwardResult r = cf::append_backward(b.build(), "loss");
  const cf::OpDesc& last = r.program.block(0)->ops.back();
  EXPECT_EQ(last.type(), "fill_zeros_like");
  EXPECT_EQ(last.input("X"), (std::vector<std::string>{"s@GRAD"}));
  EXPECT_EQ(last.output("Out"), (std::vector<std::string>{"w@GRAD"}));
  cf::Executor ex;
  Feeds f{{"w", Tensor::from_vector<double>({-2, 0, 3})}};
  auto out = ex.run(r.program, f, {"s", "w@GRAD"});
  EXPECT_TRUE(out.at("s").equal_to(Tensor::from_vector<double>({-1, 0, 1})));
  EXPECT_TRUE(out.at("w@GRAD").equal_to(Tensor::zeros({3}, DType::kFloat64)));
}

TEST(AppendBackward, DefaultParametersAreThePersistableFloatVariables) {
  Mlp m = mlp();
  cf::BackwardResult r = cf::append_backward(m.program, "loss");
  std::vector<std::string> params;
  for (const auto& pg : r.params_and_grads) params.push_back(pg.first);
  EXPECT_EQ(params, (std::vector<std::string>{"w1", "b1", "w2"}));
}

TEST(AppendBackward, GradientOpsCarryTheBackwardRole) {
  Mlp m = mlp();
  const cf::Program fwd = m.program;
  cf::BackwardResult r = cf::append_backward(fwd, "loss");
  const cf::Block b = r.program.block(0);
  const size_t n_fwd = fwd.block(0)->ops.size();
  ASSERT_GT(b->ops.size(), n_fwd);
  EXPECT_EQ(b->ops[n_fwd].type(), "fill_constant");
  EXPECT_EQ(b->ops[n_fwd].attr("op_role")->as_int(), 257);
  for (size_t i = n_fwd + 1; i < b->ops.size(); ++i) {
    EXPECT_EQ(b->ops[i].attr("op_role")->as_int(), 1) << b->ops[i].type();
  }
  // Paddle's gradient op types.
  std::vector<std::string> types;
  for (size_t i = n_fwd; i < b->ops.size(); ++i) types.push_back(b->ops[i].type());
  EXPECT_EQ(types, (std::vector<std::string>{"fill_constant", "mean_grad", "square_grad",
                                             "sigmoid_grad", "tanh_grad", "mul_grad", "relu_grad",
                                             "elementwise_add_grad", "mul_grad"}));
}

// y = x*w + w (w used twice): two contributions, renamed and summed as Paddle does.
TEST(AppendBackward, AVariableUsedTwiceSumsRenamedContributions) {
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {3});
  b.parameter("w", DType::kFloat64, {3});
  for (const char* n : {"p", "q", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("elementwise_mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"p"}}});
  b.append_op("elementwise_add", {{"X", {"p"}}, {"Y", {"w"}}}, {{"Out", {"q"}}});
  b.append_op("mean", {{"X", {"q"}}}, {{"Out", {"loss"}}});
  const cf::Program p = b.build();
  cf::BackwardResult r = cf::append_backward(p, "loss");
  bool saw_sum = false;
  for (const cf::OpDesc& op : r.program.block(0)->ops) {
    if (op.type() != "sum") continue;
    saw_sum = true;
    EXPECT_EQ(op.input("X"), (std::vector<std::string>{"w@GRAD@RENAME@0", "w@GRAD@RENAME@1"}));
    EXPECT_EQ(op.output("Out"), (std::vector<std::string>{"w@GRAD"}));
  }
  EXPECT_TRUE(saw_sum);
  Feeds f{{"x", cf::normal({3}, 0, 1, 5, DType::kFloat64)},
          {"w", cf::normal({3}, 0, 1, 6, DType::kFloat64)}};
  expect_grads_match(p, "loss", f, {"w"});
}

TEST(AppendBackward, NoGradSetStopsTheGradient) {
  Mlp m = mlp();
  // Nothing reaches w1 or b1 through h3.
  cf::BackwardResult r = cf::append_backward(m.program, "loss", {}, {"h3"});
  ASSERT_EQ(r.params_and_grads.size(), 1u);
  EXPECT_EQ(r.params_and_grads[0].first, "w2");
}

TEST(AppendBackward, ErrorsNameTheVariableOrTheOp) {
  Mlp m = mlp();
  EXPECT_THROW(
      {
        try {
          cf::append_backward(m.program, "nope");
        } catch (const cf::Error& e) {
          EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
          throw;
        }
      },
      cf::Error);
  EXPECT_THROW(cf::append_backward(m.program, "loss", {"missing"}), cf::Error);
  // An integer parameter.
  cf::ProgramBuilder b;
  b.parameter("k", DType::kInt64, {1});
  b.var("l", DType::kFloat64, {1});
  b.append_op("cast", {{"X", {"k"}}}, {{"Out", {"l"}}},
              {{"in_dtype", Attr::i(3)}, {"out_dtype", Attr::i(6)}});
  EXPECT_THROW(cf::append_backward(b.build(), "l", {"k"}), cf::Error);
}

TEST(AppendBackward, ALossThatDependsOnAnOpWithoutAGradientNamesIt) {
  cf::ProgramBuilder b;
  b.parameter("w", DType::kFloat64, {2});
  b.var("y", DType::kFloat64, {2});
  b.var("loss", DType::kFloat64, {1});
  b.append_op("cast", {{"X", {"w"}}}, {{"Out", {"y"}}},
              {{"in_dtype", Attr::i(6)}, {"out_dtype", Attr::i(6)}});
  b.append_op("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}});
  try {
    cf::append_backward(b.build(), "loss");
    FAIL() << "no error";
  } catch (const cf::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("block 0, op 0 ('cast')"), std::string::npos) << m;
    EXPECT_NE(m.find("through 'w'"), std::string::npos) << m;
  }
}

}  // namespace
