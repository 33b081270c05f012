// The neural-network kernels of nn.h against references written here: naive double loops for the
// forward kernels, central finite differences in float64 for every gradient, the documented
// SplitMix64 rule for dropout's mask, plus error cases, NaN propagation and cancellation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

std::vector<double> vals(const Tensor& t) {
  const Tensor d = t.cast(DType::kFloat64);
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

std::vector<int64_t> ivals(const Tensor& t) {
  const Tensor d = t.cast(DType::kInt64);
  const int64_t* p = d.data<int64_t>();
  return std::vector<int64_t>(p, p + d.numel());
}

Tensor f64(const std::vector<double>& v, const cf::Shape& s) { return Tensor::from_vector(v, s); }

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
  }
}

double dot(const Tensor& a, const Tensor& w) {
  const auto x = vals(a);
  const auto y = vals(w);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// Central differences of f at x (float64), one element at a time.
std::vector<double> numeric_grad(const Tensor& x, const std::function<double(const Tensor&)>& f,
                                 double h = 1e-6) {
  std::vector<double> g(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Tensor xp = x.clone();
    Tensor xm = x.clone();
    xp.data<double>()[i] += h;
    xm.data<double>()[i] -= h;
    g[static_cast<size_t>(i)] = (f(xp) - f(xm)) / (2 * h);
  }
  return g;
}

template <class Fn>
void expect_throw_with(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing \"" << needle << "\"";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// ---- batch norm reference ----

struct BnRef {
  std::vector<double> y, mean, var, inv_std;
};

int64_t channel_of(const cf::Shape& s, int64_t i, cf::DataLayout layout) {
  const int64_t C = layout == cf::DataLayout::kNCHW ? s[1] : s.back();
  if (layout == cf::DataLayout::kNHWC) return i % C;
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  return (i / inner) % C;
}

BnRef bn_reference(const std::vector<double>& x, const cf::Shape& s, const std::vector<double>& sc,
                   const std::vector<double>& bi, double eps, cf::DataLayout layout) {
  const size_t C = sc.size();
  BnRef r;
  r.mean.assign(C, 0);
  r.var.assign(C, 0);
  std::vector<double> count(C, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(channel_of(s, static_cast<int64_t>(i), layout));
    r.mean[c] += x[i];
    count[c] += 1;
  }
  for (size_t c = 0; c < C; ++c) r.mean[c] /= count[c];
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(channel_of(s, static_cast<int64_t>(i), layout));
    r.var[c] += (x[i] - r.mean[c]) * (x[i] - r.mean[c]);
  }
  for (size_t c = 0; c < C; ++c) {
    r.var[c] /= count[c];
    r.inv_std.push_back(1.0 / std::sqrt(r.var[c] + eps));
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>(channel_of(s, static_cast<int64_t>(i), layout));
    r.y.push_back((x[i] - r.mean[c]) * r.inv_std[c] * sc[c] + bi[c]);
  }
  return r;
}

struct BnCase {
  cf::Shape shape;
  cf::DataLayout layout;
};

const std::vector<BnCase> kBnCases = {
    {{4, 3, 5, 6}, cf::DataLayout::kNCHW}, {{4, 5, 6, 3}, cf::DataLayout::kNHWC},
    {{7, 3}, cf::DataLayout::kNCHW},       {{7, 3}, cf::DataLayout::kNHWC},
    {{2, 3, 4}, cf::DataLayout::kNCHW},    {{2, 2, 3, 2, 3}, cf::DataLayout::kNHWC}};

int64_t channels(const BnCase& bc) {
  return bc.layout == cf::DataLayout::kNCHW ? bc.shape[1] : bc.shape.back();
}

TEST(NnBatchNorm, TrainMatchesNaiveReferenceBothLayoutsAndDtypes) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64}) {
    for (const BnCase& bc : kBnCases) {
      const int64_t C = channels(bc);
      // An offset mean (5) tests the one-pass variance against cancellation.
      const Tensor x = cf::uniform(bc.shape, 4, 6, 11, dt);
      const Tensor sc = cf::uniform({C}, 0.5, 2, 12, dt);
      const Tensor bi = cf::uniform({C}, -1, 1, 13, dt);
      const Tensor rm = cf::uniform({C}, -1, 1, 14, dt);
      const Tensor rv = cf::uniform({C}, 0.5, 2, 15, dt);
      const float mom = 0.9f;
      const float eps = 1e-5f;
      const auto r = cf::batch_norm_train(x, sc, bi, rm, rv, mom, eps, bc.layout);
      const BnRef ref = bn_reference(vals(x), bc.shape, vals(sc), vals(bi), eps, bc.layout);
      const double tol = dt == DType::kFloat32 ? 2e-5 : 1e-11;
      const std::string what =
          cf::shape_to_string(bc.shape) + " " + std::string(cf::dtype_name(dt));
      EXPECT_EQ(r.y.shape(), bc.shape);
      EXPECT_EQ(r.y.dtype(), dt);
      expect_close(vals(r.y), ref.y, tol * 10, what + " y");
      expect_close(vals(r.saved_mean), ref.mean, tol, what + " saved_mean");
      expect_close(vals(r.saved_variance), ref.inv_std, tol, what + " saved_variance");
      std::vector<double> want_rm, want_rv;
      const auto rmv = vals(rm);
      const auto rvv = vals(rv);
      for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
        want_rm.push_back(rmv[c] * mom + ref.mean[c] * (1 - mom));
        want_rv.push_back(rvv[c] * mom + ref.var[c] * (1 - mom));  // biased batch variance
      }
      expect_close(vals(r.mean_out), want_rm, tol, what + " mean_out");
      expect_close(vals(r.variance_out), want_rv, tol, what + " variance_out");
    }
  }
}

