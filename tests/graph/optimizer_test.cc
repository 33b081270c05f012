// SGD, Momentum, Adam and AdamW (graph/optimizer.h) over 100 steps against scalar references
// written here from torch.optim's formulas, with weight decay, clipping and a learning-rate
// schedule; state by position, errors, and the caller's tensors left unchanged.
#include "chanflow/graph/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/core/error.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

constexpr int kSteps = 100;
const std::vector<cf::Shape> kShapes = {{3, 4}, {5}};

double init_value(size_t k, int64_t i) { return 0.6 - 0.07 * static_cast<double>(i) + 0.2 * k; }
double grad_value(size_t k, int64_t i, int t, double p) {
  // Depends on the parameter, so a wrong update changes every later gradient.
  return 0.8 * (p - 0.1 * k) + std::sin(0.9 * static_cast<double>(i) + 1.3 * t);
}
double lr_of(double lr0, double decay, int t) { return lr0 * std::pow(decay, t - 1); }

struct Ref {
  std::vector<std::vector<double>> p, s1, s2;
  bool first = true;
};

// One scalar step of `kind` with torch.optim's formulas; clip: max_grad_norm or 0.
struct Hyper {
  std::string kind;  // sgd, momentum, adam, adamw
  double lr = 0.05, decay = 1.0, momentum = 0.9, dampening = 0.0, wd = 0.0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, clip = 0.0;
};

void ref_step(Ref& r, std::vector<std::vector<double>> g, const Hyper& h, int t) {
  const double lr = lr_of(h.lr, h.decay, t);
  if (h.clip > 0) {
    double n2 = 0;
    for (auto& gk : g) {
      for (double x : gk) n2 += x * x;
    }
    const double c = h.clip / (std::sqrt(n2) + 1e-6);
    if (c < 1) {
      for (auto& gk : g) {
        for (double& x : gk) x *= c;
      }
    }
  }
  for (size_t k = 0; k < r.p.size(); ++k) {
    for (size_t i = 0; i < r.p[k].size(); ++i) {
      double& p = r.p[k][i];
      double d = g[k][i];
      if (h.kind == "sgd") {
        p -= lr * (d + h.wd * p);
      } else if (h.kind == "momentum") {
        d += h.wd * p;
        double& b = r.s1[k][i];
        b = r.first ? d : h.momentum * b + (1 - h.dampening) * d;
        p -= lr * (h.nesterov ? d + h.momentum * b : b);
      } else {
        if (h.kind == "adamw") {
          p *= 1 - lr * h.wd;
        } else {
          d += h.wd * p;
        }
        double& m = r.s1[k][i];
        double& v = r.s2[k][i];
        m = h.beta1 * m + (1 - h.beta1) * d;
        v = h.beta2 * v + (1 - h.beta2) * d * d;
        const double c1 = 1 - std::pow(h.beta1, t), c2 = 1 - std::pow(h.beta2, t);
        p -= lr / c1 * m / (std::sqrt(v) / std::sqrt(c2) + h.eps);
      }
    }
  }
  r.first = false;
}

std::unique_ptr<cf::Optimizer> make(const Hyper& h) {
  std::optional<double> clip;
  if (h.clip > 0) clip = h.clip;
  if (h.kind == "sgd") {
    return std::make_unique<cf::SGD>(
        cf::SGDConfig{.lr = h.lr, .weight_decay = h.wd, .max_grad_norm = clip});
  }
  if (h.kind == "momentum") {
    return std::make_unique<cf::Momentum>(cf::MomentumConfig{.lr = h.lr,
                                                             .momentum = h.momentum,
                                                             .dampening = h.dampening,
                                                             .nesterov = h.nesterov,
                                                             .weight_decay = h.wd,
                                                             .max_grad_norm = clip});
  }
  if (h.kind == "adam") {
    return std::make_unique<cf::Adam>(cf::AdamConfig{.lr = h.lr,
                                                     .beta1 = h.beta1,
                                                     .beta2 = h.beta2,
                                                     .eps = h.eps,
                                                     .weight_decay = h.wd,
                                                     .max_grad_norm = clip});
  }
  return std::make_unique<cf::AdamW>(cf::AdamWConfig{.lr = h.lr,
                                                     .beta1 = h.beta1,
                                                     .beta2 = h.beta2,
                                                     .eps = h.eps,
                                                     .weight_decay = h.wd,
                                                     .max_grad_norm = clip});
}

