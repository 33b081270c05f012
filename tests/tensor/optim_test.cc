// Optimiser updates (optim.h) against scalar references written here from the formulas of
// torch.optim and Paddle's operators, and initialisers (init.h) by their statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

constexpr int64_t kN = 37;  // not a multiple of any vector width
constexpr int kSteps = 60;

// The gradient of step t (1-based) at element i: bounded, sign-changing, step-dependent.
double grad_value(int64_t i, int t) {
  return std::sin(0.7 * static_cast<double>(i) + 1.3 * t) +
         0.2 * std::cos(0.11 * static_cast<double>(i) * t);
}
double init_value(int64_t i) { return 0.5 - 0.03 * static_cast<double>(i); }
double lr_value(int t) { return 0.05 * std::pow(0.97, t); }  // a schedule: changes every step

template <class T>
cf::Tensor make(const std::vector<double>& v) {
  std::vector<T> c(v.begin(), v.end());
  return cf::Tensor::from_vector(c, {static_cast<int64_t>(c.size())});
}
// The values the kernel sees (rounded to T), as doubles for the reference.
template <class T>
std::vector<double> rounded(const std::vector<double>& v) {
  std::vector<double> r;
  for (double x : v) r.push_back(static_cast<double>(static_cast<T>(x)));
  return r;
}
std::vector<double> init_vector() {
  std::vector<double> p;
  for (int64_t i = 0; i < kN; ++i) p.push_back(init_value(i));
  return p;
}
std::vector<double> grad_vector(int t) {
  std::vector<double> g;
  for (int64_t i = 0; i < kN; ++i) g.push_back(grad_value(i, t));
  return g;
}

void expect_close(const cf::Tensor& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const cf::Tensor d = got.cast(cf::DType::kFloat64);
  const double* p = d.data<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(p[i], want[i], rtol * (1.0 + std::abs(want[i]))) << what << " element " << i;
  }
}

template <class T>
constexpr double tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// ---- torch.optim.SGD, transcribed per element ----
struct SgdRef {
  cf::SgdOptions o;
  std::vector<double> p, buf;
  bool have_buf = false;
  void step(const std::vector<double>& g, double lr) {
    std::vector<double> d(g);
    for (size_t i = 0; i < d.size(); ++i) d[i] += o.weight_decay * p[i];
    if (o.momentum != 0) {
      if (!have_buf) {
        buf = d;
        have_buf = true;
      } else {
        for (size_t i = 0; i < d.size(); ++i) {
          buf[i] = o.momentum * buf[i] + (1 - o.dampening) * d[i];
        }
      }
      for (size_t i = 0; i < d.size(); ++i) d[i] = o.nesterov ? d[i] + o.momentum * buf[i] : buf[i];
    }
    for (size_t i = 0; i < d.size(); ++i) p[i] -= lr * d[i];
  }
};

template <class T>
void run_sgd(const cf::SgdOptions& o, const std::string& name) {
  SgdRef ref{o, rounded<T>(init_vector()), {}};
  cf::Tensor p = make<T>(init_vector());
  cf::Tensor buf;  // null: created by the first step
  cf::Tensor lr = cf::Tensor::scalar(0, cf::dtype_of<T>());
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded<T>(grad_vector(t));
    lr.fill(lr_value(t));
    cf::sgd_step(p, make<T>(g), o.momentum != 0 ? &buf : nullptr, lr, o);
    ref.step(g, lr.item<double>());
  }
  expect_close(p, ref.p, tol<T>(), name + " param");
  if (o.momentum != 0) expect_close(buf, ref.buf, tol<T>(), name + " momentum_buf");
}

TEST(OptimSgd, MatchesScalarReferenceOverManySteps) {
  const std::vector<std::pair<std::string, cf::SgdOptions>> cases = {
      {"plain", {}},
      {"weight_decay", {.weight_decay = 0.1}},
      {"momentum", {.momentum = 0.9}},
      {"dampening", {.momentum = 0.8, .dampening = 0.3}},
      {"nesterov_wd", {.momentum = 0.9, .nesterov = true, .weight_decay = 0.05}},
  };
  for (const auto& [name, o] : cases) {
    run_sgd<float>(o, name + "/float32");
    run_sgd<double>(o, name + "/float64");
  }
}

TEST(OptimSgd, FirstMomentumStepCopiesTheGradient) {
  // PyTorch: buf = d on the first step, not (1 - dampening) * d.
  cf::Tensor p = cf::Tensor::from_vector<double>({1, 2});
  cf::Tensor buf;
  cf::sgd_step(p, cf::Tensor::from_vector<double>({0.5, -1}), &buf,
               cf::Tensor::scalar(0.1, cf::DType::kFloat64), {.momentum = 0.9, .dampening = 0.5});
  ASSERT_TRUE(buf.defined());
  EXPECT_EQ(buf.at<double>({0}), 0.5);
  EXPECT_EQ(buf.at<double>({1}), -1.0);
  EXPECT_DOUBLE_EQ(p.at<double>({0}), 1 - 0.05);
  EXPECT_DOUBLE_EQ(p.at<double>({1}), 2 + 0.1);
}

// ---- torch.optim.Adam / AdamW ----
struct AdamRef {
  cf::AdamOptions o;
  std::vector<double> p, m, v;
  void step(const std::vector<double>& grad, double lr, int t) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (o.decoupled) {
        p[i] *= 1 - lr * o.weight_decay;
      } else {
        g += o.weight_decay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      const double mhat = m[i] / (1 - std::pow(o.beta1, t));
      const double vhat = v[i] / (1 - std::pow(o.beta2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + o.eps);
    }
  }
};

template <class T>
void run_adam(const cf::AdamOptions& o, const std::string& name) {
  AdamRef ref{o, rounded<T>(init_vector()), std::vector<double>(kN), std::vector<double>(kN)};
  cf::Tensor p = make<T>(init_vector());
  cf::Tensor m = cf::Tensor::zeros(p.shape(), p.dtype()), v = m.clone();
  cf::Tensor lr = cf::Tensor::scalar(0, cf::dtype_of<T>());
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded<T>(grad_vector(t));
    lr.fill(lr_value(t));
    cf::adam_step(p, make<T>(g), m, v, t, lr, o);
    ref.step(g, lr.item<double>(), t);
  }
  expect_close(p, ref.p, tol<T>(), name + " param");
  expect_close(m, ref.m, tol<T>(), name + " m");
  expect_close(v, ref.v, tol<T>(), name + " v");
}