TEST(NnBatchNorm, StridedInputMatchesContiguous) {
  const Tensor base = cf::uniform({6, 5, 3, 4}, -1, 1, 21, DType::kFloat64);
  const Tensor x = base.transpose({0, 2, 1, 3});  // (6, 3, 5, 4) view, not contiguous
  ASSERT_FALSE(x.is_contiguous());
  const Tensor c1 = Tensor::ones({3}, DType::kFloat64);
  const Tensor c0 = Tensor::zeros({3}, DType::kFloat64);
  const auto a = cf::batch_norm_train(x, c1, c0, c0, c1, 0.9f, 1e-5f, cf::DataLayout::kNCHW);
  const auto b =
      cf::batch_norm_train(x.contiguous(), c1, c0, c0, c1, 0.9f, 1e-5f, cf::DataLayout::kNCHW);
  expect_close(vals(a.y), vals(b.y), 1e-12, "y");
  const BnRef ref =
      bn_reference(vals(x), x.shape(), vals(c1), vals(c0), 1e-5, cf::DataLayout::kNCHW);
  expect_close(vals(a.y), ref.y, 1e-10, "y vs reference");
}

TEST(NnBatchNorm, InferMatchesNaiveReference) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64}) {
    for (const BnCase& bc : kBnCases) {
      const int64_t C = channels(bc);
      const Tensor x = cf::uniform(bc.shape, -3, 3, 31, dt);
      const Tensor sc = cf::uniform({C}, 0.5, 2, 32, dt);
      const Tensor bi = cf::uniform({C}, -1, 1, 33, dt);
      const Tensor mu = cf::uniform({C}, -1, 1, 34, dt);
      const Tensor va = cf::uniform({C}, 0.5, 2, 35, dt);
      const Tensor y = cf::batch_norm_infer(x, sc, bi, mu, va, 1e-3f, bc.layout);
      const auto xv = vals(x), s = vals(sc), b = vals(bi), m = vals(mu), v = vals(va);
      std::vector<double> want;
      for (size_t i = 0; i < xv.size(); ++i) {
        const auto c =
            static_cast<size_t>(channel_of(bc.shape, static_cast<int64_t>(i), bc.layout));
        want.push_back((xv[i] - m[c]) / std::sqrt(v[c] + static_cast<double>(1e-3f)) * s[c] + b[c]);
      }
      expect_close(vals(y), want, dt == DType::kFloat32 ? 1e-5 : 1e-12, "infer");
    }
  }
}

TEST(NnBatchNorm, GradientsMatchFiniteDifferences) {
  for (const BnCase& bc : kBnCases) {
    const int64_t C = channels(bc);
    const Tensor x = cf::uniform(bc.shape, -2, 2, 41, DType::kFloat64);
    const Tensor sc = cf::uniform({C}, 0.5, 2, 42, DType::kFloat64);
    const Tensor bi = cf::uniform({C}, -1, 1, 43, DType::kFloat64);
    const Tensor rm = Tensor::zeros({C}, DType::kFloat64);
    const Tensor rv = Tensor::ones({C}, DType::kFloat64);
    const Tensor w = cf::uniform(bc.shape, -1, 1, 44, DType::kFloat64);
    const float eps = 1e-4f;
    auto loss = [&](const Tensor& xx, const Tensor& ss, const Tensor& bb) {
      return dot(cf::batch_norm_train(xx, ss, bb, rm, rv, 0.9f, eps, bc.layout).y, w);
    };
    const auto fwd = cf::batch_norm_train(x, sc, bi, rm, rv, 0.9f, eps, bc.layout);
    const auto g =
        cf::batch_norm_grad(x, sc, fwd.saved_mean, fwd.saved_variance, w, eps, bc.layout);
    const std::string what = cf::shape_to_string(bc.shape);
    expect_close(vals(g.grad_x), numeric_grad(x, [&](const Tensor& t) { return loss(t, sc, bi); }),
                 1e-6, what + " grad_x");
    expect_close(vals(g.grad_scale),
                 numeric_grad(sc, [&](const Tensor& t) { return loss(x, t, bi); }), 1e-6,
                 what + " grad_scale");
    expect_close(vals(g.grad_bias),
                 numeric_grad(bi, [&](const Tensor& t) { return loss(x, sc, t); }), 1e-6,
                 what + " grad_bias");
  }
}

TEST(NnBatchNorm, SingleElementPerChannelCopiesAsPaddle) {
  const Tensor x = f64({1, 2, 3}, {1, 3});
  const Tensor c1 = Tensor::full({3}, 2, DType::kFloat64);
  const Tensor c0 = Tensor::full({3}, 0.5, DType::kFloat64);
  const auto r = cf::batch_norm_train(x, c1, c0, c0, c1, 0.9f, 1e-5f, cf::DataLayout::kNCHW);
  EXPECT_EQ(vals(r.y), vals(x));
  EXPECT_EQ(vals(r.mean_out), vals(c0));
  EXPECT_EQ(vals(r.variance_out), vals(c1));
  EXPECT_EQ(vals(r.saved_mean), std::vector<double>(3, 0.0));
  const auto g =
      cf::batch_norm_grad(x, c1, r.saved_mean, r.saved_variance, x, 1e-5f, cf::DataLayout::kNCHW);
  EXPECT_EQ(vals(g.grad_x), vals(x));
  EXPECT_EQ(vals(g.grad_bias), std::vector<double>(3, 0.0));
}

