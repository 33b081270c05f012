// grad: every op's gradient against central finite differences (float64), on both machines.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "chanflow/graph.h"
#include "chanflow/graph/table_ops.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

Tensor random_tensor(const cf::Shape& shape, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(cf::shape_numel(shape)));
  for (double& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape);
}

struct Case {
  std::string name;
  std::vector<cf::Shape> shapes;
  std::function<cf::Node(const std::vector<cf::Node>&)> build;
  double lo = -2.0;
  double hi = 2.0;
};

// Builds loss = sum(f(inputs) * r) for a fixed random r, checks d loss / d input against central
// differences for every element of every input, on the TapeMachine and the GoMachine.
void check_case(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  cf::Graph g;
  std::vector<cf::Node> in;
  std::vector<Tensor> values;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) {
    in.push_back(g.input("in" + std::to_string(i), DType::kFloat64, c.shapes[i]));
    values.push_back(random_tensor(c.shapes[i], rng, c.lo, c.hi));
  }
  cf::Node f = c.build(in);
  cf::Node fd = f.dtype() == DType::kFloat64 ? f : cf::cast(f, DType::kFloat64);
  cf::Node weights = g.constant(random_tensor(fd.shape(), rng, 0.5, 1.5), "r");
  cf::Node loss = cf::sum(fd * weights);
  std::vector<cf::Node> grads = cf::grad(loss, in);
  cf::TapeMachine tape(g);
  cf::GoMachine gom(g);
  auto bind = [&](const std::vector<Tensor>& vs) {
    cf::Bindings b;
    for (std::size_t i = 0; i < in.size(); ++i) b.emplace_back(in[i], vs[i]);
    return b;
  };
  tape.run(cf::background(), bind(values));
  gom.run(cf::background(), bind(values));
  const double eps = 1e-6;
  std::vector<Tensor> analytic_grads;
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(grads[i].shape(), in[i].shape()) << c.name;
    Tensor gt = tape.result(grads[i]).contiguous();
    Tensor gg = gom.result(grads[i]).contiguous();
    ASSERT_TRUE(gt.equal_to(gg)) << c.name << ": machines disagree on grad " << i;
    analytic_grads.push_back(gt);
  }
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Tensor& gt = analytic_grads[i];
    for (int64_t k = 0; k < values[i].numel(); ++k) {
      std::vector<Tensor> plus = values;
      std::vector<Tensor> minus = values;
      plus[i] = values[i].clone();
      minus[i] = values[i].clone();
      plus[i].data<double>()[k] += eps;
      minus[i].data<double>()[k] -= eps;
      tape.run(cf::background(), bind(plus));
      const double lp = tape.result(loss).item<double>();
      tape.run(cf::background(), bind(minus));
      const double lm = tape.result(loss).item<double>();
      const double numeric = (lp - lm) / (2 * eps);
      const double analytic = gt.data<double>()[k];
      EXPECT_NEAR(analytic, numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << c.name << ": input " << i << " element " << k;
    }
  }
}