std::vector<double> values(const Tensor& t) {
  const Tensor d = t.cast(DType::kFloat64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

// Runs `h` for kSteps steps in `dt` next to the reference; returns how many steps clipped.
int run_and_compare(const Hyper& h, DType dt, double rtol) {
  std::unique_ptr<cf::Optimizer> opt = make(h);
  Ref r;
  std::vector<Tensor> params;
  for (size_t k = 0; k < kShapes.size(); ++k) {
    Tensor t = Tensor::empty(kShapes[k], DType::kFloat64);
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(init_value(k, i));
    params.push_back(Tensor::from_vector(v, kShapes[k]).cast(dt));
    r.p.push_back(values(params.back()));
    r.s1.emplace_back(v.size(), 0.0);
    r.s2.emplace_back(v.size(), 0.0);
  }
  int clipped = 0;
  for (int t = 1; t <= kSteps; ++t) {
    opt->set_lr(lr_of(h.lr, h.decay, t));
    std::vector<Tensor> grads;
    std::vector<std::vector<double>> rg;
    for (size_t k = 0; k < params.size(); ++k) {
      const std::vector<double> p = values(params[k]);
      std::vector<double> g;
      for (size_t i = 0; i < p.size(); ++i) g.push_back(grad_value(k, i, t, p[i]));
      grads.push_back(Tensor::from_vector(g, kShapes[k]).cast(dt));
      rg.push_back(values(grads.back()));  // the reference sees what the optimiser sees
    }
    const std::vector<std::vector<double>> before = rg;
    opt->step(params, grads);
    for (size_t k = 0; k < grads.size(); ++k) {
      EXPECT_EQ(values(grads[k]), before[k]) << "the caller's gradient changed";
    }
    if (h.clip > 0 && opt->last_grad_norm() > h.clip) ++clipped;
    ref_step(r, rg, h, t);
    // float32 runs compare each step against a reference restarted from the optimiser's values
    // (the float32 rounding of one step, not 100 compounded).
    for (size_t k = 0; k < params.size(); ++k) {
      const std::vector<double> got = values(params[k]);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], r.p[k][i], rtol * (1 + std::abs(r.p[k][i])))
            << h.kind << " step " << t << " param " << k << "[" << i << "]";
      }
      if (dt == DType::kFloat32) r.p[k] = got;
    }
    if (testing::Test::HasFailure()) return clipped;
  }
  EXPECT_EQ(opt->steps(), kSteps);
  return clipped;
}

void check_both_dtypes(const Hyper& h) {
  run_and_compare(h, DType::kFloat64, 1e-12);
  run_and_compare(h, DType::kFloat32, 1e-5);
}

TEST(GraphOptimizer, SgdMatchesTorchFormulaOver100Steps) {
  check_both_dtypes({.kind = "sgd", .lr = 0.05});
  check_both_dtypes({.kind = "sgd", .lr = 0.05, .decay = 0.98, .wd = 0.01});
}

TEST(GraphOptimizer, MomentumAndNesterovMatchTorchFormulaOver100Steps) {
  check_both_dtypes({.kind = "momentum", .lr = 0.02, .momentum = 0.9});
  check_both_dtypes(
      {.kind = "momentum", .lr = 0.02, .momentum = 0.9, .dampening = 0.3, .wd = 0.01});
  check_both_dtypes({.kind = "momentum", .lr = 0.02, .momentum = 0.8, .nesterov = true});
}

TEST(GraphOptimizer, AdamAndAdamWMatchTorchFormulaOver100Steps) {
  check_both_dtypes({.kind = "adam", .lr = 0.01});
  check_both_dtypes(
      {.kind = "adam", .lr = 0.01, .wd = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-3});
  check_both_dtypes({.kind = "adamw", .lr = 0.01, .decay = 0.97, .wd = 0.1});
}

TEST(GraphOptimizer, GlobalNormClippingActsAndMatches) {
  for (const char* kind : {"sgd", "momentum", "adam", "adamw"}) {
    Hyper h{.kind = kind, .lr = 0.02, .wd = 0.01, .clip = 0.8};
    const int clipped = run_and_compare(h, DType::kFloat64, 1e-12);
    EXPECT_GT(clipped, 50) << kind << ": the data must make clipping act";
  }
}

TEST(GraphOptimizer, LearningRateIsATensorReadEachStep) {
  cf::SGD sgd({.lr = 0.5});
  EXPECT_EQ(sgd.lr(), 0.5);
  EXPECT_EQ(sgd.lr_tensor().dtype(), DType::kFloat64);
  EXPECT_EQ(sgd.lr_tensor().numel(), 1);
  const Tensor seen = sgd.lr_tensor();
  sgd.set_lr(0.25);
  EXPECT_EQ(sgd.lr(), 0.25);
  EXPECT_EQ(values(seen), std::vector<double>{0.5});  // a handle taken earlier keeps its rate
  std::vector<Tensor> p = {Tensor::from_vector(std::vector<double>{1.0, 2.0})};
  sgd.step(p, {Tensor::from_vector(std::vector<double>{1.0, -1.0})});
  EXPECT_EQ(values(p[0]), (std::vector<double>{0.75, 2.25}));
  sgd.set_lr(0);
  sgd.step(p, {Tensor::from_vector(std::vector<double>{1.0, -1.0})});
  EXPECT_EQ(values(p[0]), (std::vector<double>{0.75, 2.25}));
  EXPECT_THROW(sgd.set_lr(-1), cf::Error);
  EXPECT_THROW(sgd.set_lr(NAN), cf::Error);
}