TEST(NnBatchNorm, NanPropagatesToItsChannel) {
  Tensor x = cf::uniform({4, 2, 3}, -1, 1, 51, DType::kFloat32);
  x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();  // channel 0
  const Tensor c1 = Tensor::ones({2}, DType::kFloat32);
  const Tensor c0 = Tensor::zeros({2}, DType::kFloat32);
  const auto r = cf::batch_norm_train(x, c1, c0, c0, c1, 0.9f, 1e-5f, cf::DataLayout::kNCHW);
  const auto y = vals(r.y);
  EXPECT_TRUE(std::isnan(y[1]));   // channel 0
  EXPECT_FALSE(std::isnan(y[3]));  // channel 1
  EXPECT_TRUE(std::isnan(vals(r.mean_out)[0]));
  EXPECT_FALSE(std::isnan(vals(r.mean_out)[1]));
  const Tensor yi = cf::batch_norm_infer(x, c1, c0, c0, c1, 1e-5f, cf::DataLayout::kNCHW);
  EXPECT_TRUE(std::isnan(vals(yi)[0]));
  EXPECT_FALSE(std::isnan(vals(yi)[1]));
}

TEST(NnBatchNorm, BadArgumentsThrowTypedErrorsNamingTheArgument) {
  const Tensor x = Tensor::zeros({2, 3, 4}, DType::kFloat32);
  const Tensor c = Tensor::ones({3}, DType::kFloat32);
  const auto L = cf::DataLayout::kNCHW;
  EXPECT_THROW(
      cf::batch_norm_train(Tensor::zeros({3}, DType::kFloat32), c, c, c, c, 0.9f, 1e-5f, L),
      cf::ShapeError);
  expect_throw_with(
      [&] { cf::batch_norm_train(x, Tensor::ones({4}, DType::kFloat32), c, c, c, 0.9f, 1e-5f, L); },
      "scale");
  EXPECT_THROW(cf::batch_norm_train(x, c, Tensor::ones({3}, DType::kFloat64), c, c, 0.9f, 1e-5f, L),
               cf::TypeError);
  expect_throw_with([&] { cf::batch_norm_train(x, c, c, c, c, 0.9f, -1.0f, L); }, "epsilon");
  EXPECT_THROW(cf::batch_norm_train(x.cast(DType::kInt32), c, c, c, c, 0.9f, 1e-5f, L),
               cf::TypeError);
  expect_throw_with(
      [&] { cf::batch_norm_infer(x, c, c, c, Tensor::ones({2}, DType::kFloat32), 1e-5f, L); },
      "variance");
  expect_throw_with([&] { cf::parse_data_layout("NDHW"); }, "data_layout");
  EXPECT_EQ(cf::parse_data_layout("NHWC"), cf::DataLayout::kNHWC);
  expect_throw_with(
      [&] {
        cf::batch_norm_grad(x, c, c, c, Tensor::zeros({2, 3, 5}, DType::kFloat32), 1e-5f, L);
      },
      "grad_y");
}

// ---- dropout ----

uint64_t ref_splitmix(uint64_t seed, uint64_t i) {
  uint64_t state = seed;
  uint64_t z = 0;
  for (uint64_t k = 0; k <= i; ++k) {  // the generator stepped i + 1 times
    state += 0x9E3779B97F4A7C15ull;
    z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
  }
  return z;
}

TEST(NnDropout, MaskFollowsTheDocumentedSplitMix64Rule) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64}) {
    const Tensor x = cf::uniform({301}, 1, 2, 61, dt);
    const float p = 0.4f;
    const uint64_t seed = 1234567;
    const auto r = cf::dropout(x, p, false, seed);
    const auto m = vals(r.mask);
    const auto o = vals(r.out);
    const auto xv = vals(x);
    for (size_t i = 0; i < m.size(); ++i) {
      // Element i: the low (even i) or high (odd i) 32 bits of output i / 2, as a fraction of 2^32.
      const uint64_t h = ref_splitmix(seed, i / 2);
      const double u = static_cast<double>(i % 2 == 0 ? h & 0xFFFFFFFFull : h >> 32) * 0x1p-32;
      const double want = u < static_cast<double>(p) ? 0.0 : 1.0;
      ASSERT_EQ(m[i], want) << i;
      ASSERT_EQ(o[i], xv[i] * want) << i;  // no rescaling
    }
    EXPECT_EQ(r.mask.dtype(), dt);
    EXPECT_EQ(r.out.shape(), x.shape());
  }
}

TEST(NnDropout, DeterministicForASeedWhateverTheChunking) {
  const Tensor x = cf::uniform({64, 1000}, -1, 1, 62, DType::kFloat64);
  const auto a = cf::dropout(x, 0.5f, false, 99);
  cf::KernelOptions o;
  int calls = 0;
  o.between_chunks = [&] { ++calls; };
  o.chunk_elements = 777;
  const auto b = cf::dropout(x, 0.5f, false, 99, o);
  EXPECT_GT(calls, 10);
  EXPECT_TRUE(a.mask.equal_to(b.mask));
  EXPECT_TRUE(a.out.equal_to(b.out));
  const auto c = cf::dropout(x, 0.5f, false, 100);
  EXPECT_FALSE(a.mask.equal_to(c.mask));
  // A strided view drops the same row-major positions as its contiguous copy.
  const Tensor t = x.transpose();
  const auto d = cf::dropout(t, 0.5f, false, 99);
  const auto e = cf::dropout(t.contiguous(), 0.5f, false, 99);
  EXPECT_TRUE(d.mask.equal_to(e.mask));
}

TEST(NnDropout, KeepRateMatchesOneMinusProb) {
  const int64_t n = 1 << 20;
  const Tensor x = Tensor::ones({n}, DType::kFloat32);
  for (const float p : {0.1f, 0.5f, 0.9f}) {
    const auto r = cf::dropout(x, p, false, 7);
    const auto m = vals(r.mask);
    const double kept = std::accumulate(m.begin(), m.end(), 0.0) / static_cast<double>(n);
    const double sd = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(kept, 1.0 - p, 5 * sd) << p;
    // Neighbours are independent: P(both kept) ~ (1 - p)^2.
    double both = 0;
    for (size_t i = 0; i + 1 < m.size(); i += 2) both += m[i] * m[i + 1];
    EXPECT_NEAR(both / (n / 2), (1 - p) * (1 - p), 6 * std::sqrt(0.25 / (n / 2))) << p;
  }
  EXPECT_EQ(vals(cf::dropout(x, 0.0f, false, 1).mask), std::vector<double>(n, 1.0));
  EXPECT_EQ(vals(cf::dropout(x, 1.0f, false, 1).out), std::vector<double>(n, 0.0));
}