std::vector<Case> cases() {
  using V = std::vector<cf::Node>;
  using cf::Attr;
  return {
      // Ops of the op table, differentiated by their rows' rules (the program ops' rules).
      {"table_mul",
       {{2, 3, 2}, {6, 4}},
       [](const V& x) {
         return cf::op("mul", {{"X", {x[0]}}, {"Y", {x[1]}}}, {{"x_num_col_dims", Attr::i(1)}});
       }},
      {"table_mul_col_dims",
       {{2, 3, 2}, {2, 5}},
       [](const V& x) {
         return cf::op("mul", {{"X", {x[0]}}, {"Y", {x[1]}}}, {{"x_num_col_dims", Attr::i(2)}});
       }},
      {"table_log",
       {{2, 2}},
       [](const V& x) {
         return cf::op("log", {{"X", {x[0]}}});
       },
       0.5,
       3.0},
      {"table_exp",
       {{2, 2}},
       [](const V& x) {
         return cf::op("exp", {{"X", {x[0]}}});
       }},
      {"table_sqrt",
       {{3}},
       [](const V& x) {
         return cf::op("sqrt", {{"X", {x[0]}}});
       },
       0.5,
       3.0},
      {"table_square",
       {{3}},
       [](const V& x) {
         return cf::op("square", {{"X", {x[0]}}});
       }},
      {"table_abs",
       {{5}},
       [](const V& x) {
         return cf::op("abs", {{"X", {x[0]}}});
       }},
      {"table_mean",
       {{2, 3}},
       [](const V& x) {
         return cf::op("mean", {{"X", {x[0]}}});
       }},
      {"table_sum_of_three",
       {{2, 3}, {2, 3}},
       [](const V& x) {
         return cf::op("sum", {{"X", {x[0], x[1], x[0]}}});
       }},
      {"table_conv2d",
       {{2, 3, 6, 5}, {4, 3, 3, 2}},
       [](const V& x) {
         return cf::op("conv2d", {{"Input", {x[0]}}, {"Filter", {x[1]}}},
                       {{"strides", Attr::ints({2, 1})}, {"paddings", Attr::ints({1, 0})}});
       }},
      {"table_conv2d_groups_dilations",
       {{1, 4, 7, 7}, {6, 2, 2, 3}},
       [](const V& x) {
         return cf::op("conv2d", {{"Input", {x[0]}}, {"Filter", {x[1]}}},
                       {{"groups", Attr::i(2)},
                        {"dilations", Attr::ints({2, 1})},
                        {"paddings", Attr::ints({1, 1})}});
       }},
      {"table_depthwise_conv2d",
       {{2, 3, 5, 5}, {3, 1, 3, 3}},
       [](const V& x) {
         return cf::op("depthwise_conv2d", {{"Input", {x[0]}}, {"Filter", {x[1]}}},
                       {{"groups", Attr::i(3)}, {"paddings", Attr::ints({1, 1})}});
       }},
      {"table_pool2d_max",
       {{2, 2, 6, 5}},
       [](const V& x) {
         return cf::op("pool2d", {{"X", {x[0]}}},
                       {{"pooling_type", Attr::s("max")},
                        {"ksize", Attr::ints({2, 2})},
                        {"strides", Attr::ints({2, 2})},
                        {"ceil_mode", Attr::b(true)}});
       }},
      {"table_pool2d_avg_padded",
       {{1, 3, 5, 5}},
       [](const V& x) {
         return cf::op("pool2d", {{"X", {x[0]}}},
                       {{"pooling_type", Attr::s("avg")},
                        {"ksize", Attr::ints({3, 3})},
                        {"paddings", Attr::ints({1, 1})},
                        {"exclusive", Attr::b(false)}});
       }},
      {"table_pool2d_global",
       {{2, 3, 4, 4}},
       [](const V& x) {
         return cf::op("pool2d", {{"X", {x[0]}}},
                       {{"pooling_type", Attr::s("avg")},
                        {"ksize", Attr::ints({1, 1})},
                        {"global_pooling", Attr::b(true)}});
       }},
      {"table_chain",
       {{4, 3}, {3, 2}},
       [](const V& x) {
         cf::Node h = cf::op("mul", {{"X", {x[0]}}, {"Y", {x[1]}}});
         return cf::op("square", {{"X", {cf::tanh(h)}}});
       }},
      {"add_broadcast", {{2, 3}, {3}}, [](const V& x) { return x[0] + x[1]; }},
      {"sub_broadcast", {{2, 1}, {1, 3}}, [](const V& x) { return x[0] - x[1]; }},
      {"mul", {{2, 3}, {2, 3}}, [](const V& x) { return x[0] * x[1]; }},
      {"mul_scalar_operand", {{2, 3}, {}}, [](const V& x) { return x[0] * x[1]; }},
      {"div", {{2, 3}, {3}}, [](const V& x) { return x[0] / x[1]; }, 0.5, 2.0},
      {"pow", {{2, 3}, {2, 3}}, [](const V& x) { return cf::pow(x[0], x[1]); }, 0.5, 2.0},
      {"maximum", {{2, 3}, {2, 3}}, [](const V& x) { return cf::maximum(x[0], x[1]); }},
      {"minimum", {{2, 3}, {3}}, [](const V& x) { return cf::minimum(x[0], x[1]); }},
      {"neg", {{4}}, [](const V& x) { return -x[0]; }},
      {"abs", {{5}}, [](const V& x) { return cf::abs(x[0]); }},
      {"exp", {{2, 2}}, [](const V& x) { return cf::exp(x[0]); }},
      {"log", {{2, 2}}, [](const V& x) { return cf::log(x[0]); }, 0.5, 3.0},
      {"sqrt", {{2, 2}}, [](const V& x) { return cf::sqrt(x[0]); }, 0.5, 3.0},
      {"tanh", {{3}}, [](const V& x) { return cf::tanh(x[0]); }},
      {"sigmoid", {{3}}, [](const V& x) { return cf::sigmoid(x[0]); }},
      {"relu", {{6}}, [](const V& x) { return cf::relu(x[0]); }},
      {"softplus", {{6}}, [](const V& x) { return cf::softplus(x[0]); }, -4.0, 4.0},
      {"softplus_large", {{6}}, [](const V& x) { return cf::softplus(x[0]); }, -40.0, 40.0},
      {"square", {{3}}, [](const V& x) { return cf::square(x[0]); }},
      {"sum_axis", {{2, 3, 4}}, [](const V& x) { return cf::sum(x[0], {1}); }},
      {"sum_keepdims", {{2, 3}}, [](const V& x) { return cf::sum(x[0], {-1}, true); }},
      {"sum_all", {{2, 3}}, [](const V& x) { return cf::sum(x[0]); }},
      {"mean_axes",
       {{2, 3, 2}},
       [](const V& x) {
         return cf::mean(x[0], {0, 2});
       }},
      {"max_axis", {{3, 4}}, [](const V& x) { return cf::max(x[0], {1}); }},
      {"min_all", {{3, 4}}, [](const V& x) { return cf::min(x[0]); }},
      {"softmax", {{2, 4}}, [](const V& x) { return cf::softmax(x[0], -1); }},
      {"softmax_axis0", {{3, 2}}, [](const V& x) { return cf::softmax(x[0], 0); }},
      {"log_softmax", {{2, 4}}, [](const V& x) { return cf::log_softmax(x[0], 1); }},
      {"matmul", {{2, 3}, {3, 4}}, [](const V& x) { return cf::matmul(x[0], x[1]); }},
      {"matmul_vec_mat", {{3}, {3, 2}}, [](const V& x) { return cf::matmul(x[0], x[1]); }},
      {"matmul_mat_vec", {{2, 3}, {3}}, [](const V& x) { return cf::matmul(x[0], x[1]); }},
      {"matmul_vec_vec", {{3}, {3}}, [](const V& x) { return cf::matmul(x[0], x[1]); }},
      {"batched_matmul",
       {{2, 2, 3}, {2, 3, 2}},
       [](const V& x) { return cf::batched_matmul(x[0], x[1]); }},
      {"matmul_batch_broadcast",
       {{2, 2, 3}, {3, 2}},
       [](const V& x) { return cf::matmul(x[0], x[1]); }},
      {"reshape",
       {{2, 3}},
       [](const V& x) {
         return cf::reshape(x[0], {3, 2}) *
                x[0].graph().constant(Tensor::arange(0.0, 6.0, 1.0).reshape({3, 2}));
       }},
      {"transpose",
       {{2, 3, 4}},
       [](const V& x) {
         return cf::transpose(x[0], {2, 0, 1});
       }},
      {"cast", {{3}}, [](const V& x) { return cf::cast(x[0], DType::kFloat64) * 2.0; }},
      {"broadcast_to",
       {{3, 1}},
       [](const V& x) {
         return cf::broadcast_to(x[0], {2, 3, 4});
       }},
      {"sum_to",
       {{2, 3, 4}},
       [](const V& x) {
         return cf::sum_to(x[0], {3, 1});
       }},
      {"reused_node", {{3}}, [](const V& x) { return x[0] * x[0] + cf::exp(x[0]) * x[0]; }},
      {"mlp",
       {{2, 3}, {3, 4}, {4}},
       [](const V& x) { return cf::softmax(cf::tanh(cf::matmul(x[0], x[1]) + x[2])); }},
  };
}

