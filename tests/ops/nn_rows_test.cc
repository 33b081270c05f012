// The nn rows (rows_nn.cc) as program ops: forward values against naive loops, gradients of
// append_backward against central finite differences in float64, attribute checks and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ir/verifier.h"
#include "chanflow/ops/backward.h"
#include "chanflow/ops/op_table.h"
#include "chanflow/tensor/nn.h"
#include "chanflow/tensor/random.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;

namespace {

using Feeds = std::map<std::string, Tensor>;

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.cast(DType::kFloat64).contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << what << "[" << i << "]";
}

double loss_of(cf::Executor& ex, const cf::Program& p, const std::string& loss, const Feeds& f) {
  return ex.run(p, f, {loss}).at(loss).cast(DType::kFloat64).item<double>();
}

// append_backward's gradients for `params` against central differences of the forward program.
void expect_grads_match(const cf::Program& forward, const std::string& loss, const Feeds& feeds,
                        const std::vector<std::string>& params, double tol = 1e-6) {
  cf::BackwardResult r = cf::append_backward(forward, loss, params);
  ASSERT_EQ(r.params_and_grads.size(), params.size());
  std::vector<std::string> fetch;
  for (const auto& [p, g] : r.params_and_grads) fetch.push_back(g);
  cf::Executor ex;
  std::map<std::string, Tensor> got = ex.run(r.program, feeds, fetch);
  for (const auto& [p, g] : r.params_and_grads) {
    const Tensor base = feeds.at(p);
    const Tensor grad = got.at(g).contiguous();
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
      EXPECT_NEAR(grad.data<double>()[k], fd, tol * std::max(1.0, std::abs(fd)))
          << g << "[" << k << "]";
    }
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    std::string m = e.what();
    try {
      std::rethrow_if_nested(e);
    } catch (const std::exception& inner) {
      m += std::string(" | ") + inner.what();
    }
    return m;
  }
  return "no error";
}

// ---- batch_norm ---------------------------------------------------------------------------
// x (N, C, H, W), channel stats over N, H, W; Paddle's biased variance.
struct BnCase {
  cf::Program program;
  Feeds feeds;
};

BnCase batch_norm_program(bool is_test, const std::string& loss_op = {}) {
  cf::ProgramBuilder b;
  b.parameter("x", DType::kFloat64, {4, 3, 2, 2});
  b.parameter("scale", DType::kFloat64, {3});
  b.parameter("bias", DType::kFloat64, {3});
  b.var("mean", DType::kFloat64, {3});
  b.var("var", DType::kFloat64, {3});
  for (const char* n : {"y", "sm", "sv", "y2", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op(
      "batch_norm",
      {{"X", {"x"}},
       {"Scale", {"scale"}},
       {"Bias", {"bias"}},
       {"Mean", {"mean"}},
       {"Variance", {"var"}}},
      {{"Y", {"y"}},
       {"MeanOut", {"mean"}},
       {"VarianceOut", {"var"}},
       {"SavedMean", {"sm"}},
       {"SavedVariance", {"sv"}}},
      {{"momentum", Attr::f(0.8)}, {"epsilon", Attr::f(1e-4)}, {"is_test", Attr::b(is_test)}});
  if (!loss_op.empty()) {
    b.append_op(loss_op, {{"X", {"y"}}}, {{"Out", {"y2"}}});
    b.append_op("mean", {{"X", {"y2"}}}, {{"Out", {"loss"}}});
  }
  BnCase c{b.build(), {}};
  c.feeds["x"] = cf::normal({4, 3, 2, 2}, 1, 2, 1, DType::kFloat64);
  c.feeds["scale"] = cf::normal({3}, 1, 0.5, 2, DType::kFloat64);
  c.feeds["bias"] = cf::normal({3}, 0, 1, 3, DType::kFloat64);
  c.feeds["mean"] = cf::normal({3}, 0, 1, 4, DType::kFloat64);
  c.feeds["var"] = cf::uniform({3}, 0.5, 2, 5, DType::kFloat64);
  return c;
}

TEST(NnRows, BatchNormTrainingMatchesNaiveStatistics) {
  BnCase c = batch_norm_program(false);
  cf::Executor ex;
  auto out = ex.run(c.program, c.feeds, {"y", "mean", "var", "sm", "sv"});
  const std::vector<double> x = values(c.feeds["x"]), sc = values(c.feeds["scale"]),
                            bi = values(c.feeds["bias"]), rm = values(c.feeds["mean"]),
                            rv = values(c.feeds["var"]);
  std::vector<double> y(x.size()), mo(3), vo(3), sm(3), sv(3);
  for (int ch = 0; ch < 3; ++ch) {
    double s = 0, ss = 0;
    for (int n = 0; n < 4; ++n) {
      for (int k = 0; k < 4; ++k) s += x[static_cast<size_t>((n * 3 + ch) * 4 + k)];
    }
    const double mean = s / 16;
    for (int n = 0; n < 4; ++n) {
      for (int k = 0; k < 4; ++k) {
        const double d = x[static_cast<size_t>((n * 3 + ch) * 4 + k)] - mean;
        ss += d * d;
      }
    }
    const double var = ss / 16;
    const auto c3 = static_cast<size_t>(ch);
    for (int n = 0; n < 4; ++n) {
      for (int k = 0; k < 4; ++k) {
        const auto i = static_cast<size_t>((n * 3 + ch) * 4 + k);
        y[i] = (x[i] - mean) / std::sqrt(var + 1e-4) * sc[c3] + bi[c3];
      }
    }
    mo[c3] = rm[c3] * 0.8 + mean * 0.2;
    vo[c3] = rv[c3] * 0.8 + var * 0.2;
    sm[c3] = mean;
    sv[c3] = 1 / std::sqrt(var + 1e-4);
  }
  expect_near(out["y"], y, 1e-9, "Y");
  // MeanOut and VarianceOut are the Mean and Variance variables, updated by the run.
  expect_near(out["mean"], mo, 1e-7, "MeanOut");
  expect_near(out["var"], vo, 1e-7, "VarianceOut");
  expect_near(out["sm"], sm, 1e-9, "SavedMean");
  expect_near(out["sv"], sv, 1e-7, "SavedVariance");
}

TEST(NnRows, BatchNormIsTestUsesTheGivenStatistics) {
  BnCase c = batch_norm_program(true);
  cf::Executor ex;
  auto out = ex.run(c.program, c.feeds, {"y", "mean"});
  const std::vector<double> x = values(c.feeds["x"]), sc = values(c.feeds["scale"]),
                            bi = values(c.feeds["bias"]), rm = values(c.feeds["mean"]),
                            rv = values(c.feeds["var"]);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / 4) % 3;
    y[i] = (x[i] - rm[ch]) / std::sqrt(rv[ch] + 1e-4) * sc[ch] + bi[ch];
  }
  expect_near(out["y"], y, 1e-9, "Y");
  expect_near(out["mean"], rm, 0, "Mean unchanged");
}