TEST(NnDropout, InferenceScalesByOneMinusProbAndNoMask) {
  const Tensor x = cf::uniform({5, 7}, -1, 1, 63, DType::kFloat64);
  const auto r = cf::dropout(x, 0.3f, true, 1);
  EXPECT_FALSE(r.mask.defined());
  std::vector<double> want;
  for (double v : vals(x)) want.push_back(v * static_cast<double>(1.0f - 0.3f));
  EXPECT_EQ(vals(r.out), want);
}

TEST(NnDropout, GradIsGradTimesMaskAndBadProbIsAnError) {
  const Tensor x = cf::uniform({40}, -1, 1, 64, DType::kFloat64);
  const auto r = cf::dropout(x, 0.5f, false, 3);
  const Tensor g = cf::uniform({40}, -1, 1, 65, DType::kFloat64);
  const auto gx = vals(cf::dropout_grad(g, r.mask));
  const auto gv = vals(g), mv = vals(r.mask);
  for (size_t i = 0; i < gx.size(); ++i) EXPECT_EQ(gx[i], gv[i] * mv[i]);
  expect_throw_with([&] { cf::dropout(x, 1.5f, false, 1); }, "dropout_prob");
  expect_throw_with([&] { cf::dropout(x, -0.1f, true, 1); }, "dropout_prob");
  expect_throw_with([&] { cf::dropout(x, std::nanf(""), false, 1); }, "dropout_prob");
  EXPECT_THROW(cf::dropout_grad(g, Tensor::ones({41}, DType::kFloat64)), cf::ShapeError);
}

// ---- cross entropy ----

TEST(NnCrossEntropy, HardAndSoftMatchNaiveReference) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64}) {
    const Tensor x = cf::uniform({2, 3, 5}, 0.05, 1, 71, dt);
    const Tensor label = Tensor::from_vector<int64_t>({0, 4, -100, 2, 1, 3}, {2, 3, 1});
    const Tensor loss = cf::cross_entropy(x, label, false, -100);
    EXPECT_EQ(loss.shape(), (cf::Shape{2, 3, 1}));
    const auto xv = vals(x);
    const auto lv = ivals(label);
    std::vector<double> want;
    for (size_t r = 0; r < 6; ++r) {
      want.push_back(lv[r] == -100 ? 0.0 : -std::log(xv[r * 5 + static_cast<size_t>(lv[r])]));
    }
    expect_close(vals(loss), want, 1e-6, "hard");
    const Tensor soft = cf::uniform({2, 3, 5}, 0, 1, 72, dt);
    const auto sv = vals(soft);
    std::vector<double> want_s;
    for (size_t r = 0; r < 6; ++r) {
      double s = 0;
      for (size_t j = 0; j < 5; ++j) s -= sv[r * 5 + j] * std::log(xv[r * 5 + j]);
      want_s.push_back(s);
    }
    expect_close(vals(cf::cross_entropy(x, soft, true)), want_s, 1e-6, "soft");
  }
}

TEST(NnCrossEntropy, ZeroProbabilityIsToleratedAsPaddle) {
  const Tensor x = f64({0.0, 1.0}, {1, 2});
  EXPECT_EQ(vals(cf::cross_entropy(x, Tensor::from_vector<int64_t>({0}, {1, 1})))[0], 1e20);
  // Soft label 0 on the zero probability: 0 * -1e20, not 0 * -inf = NaN.
  EXPECT_EQ(vals(cf::cross_entropy(x, f64({0.0, 1.0}, {1, 2}), true))[0], 0.0);
  // NaN passes.
  EXPECT_TRUE(std::isnan(vals(
      cf::cross_entropy(f64({NAN, 1.0}, {1, 2}), Tensor::from_vector<int64_t>({0}, {1, 1})))[0]));
}

TEST(NnCrossEntropy, LabelOutOfRangeNamesValueAndRow) {
  const Tensor x = cf::uniform({3, 4}, 0.1, 1, 73, DType::kFloat32);
  expect_throw_with(
      [&] {
        cf::cross_entropy(x, Tensor::from_vector<int64_t>({0, 1, 4}, {3, 1}));
      },
      "label 4 of row 2");
  expect_throw_with(
      [&] {
        cf::cross_entropy(x, Tensor::from_vector<int64_t>({0, -1, 1}, {3, 1}));
      },
      "label -1 of row 1");
  expect_throw_with(
      [&] {
        cf::cross_entropy_grad(x, Tensor::from_vector<int64_t>({0, 1, 7}, {3, 1}),
                               Tensor::ones({3, 1}, DType::kFloat32));
      },
      "label 7 of row 2");
  EXPECT_THROW(cf::cross_entropy(x, Tensor::zeros({3}, DType::kInt64)), cf::ShapeError);
  EXPECT_THROW(cf::cross_entropy(x, Tensor::zeros({3, 1}, DType::kInt32)), cf::TypeError);
  EXPECT_THROW(cf::cross_entropy(x, Tensor::zeros({3, 4}, DType::kFloat64), true), cf::TypeError);
  // ignore_index other than the default.
  EXPECT_EQ(
      vals(cf::cross_entropy(x, Tensor::from_vector<int64_t>({0, 5, 1}, {3, 1}), false, 5))[1],
      0.0);
}