TEST(GraphOptimizer, StateIsKeptByPositionAndReset) {
  cf::Adam adam({.lr = 0.1});
  std::vector<Tensor> p = {Tensor::zeros({2}, DType::kFloat32),
                           Tensor::zeros({3}, DType::kFloat32)};
  std::vector<Tensor> g = {Tensor::full({2}, 1.0, DType::kFloat32),
                           Tensor::full({3}, -2.0, DType::kFloat32)};
  EXPECT_TRUE(adam.state(0).empty());
  adam.step(p, g);
  ASSERT_EQ(adam.state(1).size(), 2u);
  EXPECT_NEAR(values(adam.state(1)[0])[0], -0.2, 1e-6);  // m = (1 - beta1) * g
  // Another count or another shape at a position: typed errors, nothing updated.
  const std::vector<double> p0 = values(p[0]);
  std::vector<Tensor> one = {p[0]};
  EXPECT_THROW(adam.step(one, {g[0]}), cf::Error);
  std::vector<Tensor> swapped = {p[1], p[0]};
  try {
    adam.step(swapped, {g[1], g[0]});
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const cf::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Adam.step: params[0]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(values(p[0]), p0);
  EXPECT_EQ(adam.steps(), 1);
  adam.reset();
  EXPECT_EQ(adam.steps(), 0);
  EXPECT_NO_THROW(adam.step(swapped, {g[1], g[0]}));
}

TEST(GraphOptimizer, MismatchedGradientsAreTypedErrorsNamingThePosition) {
  cf::Momentum m({.lr = 0.1});
  std::vector<Tensor> p = {Tensor::zeros({2}, DType::kFloat32),
                           Tensor::zeros({3}, DType::kFloat32)};
  auto message = [&](const std::vector<Tensor>& g) -> std::string {
    try {
      m.step(p, g);
    } catch (const cf::ShapeError& e) {
      return std::string("ShapeError: ") + e.what();
    } catch (const cf::TypeError& e) {
      return std::string("TypeError: ") + e.what();
    } catch (const cf::Error& e) {
      return std::string("Error: ") + e.what();
    }
    return "";
  };
  EXPECT_EQ(message({Tensor::zeros({2}, DType::kFloat32), Tensor::zeros({4}, DType::kFloat32)}),
            "ShapeError: Momentum.step: grads[1] has shape (4,) but params[1] has (3,)");
  EXPECT_EQ(message({Tensor::zeros({2}, DType::kFloat64), Tensor::zeros({3}, DType::kFloat32)}),
            "TypeError: Momentum.step: grads[0] is float64 but params[0] is float32");
  EXPECT_EQ(message({Tensor::zeros({2}, DType::kFloat32)}),
            "Error: Momentum.step: 2 parameters but 1 gradients");
  std::vector<Tensor> ints = {Tensor::zeros({2}, DType::kInt32)};
  EXPECT_THROW(m.step(ints, {Tensor::zeros({2}, DType::kInt32)}), cf::TypeError);
  EXPECT_EQ(m.steps(), 0);
}

TEST(GraphOptimizer, BadHyperparametersFailAtConstruction) {
  EXPECT_THROW(cf::SGD({.lr = -1}), cf::Error);
  EXPECT_THROW(cf::SGD({.weight_decay = -0.1}), cf::Error);
  EXPECT_THROW(cf::Momentum({.momentum = 0}), cf::Error);
  EXPECT_THROW(cf::Momentum({.dampening = 0.1, .nesterov = true}), cf::Error);
  EXPECT_THROW(cf::Adam({.beta1 = 1.0}), cf::Error);
  EXPECT_THROW(cf::Adam({.eps = -1}), cf::Error);
  EXPECT_THROW(cf::AdamW({.beta2 = -0.1}), cf::Error);
  EXPECT_THROW(cf::Adam({.max_grad_norm = -1.0}), cf::Error);
  EXPECT_EQ(cf::AdamW().lr(), 1e-3);
}

TEST(GraphOptimizer, UpdatesTheCallersHandleInPlaceAndCopiesAShared) {
  cf::SGD sgd({.lr = 1.0});
  std::vector<Tensor> p = {Tensor::from_vector(std::vector<float>{1, 2, 3})};
  const void* data = p[0].get()->raw_data();
  sgd.step(p, {Tensor::from_vector(std::vector<float>{1, 1, 1})});
  EXPECT_EQ(p[0].get()->raw_data(), data) << "a unique parameter was copied";
  const Tensor kept = p[0];
  sgd.step(p, {Tensor::from_vector(std::vector<float>{1, 1, 1})});
  EXPECT_EQ(values(kept), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(p[0]), (std::vector<double>{-1, 0, 1}));
}

TEST(GraphOptimizer, NanGradientsPropagate) {
  cf::Adam adam;
  std::vector<Tensor> p = {Tensor::zeros({2}, DType::kFloat64)};
  adam.step(p, {Tensor::from_vector(std::vector<double>{NAN, 1.0})});
  const std::vector<double> v = values(p[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_FALSE(std::isnan(v[1]));
}

}  // namespace