TEST(OptimAdam, MatchesScalarReferenceOverManySteps) {
  const std::vector<std::pair<std::string, cf::AdamOptions>> cases = {
      {"adam", {}},
      {"adam_l2", {.weight_decay = 0.1}},
      {"adamw", {.weight_decay = 0.1, .decoupled = true}},
      {"betas_eps", {.beta1 = 0.5, .beta2 = 0.9, .eps = 1e-3}},
  };
  for (const auto& [name, o] : cases) {
    run_adam<float>(o, name + "/float32");
    run_adam<double>(o, name + "/float64");
  }
}

// The message of the chanflow::Error f throws.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const cf::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- Paddle's operators ----
template <class T>
void run_paddle() {
  const double mu = 0.9, b1 = 0.9, b2 = 0.999, eps = 1e-6;
  std::vector<double> rp = rounded<T>(init_vector()), rn = rp, rn2 = rp, ra = rp;
  std::vector<double> vel(kN), vel2(kN), m1(kN), m2(kN);
  double b1p = b1, b2p = b2;
  cf::Tensor p = make<T>(init_vector()), pn = p.clone(), pn2 = p.clone(), pa = p.clone();
  cf::Tensor tv = cf::Tensor::zeros(p.shape(), p.dtype()), tv2 = tv.clone();
  cf::Tensor tm1 = tv.clone(), tm2 = tv.clone();
  cf::Tensor lr = cf::Tensor::scalar(0, cf::dtype_of<T>());
  cf::Tensor tb1p = cf::Tensor::scalar(b1, cf::dtype_of<T>());
  cf::Tensor tb2p = cf::Tensor::scalar(b2, cf::dtype_of<T>());
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded<T>(grad_vector(t));
    const cf::Tensor tg = make<T>(g);
    lr.fill(lr_value(t));
    const double l = lr.item<double>();
    cf::paddle_sgd(p, tg, lr);
    cf::paddle_momentum(pn, tg, tv, lr, mu, /*use_nesterov=*/false);
    cf::paddle_momentum(pn2, tg, tv2, lr, mu, /*use_nesterov=*/true);
    cf::paddle_adam(pa, tg, tm1, tm2, lr, tb1p, tb2p, b1, b2, eps);
    const double b1p_used = tb1p.item<double>(), b2p_used = tb2p.item<double>();
    const double lr_t = l * std::sqrt(1 - b2p_used) / (1 - b1p_used);
    for (int64_t i = 0; i < kN; ++i) {
      rp[i] -= l * g[i];
      vel[i] = mu * vel[i] + g[i];
      rn[i] -= l * vel[i];
      vel2[i] = mu * vel2[i] + g[i];
      rn2[i] -= l * (g[i] + mu * vel2[i]);
      m1[i] = b1 * m1[i] + (1 - b1) * g[i];
      m2[i] = b2 * m2[i] + (1 - b2) * g[i] * g[i];
      ra[i] -= lr_t * m1[i] / (std::sqrt(m2[i]) + eps);
    }
    // Paddle's optimizer advances the pows after the op (scale ops); so does its caller here.
    b1p *= b1;
    b2p *= b2;
    tb1p.fill(b1p);
    tb2p.fill(b2p);
  }
  const std::string name = std::string(cf::dtype_name(cf::dtype_of<T>()));
  expect_close(p, rp, tol<T>(), "paddle_sgd/" + name);
  expect_close(pn, rn, tol<T>(), "paddle_momentum/" + name);
  expect_close(tv, vel, tol<T>(), "paddle_momentum velocity/" + name);
  expect_close(pn2, rn2, tol<T>(), "paddle_momentum nesterov/" + name);
  expect_close(pa, ra, tol<T>(), "paddle_adam/" + name);
  expect_close(tm1, m1, tol<T>(), "paddle_adam moment1/" + name);
  expect_close(tm2, m2, tol<T>(), "paddle_adam moment2/" + name);
}

TEST(OptimPaddle, OpsMatchScalarReferenceOverManySteps) {
  run_paddle<float>();
  run_paddle<double>();
}

TEST(OptimPaddle, AdamEpsilonDiffersFromTorchOnlyWhereDocumented) {
  // Same data, one step: Paddle's epsilon equals PyTorch's eps / sqrt(1 - beta2).
  const double b1 = 0.9, b2 = 0.999, eps = 1e-3;
  const cf::Tensor g = cf::Tensor::from_vector<double>({1e-3, -2e-3, 0.5});
  const cf::Tensor lr = cf::Tensor::scalar(0.1, cf::DType::kFloat64);
  cf::Tensor pp = cf::Tensor::from_vector<double>({1, 1, 1}), pt = pp.clone();
  cf::Tensor m1 = cf::Tensor::zeros({3}, cf::DType::kFloat64), m2 = m1.clone();
  cf::Tensor tm = m1.clone(), tv = m1.clone();
  cf::paddle_adam(pp, g, m1, m2, lr, cf::Tensor::scalar(b1, cf::DType::kFloat64),
                  cf::Tensor::scalar(b2, cf::DType::kFloat64), b1, b2, eps);
  cf::adam_step(pt, g, tm, tv, 1, lr, {.beta1 = b1, .beta2 = b2, .eps = eps / std::sqrt(1 - b2)});
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(pp.at<double>({i}), pt.at<double>({i}), 1e-14);
  cf::Tensor pt2 = cf::Tensor::from_vector<double>({1, 1, 1});
  cf::Tensor tm2 = cf::Tensor::zeros({3}, cf::DType::kFloat64), tv2 = tm2.clone();
  cf::adam_step(pt2, g, tm2, tv2, 1, lr, {.beta1 = b1, .beta2 = b2, .eps = eps});
  EXPECT_GT(std::abs(pp.at<double>({0}) - pt2.at<double>({0})), 1e-3);  // small grads differ
}