TEST(NnCrossEntropy, GradientsMatchFiniteDifferences) {
  const Tensor x = cf::uniform({4, 6}, 0.2, 1, 74, DType::kFloat64);
  const Tensor w = cf::uniform({4, 1}, -1, 1, 75, DType::kFloat64);
  const Tensor hard = Tensor::from_vector<int64_t>({5, -100, 0, 3}, {4, 1});
  const Tensor soft = cf::uniform({4, 6}, 0, 1, 76, DType::kFloat64);
  expect_close(vals(cf::cross_entropy_grad(x, hard, w)),
               numeric_grad(x, [&](const Tensor& t) { return dot(cf::cross_entropy(t, hard), w); }),
               1e-6, "hard");
  expect_close(
      vals(cf::cross_entropy_grad(x, soft, w, true)),
      numeric_grad(x, [&](const Tensor& t) { return dot(cf::cross_entropy(t, soft, true), w); }),
      1e-6, "soft");
}

// ---- softmax with cross entropy ----

TEST(NnSoftmaxWithCrossEntropy, MatchesNaiveLogSumExpReference) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64}) {
    const Tensor logits = cf::uniform({3, 2, 7}, -5, 5, 81, dt);
    const Tensor label = Tensor::from_vector<int64_t>({0, 6, 3, -100, 2, 5}, {3, 2, 1});
    const auto r = cf::softmax_with_cross_entropy(logits, label);
    const auto xv = vals(logits);
    const auto lv = ivals(label);
    std::vector<double> want_sm, want_loss;
    for (size_t row = 0; row < 6; ++row) {
      double m = -INFINITY;
      for (size_t j = 0; j < 7; ++j) m = std::max(m, xv[row * 7 + j]);
      double s = 0;
      for (size_t j = 0; j < 7; ++j) s += std::exp(xv[row * 7 + j] - m);
      for (size_t j = 0; j < 7; ++j) want_sm.push_back(std::exp(xv[row * 7 + j] - m) / s);
      want_loss.push_back(
          lv[row] == -100 ? 0.0 : m + std::log(s) - xv[row * 7 + static_cast<size_t>(lv[row])]);
    }
    const double tol = dt == DType::kFloat32 ? 1e-5 : 1e-12;
    expect_close(vals(r.softmax), want_sm, tol, "softmax");
    expect_close(vals(r.loss), want_loss, tol, "loss");
    EXPECT_EQ(r.loss.shape(), (cf::Shape{3, 2, 1}));
    // Soft labels.
    const Tensor soft = cf::softmax(cf::uniform({3, 2, 7}, -1, 1, 82, dt), -1);
    const auto sv = vals(soft);
    std::vector<double> want_soft;
    for (size_t row = 0; row < 6; ++row) {
      double acc = 0;
      for (size_t j = 0; j < 7; ++j) acc -= sv[row * 7 + j] * std::log(want_sm[row * 7 + j]);
      want_soft.push_back(acc);
    }
    expect_close(vals(cf::softmax_with_cross_entropy(logits, soft, true).loss), want_soft, tol * 10,
                 "soft loss");
  }
}

TEST(NnSoftmaxWithCrossEntropy, LargeLogitsStayFiniteAndClipAtMinus64AsPaddle) {
  const Tensor logits = Tensor::from_vector<float>({1000.0f, 0.0f, 999.0f}, {1, 3});
  const auto r = cf::softmax_with_cross_entropy(logits, Tensor::from_vector<int64_t>({2}, {1, 1}));
  // log(1 + e^-1 + e^-64) + 1.
  EXPECT_NEAR(vals(r.loss)[0], std::log(1 + std::exp(-1.0) + std::exp(-64.0)) + 1, 1e-5);
  // The logit 1000 below the maximum is clipped to -64: its probability is e^-64 / sum, not 0.
  const auto sm = vals(r.softmax);
  EXPECT_NEAR(sm[1] / std::exp(-64.0), 1 / (1 + std::exp(-1.0) + std::exp(-64.0)), 1e-5);
  const auto r2 = cf::softmax_with_cross_entropy(logits, Tensor::from_vector<int64_t>({1}, {1, 1}));
  EXPECT_NEAR(vals(r2.loss)[0], 64 + std::log(1 + std::exp(-1.0) + std::exp(-64.0)), 1e-4);
  // NaN in a row makes that row NaN only.
  const Tensor with_nan = Tensor::from_vector<double>({1, NAN, 2, 1, 2, 3}, {2, 3});
  const auto r3 =
      cf::softmax_with_cross_entropy(with_nan, Tensor::from_vector<int64_t>({0, 0}, {2, 1}));
  EXPECT_TRUE(std::isnan(vals(r3.loss)[0]));
  EXPECT_FALSE(std::isnan(vals(r3.loss)[1]));
}

TEST(NnSoftmaxWithCrossEntropy, GradientsMatchFiniteDifferences) {
  const Tensor logits = cf::uniform({5, 4}, -3, 3, 83, DType::kFloat64);
  const Tensor w = cf::uniform({5, 1}, -1, 1, 84, DType::kFloat64);
  const Tensor hard = Tensor::from_vector<int64_t>({3, 0, -100, 1, 2}, {5, 1});
  const Tensor soft = cf::softmax(cf::uniform({5, 4}, -1, 1, 85, DType::kFloat64), -1);
  for (const bool is_soft : {false, true}) {
    const Tensor& label = is_soft ? soft : hard;
    const auto fwd = cf::softmax_with_cross_entropy(logits, label, is_soft);
    const Tensor g = cf::softmax_with_cross_entropy_grad(fwd.softmax, label, w, is_soft);
    const auto num = numeric_grad(logits, [&](const Tensor& t) {
      return dot(cf::softmax_with_cross_entropy(t, label, is_soft).loss, w);
    });
    expect_close(vals(g), num, 1e-6, is_soft ? "soft" : "hard");
  }
  const auto fwd = cf::softmax_with_cross_entropy(logits, hard);
  const auto g = vals(cf::softmax_with_cross_entropy_grad(fwd.softmax, hard, w));
  for (size_t j = 8; j < 12; ++j) EXPECT_EQ(g[j], 0.0);  // the ignored row
}

// ---- top_k and accuracy ----