TEST(NnRows, BatchNormGradientsMatchFiniteDifferences) {
  BnCase c = batch_norm_program(false, "square");
  expect_grads_match(c.program, "loss", c.feeds, {"x", "scale", "bias"}, 1e-5);
  // Paddle's op names: batch_norm_grad with its slots.
  cf::BackwardResult r = cf::append_backward(c.program, "loss", {"x", "scale", "bias"});
  bool saw = false;
  for (const cf::OpDesc& op : r.program.block(0)->ops) {
    if (op.type() != "batch_norm_grad") continue;
    saw = true;
    EXPECT_EQ(op.input("SavedMean"), (std::vector<std::string>{"sm"}));
    EXPECT_EQ(op.input("SavedVariance"), (std::vector<std::string>{"sv"}));
    EXPECT_EQ(op.output("X@GRAD"), (std::vector<std::string>{"x@GRAD"}));
  }
  EXPECT_TRUE(saw);
}

// ---- dropout ------------------------------------------------------------------------------
cf::Program dropout_program(const cf::OpDesc::Attrs& attrs, bool with_loss) {
  cf::ProgramBuilder b;
  b.parameter("x", DType::kFloat64, {6, 5});
  for (const char* n : {"out", "mask", "o2", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("dropout", {{"X", {"x"}}}, {{"Out", {"out"}}, {"Mask", {"mask"}}}, attrs);
  if (with_loss) {
    b.append_op("square", {{"X", {"out"}}}, {{"Out", {"o2"}}});
    b.append_op("mean", {{"X", {"o2"}}}, {{"Out", {"loss"}}});
  }
  return b.build();
}

TEST(NnRows, DropoutWithAFixedSeedIsTheKernelsMask) {
  const Tensor x = cf::normal({6, 5}, 0, 1, 9, DType::kFloat64);
  cf::Program p = dropout_program(
      {{"dropout_prob", Attr::f(0.3)}, {"fix_seed", Attr::b(true)}, {"seed", Attr::i(42)}}, false);
  cf::Executor ex;
  auto a = ex.run(p, {{"x", x}}, {"out", "mask"});
  auto b = ex.run(p, {{"x", x}}, {"out", "mask"});
  EXPECT_TRUE(a["mask"].equal_to(b["mask"]));
  const cf::DropoutResult ref = cf::dropout(x, 0.3f, false, 42);
  EXPECT_TRUE(a["mask"].equal_to(ref.mask));
  const std::vector<double> xv = values(x), mv = values(a["mask"]), ov = values(a["out"]);
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_TRUE(mv[i] == 0 || mv[i] == 1);
    EXPECT_EQ(ov[i], xv[i] * mv[i]);  // downgrade_in_infer: no rescaling in training
  }
}

TEST(NnRows, DropoutWithoutFixSeedDrawsANewMaskEachRun) {
  const Tensor x = Tensor::ones({64, 64}, DType::kFloat64);
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {64, 64});
  b.var("out", DType::kFloat64, {});
  b.var("mask", DType::kFloat64, {});
  b.append_op("dropout", {{"X", {"x"}}}, {{"Out", {"out"}}, {"Mask", {"mask"}}},
              {{"dropout_prob", Attr::f(0.25)}});
  const cf::Program p = b.build();
  cf::Executor ex;
  const Tensor m1 = ex.run(p, {{"x", x}}, {"mask"}).at("mask");
  const Tensor m2 = ex.run(p, {{"x", x}}, {"mask"}).at("mask");
  EXPECT_FALSE(m1.equal_to(m2));
  double kept = 0;
  for (double v : values(m1)) kept += v;
  EXPECT_NEAR(kept / 4096, 0.75, 0.04);
}