// Paddle's adamax and rmsprop, one configuration each per call, against per-element references.
template <class T>
void run_paddle_adamax(double b1, double b2, double eps, const std::string& name) {
  std::vector<double> rp = rounded<T>(init_vector()), m(kN), u(kN);
  cf::Tensor p = make<T>(init_vector());
  cf::Tensor tm = cf::Tensor::zeros(p.shape(), p.dtype()), tu = tm.clone();
  cf::Tensor lr = cf::Tensor::scalar(0, cf::dtype_of<T>());
  cf::Tensor tb1p = cf::Tensor::scalar(b1, cf::dtype_of<T>());
  // The attributes as the kernel sees them: in T.
  const double b1t = static_cast<T>(b1), b2t = static_cast<T>(b2), epst = static_cast<T>(eps);
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded<T>(grad_vector(t));
    lr.fill(lr_value(t));
    const double l = lr.item<double>(), b1p = tb1p.item<double>();
    cf::paddle_adamax(p, make<T>(g), tm, tu, lr, tb1p, b1, b2, eps);
    for (int64_t i = 0; i < kN; ++i) {
      m[i] = b1t * m[i] + (1 - b1t) * g[i];
      u[i] = std::max(b2t * u[i] + epst, std::abs(g[i]));
      rp[i] -= l / (1 - b1p) * m[i] / u[i];
    }
    tb1p.fill(b1p * b1t);  // the optimizer's scale op
  }
  expect_close(p, rp, tol<T>(), "paddle_adamax/" + name);
  expect_close(tm, m, tol<T>(), "paddle_adamax moment/" + name);
  expect_close(tu, u, tol<T>(), "paddle_adamax inf_norm/" + name);
}

template <class T>
void run_paddle_rmsprop(double decay, double mu, double eps, const std::string& name) {
  std::vector<double> rp = rounded<T>(init_vector()), ms(kN), mom(kN);
  cf::Tensor p = make<T>(init_vector());
  cf::Tensor tms = cf::Tensor::zeros(p.shape(), p.dtype()), tmom = tms.clone();
  cf::Tensor lr = cf::Tensor::scalar(0, cf::dtype_of<T>());
  const double rho = static_cast<T>(decay), mut = static_cast<T>(mu), epst = static_cast<T>(eps);
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded<T>(grad_vector(t));
    lr.fill(lr_value(t));
    const double l = lr.item<double>();
    cf::paddle_rmsprop(p, make<T>(g), tms, tmom, lr, decay, mu, eps);
    for (int64_t i = 0; i < kN; ++i) {
      ms[i] = rho * ms[i] + (1 - rho) * g[i] * g[i];
      mom[i] = mut * mom[i] + l * g[i] / std::sqrt(ms[i] + epst);
      rp[i] -= mom[i];
    }
  }
  expect_close(p, rp, tol<T>(), "paddle_rmsprop/" + name);
  expect_close(tms, ms, tol<T>(), "paddle_rmsprop mean_square/" + name);
  expect_close(tmom, mom, tol<T>(), "paddle_rmsprop moment/" + name);
}

TEST(OptimPaddle, AdamaxMatchesScalarReferenceOverManySteps) {
  // Paddle's defaults, then a small beta2 and a large epsilon, where the max picks the decayed
  // norm on some steps and |grad| on others.
  run_paddle_adamax<float>(0.9, 0.999, 1e-8, "defaults/float32");
  run_paddle_adamax<double>(0.9, 0.999, 1e-8, "defaults/float64");
  run_paddle_adamax<float>(0.8, 0.5, 0.05, "beta2 0.5 eps 0.05/float32");
  run_paddle_adamax<double>(0.8, 0.5, 0.05, "beta2 0.5 eps 0.05/float64");
}

TEST(OptimPaddle, AdamaxTakesTheMaxOfTheDecayedNormAndTheGradient) {
  // One step by hand: m = 0.1 * g, u = max(0.5 * 1 + 0.1, |g|), p -= 2 / (1 - 0.9) * m / u.
  cf::Tensor p = cf::Tensor::from_vector<double>({1, 1}),
             m = cf::Tensor::zeros({2}, cf::DType::kFloat64);
  cf::Tensor u = cf::Tensor::from_vector<double>({1, 1});
  const cf::Tensor g = cf::Tensor::from_vector<double>({0.2, -3});
  cf::paddle_adamax(p, g, m, u, cf::Tensor::scalar(2, cf::DType::kFloat64),
                    cf::Tensor::scalar(0.9, cf::DType::kFloat64), 0.9, 0.5, 0.1);
  EXPECT_NEAR(u.at<double>({0}), 0.6, 1e-15);
  EXPECT_EQ(u.at<double>({1}), 3.0);
  EXPECT_NEAR(m.at<double>({1}), -0.3, 1e-15);
  EXPECT_NEAR(p.at<double>({0}), 1 - 20 * 0.02 / 0.6, 1e-14);
  EXPECT_NEAR(p.at<double>({1}), 1 + 20 * 0.3 / 3, 1e-14);
}

TEST(OptimPaddle, RmspropMatchesScalarReferenceOverManySteps) {
  // Paddle's op defaults (decay 0.9, momentum 0, epsilon 1e-10), then Fluid's RMSProp defaults
  // (rho 0.95, epsilon 1e-6) with momentum.
  run_paddle_rmsprop<float>(0.9, 0.0, 1e-10, "op defaults/float32");
  run_paddle_rmsprop<double>(0.9, 0.0, 1e-10, "op defaults/float64");
  run_paddle_rmsprop<float>(0.95, 0.9, 1e-6, "momentum 0.9/float32");
  run_paddle_rmsprop<double>(0.95, 0.9, 1e-6, "momentum 0.9/float64");
}