TEST(NnTopK, MatchesStableDescendingSortTiesByIndexNanFirst) {
  for (const DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    // Values drawn from a small set so that ties are common.
    Tensor x = cf::uniform({6, 13}, 0, 5, 91, DType::kFloat64).cast(DType::kInt64).cast(dt);
    const bool fl = dt == DType::kFloat32 || dt == DType::kFloat64;
    if (fl) {
      Tensor xd = x.cast(DType::kFloat64);
      xd.data<double>()[3] = NAN;
      xd.data<double>()[9] = NAN;
      xd.data<double>()[20] = INFINITY;
      x = xd.cast(dt);
    }
    const auto xv = vals(x);
    for (int64_t k : {int64_t{1}, int64_t{4}, int64_t{13}}) {
      const auto r = cf::top_k(x.transpose().transpose(), k);
      EXPECT_EQ(r.values.shape(), (cf::Shape{6, k}));
      EXPECT_EQ(r.indices.dtype(), DType::kInt64);
      EXPECT_EQ(r.values.dtype(), dt);
      const auto got_i = ivals(r.indices);
      const auto got_v = vals(r.values);
      for (size_t row = 0; row < 6; ++row) {
        std::vector<int64_t> idx(13);
        std::iota(idx.begin(), idx.end(), 0);
        auto key = [&](int64_t j) {
          const double v = xv[row * 13 + static_cast<size_t>(j)];
          return std::isnan(v) ? std::numeric_limits<double>::max() * 2 : v;  // NaN -> +inf rank
        };
        // Insertion sort by (value desc, NaN highest), stable: ties keep index order.
        for (size_t a = 1; a < idx.size(); ++a) {
          for (size_t b = a; b > 0; --b) {
            const double kb = key(idx[b]), ka = key(idx[b - 1]);
            const bool nb = std::isnan(xv[row * 13 + static_cast<size_t>(idx[b])]);
            const bool na = std::isnan(xv[row * 13 + static_cast<size_t>(idx[b - 1])]);
            const bool greater = (nb && !na) || (!nb && !na && kb > ka);
            if (!greater) break;
            std::swap(idx[b], idx[b - 1]);
          }
        }
        for (size_t j = 0; j < static_cast<size_t>(k); ++j) {
          ASSERT_EQ(got_i[row * static_cast<size_t>(k) + j], idx[j]) << "row " << row << " k " << k;
          const double want = xv[row * 13 + static_cast<size_t>(idx[j])];
          const double got = got_v[row * static_cast<size_t>(k) + j];
          EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want)));
        }
      }
    }
  }
}

TEST(NnTopK, BadKIsAShapeErrorNamingK) {
  const Tensor x = Tensor::zeros({2, 3}, DType::kFloat32);
  expect_throw_with([&] { cf::top_k(x, 4); }, "k = 4");
  expect_throw_with([&] { cf::top_k(x, 0); }, "k = 0");
  EXPECT_THROW(cf::top_k(x.cast(DType::kBool), 1), cf::TypeError);
}

TEST(NnAccuracy, CountsRowsWhoseLabelIsInTheirTopK) {
  const Tensor indices = Tensor::from_vector<int64_t>({1, 2, 0, 3, 4, 1, 2, 2}, {4, 2});
  const Tensor label = Tensor::from_vector<int64_t>({2, 1, 1, 0}, {4, 1});
  const auto r = cf::accuracy(indices, label);
  EXPECT_EQ(r.correct.dtype(), DType::kInt32);
  EXPECT_EQ(r.total.dtype(), DType::kInt32);
  EXPECT_EQ(r.accuracy.dtype(), DType::kFloat32);
  EXPECT_EQ(r.accuracy.shape(), (cf::Shape{1}));
  EXPECT_EQ(r.correct.item<int32_t>(), 2);  // rows 0 and 2
  EXPECT_EQ(r.total.item<int32_t>(), 4);
  EXPECT_FLOAT_EQ(r.accuracy.item<float>(), 0.5f);
  const auto e =
      cf::accuracy(Tensor::zeros({0, 3}, DType::kInt64), Tensor::zeros({0, 1}, DType::kInt64));
  EXPECT_EQ(e.accuracy.item<float>(), 0.0f);
  EXPECT_EQ(e.total.item<int32_t>(), 0);
  EXPECT_THROW(cf::accuracy(indices, Tensor::zeros({3, 1}, DType::kInt64)), cf::ShapeError);
  EXPECT_THROW(cf::accuracy(indices.cast(DType::kInt32), label), cf::TypeError);
}

// ---- activations ----

TEST(NnActivation, LeakyReluMatchesPaddleFormula) {
  const Tensor x = f64({-2, -0.5, 0, 0.5, 3, NAN, -INFINITY}, {7});
  const auto y = vals(cf::leaky_relu(x, 0.1f));
  const double a = static_cast<double>(0.1f);
  EXPECT_EQ(y[0], -2 * a);
  EXPECT_EQ(y[1], -0.5 * a);
  EXPECT_EQ(y[2], 0.0);
  EXPECT_EQ(y[4], 3.0);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], -INFINITY);
  // alpha > 1: max(x, alpha * x) picks alpha * x for positive x, as Paddle's cwiseMax does.
  EXPECT_EQ(vals(cf::leaky_relu(f64({2, -2}, {2}), 3.0f)), (std::vector<double>{6, -2}));
  const Tensor xf = cf::uniform({33, 17}, -1, 1, 101, DType::kFloat32).transpose();
  const auto yf = vals(cf::leaky_relu(xf, 0.02f));
  const auto xfv = vals(xf);
  for (size_t i = 0; i < yf.size(); ++i) {
    EXPECT_EQ(yf[i], static_cast<double>(xfv[i] > 0 ? static_cast<float>(xfv[i])
                                                    : 0.02f * static_cast<float>(xfv[i])));
  }
}

