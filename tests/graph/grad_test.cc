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
      {"table_sign_times_x",  // |x|: the gradient reaches x through the product only
       {{5}},
       [](const V& x) {
         return cf::op("sign", {{"X", {x[0]}}}) * x[0];
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
      {"typed_cnn",
       {{2, 1, 6, 6}, {3, 1, 3, 3}, {3}, {3}, {12, 2}},
       [](const V& x) {
         cf::Graph g = x[0].graph();
         cf::Conv2dParams cp;
         cp.paddings = {1, 1};
         cf::Pool2dParams pp;
         pp.ksize = {3, 3};
         pp.strides = {3, 3};
         const cf::Node stats0 = g.constant(Tensor::zeros({3}, DType::kFloat64));
         const cf::Node stats1 = g.constant(Tensor::ones({3}, DType::kFloat64));
         cf::Node h = cf::batch_norm(cf::conv2d(x[0], x[1], cp), x[2], x[3], stats0, stats1);
         h = cf::flatten(cf::pool2d(cf::leaky_relu(h, 0.1), pp), 1);
         const cf::Node label = g.constant(Tensor::from_vector<int64_t>({1, 0}, {2, 1}));
         return cf::softmax_with_cross_entropy(cf::matmul(h, x[4]), label);
       }},
      {"table_chain",
       {{4, 3}, {3, 2}},
       [](const V& x) {
         cf::Node h = cf::op("mul", {{"X", {x[0]}}, {"Y", {x[1]}}});
         return cf::op("square", {{"X", {cf::tanh(h)}}});
       }},
      // The nn rows (rows_nn.cc).
      {"table_batch_norm_nchw",
       {{4, 3, 2, 2}, {3}, {3}},
       [](const V& x) {
         cf::Graph g = x[0].graph();
         return cf::op("batch_norm",
                       {{"X", {x[0]}},
                        {"Scale", {x[1]}},
                        {"Bias", {x[2]}},
                        {"Mean", {g.constant(Tensor::zeros({3}, DType::kFloat64))}},
                        {"Variance", {g.constant(Tensor::ones({3}, DType::kFloat64))}}},
                       {{"epsilon", Attr::f(1e-4)}});
       }},
      {"table_batch_norm_nhwc",
       {{2, 2, 3}, {3}, {3}},
       [](const V& x) {
         cf::Graph g = x[0].graph();
         return cf::op("batch_norm",
                       {{"X", {x[0]}},
                        {"Scale", {x[1]}},
                        {"Bias", {x[2]}},
                        {"Mean", {g.constant(Tensor::zeros({3}, DType::kFloat64))}},
                        {"Variance", {g.constant(Tensor::ones({3}, DType::kFloat64))}}},
                       {{"data_layout", Attr::s("NHWC")}});
       }},
      {"table_dropout",
       {{4, 5}},
       [](const V& x) {
         return cf::op(
             "dropout", {{"X", {x[0]}}},
             {{"dropout_prob", Attr::f(0.4)}, {"fix_seed", Attr::b(true)}, {"seed", Attr::i(11)}});
       }},
      {"table_cross_entropy_hard",
       {{3, 4}},
       [](const V& x) {
         Tensor label = Tensor::from_vector<int64_t>({2, 0, 3}, {3, 1});
         return cf::op("cross_entropy", {{"X", {x[0]}}, {"Label", {x[0].graph().constant(label)}}});
       },
       0.1,
       1.0},
      {"table_cross_entropy_ignore_index",
       {{3, 4}},
       [](const V& x) {
         Tensor label = Tensor::from_vector<int64_t>({2, 1, 3}, {3, 1});
         return cf::op("cross_entropy", {{"X", {x[0]}}, {"Label", {x[0].graph().constant(label)}}},
                       {{"ignore_index", Attr::i(1)}});
       },
       0.1,
       1.0},
      {"table_cross_entropy_soft",
       {{2, 3}},
       [](const V& x) {
         Tensor label = Tensor::from_vector<double>({0.2, 0.3, 0.5, 0.6, 0.4, 0.0}, {2, 3});
         return cf::op("cross_entropy", {{"X", {x[0]}}, {"Label", {x[0].graph().constant(label)}}},
                       {{"soft_label", Attr::b(true)}});
       },
       0.1,
       1.0},
      {"table_softmax_with_cross_entropy",
       {{3, 5}},
       [](const V& x) {
         Tensor label = Tensor::from_vector<int64_t>({4, 0, 2}, {3, 1});
         return cf::op("softmax_with_cross_entropy",
                       {{"Logits", {x[0]}}, {"Label", {x[0].graph().constant(label)}}}, {}, "Loss");
       }},
      {"table_softmax_with_cross_entropy_soft",
       {{2, 3}},
       [](const V& x) {
         Tensor label = Tensor::from_vector<double>({0.2, 0.3, 0.5, 0.6, 0.4, 0.0}, {2, 3});
         return cf::op("softmax_with_cross_entropy",
                       {{"Logits", {x[0]}}, {"Label", {x[0].graph().constant(label)}}},
                       {{"soft_label", Attr::b(true)}}, "Loss");
       }},
      {"table_leaky_relu",
       {{2, 5}},
       [](const V& x) {
         return cf::op("leaky_relu", {{"X", {x[0]}}}, {{"alpha", Attr::f(0.1)}});
       }},
      {"table_concat_axis1_repeated_input",
       {{2, 3}, {2, 1}},
       [](const V& x) {
         return cf::op("concat", {{"X", {x[0], x[1], x[0]}}}, {{"axis", Attr::i(1)}});
       }},
      {"table_concat_negative_axis",
       {{1, 2, 2}, {3, 2, 2}},
       [](const V& x) {
         return cf::op("concat", {{"X", {x[0], x[1]}}}, {{"axis", Attr::i(-3)}});
       }},
      {"table_split_num",
       {{2, 4}},
       [](const V& x) {
         std::vector<cf::Node> p = cf::op_values(
             "split", {{"X", {x[0]}}}, {{"num", Attr::i(2)}, {"axis", Attr::i(1)}}, "Out", 2);
         return p[0] * p[1] + p[1];
       }},
      {"table_split_sections_unused_part",
       {{5, 2}},
       [](const V& x) {
         std::vector<cf::Node> p = cf::op_values("split", {{"X", {x[0]}}},
                                                 {{"sections", Attr::ints({1, -1, 2})}}, "Out", 3);
         return cf::exp(p[1]) * p[2];  // p[0] unused: its gradient part is zeros
       }},
      {"table_flatten",
       {{2, 3, 2}},
       [](const V& x) {
         return cf::op("flatten", {{"X", {x[0]}}}, {{"axis", Attr::i(2)}});
       }},
      {"table_flatten_axis0",
       {{2, 3}},
       [](const V& x) {
         return cf::op("flatten", {{"X", {x[0]}}}, {{"axis", Attr::i(0)}});
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

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cf::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Grad, NnRowsRefuseWhatTheyCannotDifferentiate) {
  using cf::Attr;
  cf::Graph g;
  cf::Node x = g.input("x", DType::kFloat64, {3, 4});
  // dropout without fix_seed: Out and Mask nodes would draw different masks.
  std::string m = error_of([&] { (void)cf::op("dropout", {{"X", {x}}}); });
  EXPECT_NE(m.find("fix_seed"), std::string::npos) << m;
  // softmax_with_cross_entropy differentiates Loss only.
  cf::Node label = g.constant(Tensor::from_vector<int64_t>({0, 1, 2}, {3, 1}));
  cf::Node sm =
      cf::op("softmax_with_cross_entropy", {{"Logits", {x}}, {"Label", {label}}}, {}, "Softmax");
  m = error_of([&] { (void)cf::grad(cf::sum(sm), {x}); });
  EXPECT_NE(m.find("Softmax"), std::string::npos) << m;
  // batch_norm differentiates Y only.
  cf::Node c = g.constant(Tensor::ones({4}, DType::kFloat64));
  cf::Node saved = cf::op(
      "batch_norm", {{"X", {x}}, {"Scale", {c}}, {"Bias", {c}}, {"Mean", {c}}, {"Variance", {c}}},
      {}, "SavedMean");
  m = error_of([&] { (void)cf::grad(cf::sum(saved), {x}); });
  EXPECT_NE(m.find("SavedMean"), std::string::npos) << m;
  // accuracy has no gradient.
  cf::Node top = cf::op("top_k", {{"X", {x}}}, {{"k", Attr::i(2)}});
  cf::Node idx = cf::op("top_k", {{"X", {x}}}, {{"k", Attr::i(2)}}, "Indices");
  cf::Node acc = cf::op("accuracy", {{"Out", {top}}, {"Indices", {idx}}, {"Label", {label}}});
  m = error_of(
      [&] { (void)cf::grad(cf::sum(cf::cast(acc, DType::kFloat64) * cf::sum(top)), {x}); });
  EXPECT_NE(m.find("no gradient"), std::string::npos) << m;
  // A split with the wrong number of values.
  m = error_of([&] {
    (void)cf::op_values("split", {{"X", {x}}}, {{"num", Attr::i(2)}}, "Out", 3);
  });
  EXPECT_NE(m.find("split"), std::string::npos) << m;
}

}  // namespace