TEST(Grad, EveryOpMatchesFiniteDifferences) {
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    check_case(c, seed++);
  }
}

TEST(Grad, Errors) {
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {3});
  EXPECT_THROW((void)cf::grad(x, {x}), cf::ShapeError);  // not a scalar
  cf::Node xi = g.input("xi", DType::kInt64, {});
  EXPECT_THROW((void)cf::grad(xi, {xi}), cf::TypeError);
  cf::Node c = g.apply("opaque", {x}, {3}, DType::kFloat64,
                       [](std::span<const Tensor> a, const cf::OpContext&) { return a[0]; });
  try {
    (void)cf::grad(cf::sum(c), {x});
    FAIL() << "no error";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("opaque"), std::string::npos);
  }
  // Unrelated wrt: zeros. Comparisons stop the gradient.
  cf::Node y = g.input("y", DType::kFloat64, {2});
  cf::Node loss = cf::sum(x * 2.0) + cf::sum(cf::cast(cf::less(x, x), DType::kFloat64));
  std::vector<cf::Node> gs = cf::grad(loss, {x, y});
  g.set(x, Tensor::from_vector<double>({1, 2, 3}));
  cf::TapeMachine t(g);
  t.run();
  EXPECT_EQ(t.result(gs[1]).shape(), (cf::Shape{2}));
  EXPECT_EQ(t.result(gs[1]).at<double>({0}), 0.0);
  EXPECT_EQ(t.result(gs[0]).at<double>({2}), 2.0);
  // Through a float32 cast the gradient comes back as float64.
  cf::Node l2 = cf::sum(cf::cast(cf::cast(x, DType::kFloat32) * 3.0, DType::kFloat64));
  cf::Node g2 = cf::grad(l2, {x})[0];
  EXPECT_EQ(g2.dtype(), DType::kFloat64);
  cf::TapeMachine t2(g);
  t2.run();
  EXPECT_EQ(t2.result(g2).at<double>({1}), 3.0);
}

}  // namespace