TEST(NnActivation, GradientsMatchFiniteDifferences) {
  // Points away from the kinks of relu / leaky_relu.
  Tensor x = cf::uniform({4, 5}, -2, 2, 102, DType::kFloat64);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double& v = x.data<double>()[i];
    if (std::abs(v) < 0.1) v += 0.3;
  }
  const Tensor w = cf::uniform({4, 5}, -1, 1, 103, DType::kFloat64);
  expect_close(vals(cf::leaky_relu_grad(x, w, 0.2f)),
               numeric_grad(x, [&](const Tensor& t) { return dot(cf::leaky_relu(t, 0.2f), w); }),
               1e-6, "leaky_relu");
  expect_close(vals(cf::relu_grad(cf::relu(x), w)),
               numeric_grad(x, [&](const Tensor& t) { return dot(cf::relu(t), w); }), 1e-6, "relu");
  expect_close(vals(cf::sigmoid_grad(cf::sigmoid(x), w)),
               numeric_grad(x, [&](const Tensor& t) { return dot(cf::sigmoid(t), w); }), 1e-6,
               "sigmoid");
  expect_close(vals(cf::tanh_grad(cf::tanh(x), w)),
               numeric_grad(x, [&](const Tensor& t) { return dot(cf::tanh(t), w); }), 1e-6, "tanh");
  for (const int64_t axis : {int64_t{-1}, int64_t{0}}) {
    expect_close(vals(cf::softmax_grad(cf::softmax(x, axis), w, axis)),
                 numeric_grad(x, [&](const Tensor& t) { return dot(cf::softmax(t, axis), w); }),
                 1e-6, "softmax");
  }
  EXPECT_THROW(cf::relu_grad(x, Tensor::zeros({5, 4}, DType::kFloat64)), cf::ShapeError);
  EXPECT_THROW(cf::tanh_grad(x, w.cast(DType::kFloat32)), cf::TypeError);
  EXPECT_THROW(cf::sigmoid_grad(x.cast(DType::kInt64), w.cast(DType::kInt64)), cf::TypeError);
}

// ---- concat and split ----

TEST(NnConcatSplit, ConcatMatchesIndexLoopOnEveryAxisWithViews) {
  const Tensor a = cf::uniform({2, 3, 4}, -1, 1, 111, DType::kFloat32);
  for (int64_t axis = 0; axis < 3; ++axis) {
    cf::Shape sb = a.shape();
    sb[static_cast<size_t>(axis)] = 5;
    const Tensor b = cf::uniform(sb, -1, 1, 113 + axis, DType::kFloat32);
    cf::Shape sc = a.shape();
    sc[static_cast<size_t>(axis)] = 1;
    const Tensor c = cf::uniform({sc[2], sc[1], sc[0]}, -1, 1, 120, DType::kFloat32).transpose();
    const Tensor out = cf::concat({a, b, c}, axis - 3);
    cf::Shape so = a.shape();
    so[static_cast<size_t>(axis)] += 5 + 1;
    ASSERT_EQ(out.shape(), so);
    for (int64_t i = 0; i < so[0]; ++i) {
      for (int64_t j = 0; j < so[1]; ++j) {
        for (int64_t k = 0; k < so[2]; ++k) {
          cf::Shape idx = {i, j, k};
          int64_t& e = idx[static_cast<size_t>(axis)];
          const int64_t na = a.shape()[static_cast<size_t>(axis)];
          float want;
          if (e < na) {
            want = a.at<float>(idx);
          } else if (e < na + 5) {
            e -= na;
            want = b.at<float>(idx);
          } else {
            e -= na + 5;
            want = c.at<float>(idx);
          }
          ASSERT_EQ(out.at<float>({i, j, k}), want);
        }
      }
    }
  }
  EXPECT_THROW(cf::concat({a, Tensor::zeros({2, 4, 4}, DType::kFloat32)}, 0), cf::ShapeError);
  expect_throw_with(
      [&] {
        cf::concat({a, a, Tensor::zeros({2, 4, 4}, DType::kFloat32)}, 2);
      },
      "input 2");
  EXPECT_THROW(cf::concat({a, a.cast(DType::kFloat64)}, 0), cf::TypeError);
  EXPECT_THROW(cf::concat({}, 0), cf::Error);
  EXPECT_THROW(cf::concat({a}, 3), cf::ShapeError);
  // Any dtype.
  const Tensor i1 = Tensor::from_vector<int64_t>({1, 2}, {1, 2});
  EXPECT_EQ(ivals(cf::concat({i1, i1}, 1)), (std::vector<int64_t>{1, 2, 1, 2}));
}

TEST(NnConcatSplit, SplitByNumAndSectionsInvertsConcat) {
  const Tensor x = cf::uniform({4, 6, 3}, -1, 1, 121, DType::kFloat64).transpose({1, 0, 2});
  const auto parts = cf::split(x, 3, 0);  // (6, 4, 3) into 3 x (2, 4, 3)
  ASSERT_EQ(parts.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    ASSERT_EQ(parts[p].shape(), (cf::Shape{2, 4, 3}));
    EXPECT_TRUE(parts[p].is_contiguous());
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 4; ++j) {
        for (int64_t k = 0; k < 3; ++k) {
          ASSERT_EQ(parts[p].at<double>({i, j, k}),
                    x.at<double>({static_cast<int64_t>(p) * 2 + i, j, k}));
        }
      }
    }
  }
  EXPECT_TRUE(cf::concat(parts, 0).equal_to(x.contiguous()));
  const auto s = cf::split_sections(x, {1, -1, 0}, -2);  // axis 1 (extent 4): 1, 3, 0
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].shape(), (cf::Shape{6, 1, 3}));
  EXPECT_EQ(s[1].shape(), (cf::Shape{6, 3, 3}));
  EXPECT_EQ(s[2].shape(), (cf::Shape{6, 0, 3}));
  EXPECT_TRUE(cf::concat(s, 1).equal_to(x.contiguous()));
  expect_throw_with([&] { cf::split(x, 4, 0); }, "num = 4");
  EXPECT_THROW(cf::split(x, 0, 0), cf::ShapeError);
  expect_throw_with([&] { cf::split_sections(x, {1, 2}, 1); }, "sum to 3");
  EXPECT_THROW(cf::split_sections(x, {-1, -1}, 1), cf::ShapeError);
  EXPECT_THROW(cf::split_sections(x, {5, -1}, 1), cf::ShapeError);
}