TEST(NnRows, DropoutIsTestScalesByTheKeepProbability) {
  const Tensor x = cf::normal({6, 5}, 0, 1, 9, DType::kFloat64);
  cf::Program p =
      dropout_program({{"dropout_prob", Attr::f(0.3)}, {"is_test", Attr::b(true)}}, false);
  cf::Executor ex;
  const Tensor out = ex.run(p, {{"x", x}}, {"out"}).at("out");
  std::vector<double> want = values(x);
  for (double& v : want) v *= static_cast<double>(1.0f - 0.3f);
  expect_near(out, want, 1e-15, "Out");
}

TEST(NnRows, DropoutGradientMatchesFiniteDifferences) {
  cf::Program p = dropout_program(
      {{"dropout_prob", Attr::f(0.5)}, {"fix_seed", Attr::b(true)}, {"seed", Attr::i(3)}}, true);
  expect_grads_match(p, "loss", {{"x", cf::normal({6, 5}, 0, 1, 10, DType::kFloat64)}}, {"x"});
}

// ---- losses -------------------------------------------------------------------------------
TEST(NnRows, SoftmaxWithCrossEntropyForwardAndGradient) {
  cf::ProgramBuilder b;
  b.parameter("logits", DType::kFloat64, {4, 5});
  b.var("label", DType::kInt64, {4, 1});
  for (const char* n : {"softmax", "lossv", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
              {{"Softmax", {"softmax"}}, {"Loss", {"lossv"}}});
  b.append_op("mean", {{"X", {"lossv"}}}, {{"Out", {"loss"}}});
  const cf::Program p = b.build();
  const Tensor logits = cf::normal({4, 5}, 0, 2, 11, DType::kFloat64);
  const Tensor label = Tensor::from_vector<int64_t>({1, 4, 0, 2}, {4, 1});
  cf::Executor ex;
  auto out = ex.run(p, {{"logits", logits}, {"label", label}}, {"softmax", "lossv"});
  const std::vector<double> z = values(logits);
  std::vector<double> sm(20), loss(4);
  for (size_t r = 0; r < 4; ++r) {
    double mx = -1e300, s = 0;
    for (size_t k = 0; k < 5; ++k) mx = std::max(mx, z[r * 5 + k]);
    for (size_t k = 0; k < 5; ++k) s += std::exp(z[r * 5 + k] - mx);
    for (size_t k = 0; k < 5; ++k) sm[r * 5 + k] = std::exp(z[r * 5 + k] - mx) / s;
    loss[r] = -std::log(sm[r * 5 + static_cast<size_t>(values(label)[r])]);
  }
  expect_near(out["softmax"], sm, 1e-12, "Softmax");
  expect_near(out["lossv"], loss, 1e-12, "Loss");
  EXPECT_EQ(out["lossv"].shape(), (cf::Shape{4, 1}));
  expect_grads_match(p, "loss", {{"logits", logits}, {"label", label}}, {"logits"});
}

TEST(NnRows, CrossEntropyForwardAndGradient) {
  cf::ProgramBuilder b;
  b.parameter("x", DType::kFloat64, {3, 4});
  b.var("label", DType::kInt64, {3, 1});
  for (const char* n : {"y", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("cross_entropy", {{"X", {"x"}}, {"Label", {"label"}}}, {{"Y", {"y"}}},
              {{"ignore_index", Attr::i(3)}});
  b.append_op("mean", {{"X", {"y"}}}, {{"Out", {"loss"}}});
  const cf::Program p = b.build();
  const Tensor x = cf::uniform({3, 4}, 0.1, 1, 12, DType::kFloat64);
  const Tensor label = Tensor::from_vector<int64_t>({2, 3, 0}, {3, 1});  // row 1 ignored
  cf::Executor ex;
  const Tensor y = ex.run(p, {{"x", x}, {"label", label}}, {"y"}).at("y");
  const std::vector<double> xv = values(x);
  expect_near(y, {-std::log(xv[2]), 0.0, -std::log(xv[8])}, 1e-12, "Y");
  expect_grads_match(p, "loss", {{"x", x}, {"label", label}}, {"x"});
}

// square_error_cost is Fluid's composition: elementwise_sub then square.
TEST(NnRows, SquareErrorCostCompositionDifferentiates) {
  cf::ProgramBuilder b;
  b.parameter("x", DType::kFloat64, {4, 1});
  b.var("t", DType::kFloat64, {4, 1});
  for (const char* n : {"d", "sq", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("elementwise_sub", {{"X", {"x"}}, {"Y", {"t"}}}, {{"Out", {"d"}}});
  b.append_op("square", {{"X", {"d"}}}, {{"Out", {"sq"}}});
  b.append_op("mean", {{"X", {"sq"}}}, {{"Out", {"loss"}}});
  expect_grads_match(b.build(), "loss",
                     {{"x", cf::normal({4, 1}, 0, 1, 13, DType::kFloat64)},
                      {"t", cf::normal({4, 1}, 0, 1, 14, DType::kFloat64)}},
                     {"x"});
}

// ---- accuracy, top_k, leaky_relu, flatten -------------------------------------------------
TEST(NnRows, TopKAndAccuracyMatchNaiveCounts) {
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat32, {4, 5});
  b.var("label", DType::kInt64, {4, 1});
  b.var("v", DType::kFloat32, {});
  b.var("i", DType::kInt64, {});
  b.var("acc", DType::kFloat32, {});
  b.var("correct", DType::kInt32, {});
  b.var("total", DType::kInt32, {});
  b.append_op("top_k", {{"X", {"x"}}}, {{"Out", {"v"}}, {"Indices", {"i"}}}, {{"k", Attr::i(2)}});
  b.append_op("accuracy", {{"Out", {"v"}}, {"Indices", {"i"}}, {"Label", {"label"}}},
              {{"Accuracy", {"acc"}}, {"Correct", {"correct"}}, {"Total", {"total"}}});
  const Tensor x = Tensor::from_vector<float>(
      {0.1f, 0.5f, 0.2f, 0.9f, 0.0f, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0, 0, 7, 0, 1}, {4, 5});
  const Tensor label = Tensor::from_vector<int64_t>({1, 2, 0, 4}, {4, 1});
  cf::Executor ex;
  auto out = ex.run(b.build(), {{"x", x}, {"label", label}}, {"v", "i", "acc", "correct", "total"});
  // Top 2 per row: {3, 1}, {4, 3}, {0, 1}, {2, 4}: labels 1 and 0 and 4 are among them.
  EXPECT_EQ(values(out["i"]), (std::vector<double>{3, 1, 4, 3, 0, 1, 2, 4}));
  EXPECT_EQ(values(out["v"]), (std::vector<double>{0.9f, 0.5f, 5, 4, 5, 4, 7, 1}));
  EXPECT_EQ(out["correct"].item<int32_t>(), 3);
  EXPECT_EQ(out["total"].item<int32_t>(), 4);
  EXPECT_FLOAT_EQ(out["acc"].item<float>(), 0.75f);
}

TEST(NnRows, LeakyReluAndFlattenMatchNaiveLoops) {
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {2, 3, 4});
  b.var("l", DType::kFloat64, {});
  b.var("f", DType::kFloat64, {});
  b.append_op("leaky_relu", {{"X", {"x"}}}, {{"Out", {"l"}}}, {{"alpha", Attr::f(0.25)}});
  b.append_op("flatten", {{"X", {"l"}}}, {{"Out", {"f"}}}, {{"axis", Attr::i(2)}});
  const Tensor x = cf::normal({2, 3, 4}, 0, 1, 15, DType::kFloat64);
  cf::Executor ex;
  auto out = ex.run(b.build(), {{"x", x}}, {"l", "f"});
  std::vector<double> want = values(x);
  for (double& v : want) v = v < 0 ? 0.25 * v : v;
  expect_near(out["l"], want, 0, "leaky_relu");
  EXPECT_EQ(out["f"].shape(), (cf::Shape{6, 4}));
  expect_near(out["f"], want, 0, "flatten");
}

// ---- concat and split ---------------------------------------------------------------------
TEST(NnRows, ConcatAndSplitForwardAndGradients) {
  cf::ProgramBuilder b;
  b.parameter("a", DType::kFloat64, {2, 3});
  b.parameter("c", DType::kFloat64, {2, 1});
  for (const char* n : {"cat", "p0", "p1", "p2", "q", "q2", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("concat", {{"X", {"a", "c", "a"}}}, {{"Out", {"cat"}}}, {{"axis", Attr::i(1)}});
  b.append_op("split", {{"X", {"cat"}}}, {{"Out", {"p0", "p1", "p2"}}},
              {{"sections", Attr::ints({2, -1, 3})}, {"axis", Attr::i(1)}});
  // p1 takes no part in the loss: its gradient is fill_zeros_like.
  b.append_op("elementwise_mul", {{"X", {"p2"}}, {"Y", {"p2"}}}, {{"Out", {"q"}}});
  b.append_op("sum", {{"X", {"q"}}}, {{"Out", {"q2"}}});
  b.append_op("mean", {{"X", {"q2"}}}, {{"Out", {"loss"}}});
  const cf::Program p = b.build();
  const Tensor a = cf::normal({2, 3}, 0, 1, 16, DType::kFloat64);
  const Tensor c = cf::normal({2, 1}, 0, 1, 17, DType::kFloat64);
  cf::Executor ex;
  auto out = ex.run(p, {{"a", a}, {"c", c}}, {"cat", "p0", "p1", "p2"});
  const std::vector<double> av = values(a), cv = values(c);
  std::vector<double> cat;
  for (size_t r = 0; r < 2; ++r) {
    for (size_t k = 0; k < 3; ++k) cat.push_back(av[r * 3 + k]);
    cat.push_back(cv[r]);
    for (size_t k = 0; k < 3; ++k) cat.push_back(av[r * 3 + k]);
  }
  expect_near(out["cat"], cat, 0, "concat");
  EXPECT_EQ(out["p0"].shape(), (cf::Shape{2, 2}));
  EXPECT_EQ(out["p1"].shape(), (cf::Shape{2, 2}));
  EXPECT_EQ(out["p2"].shape(), (cf::Shape{2, 3}));
  expect_near(out["p1"], {cat[2], cat[3], cat[9], cat[10]}, 0, "split");
  expect_grads_match(p, "loss", {{"a", a}, {"c", c}}, {"a", "c"});
  cf::BackwardResult r = cf::append_backward(p, "loss", {"a", "c"});
  std::vector<std::string> types;
  for (const cf::OpDesc& op : r.program.block(0)->ops) types.push_back(op.type());
  EXPECT_NE(std::find(types.begin(), types.end(), "fill_zeros_like"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "concat_grad"), types.end());
}

// ---- inference keeps unknown extents unknown ----------------------------------------------
struct Infer final : cf::InferCall {
  std::vector<std::vector<cf::TensorInfo>> in;
  std::vector<size_t> counts;
  std::map<std::pair<int, size_t>, cf::TensorInfo> out;
  size_t num_inputs(int s) const override { return in.at(static_cast<size_t>(s)).size(); }
  const cf::TensorInfo& input(int s, size_t i) const override {
    return in.at(static_cast<size_t>(s)).at(i);
  }
  size_t num_outputs(int s) const override { return counts.at(static_cast<size_t>(s)); }
  void set_output(int s, cf::TensorInfo t, size_t i) override { out[{s, i}] = std::move(t); }
};

Infer infer(const std::string& type, std::vector<std::vector<cf::TensorInfo>> in,
            std::vector<size_t> counts, const cf::OpDesc::Attrs& attrs = {}) {
  const cf::OpDef* d = cf::find_op_def(type);
  EXPECT_NE(d, nullptr) << type;
  Infer c;
  c.in = std::move(in);
  c.counts = std::move(counts);
  const cf::OpDesc desc = cf::OpDesc::make(type, {}, {}, attrs);
  d->infer(cf::AttrReader(d->schema(), desc), c);
  return c;
}

TEST(NnRows, InferenceKeepsUnknownExtentsUnknown) {
  const DType f = DType::kFloat32;
  const cf::TensorInfo c3{f, {3}};
  Infer bn = infer("batch_norm", {{{f, {-1, 3, -1, -1}}}, {c3}, {c3}, {c3}, {c3}}, {1, 1, 1, 1, 1});
  EXPECT_EQ(bn.out.at({0, 0}).shape, (cf::Shape{-1, 3, -1, -1}));
  EXPECT_EQ(bn.out.at({1, 0}).shape, (cf::Shape{3}));
  // NHWC with the channel extent unknown in X: taken from Scale.
  Infer bn2 = infer("batch_norm", {{{f, {-1, 2, -1}}}, {c3}, {c3}, {c3}, {c3}}, {1, 1, 1, 1, 1},
                    {{"data_layout", Attr::s("NHWC")}});
  EXPECT_EQ(bn2.out.at({3, 0}).shape, (cf::Shape{3}));
  Infer fl = infer("flatten", {{{f, {-1, 3, 4}}}}, {1});
  EXPECT_EQ(fl.out.at({0, 0}).shape, (cf::Shape{-1, 12}));
  Infer cat = infer("concat", {{{f, {2, -1}}, {f, {-1, 3}}}}, {1}, {{"axis", Attr::i(1)}});
  EXPECT_EQ(cat.out.at({0, 0}).shape, (cf::Shape{2, -1}));
  Infer sp = infer("split", {{{f, {-1, 6}}}}, {2}, {{"num", Attr::i(2)}, {"axis", Attr::i(1)}});
  EXPECT_EQ(sp.out.at({0, 1}).shape, (cf::Shape{-1, 3}));
  Infer sp2 = infer("split", {{{f, {-1, -1}}}}, {2},
                    {{"sections", Attr::ints({2, -1})}, {"axis", Attr::i(1)}});
  EXPECT_EQ(sp2.out.at({0, 0}).shape, (cf::Shape{-1, 2}));
  EXPECT_EQ(sp2.out.at({0, 1}).shape, (cf::Shape{-1, -1}));
  Infer sce =
      infer("softmax_with_cross_entropy", {{{f, {-1, 10}}}, {{DType::kInt64, {-1, 1}}}}, {1, 1});
  EXPECT_EQ(sce.out.at({1, 0}).shape, (cf::Shape{-1, 1}));
  Infer tk = infer("top_k", {{{f, {-1, 5}}}}, {1, 1}, {{"k", Attr::i(2)}});
  EXPECT_EQ(tk.out.at({1, 0}).shape, (cf::Shape{-1, 2}));
  EXPECT_EQ(tk.out.at({1, 0}).dtype, DType::kInt64);
  // What no value could satisfy is refused.
  EXPECT_THROW(infer("split", {{{f, {-1, 5}}}}, {2}, {{"num", Attr::i(2)}, {"axis", Attr::i(1)}}),
               cf::ShapeError);
  EXPECT_THROW(infer("top_k", {{{f, {-1, 5}}}}, {1, 1}, {{"k", Attr::i(6)}}), cf::ShapeError);
  EXPECT_THROW(infer("batch_norm", {{{f, {-1, 3}}}, {{f, {4}}}, {c3}, {c3}, {c3}}, {1, 1, 1, 1, 1}),
               cf::ShapeError);
  EXPECT_THROW(infer("cross_entropy", {{{f, {-1, 4}}}, {{f, {-1, 1}}}}, {1}), cf::TypeError);
}

// ---- errors -------------------------------------------------------------------------------
TEST(NnRows, TheVerifierRefusesBadAttributesNamingThem) {
  struct Bad {
    const char* op;
    const char* attr;
    Attr value;
  };
  for (const Bad& bad :
       {Bad{"dropout", "dropout_prob", Attr::f(-0.1)}, Bad{"dropout", "dropout_prob", Attr::f(1.5)},
        Bad{"batch_norm", "epsilon", Attr::f(0.01)}, Bad{"batch_norm", "epsilon", Attr::f(-1e-6)},
        Bad{"batch_norm", "momentum", Attr::f(1.5)}, Bad{"batch_norm", "momentum", Attr::f(-0.1)},
        Bad{"batch_norm", "data_layout", Attr::s("NCWH")}, Bad{"top_k", "k", Attr::i(0)},
        Bad{"flatten", "axis", Attr::i(-1)}, Bad{"split", "num", Attr::i(-2)}}) {
    // The builder verifies each op as it is appended; verify() checks the built program.
    const std::string m = error_of([&] {
      cf::ProgramBuilder b;
      for (const char* n : {"x", "s", "bi", "m", "v", "y", "i"}) b.var(n, DType::kFloat32, {});
      const std::string op = bad.op;
      if (op == "dropout") {
        b.append_op(op, {{"X", {"x"}}}, {{"Out", {"y"}}}, {{bad.attr, bad.value}});
      } else if (op == "batch_norm") {
        b.append_op(op,
                    {{"X", {"x"}},
                     {"Scale", {"s"}},
                     {"Bias", {"bi"}},
                     {"Mean", {"m"}},
                     {"Variance", {"v"}}},
                    {{"Y", {"y"}}}, {{bad.attr, bad.value}});
      } else if (op == "top_k") {
        b.append_op(op, {{"X", {"x"}}}, {{"Out", {"y"}}, {"Indices", {"i"}}},
                    {{bad.attr, bad.value}});
      } else {
        b.append_op(op, {{"X", {"x"}}}, {{"Out", {"y"}}}, {{bad.attr, bad.value}});
      }
      (void)cf::verify(b.build());
    });
    EXPECT_NE(m.find(std::string("('") + bad.op + "')"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("attribute '") + bad.attr + "'"), std::string::npos) << m;
  }
}

TEST(NnRows, BadInputsAreTypedErrorsNamingTheOpAndSlot) {
  // A float label for hard-label softmax_with_cross_entropy.
  cf::ProgramBuilder b;
  b.var("logits", DType::kFloat32, {4, 5});
  b.var("label", DType::kFloat32, {4, 1});
  b.var("sm", DType::kFloat32, {});
  b.var("loss", DType::kFloat32, {});
  b.append_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
              {{"Softmax", {"sm"}}, {"Loss", {"loss"}}});
  cf::Executor ex;
  std::string m = error_of([&] {
    ex.run(b.build(),
           {{"logits", Tensor::zeros({4, 5}, DType::kFloat32)},
            {"label", Tensor::zeros({4, 1}, DType::kFloat32)}},
           {"loss"});
  });
  EXPECT_NE(m.find("softmax_with_cross_entropy"), std::string::npos) << m;
  EXPECT_NE(m.find("Label"), std::string::npos) << m;
  // concat of tensors that disagree outside the axis.
  cf::ProgramBuilder c;
  c.var("a", DType::kFloat32, {2, 3});
  c.var("b", DType::kFloat32, {3, 3});
  c.var("o", DType::kFloat32, {});
  c.append_op("concat", {{"X", {"a", "b"}}}, {{"Out", {"o"}}}, {{"axis", Attr::i(1)}});
  m = error_of([&] {
    ex.run(c.build(),
           {{"a", Tensor::zeros({2, 3}, DType::kFloat32)},
            {"b", Tensor::zeros({3, 3}, DType::kFloat32)}},
           {"o"});
  });
  EXPECT_NE(m.find("concat"), std::string::npos) << m;
  EXPECT_NE(m.find("X[1]"), std::string::npos) << m;
  // batch_norm with a Scale of the wrong extent.
  cf::ProgramBuilder d;
  for (const char* n : {"x", "s", "bi", "m", "v", "y"}) d.var(n, DType::kFloat32, {});
  d.append_op(
      "batch_norm",
      {{"X", {"x"}}, {"Scale", {"s"}}, {"Bias", {"bi"}}, {"Mean", {"m"}}, {"Variance", {"v"}}},
      {{"Y", {"y"}}});
  const Tensor c3 = Tensor::ones({3}, DType::kFloat32);
  m = error_of([&] {
    ex.run(d.build(),
           {{"x", Tensor::ones({2, 3, 2, 2}, DType::kFloat32)},
            {"s", Tensor::ones({4}, DType::kFloat32)},
            {"bi", c3},
            {"m", c3},
            {"v", c3}},
           {"y"});
  });
  EXPECT_NE(m.find("batch_norm"), std::string::npos) << m;
  EXPECT_NE(m.find("Scale"), std::string::npos) << m;
}

// split_lod_tensor / merge_lod_tensor: rows by a BOOL column, any dtype, empty parts, and the
// errors naming the op and the slot.
cf::Program split_merge_program(DType dt) {
  cf::ProgramBuilder b;
  b.var("x", dt, {-1, 2});
  b.var("m", DType::kBool, {-1, 1});
  for (const char* n : {"t", "f", "back"}) b.var(n, dt, {});
  b.append_op("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"m"}}},
              {{"OutTrue", {"t"}}, {"OutFalse", {"f"}}});
  b.append_op("merge_lod_tensor",
              {{"X", {"x"}}, {"Mask", {"m"}}, {"InTrue", {"t"}}, {"InFalse", {"f"}}},
              {{"Out", {"back"}}});
  return b.build();
}

TEST(NnRows, SplitAndMergeLodTensorMoveRowsByTheMask) {
  cf::Executor ex;
  for (DType dt : {DType::kFloat32, DType::kInt64}) {
    const Tensor x = Tensor::arange(10, dt).reshape({5, 2});
    const Tensor m = Tensor::from_vector<bool>({false, true, true, false, true}, {5, 1});
    auto out = ex.run(split_merge_program(dt), {{"x", x}, {"m", m}}, {"t", "f", "back"});
    EXPECT_EQ(values(out.at("t")), (std::vector<double>{2, 3, 4, 5, 8, 9}));
    EXPECT_EQ(out.at("t").shape(), (cf::Shape{3, 2}));
    EXPECT_EQ(values(out.at("f")), (std::vector<double>{0, 1, 6, 7}));
    EXPECT_TRUE(out.at("back").equal_to(x));
    // Every row one way: the other part has 0 rows and the merge still restores X.
    const Tensor all = Tensor::from_vector<bool>({true, true, true, true, true}, {5, 1});
    out = ex.run(split_merge_program(dt), {{"x", x}, {"m", all}}, {"f", "back"});
    EXPECT_EQ(out.at("f").shape(), (cf::Shape{0, 2}));
    EXPECT_TRUE(out.at("back").equal_to(x));
  }
}

TEST(NnRows, SplitAndMergeLodTensorErrorsNameTheOpAndSlot) {
  cf::Executor ex;
  const Tensor x = Tensor::zeros({3, 2}, DType::kFloat32);
  std::string m = error_of([&] {
    ex.run(split_merge_program(DType::kFloat32),
           {{"x", x}, {"m", Tensor::from_vector<bool>({true, false}, {2, 1})}}, {"back"});
  });
  EXPECT_NE(m.find("split_lod_tensor: Mask has 2 rows but X has 3"), std::string::npos) << m;
  // Mask not a column, not BOOL (a program of its own: the feed check would refuse the dtype).
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat32, {-1, 2});
  b.var("m", DType::kInt32, {-1});
  b.var("t", DType::kFloat32, {});
  b.var("f", DType::kFloat32, {});
  b.append_op("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"m"}}},
              {{"OutTrue", {"t"}}, {"OutFalse", {"f"}}});
  m = error_of([&] {
    ex.run(b.build(), {{"x", x}, {"m", Tensor::zeros({3}, DType::kInt32)}}, {"t"});
  });
  EXPECT_NE(m.find("split_lod_tensor: Mask must be BOOL, it is int32"), std::string::npos) << m;
  const cf::OpDesc split = cf::OpDesc::make("split_lod_tensor", {{"X", {"x"}}, {"Mask", {"m"}}},
                                            {{"OutTrue", {"t"}}, {"OutFalse", {"f"}}});
  EXPECT_THROW(cf::infer_op(split, {{DType::kFloat32, {3, 2}}, {DType::kBool, {3}}}),
               cf::ShapeError);
  const auto inferred = cf::infer_op(split, {{DType::kFloat32, {3, 2}}, {DType::kBool, {3, 1}}});
  EXPECT_EQ(inferred[0].shape, (std::vector<int64_t>{-1, 2}));  // the mask's values decide
  // InTrue with more rows than the mask selects for it.
  cf::ProgramBuilder c;
  c.var("x", DType::kFloat32, {-1, 2});
  c.var("m", DType::kBool, {-1, 1});
  c.var("t", DType::kFloat32, {-1, 2});
  c.var("f", DType::kFloat32, {-1, 2});
  c.var("o", DType::kFloat32, {});
  c.append_op("merge_lod_tensor",
              {{"X", {"x"}}, {"Mask", {"m"}}, {"InTrue", {"t"}}, {"InFalse", {"f"}}},
              {{"Out", {"o"}}});
  m = error_of([&] {
    ex.run(c.build(),
           {{"x", x},
            {"m", Tensor::from_vector<bool>({true, false, false}, {3, 1})},
            {"t", Tensor::zeros({2, 2}, DType::kFloat32)},
            {"f", Tensor::zeros({2, 2}, DType::kFloat32)}},
           {"o"});
  });
  EXPECT_NE(m.find("merge_lod_tensor: InTrue has shape (2, 2) but Mask selects 1 rows for it"),
            std::string::npos)
      << m;
  m = error_of([&] {
    ex.run(c.build(),
           {{"x", x},
            {"m", Tensor::from_vector<bool>({true, false, false}, {3, 1})},
            {"t", Tensor::zeros({1, 2}, DType::kFloat32)},
            {"f", Tensor::zeros({2, 3}, DType::kFloat32)}},
           {"o"});
  });
  EXPECT_NE(m.find("merge_lod_tensor"), std::string::npos) << m;
}

TEST(NnRows, AccuracyInTheLossPathIsAppendBackwardsErrorNamingIt) {
  cf::ProgramBuilder b;
  b.parameter("w", DType::kFloat32, {4, 5});
  b.var("label", DType::kInt64, {4, 1});
  b.var("v", DType::kFloat32, {});
  b.var("i", DType::kInt64, {});
  b.var("acc", DType::kFloat32, {});
  b.var("loss", DType::kFloat32, {});
  b.append_op("top_k", {{"X", {"w"}}}, {{"Out", {"v"}}, {"Indices", {"i"}}}, {{"k", Attr::i(1)}});
  b.append_op("accuracy", {{"Out", {"v"}}, {"Indices", {"i"}}, {"Label", {"label"}}},
              {{"Accuracy", {"acc"}}});
  b.append_op("mean", {{"X", {"acc"}}}, {{"Out", {"loss"}}});
  const std::string m = error_of([&] { (void)cf::append_backward(b.build(), "loss"); });
  EXPECT_NE(m.find("('accuracy')"), std::string::npos) << m;
  EXPECT_NE(m.find("accuracy counts correct predictions"), std::string::npos) << m;
}

TEST(NnRows, AGradientReachingSoftmaxIsRefused) {
  cf::ProgramBuilder b;
  b.parameter("logits", DType::kFloat64, {2, 3});
  b.var("label", DType::kInt64, {2, 1});
  for (const char* n : {"sm", "l", "t", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
              {{"Softmax", {"sm"}}, {"Loss", {"l"}}});
  b.append_op("mean", {{"X", {"sm"}}}, {{"Out", {"loss"}}});
  const std::string m = error_of([&] { (void)cf::append_backward(b.build(), "loss"); });
  EXPECT_NE(m.find("Softmax"), std::string::npos) << m;
}

}  // namespace
