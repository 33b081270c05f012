// A program built in C++ trains: conv2d -> batch_norm -> relu -> pool2d -> fc (mul +
// elementwise_add) -> softmax_with_cross_entropy -> mean, append_backward, Adam ops appended the
// way Fluid's optimizer appended them (adam per parameter, scale ops advancing Beta1Pow/Beta2Pow),
// parameters initialised by a startup program and kept in a PersistentScope across runs. On a
// small synthetic set (which half of an 8x8 image is brighter) the loss must fall below a bound.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ir/var_type.h"
#include "chanflow/ops/backward.h"
#include "chanflow/tensor/random.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;
using cf::VarType;

namespace {

constexpr int64_t kBatch = 16;
constexpr int64_t kFp32 = static_cast<int64_t>(VarType::kFP32);

struct Net {
  cf::Program startup, main;
  cf::Program forward;  // the loss alone (no backward, no optimiser)
  std::vector<std::string> params;
};

// The parameters' shapes, and how the startup program initialises each.
struct Param {
  std::string name;
  std::vector<int64_t> shape;
  double std;  // gaussian std; 0: fill with `value`
  double value = 0;
};

const std::vector<Param>& params() {
  static const std::vector<Param> p = {
      {"conv.w", {4, 1, 3, 3}, 0.3}, {"bn.scale", {4}, 0, 1.0}, {"bn.bias", {4}, 0, 0.0},
      {"fc.w", {64, 2}, 0.1},        {"fc.b", {2}, 0, 0.0},
  };
  return p;
}

// Appends `ops` and declares `vars` at the end of block 0 of `p`.
cf::Program append_to_block0(const cf::Program& p, const std::vector<cf::OpDesc>& ops,
                             const std::vector<cf::VarDesc>& vars) {
  const cf::Block b = p.block(0);
  cf::Array<cf::VarDesc> vs = b->vars;
  for (const cf::VarDesc& v : vars) vs.push_back(v);
  cf::Array<cf::OpDesc> os = b->ops;
  for (const cf::OpDesc& o : ops) os.push_back(o);
  cf::Array<cf::Block> blocks;
  blocks.push_back(cf::Block::make(b->idx, b->parent_idx, vs, os));
  for (size_t i = 1; i < p.num_blocks(); ++i) blocks.push_back(p.block(static_cast<int64_t>(i)));
  return cf::Program::make(blocks);
}

Net build_net() {
  Net net;
  cf::ProgramBuilder f;
  f.var("image", DType::kFloat32, {kBatch, 1, 8, 8});
  f.var("label", DType::kInt64, {kBatch, 1});
  for (const Param& p : params()) f.parameter(p.name, DType::kFloat32, p.shape);
  // Batch norm's running statistics: persistable, updated in place (MeanOut is Mean), not trained.
  f.parameter("bn.mean", DType::kFloat32, {4});
  f.parameter("bn.var", DType::kFloat32, {4});
  for (const char* n : {"conv", "bn", "relu", "pool", "fc", "fc_b", "softmax", "xent", "loss",
                        "bn.saved_mean", "bn.saved_var"}) {
    f.var(n, DType::kFloat32, {});
  }
  f.append_op("conv2d", {{"Input", {"image"}}, {"Filter", {"conv.w"}}}, {{"Output", {"conv"}}},
              {{"paddings", Attr::ints({1, 1})}});
  f.append_op("batch_norm",
              {{"X", {"conv"}},
               {"Scale", {"bn.scale"}},
               {"Bias", {"bn.bias"}},
               {"Mean", {"bn.mean"}},
               {"Variance", {"bn.var"}}},
              {{"Y", {"bn"}},
               {"MeanOut", {"bn.mean"}},
               {"VarianceOut", {"bn.var"}},
               {"SavedMean", {"bn.saved_mean"}},
               {"SavedVariance", {"bn.saved_var"}}});
  f.append_op("relu", {{"X", {"bn"}}}, {{"Out", {"relu"}}});
  f.append_op("pool2d", {{"X", {"relu"}}}, {{"Out", {"pool"}}},
              {{"pooling_type", Attr::s("max")},
               {"ksize", Attr::ints({2, 2})},
               {"strides", Attr::ints({2, 2})}});
  f.append_op("mul", {{"X", {"pool"}}, {"Y", {"fc.w"}}}, {{"Out", {"fc"}}});
  f.append_op("elementwise_add", {{"X", {"fc"}}, {"Y", {"fc.b"}}}, {{"Out", {"fc_b"}}},
              {{"axis", Attr::i(1)}});
  f.append_op("softmax_with_cross_entropy", {{"Logits", {"fc_b"}}, {"Label", {"label"}}},
              {{"Softmax", {"softmax"}}, {"Loss", {"xent"}}});
  f.append_op("mean", {{"X", {"xent"}}}, {{"Out", {"loss"}}});

  std::vector<std::string> names;
  for (const Param& p : params()) names.push_back(p.name);
  net.forward = f.build();
  cf::BackwardResult r = cf::append_backward(net.forward, "loss", names);
  EXPECT_EQ(r.params_and_grads.size(), params().size());

  // Adam as Fluid's optimizer appended it: state variables, one adam op per parameter, then a
  // scale op per parameter advancing its Beta1Pow and Beta2Pow.
  std::vector<cf::OpDesc> ops;
  std::vector<cf::VarDesc> vars;
  cf::ProgramBuilder s;
  auto fill = [&](const std::string& name, const std::vector<int64_t>& shape, double v) {
    s.append_op("fill_constant", {}, {{"Out", {name}}},
                {{"shape", Attr::ints(shape)}, {"dtype", Attr::i(kFp32)}, {"value", Attr::f(v)}});
  };
  s.parameter("lr", DType::kFloat32, {1});
  fill("lr", {1}, 0.05);
  vars.push_back(cf::VarDesc::tensor("lr", VarType::kFP32, {1}, true));
  s.parameter("bn.mean", DType::kFloat32, {4});
  s.parameter("bn.var", DType::kFloat32, {4});
  fill("bn.mean", {4}, 0.0);
  fill("bn.var", {4}, 1.0);
  uint64_t seed = 1;
  for (const Param& p : params()) {
    s.parameter(p.name, DType::kFloat32, p.shape);
    if (p.std > 0) {
      s.append_op("gaussian_random", {}, {{"Out", {p.name}}},
                  {{"shape", Attr::ints(p.shape)},
                   {"std", Attr::f(p.std)},
                   {"seed", Attr::i(static_cast<int64_t>(seed++))},
                   {"dtype", Attr::i(kFp32)}});
    } else {
      fill(p.name, p.shape, p.value);
    }
  }
  for (const auto& [param, grad] : r.params_and_grads) {
    std::vector<int64_t> shape;
    for (const Param& p : params()) {
      if (p.name == param) shape = p.shape;
    }
    const std::string m1 = param + ".moment1", m2 = param + ".moment2";
    const std::string b1 = param + ".beta1_pow", b2 = param + ".beta2_pow";
    for (const std::string& n : {m1, m2}) {
      s.parameter(n, DType::kFloat32, shape);
      fill(n, shape, 0.0);
      vars.push_back(cf::VarDesc::tensor(n, VarType::kFP32, shape, true));
    }
    s.parameter(b1, DType::kFloat32, {1});
    s.parameter(b2, DType::kFloat32, {1});
    fill(b1, {1}, 0.9);
    fill(b2, {1}, 0.999);
    vars.push_back(cf::VarDesc::tensor(b1, VarType::kFP32, {1}, true));
    vars.push_back(cf::VarDesc::tensor(b2, VarType::kFP32, {1}, true));
    ops.push_back(
        cf::OpDesc::make("adam",
                         {{"Param", {param}},
                          {"Grad", {grad}},
                          {"LearningRate", {"lr"}},
                          {"Moment1", {m1}},
                          {"Moment2", {m2}},
                          {"Beta1Pow", {b1}},
                          {"Beta2Pow", {b2}}},
                         {{"ParamOut", {param}}, {"Moment1Out", {m1}}, {"Moment2Out", {m2}}},
                         {{"op_role", Attr::i(2)}}));
  }
  for (const auto& [param, grad] : r.params_and_grads) {
    for (const auto& [pow, beta] :
         {std::pair{param + ".beta1_pow", 0.9}, std::pair{param + ".beta2_pow", 0.999}}) {
      ops.push_back(cf::OpDesc::make("scale", {{"X", {pow}}}, {{"Out", {pow}}},
                                     {{"scale", Attr::f(beta)}, {"op_role", Attr::i(2)}}));
    }
  }
  net.main = append_to_block0(r.program, ops, vars);
  net.startup = s.build();
  net.params = names;
  return net;
}

// Images whose left or right half is brighter; the label says which.
void batch(uint64_t seed, Tensor* image, Tensor* label) {
  Tensor x = cf::uniform({kBatch, 1, 8, 8}, 0, 1, seed, DType::kFloat32);
  Tensor y = Tensor::zeros({kBatch, 1}, DType::kInt64);
  float* px = x.data<float>();
  int64_t* py = y.data<int64_t>();
  for (int64_t n = 0; n < kBatch; ++n) {
    const bool right = ((seed * 7 + static_cast<uint64_t>(n) * 13) % 2) == 1;
    py[n] = right ? 1 : 0;
    for (int64_t h = 0; h < 8; ++h) {
      for (int64_t w = right ? 4 : 0; w < (right ? 8 : 4); ++w) px[n * 64 + h * 8 + w] += 0.5F;
    }
  }
  *image = x;
  *label = y;
}

TEST(TrainProgram, ConvBatchNormPoolFcWithAdamLearnsTheSyntheticSet) {
  Net net = build_net();
  cf::Executor ex;
  cf::PersistentScope scope;
  ex.run(net.startup, scope);
  const Tensor bn_mean_before = *scope.find("bn.mean");
  double first = 0, last = 0;
  for (int step = 0; step < 120; ++step) {
    Tensor x, y;
    batch(static_cast<uint64_t>(step) + 1, &x, &y);
    const double loss = ex.run(net.main, scope, {{"image", x}, {"label", y}}, {"loss"})
                            .at("loss")
                            .cast(DType::kFloat64)
                            .item<double>();
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step == 0) first = loss;
    last = loss;
  }
  EXPECT_NEAR(first, std::log(2.0), 0.5);
  EXPECT_LT(last, 0.1) << "first loss " << first;
  // Batches it never saw: the forward program alone, in the trained scope.
  for (uint64_t seed = 1000; seed < 1004; ++seed) {
    Tensor x, y;
    batch(seed, &x, &y);
    const double loss = ex.run(net.forward, scope, {{"image", x}, {"label", y}}, {"loss"})
                            .at("loss")
                            .cast(DType::kFloat64)
                            .item<double>();
    EXPECT_LT(loss, 0.1) << "unseen batch " << seed;
  }
  // The running statistics moved (batch_norm updated them in place, kept across runs).
  EXPECT_FALSE(scope.find("bn.mean")->equal_to(bn_mean_before));
  // Adam advanced its state: beta1_pow = 0.9^(steps + 1).
  EXPECT_NEAR(scope.find("conv.w.beta1_pow")->cast(DType::kFloat64).item<double>(),
              std::pow(0.9, 121), 1e-6);
}

}  // namespace