// ---- cancellation: every kernel checks between chunks, the error propagates, inputs survive ----

struct Canceled : cf::Error {
  using cf::Error::Error;
};

TEST(NnCancellation, EveryKernelStopsBetweenChunksAndLeavesInputsUntouched) {
  const Tensor x4 = cf::uniform({4, 3, 16, 16}, -1, 1, 131, DType::kFloat32);
  const Tensor x4_copy = x4.clone();
  const Tensor c = Tensor::ones({3}, DType::kFloat32);
  const Tensor z = Tensor::zeros({3}, DType::kFloat32);
  const Tensor logits = cf::uniform({64, 50}, -1, 1, 132, DType::kFloat32);
  const Tensor probs = cf::softmax(logits, -1);
  const Tensor label = Tensor::zeros({64, 1}, DType::kInt64);
  const Tensor g = Tensor::ones({64, 1}, DType::kFloat32);
  const Tensor w = cf::uniform({4, 3, 16, 16}, -1, 1, 133, DType::kFloat32);
  const Tensor idx = Tensor::zeros({64, 5}, DType::kInt64);
  const std::vector<std::pair<std::string, std::function<void(const cf::KernelOptions&)>>> kernels =
      {
          {"batch_norm_train",
           [&](const cf::KernelOptions& o) {
             cf::batch_norm_train(x4, c, z, z, c, 0.9f, 1e-5f, cf::DataLayout::kNCHW, o);
           }},
          {"batch_norm_train NHWC",
           [&](const cf::KernelOptions& o) {
             cf::batch_norm_train(x4.transpose({0, 2, 3, 1}), c, z, z, c, 0.9f, 1e-5f,
                                  cf::DataLayout::kNHWC, o);
           }},
          {"batch_norm_infer",
           [&](const cf::KernelOptions& o) {
             cf::batch_norm_infer(x4, c, z, z, c, 1e-5f, cf::DataLayout::kNCHW, o);
           }},
          {"batch_norm_grad",
           [&](const cf::KernelOptions& o) {
             cf::batch_norm_grad(x4, c, z, c, w, 1e-5f, cf::DataLayout::kNCHW, o);
           }},
          {"dropout", [&](const cf::KernelOptions& o) { cf::dropout(x4, 0.5f, false, 1, o); }},
          {"dropout test", [&](const cf::KernelOptions& o) { cf::dropout(x4, 0.5f, true, 1, o); }},
          {"dropout_grad", [&](const cf::KernelOptions& o) { cf::dropout_grad(x4, w, o); }},
          {"cross_entropy",
           [&](const cf::KernelOptions& o) { cf::cross_entropy(probs, label, false, -100, o); }},
          {"cross_entropy soft",
           [&](const cf::KernelOptions& o) { cf::cross_entropy(probs, probs, true, -100, o); }},
          {"cross_entropy_grad",
           [&](const cf::KernelOptions& o) {
             cf::cross_entropy_grad(probs, label, g, false, -100, o);
           }},
          {"softmax_with_cross_entropy",
           [&](const cf::KernelOptions& o) {
             cf::softmax_with_cross_entropy(logits, label, false, -100, o);
           }},
          {"softmax_with_cross_entropy_grad",
           [&](const cf::KernelOptions& o) {
             cf::softmax_with_cross_entropy_grad(probs, label, g, false, -100, o);
           }},
          {"top_k", [&](const cf::KernelOptions& o) { cf::top_k(logits, 3, o); }},
          {"accuracy", [&](const cf::KernelOptions& o) { cf::accuracy(idx, label, o); }},
          {"leaky_relu", [&](const cf::KernelOptions& o) { cf::leaky_relu(x4, 0.1f, o); }},
          {"leaky_relu_grad",
           [&](const cf::KernelOptions& o) { cf::leaky_relu_grad(x4, w, 0.1f, o); }},
          {"relu_grad", [&](const cf::KernelOptions& o) { cf::relu_grad(x4, w, o); }},
          {"sigmoid_grad", [&](const cf::KernelOptions& o) { cf::sigmoid_grad(x4, w, o); }},
          {"tanh_grad", [&](const cf::KernelOptions& o) { cf::tanh_grad(x4, w, o); }},
          {"softmax_grad", [&](const cf::KernelOptions& o) { cf::softmax_grad(x4, w, 1, o); }},
          {"concat",
           [&](const cf::KernelOptions& o) {
             cf::concat({x4, w, x4}, 1, o);
           }},
          {"split", [&](const cf::KernelOptions& o) { cf::split(x4, 4, 2, o); }},
          {"split_sections",
           [&](const cf::KernelOptions& o) {
             cf::split_sections(x4, {1, 2}, 1, o);
           }},
      };
  for (const auto& [name, run] : kernels) {
    int calls = 0;
    cf::KernelOptions counting;
    counting.chunk_elements = 16;
    counting.between_chunks = [&] { ++calls; };
    run(counting);
    EXPECT_GT(calls, 0) << name << " never checked between chunks";
    cf::KernelOptions cancel;
    cancel.chunk_elements = 16;
    cancel.between_chunks = [] { throw Canceled("canceled"); };
    EXPECT_THROW(run(cancel), Canceled) << name;
    EXPECT_TRUE(x4.equal_to(x4_copy)) << name;
  }
}

}  // namespace