TEST(OptimPaddle, RmspropErrorsNameTheArgument) {
  cf::Tensor p = cf::Tensor::zeros({2, 3}, cf::DType::kFloat32);
  cf::Tensor ms = p.clone(), mom = p.clone();
  const cf::Tensor g = p.clone(), lr = cf::Tensor::scalar(0.1, cf::DType::kFloat32);
  cf::Tensor bad = cf::Tensor::zeros({3, 2}, cf::DType::kFloat32);
  EXPECT_NE(error_of([&] {
              cf::paddle_rmsprop(p, g, bad, mom, lr, 0.9, 0, 1e-6);
            }).find("paddle_rmsprop: MeanSquare has shape (3, 2), Param (2, 3)"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_rmsprop(p, g, ms, bad, lr, 0.9, 0, 1e-6), cf::ShapeError);
  cf::Tensor bad_type = cf::Tensor::zeros({2, 3}, cf::DType::kFloat64);
  EXPECT_NE(error_of([&] {
              cf::paddle_rmsprop(p, g, ms, bad_type, lr, 0.9, 0, 1e-6);
            }).find("Moment has dtype float64"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_rmsprop(p, bad, ms, mom, lr, 0.9, 0, 1e-6), cf::ShapeError);
  EXPECT_NE(error_of([&] {
              cf::paddle_rmsprop(p, g, ms, mom, lr, 0.9, 0, -1e-6);
            }).find("paddle_rmsprop: epsilon must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cf::paddle_rmsprop(p, g, ms, mom, lr, 1.5, 0, 1e-6);
            }).find("paddle_rmsprop: decay must be in [0, 1], got 1.5"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_rmsprop(p, g, ms, mom, lr, NAN, 0, 1e-6), cf::Error);
  EXPECT_THROW(cf::paddle_rmsprop(p, g, ms, mom, lr, 0.9, -0.5, 1e-6), cf::Error);
  EXPECT_THROW(
      cf::paddle_rmsprop(p, g, ms, mom, cf::Tensor::zeros({2}, cf::DType::kFloat32), 0.9, 0, 1e-6),
      cf::ShapeError);
  EXPECT_THROW(cf::paddle_rmsprop(p, g, ms, ms, lr, 0.9, 0, 1e-6), cf::Error);  // one object
  // Nothing was written by the failed calls.
  EXPECT_EQ(cf::max(cf::abs(ms)).item<float>(), 0.0f);
}

TEST(OptimPaddle, AdamaxErrorsNameTheArgument) {
  cf::Tensor p = cf::Tensor::zeros({4}, cf::DType::kFloat64);
  cf::Tensor m = p.clone(), u = p.clone();
  const cf::Tensor g = p.clone(), lr = cf::Tensor::scalar(0.1, cf::DType::kFloat64);
  const cf::Tensor b1p = cf::Tensor::scalar(0.9, cf::DType::kFloat64);
  cf::Tensor bad = cf::Tensor::zeros({5}, cf::DType::kFloat64);
  EXPECT_NE(error_of([&] {
              cf::paddle_adamax(p, g, m, bad, lr, b1p, 0.9, 0.999, 1e-8);
            }).find("paddle_adamax: InfNorm has shape (5,), Param (4,)"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_adamax(p, g, bad, u, lr, b1p, 0.9, 0.999, 1e-8), cf::ShapeError);
  EXPECT_THROW(cf::paddle_adamax(p, bad, m, u, lr, b1p, 0.9, 0.999, 1e-8), cf::ShapeError);
  EXPECT_NE(error_of([&] {
              cf::paddle_adamax(p, g, m, u, lr, cf::Tensor::zeros({2}, cf::DType::kFloat64), 0.9,
                                0.999, 1e-8);
            }).find("paddle_adamax: Beta1Pow must have one element"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cf::paddle_adamax(p, g, m, u, lr, b1p, 0.9, 0.999, -1e-8);
            }).find("paddle_adamax: epsilon must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cf::paddle_adamax(p, g, m, u, lr, b1p, 1.0, 0.999, 1e-8);
            }).find("paddle_adamax: beta1 must be in [0, 1)"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_adamax(p, g, m, u, lr, b1p, 0.9, -0.1, 1e-8), cf::Error);
  EXPECT_NE(error_of([&] {
              cf::paddle_adamax(p, g, m, u, lr, cf::Tensor::scalar(1, cf::DType::kFloat64), 0.9,
                                0.999, 1e-8);
            }).find("Beta1Pow must not be 1"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_adamax(p, g, m, m, lr, b1p, 0.9, 0.999, 1e-8), cf::Error);
  cf::Tensor pf = cf::Tensor::zeros({4}, cf::DType::kFloat32);
  EXPECT_THROW(cf::paddle_adamax(pf, g, m, u, lr, b1p, 0.9, 0.999, 1e-8), cf::TypeError);
}

TEST(OptimPaddle, AdamaxAndRmspropPropagateNan) {
  cf::Tensor p = cf::Tensor::from_vector<double>({1, 1, 1});
  cf::Tensor m = cf::Tensor::zeros({3}, cf::DType::kFloat64);
  cf::Tensor u = cf::Tensor::from_vector<double>({1, NAN, 1});
  const cf::Tensor g = cf::Tensor::from_vector<double>({NAN, 0.5, 0.5});
  const cf::Tensor lr = cf::Tensor::scalar(0.1, cf::DType::kFloat64);
  cf::paddle_adamax(p, g, m, u, lr, cf::Tensor::scalar(0.9, cf::DType::kFloat64), 0.9, 0.999, 1e-8);
  EXPECT_TRUE(std::isnan(u.at<double>({0})));  // NaN gradient
  EXPECT_TRUE(std::isnan(u.at<double>({1})));  // NaN norm: not replaced by |grad|
  EXPECT_TRUE(std::isnan(p.at<double>({0})));
  EXPECT_TRUE(std::isnan(p.at<double>({1})));
  EXPECT_TRUE(std::isfinite(p.at<double>({2})));
  cf::Tensor q = cf::Tensor::from_vector<float>({1, 1});
  cf::Tensor ms = cf::Tensor::zeros({2}, cf::DType::kFloat32), mom = ms.clone();
  cf::paddle_rmsprop(q, cf::Tensor::from_vector<float>({NAN, 1}), ms, mom,
                     cf::Tensor::scalar(0.1, cf::DType::kFloat32), 0.9, 0, 1e-6);
  EXPECT_TRUE(std::isnan(q.at<float>({0})));
  EXPECT_TRUE(std::isfinite(q.at<float>({1})));
}

TEST(OptimPaddle, SignOfEachElement) {
  const cf::Tensor x = cf::Tensor::from_vector<double>({-2.5, -0.0, 0.0, 1e-300, INFINITY, NAN});
  const cf::Tensor s = cf::sign(x);
  ASSERT_EQ(s.dtype(), cf::DType::kFloat64);
  EXPECT_EQ(s.at<double>({0}), -1.0);
  EXPECT_EQ(s.at<double>({1}), 0.0);
  EXPECT_FALSE(std::signbit(s.at<double>({1})));
  EXPECT_EQ(s.at<double>({2}), 0.0);
  EXPECT_EQ(s.at<double>({3}), 1.0);
  EXPECT_EQ(s.at<double>({4}), 1.0);
  EXPECT_TRUE(std::isnan(s.at<double>({5})));
  const cf::Tensor f = cf::sign(cf::Tensor::from_vector<float>({3, -1e-30f, 0}));
  EXPECT_TRUE(f.equal_to(cf::Tensor::from_vector<float>({1, -1, 0})));
  const cf::Tensor i = cf::sign(cf::Tensor::from_vector<int32_t>({-7, 0, 9}));
  EXPECT_TRUE(i.equal_to(cf::Tensor::from_vector<int32_t>({-1, 0, 1})));
  const cf::Tensor b = cf::sign(cf::Tensor::from_vector<uint8_t>({0, 200}));
  EXPECT_TRUE(b.equal_to(cf::Tensor::from_vector<uint8_t>({0, 1})));
  // A strided view is read through its strides.
  const cf::Tensor v = cf::Tensor::arange(6, cf::DType::kFloat32).reshape({2, 3}).transpose();
  EXPECT_TRUE(cf::sign(cf::sub(v, cf::Tensor::scalar(2, cf::DType::kFloat32)))
                  .equal_to(cf::Tensor::from_vector<float>({-1, 1, -1, 1, 0, 1}, {3, 2})));
  EXPECT_THROW(cf::sign(cf::Tensor()), cf::Error);
}

// ---- gradient helpers ----
TEST(OptimGrad, GlobalNormAndClipMatchTorchSemantics) {
  const cf::Tensor a = cf::Tensor::from_vector<float>({3, 4}, {2});
  const cf::Tensor b = cf::Tensor::from_vector<double>({12}, {1, 1});
  EXPECT_DOUBLE_EQ(cf::global_norm({a, b}), 13.0);
  EXPECT_EQ(cf::global_norm({}), 0.0);
  std::vector<cf::Tensor> grads = {a, b};
  EXPECT_DOUBLE_EQ(cf::clip_by_global_norm(grads, 1.3), 13.0);
  const double c = 1.3 / (13.0 + 1e-6);
  EXPECT_NEAR(grads[0].at<float>({0}), 3 * c, 1e-6);
  EXPECT_NEAR(grads[1].at<double>({0, 0}), 12 * c, 1e-15);
  EXPECT_EQ(a.at<float>({0}), 3.0f);  // copy on write: the caller's other handle is unchanged
  // Under the limit: untouched (the coefficient would be >= 1).
  std::vector<cf::Tensor> small = {cf::Tensor::from_vector<double>({0.3, 0.4})};
  cf::clip_by_global_norm(small, 1.0);
  EXPECT_EQ(small[0].at<double>({1}), 0.4);
  // NaN norm: every gradient becomes NaN; inf norm: finite -> 0, inf -> NaN (PyTorch's results).
  std::vector<cf::Tensor> nan = {cf::Tensor::from_vector<double>({1, NAN}),
                                 cf::Tensor::from_vector<double>({2})};
  EXPECT_TRUE(std::isnan(cf::clip_by_global_norm(nan, 1.0)));
  EXPECT_TRUE(std::isnan(nan[1].at<double>({0})));
  std::vector<cf::Tensor> inf = {cf::Tensor::from_vector<double>({1, INFINITY})};
  EXPECT_TRUE(std::isinf(cf::clip_by_global_norm(inf, 1.0)));
  EXPECT_EQ(inf[0].at<double>({0}), 0.0);
  EXPECT_TRUE(std::isnan(inf[0].at<double>({1})));
  // Views are read through their strides.
  const cf::Tensor m = cf::Tensor::arange(6, cf::DType::kFloat64).reshape({2, 3});
  EXPECT_DOUBLE_EQ(cf::global_norm({m.transpose().slice(0, 1, 3)}), std::sqrt(1 + 4 + 16 + 25.));
  EXPECT_THROW(cf::clip_by_global_norm(grads, -1), cf::Error);
  EXPECT_THROW(cf::global_norm({cf::Tensor::from_vector<int32_t>({1})}), cf::TypeError);
}

TEST(OptimGrad, L2DecayAddsCoeffTimesParam) {
  cf::Tensor g = cf::Tensor::from_vector<float>({1, 2, 3});
  const cf::Tensor p = cf::Tensor::from_vector<float>({10, -20, 30});
  cf::l2_decay(g, p, 0.5);
  EXPECT_EQ(g.at<float>({0}), 6.0f);
  EXPECT_EQ(g.at<float>({1}), -8.0f);
  EXPECT_EQ(g.at<float>({2}), 18.0f);
  EXPECT_THROW(cf::l2_decay(g, p.cast(cf::DType::kFloat64), 0.5), cf::TypeError);
  EXPECT_THROW(cf::l2_decay(g, p, NAN), cf::Error);
}

// ---- contracts ----

TEST(OptimContract, ShapeAndDtypeErrorsNameTheArgument) {
  cf::Tensor p = cf::Tensor::zeros({2, 3}, cf::DType::kFloat32);
  cf::Tensor m = cf::Tensor::zeros({2, 3}, cf::DType::kFloat32), v = m.clone();
  const cf::Tensor g = m.clone();
  const cf::Tensor lr = cf::Tensor::scalar(0.1, cf::DType::kFloat32);
  cf::Tensor bad_shape = cf::Tensor::zeros({3, 2}, cf::DType::kFloat32);
  cf::Tensor bad_type = cf::Tensor::zeros({2, 3}, cf::DType::kFloat64);
  EXPECT_THROW(cf::adam_step(p, g, m, bad_shape, 1, lr, {}), cf::ShapeError);
  EXPECT_NE(error_of([&] { cf::adam_step(p, g, m, bad_shape, 1, lr, {}); }).find("adam_step: v"),
            std::string::npos);
  EXPECT_THROW(cf::adam_step(p, g, bad_type, v, 1, lr, {}), cf::TypeError);
  EXPECT_NE(error_of([&] { cf::adam_step(p, g, bad_type, v, 1, lr, {}); }).find("m has dtype"),
            std::string::npos);
  EXPECT_THROW(cf::paddle_sgd(p, bad_shape, lr), cf::ShapeError);
  EXPECT_NE(error_of([&] { cf::paddle_sgd(p, bad_shape, lr); }).find("Grad has shape (3, 2)"),
            std::string::npos);
  // The learning rate: one element, float.
  EXPECT_THROW(cf::paddle_sgd(p, g, cf::Tensor::zeros({2}, cf::DType::kFloat32)), cf::ShapeError);
  EXPECT_THROW(cf::paddle_sgd(p, g, cf::Tensor::scalar(1, cf::DType::kInt32)), cf::TypeError);
  EXPECT_NO_THROW(cf::paddle_sgd(p, g, cf::Tensor::full({1, 1}, 0.1, cf::DType::kFloat64)));
  // Parameters must be float32/float64.
  cf::Tensor pi = cf::Tensor::zeros({2}, cf::DType::kInt32);
  EXPECT_THROW(cf::paddle_sgd(pi, pi, lr), cf::TypeError);
  cf::Tensor ph = cf::Tensor::zeros({2}, cf::DType::kFloat16);
  EXPECT_THROW(cf::paddle_sgd(ph, ph, lr), cf::TypeError);
  // Hyperparameters.
  cf::Tensor buf;
  EXPECT_THROW(cf::sgd_step(p, g, &buf, lr, {.momentum = 0, .nesterov = true}), cf::Error);
  EXPECT_THROW(cf::sgd_step(p, g, nullptr, lr, {.momentum = 0.9}), cf::Error);
  EXPECT_THROW(cf::sgd_step(p, g, &buf, lr, {.momentum = -0.1}), cf::Error);
  EXPECT_THROW(cf::adam_step(p, g, m, v, 0, lr, {}), cf::Error);
  EXPECT_THROW(cf::adam_step(p, g, m, v, 1, lr, {.beta1 = 1.0}), cf::Error);
  EXPECT_THROW(cf::adam_step(p, g, m, v, 1, lr, {.eps = -1}), cf::Error);
  const cf::Tensor one = cf::Tensor::scalar(1, cf::DType::kFloat32);
  EXPECT_THROW(cf::paddle_adam(p, g, m, v, lr, one, one, 0.9, 0.999, 1e-8), cf::Error);
  EXPECT_THROW(cf::paddle_momentum(p, g, v, lr, NAN, false), cf::Error);
  // The same object for two mutated arguments.
  EXPECT_THROW(cf::adam_step(p, g, m, m, 1, lr, {}), cf::Error);
  EXPECT_THROW(cf::paddle_momentum(p, g, p, lr, 0.9, false), cf::Error);
  EXPECT_THROW(cf::paddle_sgd(p, g, cf::Tensor()), cf::Error);
}

TEST(OptimContract, CopyOnWriteAndAliasedGradient) {
  cf::Tensor p = cf::Tensor::from_vector<double>({1, 2, 3});
  const cf::Tensor keep = p;  // another handle: must keep the old values
  const cf::Tensor lr = cf::Tensor::scalar(0.5, cf::DType::kFloat64);
  cf::paddle_sgd(p, p, lr);  // grad is the parameter itself (read before the write)
  EXPECT_EQ(p.at<double>({2}), 1.5);
  EXPECT_EQ(keep.at<double>({2}), 3.0);
  // A non-contiguous gradient view.
  cf::Tensor q = cf::Tensor::zeros({3, 2}, cf::DType::kFloat64);
  const cf::Tensor gv = cf::Tensor::arange(6, cf::DType::kFloat64).reshape({2, 3}).transpose();
  cf::paddle_sgd(q, gv, lr);
  EXPECT_EQ(q.at<double>({2, 1}), -0.5 * 5);
  EXPECT_EQ(q.at<double>({0, 1}), -0.5 * 3);
}

TEST(OptimContract, NanAndInfPropagateElementwise) {
  cf::Tensor p = cf::Tensor::from_vector<float>({1, 2, 3, 4});
  cf::Tensor m = cf::Tensor::zeros({4}, cf::DType::kFloat32), v = m.clone();
  const cf::Tensor g = cf::Tensor::from_vector<float>({0.1f, NAN, INFINITY, -0.2f});
  cf::adam_step(p, g, m, v, 1, cf::Tensor::scalar(0.1, cf::DType::kFloat32), {});
  EXPECT_TRUE(std::isfinite(p.at<float>({0})));
  EXPECT_TRUE(std::isnan(p.at<float>({1})));
  EXPECT_TRUE(std::isnan(p.at<float>({2})));  // inf / inf
  EXPECT_TRUE(std::isinf(v.at<float>({2})));
  EXPECT_TRUE(std::isfinite(p.at<float>({3})));
  cf::Tensor q = cf::Tensor::from_vector<double>({1, 2});
  cf::Tensor buf;
  cf::sgd_step(q, cf::Tensor::from_vector<double>({NAN, 1}), &buf,
               cf::Tensor::scalar(0.1, cf::DType::kFloat64), {.momentum = 0.9});
  EXPECT_TRUE(std::isnan(q.at<double>({0})));
  EXPECT_DOUBLE_EQ(q.at<double>({1}), 1.9);
}

TEST(OptimContract, ChunkedRunsAreIdenticalAndCancelable) {
  const int64_t n = 10000;
  const cf::Tensor g = cf::uniform({n}, -1, 1, 3, cf::DType::kFloat64);
  const cf::Tensor p0 = cf::uniform({n}, -1, 1, 4, cf::DType::kFloat64);
  const cf::Tensor lr = cf::Tensor::scalar(0.01, cf::DType::kFloat64);
  cf::Tensor pa = p0.clone(), ma = cf::Tensor::zeros({n}, cf::DType::kFloat64), va = ma.clone();
  cf::adam_step(pa, g, ma, va, 1, lr, {});
  cf::Tensor pb = p0.clone(), mb = cf::Tensor::zeros({n}, cf::DType::kFloat64), vb = mb.clone();
  int calls = 0;
  cf::KernelOptions opts;
  opts.chunk_elements = 1000;
  opts.between_chunks = [&] { ++calls; };
  cf::adam_step(pb, g, mb, vb, 1, lr, {}, opts);
  EXPECT_EQ(calls, 9);
  EXPECT_TRUE(pa.equal_to(pb));
  EXPECT_TRUE(va.equal_to(vb));
  // Canceled after the first chunk: that chunk is updated, the rest untouched (documented).
  cf::Tensor pc = p0.clone(), mc = cf::Tensor::zeros({n}, cf::DType::kFloat64), vc = mc.clone();
  opts.between_chunks = [] { throw cf::CanceledError("canceled"); };
  EXPECT_THROW(cf::adam_step(pc, g, mc, vc, 1, lr, {}, opts), cf::CanceledError);
  EXPECT_EQ(pc.at<double>({999}), pa.at<double>({999}));
  EXPECT_EQ(pc.at<double>({1000}), p0.at<double>({1000}));
  EXPECT_EQ(mc.at<double>({1000}), 0.0);
  // Every update kernel and the clip accept the options.
  int sgd_calls = 0;
  opts.between_chunks = [&] { ++sgd_calls; };
  cf::Tensor ps = p0.clone(), buf;
  cf::sgd_step(ps, g, &buf, lr, {.momentum = 0.9}, opts);
  cf::paddle_sgd(ps, g, lr, opts);
  cf::paddle_momentum(ps, g, buf, lr, 0.9, true, opts);
  cf::paddle_adam(ps, g, ma, va, lr, lr, lr, 0.9, 0.999, 1e-8, opts);
  cf::paddle_adamax(ps, g, ma, va, lr, lr, 0.9, 0.999, 1e-8, opts);
  cf::paddle_rmsprop(ps, g, ma, va, lr, 0.9, 0.5, 1e-6, opts);
  std::vector<cf::Tensor> gs = {g};
  cf::clip_by_global_norm(gs, 1e-3, opts);
  cf::Tensor gd = g.clone();
  cf::l2_decay(gd, p0, 0.1, opts);
  EXPECT_EQ(sgd_calls, 8 * 9);
  // Chunked adamax and rmsprop equal their one-pass runs.
  for (int k = 0; k < 2; ++k) {
    cf::Tensor pw[2], mw[2], vw[2];
    for (int c = 0; c < 2; ++c) {
      pw[c] = p0.clone();
      mw[c] = cf::Tensor::zeros({n}, cf::DType::kFloat64);
      vw[c] = cf::Tensor::zeros({n}, cf::DType::kFloat64);
      const cf::KernelOptions o = c == 0 ? cf::KernelOptions{} : opts;
      if (k == 0) {
        cf::paddle_adamax(pw[c], g, mw[c], vw[c], lr, lr, 0.9, 0.999, 1e-8, o);
      } else {
        cf::paddle_rmsprop(pw[c], g, mw[c], vw[c], lr, 0.9, 0.5, 1e-6, o);
      }
    }
    EXPECT_TRUE(pw[0].equal_to(pw[1])) << k;
    EXPECT_TRUE(vw[0].equal_to(vw[1])) << k;
  }
}

// ---- initialisers ----
struct Stats {
  double mean, std, min, max;
};
Stats stats_of(const cf::Tensor& t) {
  const cf::Tensor d = t.cast(cf::DType::kFloat64);
  const double* p = d.data<double>();
  const int64_t n = d.numel();
  double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    s += p[i];
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  const double mean = s / static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) s2 += (p[i] - mean) * (p[i] - mean);
  return {mean, std::sqrt(s2 / static_cast<double>(n - 1)), lo, hi};
}

// Uniform in [-limit, limit): bounded, reaching near both ends, std limit / sqrt(3).
void expect_uniform(const cf::Tensor& t, double limit, const std::string& what) {
  const Stats s = stats_of(t);
  const double n = static_cast<double>(t.numel());
  EXPECT_GE(s.min, -limit) << what;
  EXPECT_LT(s.max, limit) << what;
  EXPECT_LT(s.min, -0.99 * limit) << what;
  EXPECT_GT(s.max, 0.99 * limit) << what;
  EXPECT_NEAR(s.std, limit / std::sqrt(3.0), 0.03 * limit / std::sqrt(3.0)) << what;
  EXPECT_NEAR(s.mean, 0.0, 5 * limit / std::sqrt(3 * n)) << what;
}
void expect_normal(const cf::Tensor& t, double mean, double std, const std::string& what) {
  const Stats s = stats_of(t);
  const double n = static_cast<double>(t.numel());
  EXPECT_NEAR(s.std, std, 0.03 * std) << what;
  EXPECT_NEAR(s.mean, mean, 5 * std / std::sqrt(n)) << what;
  EXPECT_GT(s.max - mean, 3 * std) << what;  // tails exist: not a uniform of the same std
}

TEST(OptimInit, PaddleFans) {
  auto fans = [](const cf::Shape& s) {
    const cf::Fans f = cf::compute_fans(s);
    return std::make_pair(f.fan_in, f.fan_out);
  };
  EXPECT_EQ(fans({}), std::make_pair(1.0, 1.0));
  EXPECT_EQ(fans({7}), std::make_pair(7.0, 7.0));
  EXPECT_EQ(fans({20, 30}), std::make_pair(20.0, 30.0));                // fc: [in, out]
  EXPECT_EQ(fans({64, 3, 7, 5}), std::make_pair(3.0 * 35, 64.0 * 35));  // conv: [M, C, kh, kw]
  EXPECT_EQ(fans({8, 4, 3}), std::make_pair(12.0, 24.0));
  EXPECT_THROW(cf::compute_fans({2, -1}), cf::ShapeError);
}

TEST(OptimInit, XavierAndMsraStatistics) {
  // fc weight [in=200, out=300].
  expect_uniform(cf::xavier_init({200, 300}, true, 1), std::sqrt(6.0 / 500), "xavier uniform fc");
  expect_normal(cf::xavier_init({200, 300}, false, 2, cf::DType::kFloat64), 0, std::sqrt(2.0 / 500),
                "xavier normal fc");
  expect_uniform(cf::msra_init({200, 300}, true, 3), std::sqrt(6.0 / 200), "msra uniform fc");
  expect_normal(cf::msra_init({200, 300}, false, 4), 0, std::sqrt(2.0 / 200), "msra normal fc");
  // conv filter [M=64, C=3, 7, 7]: fan_in 147, fan_out 3136.
  expect_uniform(cf::xavier_init({64, 3, 7, 7}, true, 5), std::sqrt(6.0 / (147 + 3136)),
                 "xavier uniform conv");
  expect_normal(cf::msra_init({64, 3, 7, 7}, false, 6), 0, std::sqrt(2.0 / 147),
                "msra normal conv");
  // Explicit fans override the shape's.
  expect_uniform(cf::xavier_init({100, 100}, true, 7, cf::DType::kFloat32, 10.0, 20.0),
                 std::sqrt(6.0 / 30), "xavier explicit fans");
  expect_normal(cf::msra_init({100, 100}, false, 8, cf::DType::kFloat32, 50.0), 0,
                std::sqrt(2.0 / 50), "msra explicit fan_in");
  EXPECT_EQ(cf::xavier_init({0, 5}, true, 1).numel(), 0);
  EXPECT_EQ(cf::msra_init({4, 0, 3, 3}, false, 1).numel(), 0);
  EXPECT_THROW(cf::xavier_init({4, 4}, true, 1, cf::DType::kFloat32, 0.0, 0.0), cf::Error);
  EXPECT_THROW(cf::msra_init({4, 4}, true, 1, cf::DType::kFloat32, -3.0), cf::Error);
  EXPECT_THROW(cf::msra_init({4, 4}, true, 1, cf::DType::kInt32), cf::TypeError);
}

TEST(OptimInit, RandomOpsStatisticsAndErrors) {
  expect_uniform(
      cf::add(cf::uniform_random({50000}, -2, 4, 9), cf::Tensor::scalar(-1, cf::DType::kFloat32)),
      3.0, "uniform_random(-2, 4) shifted by -1");
  expect_normal(cf::gaussian_random({50000}, 3.0, 0.5, 10, cf::DType::kFloat64), 3.0, 0.5,
                "gaussian_random(3, 0.5)");
  const cf::Tensor c = cf::fill_constant({2, 3}, 2.5, cf::DType::kFloat64);
  EXPECT_EQ(c.at<double>({1, 2}), 2.5);
  EXPECT_EQ(cf::fill_constant({3}, 7.9, cf::DType::kInt32).at<int32_t>({0}), 7);
  EXPECT_EQ(cf::uniform_random({4}, 1, 1, 0).at<float>({3}), 1.0f);  // min == max is allowed
  EXPECT_THROW(cf::uniform_random({4}, 2, 1, 0), cf::Error);
  EXPECT_THROW(cf::uniform_random({4}, 0, INFINITY, 0), cf::Error);
  EXPECT_THROW(cf::gaussian_random({4}, 0, -1, 0), cf::Error);
  EXPECT_THROW(cf::gaussian_random({4}, NAN, 1, 0), cf::Error);
  EXPECT_THROW(cf::uniform_random({-1}, 0, 1, 0), cf::ShapeError);
  EXPECT_THROW(cf::fill_constant({2, -3}, 0), cf::ShapeError);
  EXPECT_THROW(cf::gaussian_random({4}, 0, 1, 0, cf::DType::kBool), cf::TypeError);
}

TEST(OptimInit, SeedDeterminism) {
  const cf::Tensor a = cf::xavier_init({64, 3, 3, 3}, true, 42);
  EXPECT_TRUE(a.equal_to(cf::xavier_init({64, 3, 3, 3}, true, 42)));
  EXPECT_FALSE(a.equal_to(cf::xavier_init({64, 3, 3, 3}, true, 43)));
  const cf::Tensor b = cf::gaussian_random({1000}, 0, 1, 5, cf::DType::kFloat64);
  EXPECT_TRUE(b.equal_to(cf::gaussian_random({1000}, 0, 1, 5, cf::DType::kFloat64)));
  // Pinned values: the generator is fully specified (random.h), so these are the same on every
  // platform; a changed transform fails here. uniform = low + span * (bits >> 11) * 2^-53 of
  // std::mt19937_64(seed); its 10000th output for the default seed is fixed by the standard.
  std::mt19937_64 check;
  check.discard(9999);
  EXPECT_EQ(check(), 9981545732273789042ULL);
  std::mt19937_64 g(7);
  const double want0 = -1.0 + 2.0 * static_cast<double>(g() >> 11) * 0x1.0p-53;
  const double want1 = -1.0 + 2.0 * static_cast<double>(g() >> 11) * 0x1.0p-53;
  const cf::Tensor u = cf::uniform_random({2}, -1, 1, 7, cf::DType::kFloat64);
  EXPECT_EQ(u.at<double>({0}), want0);
  EXPECT_EQ(u.at<double>({1}), want1);
}

}  // namespace
