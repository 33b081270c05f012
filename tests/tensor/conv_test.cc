// conv2d / conv2d_grad_input / conv2d_grad_filter and pool2d / pool2d_grad (conv.h) against
// references written here: direct loops in double (the convolution sum and its adjoints, Paddle's
// pooling windows), central finite differences in float64, and small cases computed by hand.
// Covers random shapes, strides, paddings, dilations and groups (depthwise too), every tiling path
// of the GEMM code (one sample, samples batched side by side, pixel ranges, the 1x1 shortcut),
// strided views, NaN/Inf, errors, shape inference with unknown extents, and cancellation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;
using cf::DType;
using cf::Shape;
using cf::Tensor;

namespace {

std::vector<double> values(const Tensor& t) {
  const Tensor d = t.cast(DType::kFloat64);
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

std::vector<double> random_values(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = u(rng);
  return v;
}

// A tensor of `dt` with these values; `strided` makes it a non-contiguous view (last two axes
// stored transposed).
Tensor make(const std::vector<double>& v, const Shape& s, DType dt, bool strided = false) {
  Tensor t = Tensor::from_vector<double>(v, s).cast(dt);
  if (!strided) return t;
  Tensor view = t.transpose({0, 1, 3, 2}).contiguous().transpose({0, 1, 3, 2});
  if (s[2] > 1 && s[3] > 1) {
    EXPECT_FALSE(view.is_contiguous());
  }
  return view;
}

struct ConvCase {
  Shape x;  // N, C, H, W
  Shape w;  // M, C / groups, KH, KW
  cf::Conv2dParams p;
};

std::string describe(const ConvCase& c) {
  return "x " + cf::shape_to_string(c.x) + " w " + cf::shape_to_string(c.w) + " stride " +
         std::to_string(c.p.strides[0]) + "," + std::to_string(c.p.strides[1]) + " pad " +
         std::to_string(c.p.paddings[0]) + "," + std::to_string(c.p.paddings[1]) + " dil " +
         std::to_string(c.p.dilations[0]) + "," + std::to_string(c.p.dilations[1]) + " groups " +
         std::to_string(c.p.groups);
}

int64_t ref_extent(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil) {
  return (in + 2 * pad - (dil * (k - 1) + 1)) / stride + 1;
}

// Visits every (output, input, weight) index triple of the convolution sum that lies inside the
// input (padding contributes zeros, so those terms are skipped).
void for_each_term(const ConvCase& c,
                   const std::function<void(size_t out, size_t in, size_t wt)>& f) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], w = c.x[3];
  const int64_t m = c.w[0], cg = c.w[1], kh = c.w[2], kw = c.w[3];
  const int64_t g = c.p.groups, mg = m / g;
  const int64_t oh = ref_extent(h, kh, c.p.paddings[0], c.p.strides[0], c.p.dilations[0]);
  const int64_t ow = ref_extent(w, kw, c.p.paddings[1], c.p.strides[1], c.p.dilations[1]);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = y * c.p.strides[0] - c.p.paddings[0] + i * c.p.dilations[0];
                const int64_t ix = x * c.p.strides[1] - c.p.paddings[1] + j * c.p.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t cin = (o / mg) * cg + ci;
                f(static_cast<size_t>(((b * m + o) * oh + y) * ow + x),
                  static_cast<size_t>(((b * ch + cin) * h + iy) * w + ix),
                  static_cast<size_t>(((o * cg + ci) * kh + i) * kw + j));
              }
}

Shape ref_out_shape(const ConvCase& c) {
  return {c.x[0], c.w[0],
          ref_extent(c.x[2], c.w[2], c.p.paddings[0], c.p.strides[0], c.p.dilations[0]),
          ref_extent(c.x[3], c.w[3], c.p.paddings[1], c.p.strides[1], c.p.dilations[1])};
}

std::vector<double> ref_conv(const ConvCase& c, const std::vector<double>& x,
                             const std::vector<double>& w) {
  std::vector<double> out(static_cast<size_t>(cf::shape_numel(ref_out_shape(c))), 0.0);
  for_each_term(c, [&](size_t o, size_t i, size_t k) { out[o] += x[i] * w[k]; });
  return out;
}

std::vector<double> ref_grad_input(const ConvCase& c, const std::vector<double>& gy,
                                   const std::vector<double>& w) {
  std::vector<double> gx(static_cast<size_t>(cf::shape_numel(c.x)), 0.0);
  for_each_term(c, [&](size_t o, size_t i, size_t k) { gx[i] += gy[o] * w[k]; });
  return gx;
}

std::vector<double> ref_grad_filter(const ConvCase& c, const std::vector<double>& gy,
                                    const std::vector<double>& x) {
  std::vector<double> gw(static_cast<size_t>(cf::shape_numel(c.w)), 0.0);
  for_each_term(c, [&](size_t o, size_t i, size_t k) { gw[k] += gy[o] * x[i]; });
  return gw;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, DType dt,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = dt == DType::kFloat32 ? 2e-5 : 1e-11;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && !(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
      if (++reported == 5) return;
    }
  }
}

// A random valid case; depthwise (groups == C) about a quarter of the time.
ConvCase random_case(std::mt19937_64& rng) {
  auto r = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (;;) {
    ConvCase c;
    const bool depthwise = r(0, 3) == 0;
    const int64_t groups = depthwise ? r(1, 6) : r(1, 3);
    const int64_t cg = depthwise ? 1 : r(1, 3);
    const int64_t mg = r(1, 3);
    c.p.groups = groups;
    c.p.strides = {r(1, 3), r(1, 3)};
    c.p.paddings = {r(0, 2), r(0, 2)};
    c.p.dilations = {r(1, 3), r(1, 2)};
    c.x = {r(1, 3), groups * cg, r(1, 12), r(1, 12)};
    c.w = {groups * mg, cg, r(1, 4), r(1, 4)};
    const Shape o = ref_out_shape(c);
    if (c.x[2] + 2 * c.p.paddings[0] >= c.p.dilations[0] * (c.w[2] - 1) + 1 &&
        c.x[3] + 2 * c.p.paddings[1] >= c.p.dilations[1] * (c.w[3] - 1) + 1 && o[2] >= 1 &&
        o[3] >= 1) {
      return c;
    }
  }
}

// Runs the three kernels on one case and compares them with the direct loops.
void check_case(const ConvCase& c, DType dt, std::mt19937_64& rng, bool strided,
                const cf::KernelOptions& o = {}) {
  const std::string what =
      describe(c) + (dt == DType::kFloat32 ? " float32" : " float64") + (strided ? " strided" : "");
  const std::vector<double> x = random_values(cf::shape_numel(c.x), rng);
  const std::vector<double> w = random_values(cf::shape_numel(c.w), rng);
  const Shape os = ref_out_shape(c);
  const std::vector<double> gy = random_values(cf::shape_numel(os), rng);
  const Tensor xt = make(x, c.x, dt, strided);
  const Tensor wt = make(w, c.w, dt, strided);
  const Tensor gyt = make(gy, os, dt, strided);
  // The kernels see the rounded values; the references use the same.
  const std::vector<double> xr = values(xt), wr = values(wt), gyr = values(gyt);

  EXPECT_EQ(cf::conv2d_output_shape(c.x, c.w, c.p), os) << what;
  const Tensor y = cf::conv2d(xt, wt, c.p, o);
  ASSERT_EQ(y.shape(), os) << what;
  ASSERT_EQ(y.dtype(), dt) << what;
  expect_close(values(y), ref_conv(c, xr, wr), dt, what + " forward");
  const Tensor gx = cf::conv2d_grad_input(gyt, wt, c.x, c.p, o);
  ASSERT_EQ(gx.shape(), c.x) << what;
  expect_close(values(gx), ref_grad_input(c, gyr, wr), dt, what + " grad_input");
  const Tensor gw = cf::conv2d_grad_filter(gyt, xt, c.w, c.p, o);
  ASSERT_EQ(gw.shape(), c.w) << what;
  expect_close(values(gw), ref_grad_filter(c, gyr, xr), dt, what + " grad_filter");
}

TEST(Conv2d, RandomCasesMatchDirectLoops) {
  std::mt19937_64 rng(20180601);
  for (int i = 0; i < 120; ++i) {
    const ConvCase c = random_case(rng);
    check_case(c, i % 2 == 0 ? DType::kFloat64 : DType::kFloat32, rng, i % 3 == 0);
  }
}

// Each tiling path of the GEMM code: LeNet's second layer (8 x 8 outputs: samples batched side by
// side), its first layer (one sample per GEMM), a large patch matrix (pixel ranges), 1x1 kernels
// (no im2col), and grouped / depthwise versions of them.
TEST(Conv2d, EveryTilingPathMatchesDirectLoops) {
  std::mt19937_64 rng(7);
  std::vector<ConvCase> cases;
  cases.push_back({{9, 20, 12, 12}, {50, 20, 5, 5}, {}});
  cases.push_back({{3, 1, 28, 28}, {20, 1, 5, 5}, {}});
  cases.push_back({{1, 64, 24, 24}, {4, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}});
  cases.push_back({{2, 6, 7, 5}, {4, 6, 1, 1}, {}});
  cases.push_back({{2, 6, 7, 5}, {6, 2, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 3}});
  cases.push_back({{2, 6, 9, 9}, {6, 2, 1, 1}, {{2, 2}, {1, 0}, {1, 1}, 3}});
  cases.push_back({{7, 8, 6, 6}, {8, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 8}});
  cases.push_back({{5, 4, 9, 7}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {2, 1}, 2}});
  for (const ConvCase& c : cases) {
    check_case(c, DType::kFloat32, rng, false);
    check_case(c, DType::kFloat64, rng, true);
  }
}

TEST(Conv2d, ChunkedRunsMatchAndCallBetweenChunks) {
  std::mt19937_64 rng(11);
  const std::vector<ConvCase> cases = {
      {{9, 20, 12, 12}, {50, 20, 5, 5}, {}},
      {{1, 64, 24, 24}, {4, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {{2, 6, 7, 5}, {4, 6, 1, 1}, {}},
      {{3, 4, 10, 10}, {4, 2, 3, 3}, {{1, 2}, {1, 0}, {1, 1}, 2}},
  };
  for (const ConvCase& c : cases) {
    const Shape os = ref_out_shape(c);
    // Work as the kernels count it: every tap, padding included.
    const int64_t macs = cf::shape_numel(os) * c.w[1] * c.w[2] * c.w[3];
    const int64_t chunk = macs / 10;
    // A tile is at least one output pixel of one group: that much work may run between calls.
    const int64_t step = std::max<int64_t>(chunk, c.w[0] / c.p.groups * c.w[1] * c.w[2] * c.w[3]);
    int64_t calls = 0;
    cf::KernelOptions o;
    o.chunk_elements = chunk;
    o.between_chunks = [&] { ++calls; };
    check_case(c, DType::kFloat32, rng, false, o);
    // Three kernels, each calling about macs / chunk times.
    EXPECT_GE(calls, 3 * (macs / step / 2 - 1)) << describe(c);
    EXPECT_LE(calls, 3 * (2 * macs / chunk + c.x[0] * c.p.groups)) << describe(c);
    EXPECT_GT(calls, 0) << describe(c);
  }
}

struct Stop : std::runtime_error {
  Stop() : std::runtime_error("stop") {}
};

TEST(Conv2d, ThrowingCallbackPropagatesAndLeavesInputsUntouched) {
  std::mt19937_64 rng(3);
  const Shape xs{8, 20, 12, 12}, ws{50, 20, 5, 5}, os{8, 50, 8, 8};
  const Tensor x = make(random_values(cf::shape_numel(xs), rng), xs, DType::kFloat32);
  const Tensor w = make(random_values(cf::shape_numel(ws), rng), ws, DType::kFloat32);
  const Tensor gy = make(random_values(cf::shape_numel(os), rng), os, DType::kFloat32);
  const Tensor x0 = x.clone(), w0 = w.clone(), gy0 = gy.clone();
  for (int which = 0; which < 3; ++which) {
    int calls = 0;
    cf::KernelOptions o;
    o.chunk_elements = 100000;
    o.between_chunks = [&] {
      if (++calls == 3) throw Stop();
    };
    if (which == 0) {
      EXPECT_THROW(cf::conv2d(x, w, {}, o), Stop);
    }
    if (which == 1) {
      EXPECT_THROW(cf::conv2d_grad_input(gy, w, xs, {}, o), Stop);
    }
    if (which == 2) {
      EXPECT_THROW(cf::conv2d_grad_filter(gy, x, ws, {}, o), Stop);
    }
    EXPECT_EQ(calls, 3);
    EXPECT_TRUE(x.equal_to(x0));
    EXPECT_TRUE(w.equal_to(w0));
    EXPECT_TRUE(gy.equal_to(gy0));
  }
}

// L(x, w) = sum(conv2d(x, w) * gy): its gradients are conv2d_grad_input(gy, w) and
// conv2d_grad_filter(gy, x); central differences check both.
TEST(Conv2d, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(5);
  const std::vector<ConvCase> cases = {
      {{2, 4, 5, 6}, {4, 2, 3, 2}, {{2, 1}, {1, 1}, {1, 2}, 2}},
      {{1, 3, 6, 6}, {3, 1, 3, 3}, {{1, 2}, {2, 1}, {2, 1}, 3}},
      {{2, 2, 4, 4}, {3, 2, 1, 1}, {}},
  };
  for (const ConvCase& c : cases) {
    const Shape os = ref_out_shape(c);
    std::vector<double> x = random_values(cf::shape_numel(c.x), rng);
    std::vector<double> w = random_values(cf::shape_numel(c.w), rng);
    const std::vector<double> gy = random_values(cf::shape_numel(os), rng);
    const Tensor gyt = make(gy, os, DType::kFloat64);
    auto loss = [&] {
      const std::vector<double> y =
          values(cf::conv2d(make(x, c.x, DType::kFloat64), make(w, c.w, DType::kFloat64), c.p));
      double s = 0;
      for (size_t i = 0; i < y.size(); ++i) s += y[i] * gy[i];
      return s;
    };
    const std::vector<double> gx =
        values(cf::conv2d_grad_input(gyt, make(w, c.w, DType::kFloat64), c.x, c.p));
    const std::vector<double> gw =
        values(cf::conv2d_grad_filter(gyt, make(x, c.x, DType::kFloat64), c.w, c.p));
    const double h = 1e-5;
    for (auto* v : {&x, &w}) {
      const std::vector<double>& g = v == &x ? gx : gw;
      for (size_t i = 0; i < v->size(); ++i) {
        const double keep = (*v)[i];
        (*v)[i] = keep + h;
        const double up = loss();
        (*v)[i] = keep - h;
        const double down = loss();
        (*v)[i] = keep;
        EXPECT_NEAR(g[i], (up - down) / (2 * h), 1e-7)
            << describe(c) << (v == &x ? " input " : " filter ") << i;
      }
    }
  }
}

TEST(Conv2d, NanAndInfPropagateToTheOutputsThatSeeThem) {
  // 6x6 input of ones, 3x3 filter of ones: output (4, 4). A NaN at (0, 0) is seen only by output
  // (0, 0); an Inf at (5, 5) only by output (3, 3).
  std::vector<double> x(36, 1.0);
  x[0] = std::numeric_limits<double>::quiet_NaN();
  x[35] = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    const Tensor y = cf::conv2d(make(x, {1, 1, 6, 6}, dt),
                                make(std::vector<double>(9, 1.0), {1, 1, 3, 3}, dt), {});
    const std::vector<double> v = values(y);
    for (size_t i = 0; i < v.size(); ++i) {
      if (i == 0) {
        EXPECT_TRUE(std::isnan(v[i]));
      } else if (i == 15) {
        EXPECT_EQ(v[i], std::numeric_limits<double>::infinity());
      } else {
        EXPECT_EQ(v[i], 9.0) << i;
      }
    }
    // The filter gradient of a NaN input is NaN where that input contributes.
    const Tensor gw = cf::conv2d_grad_filter(Tensor::ones({1, 1, 4, 4}, dt),
                                             make(x, {1, 1, 6, 6}, dt), {1, 1, 3, 3}, {});
    EXPECT_TRUE(std::isnan(values(gw)[0]));
  }
}

TEST(Conv2d, ZeroSizeOperandsGiveEmptyOrZeroResults) {
  const DType f = DType::kFloat32;
  // No samples: empty output and input gradient, zero filter gradient.
  const Tensor y = cf::conv2d(Tensor::ones({0, 2, 5, 5}, f), Tensor::ones({3, 2, 3, 3}, f), {});
  EXPECT_EQ(y.shape(), (Shape{0, 3, 3, 3}));
  const Tensor gw = cf::conv2d_grad_filter(Tensor::ones({0, 3, 3, 3}, f),
                                           Tensor::ones({0, 2, 5, 5}, f), {3, 2, 3, 3}, {});
  EXPECT_EQ(values(gw), std::vector<double>(54, 0.0));
  // No input channels: the sums are empty, so the output is zeros.
  const Tensor z = cf::conv2d(Tensor::ones({2, 0, 4, 4}, f), Tensor::ones({3, 0, 2, 2}, f), {});
  EXPECT_EQ(z.shape(), (Shape{2, 3, 3, 3}));
  EXPECT_EQ(values(z), std::vector<double>(54, 0.0));
  const Tensor gx = cf::conv2d_grad_input(Tensor::ones({2, 0, 3, 3}, f),
                                          Tensor::ones({0, 4, 2, 2}, f), {2, 4, 4, 4}, {});
  EXPECT_EQ(values(gx), std::vector<double>(128, 0.0));
  cf::Pool2dParams p;
  p.ksize = {2, 2};
  EXPECT_EQ(cf::pool2d(Tensor::ones({0, 3, 4, 4}, f), p).shape(), (Shape{0, 3, 3, 3}));
}

TEST(Conv2d, OutputShapeKeepsUnknownExtents) {
  EXPECT_EQ(cf::conv2d_output_shape({-1, 3, 28, 28}, {8, 3, 5, 5}, {}), (Shape{-1, 8, 24, 24}));
  EXPECT_EQ(cf::conv2d_output_shape({2, -1, -1, 28}, {8, 3, 5, 5}, {}), (Shape{2, 8, -1, 24}));
  cf::Conv2dParams p;
  p.strides = {2, 3};
  p.paddings = {1, 2};
  p.dilations = {2, 1};
  p.groups = 2;
  // OH = (9 + 2 - 5) / 2 + 1 = 4, OW = (10 + 4 - 3) / 3 + 1 = 4.
  EXPECT_EQ(cf::conv2d_output_shape({1, 4, 9, 10}, {6, 2, 3, 3}, p), (Shape{1, 6, 4, 4}));
  EXPECT_EQ(cf::conv2d_output_shape({1, 4, 9, 10}, {-1, 2, -1, 3}, p), (Shape{1, -1, -1, 4}));
}

// Expects `f` to throw E whose message names `op` and contains `part`.
template <class E, class F>
void expect_error(F&& f, const std::string& op, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception; wanted " << op << " ... " << part;
  } catch (const E& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(op + ":"), std::string::npos) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(Conv2d, BadInputsThrowTypedErrorsNamingOpAndArgument) {
  const Tensor x = Tensor::ones({2, 4, 8, 8}, DType::kFloat32);
  const Tensor w = Tensor::ones({6, 4, 3, 3}, DType::kFloat32);
  auto with = [](auto f) {
    cf::Conv2dParams p;
    f(p);
    return p;
  };
  using cf::ShapeError;
  using cf::TypeError;
  expect_error<ShapeError>([&] { cf::conv2d(x.reshape({8, 8, 8}), w, {}); }, "conv2d", "input");
  expect_error<ShapeError>([&] { cf::conv2d(x, w.reshape({6, 4, 9}), {}); }, "conv2d", "filter");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d(x, Tensor::ones({6, 4, 3, 3}, DType::kFloat32),
                   with([](auto& p) { p.groups = 3; }));
      },
      "conv2d", "not divisible by groups");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d(x, Tensor::ones({5, 2, 3, 3}, DType::kFloat32),
                   with([](auto& p) { p.groups = 2; }));
      },
      "conv2d", "filter output channels 5");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d(x, Tensor::ones({6, 3, 3, 3}, DType::kFloat32), {});
      },
      "conv2d", "filter channels 3");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d(x, Tensor::ones({6, 4, 9, 3}, DType::kFloat32), {});
      },
      "conv2d", "exceeds the padded input height");
  expect_error<ShapeError>([&] { cf::conv2d(x, w, with([](auto& p) {
                                              p.dilations = {1, 4};
                                            })); },
                           "conv2d", "exceeds the padded input width");
  expect_error<ShapeError>([&] { cf::conv2d(x, w, with([](auto& p) {
                                              p.strides = {0, 1};
                                            })); },
                           "conv2d", "strides[0]");
  expect_error<ShapeError>([&] { cf::conv2d(x, w, with([](auto& p) {
                                              p.dilations = {1, 0};
                                            })); },
                           "conv2d", "dilations[1]");
  expect_error<ShapeError>([&] { cf::conv2d(x, w, with([](auto& p) {
                                              p.paddings = {-1, 0};
                                            })); },
                           "conv2d", "paddings[0]");
  expect_error<ShapeError>([&] { cf::conv2d(x, w, with([](auto& p) { p.groups = 0; })); }, "conv2d",
                           "groups");
  expect_error<TypeError>([&] { cf::conv2d(x.cast(DType::kInt64), w, {}); }, "conv2d", "input");
  expect_error<TypeError>([&] { cf::conv2d(x.cast(DType::kFloat16), w, {}); }, "conv2d", "input");
  expect_error<TypeError>([&] { cf::conv2d(x, w.cast(DType::kFloat64), {}); }, "conv2d", "filter");
  expect_error<ShapeError>(
      [] {
        cf::conv2d_output_shape({1, 2, 3, 3}, {1, 2, 4, 1}, {});
      },
      "conv2d", "height");

  const Tensor gy = Tensor::ones({2, 6, 6, 6}, DType::kFloat32);
  expect_error<ShapeError>([&] { cf::conv2d_grad_input(gy.slice(3, 0, 5), w, x.shape(), {}); },
                           "conv2d_grad_input", "grad_output shape");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d_grad_input(gy, w, {2, 4, -1, 8}, {});
      },
      "conv2d_grad_input", "input_shape");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d_grad_input(gy, w, {2, 4, 8}, {});
      },
      "conv2d_grad_input", "input");
  expect_error<TypeError>(
      [&] { cf::conv2d_grad_input(gy, w.cast(DType::kFloat64), x.shape(), {}); },
      "conv2d_grad_input", "filter");
  expect_error<TypeError>([&] { cf::conv2d_grad_input(gy.cast(DType::kInt32), w, x.shape(), {}); },
                          "conv2d_grad_input", "grad_output");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d_grad_filter(gy, x, {6, 4, 3, 2}, {});
      },
      "conv2d_grad_filter", "grad_output shape");
  expect_error<TypeError>(
      [&] { cf::conv2d_grad_filter(gy, x.cast(DType::kFloat64), w.shape(), {}); },
      "conv2d_grad_filter", "input");
  expect_error<ShapeError>(
      [&] {
        cf::conv2d_grad_filter(gy, x, {6, -1, 3, 3}, {});
      },
      "conv2d_grad_filter", "filter_shape");
}

// ---- pooling ----

struct PoolRef {
  Shape out;
  std::vector<double> y;
};

// Paddle's pool2d, written from its formulas.
PoolRef ref_pool(const std::vector<double>& x, const Shape& xs, const cf::Pool2dParams& p) {
  const int64_t kh = p.global_pooling ? xs[2] : p.ksize[0];
  const int64_t kw = p.global_pooling ? xs[3] : p.ksize[1];
  const int64_t ph = p.global_pooling ? 0 : p.paddings[0];
  const int64_t pw = p.global_pooling ? 0 : p.paddings[1];
  const int64_t sh = p.strides[0], sw = p.strides[1];
  const int64_t up_h = p.ceil_mode ? sh - 1 : 0, up_w = p.ceil_mode ? sw - 1 : 0;
  const int64_t oh = (xs[2] - kh + 2 * ph + up_h) / sh + 1;
  const int64_t ow = (xs[3] - kw + 2 * pw + up_w) / sw + 1;
  PoolRef r;
  r.out = {xs[0], xs[1], oh, ow};
  for (int64_t pl = 0; pl < xs[0] * xs[1]; ++pl)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = std::max<int64_t>(i * sh - ph, 0);
        const int64_t h1 = std::min(i * sh - ph + kh, xs[2]);
        const int64_t w0 = std::max<int64_t>(j * sw - pw, 0);
        const int64_t w1 = std::min(j * sw - pw + kw, xs[3]);
        double acc = p.type == cf::PoolType::kMax ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const double v = x[static_cast<size_t>((pl * xs[2] + h) * xs[3] + w)];
            acc = p.type == cf::PoolType::kMax ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (p.type == cf::PoolType::kAvg) {
          const int64_t d = p.exclusive ? count : kh * kw;
          acc = d == 0 ? 0.0 : acc / static_cast<double>(d);
        }
        r.y.push_back(acc);
      }
  return r;
}

TEST(Pool2d, HandComputedCeilModeAndExclusive) {
  // x = [[1 2 3] [4 5 6] [7 8 9]], 2x2 windows, stride 2.
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const Tensor xt = make(x, {1, 1, 3, 3}, DType::kFloat64);
  cf::Pool2dParams p;
  p.ksize = {2, 2};
  p.strides = {2, 2};
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{5}));
  p.ceil_mode = true;
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{5, 6, 8, 9}));
  p.type = cf::PoolType::kAvg;
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{3, 4.5, 7.5, 9}));
  p.exclusive = false;
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{3, 2.25, 3.75, 2.25}));
  // 3x3 windows, stride 1, padding 1: the corner window holds 1 2 4 5.
  p = {};
  p.type = cf::PoolType::kAvg;
  p.ksize = {3, 3};
  p.paddings = {1, 1};
  EXPECT_EQ(values(cf::pool2d(xt, p))[0], 3.0);
  p.exclusive = false;
  EXPECT_DOUBLE_EQ(values(cf::pool2d(xt, p))[0], 12.0 / 9.0);
  EXPECT_DOUBLE_EQ(values(cf::pool2d(xt, p))[4], 5.0);
  // Global pooling ignores ksize and paddings.
  p = {};
  p.global_pooling = true;
  p.ksize = {7, 7};
  p.paddings = {3, 3};
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{9}));
  p.type = cf::PoolType::kAvg;
  EXPECT_EQ(values(cf::pool2d(xt, p)), (std::vector<double>{5}));
  EXPECT_EQ(cf::pool2d_output_shape({-1, 3, -1, -1}, p), (Shape{-1, 3, 1, 1}));
}

TEST(Pool2d, RandomCasesMatchReference) {
  std::mt19937_64 rng(99);
  auto r = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int it = 0; it < 300; ++it) {
    cf::Pool2dParams p;
    p.type = r(0, 1) == 0 ? cf::PoolType::kMax : cf::PoolType::kAvg;
    p.ksize = {r(1, 4), r(1, 4)};
    p.strides = {r(1, 3), r(1, 3)};
    p.paddings = {r(0, 2), r(0, 2)};
    p.ceil_mode = r(0, 1) == 1;
    p.exclusive = r(0, 1) == 1;
    p.global_pooling = r(0, 9) == 0;
    const Shape xs{r(1, 2), r(1, 3), r(1, 9), r(1, 9)};
    if (!p.global_pooling &&
        (xs[2] + 2 * p.paddings[0] < p.ksize[0] || xs[3] + 2 * p.paddings[1] < p.ksize[1])) {
      EXPECT_THROW(cf::pool2d_output_shape(xs, p), cf::ShapeError);
      continue;
    }
    const DType dt = it % 2 == 0 ? DType::kFloat32 : DType::kFloat64;
    const Tensor xt = make(random_values(cf::shape_numel(xs), rng), xs, dt, it % 3 == 0);
    const std::vector<double> x = values(xt);
    const PoolRef ref = ref_pool(x, xs, p);
    EXPECT_EQ(cf::pool2d_output_shape(xs, p), ref.out);
    const Tensor y = cf::pool2d(xt, p);
    ASSERT_EQ(y.shape(), ref.out);
    expect_close(values(y), ref.y, dt, "pool2d case " + std::to_string(it));
  }
}

TEST(Pool2d, WindowsWhollyInPaddingGiveMinusInfOrZero) {
  // H = W = 1, ksize 1, padding 1: output 3x3 whose only non-empty window is the centre.
  const Tensor x = Tensor::full({1, 1, 1, 1}, 4.0, DType::kFloat32);
  cf::Pool2dParams p;
  p.paddings = {1, 1};
  const std::vector<double> mx = values(cf::pool2d(x, p));
  ASSERT_EQ(mx.size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(mx[i], i == 4 ? 4.0 : -INFINITY) << i;
  p.type = cf::PoolType::kAvg;
  const std::vector<double> av = values(cf::pool2d(x, p));
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(av[i], i == 4 ? 4.0 : 0.0) << i;
  // No gradient flows into or out of empty windows.
  const Tensor g =
      cf::pool2d_grad(x, cf::pool2d(x, p), Tensor::ones({1, 1, 3, 3}, DType::kFloat32), p);
  EXPECT_EQ(values(g), (std::vector<double>{1.0}));
}

TEST(Pool2d, MaxPoolingPropagatesNan) {
  // Max pooling: a NaN in a window makes its output NaN (as chanflow's max reduction and
  // IEEE-propagating maximum do; Paddle 1.x's `x > y` update would skip it). Its gradient goes to
  // the window's first NaN.
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  x[5] = std::numeric_limits<double>::quiet_NaN();  // (1, 1)
  x[15] = std::numeric_limits<double>::infinity();  // (3, 3)
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    const Tensor xt = make(x, {1, 1, 4, 4}, dt);
    cf::Pool2dParams p;
    p.ksize = {2, 2};
    p.strides = {2, 2};
    const Tensor y = cf::pool2d(xt, p);
    const std::vector<double> v = values(y);
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_EQ(v[1], 8.0);
    EXPECT_EQ(v[2], 14.0);
    EXPECT_EQ(v[3], INFINITY);
    const std::vector<double> g = values(cf::pool2d_grad(xt, y, Tensor::ones({1, 1, 2, 2}, dt), p));
    std::vector<double> want(16, 0.0);
    want[5] = want[7] = want[13] = want[15] = 1.0;
    EXPECT_EQ(g, want);
    // Average pooling: NaN and Inf pass through the sum.
    p.type = cf::PoolType::kAvg;
    const std::vector<double> a = values(cf::pool2d(xt, p));
    EXPECT_TRUE(std::isnan(a[0]));
    EXPECT_EQ(a[3], INFINITY);
  }
}

// 2x2 windows with stride 2 and no padding (LeNet's pooling) take their own loops: they must give
// what the general ones give, odd extents (the last row or column dropped) and ties (small
// integers: the gradient goes to the first maximum, row-major) included.
TEST(Pool2d, TwoByTwoStrideTwoMatchesTheGeneralWindows) {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 40; ++it) {
    const Shape xs{1 + it % 2, 1 + it % 3, 2 + it % 7, 2 + (it / 3) % 6};
    std::vector<double> x(static_cast<size_t>(cf::shape_numel(xs)));
    for (double& v : x) v = static_cast<double>(std::uniform_int_distribution<int>(-3, 3)(rng));
    const DType dt = it % 2 == 0 ? DType::kFloat32 : DType::kFloat64;
    const Tensor xt = make(x, xs, dt);
    cf::Pool2dParams p;
    p.ksize = {2, 2};
    p.strides = {2, 2};
    const PoolRef ref = ref_pool(x, xs, p);
    const Tensor y = cf::pool2d(xt, p);
    ASSERT_EQ(y.shape(), ref.out);
    expect_close(values(y), ref.y, dt, "2x2 case " + std::to_string(it));
    const std::vector<double> gy = random_values(cf::shape_numel(ref.out), rng);
    const std::vector<double> g = values(cf::pool2d_grad(xt, y, make(gy, ref.out, dt), p));
    std::vector<double> want(x.size(), 0.0);
    const int64_t h = xs[2], w = xs[3], oh = ref.out[2], ow = ref.out[3];
    for (int64_t pl = 0; pl < xs[0] * xs[1]; ++pl) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best = -1;
          for (int64_t a = 0; a < 2; ++a) {
            for (int64_t b = 0; b < 2; ++b) {
              const int64_t k = pl * h * w + (2 * i + a) * w + 2 * j + b;
              if (best < 0 || x[static_cast<size_t>(k)] > x[static_cast<size_t>(best)]) best = k;
            }
          }
          want[static_cast<size_t>(best)] += gy[static_cast<size_t>(pl * oh * ow + i * ow + j)];
        }
      }
    }
    expect_close(g, want, dt, "2x2 gradient case " + std::to_string(it));
  }
}

// L(x) = sum(pool2d(x) * gy): central differences against pool2d_grad, float64, random values
// (so that no max window holds a tie and no step crosses one).
TEST(Pool2d, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(17);
  std::vector<cf::Pool2dParams> cases;
  for (cf::PoolType t : {cf::PoolType::kMax, cf::PoolType::kAvg}) {
    for (int variant = 0; variant < 4; ++variant) {
      cf::Pool2dParams p;
      p.type = t;
      p.ksize = {3, 2};
      p.strides = {2, 1};
      p.paddings = {1, variant % 2};
      p.ceil_mode = variant >= 2;
      p.exclusive = variant % 2 == 0;
      cases.push_back(p);
    }
    cf::Pool2dParams g;
    g.type = t;
    g.global_pooling = true;
    cases.push_back(g);
  }
  const Shape xs{2, 2, 5, 6};
  for (const cf::Pool2dParams& p : cases) {
    std::vector<double> x = random_values(cf::shape_numel(xs), rng);
    const Shape os = cf::pool2d_output_shape(xs, p);
    const std::vector<double> gy = random_values(cf::shape_numel(os), rng);
    const Tensor xt = make(x, xs, DType::kFloat64);
    const Tensor gyt = make(gy, os, DType::kFloat64, true);
    const std::vector<double> g = values(cf::pool2d_grad(xt, cf::pool2d(xt, p), gyt, p));
    auto loss = [&] {
      const std::vector<double> y = values(cf::pool2d(make(x, xs, DType::kFloat64), p));
      double s = 0;
      for (size_t i = 0; i < y.size(); ++i) s += y[i] * gy[i];
      return s;
    };
    const double h = 1e-6;
    for (size_t i = 0; i < x.size(); ++i) {
      const double keep = x[i];
      x[i] = keep + h;
      const double up = loss();
      x[i] = keep - h;
      const double down = loss();
      x[i] = keep;
      EXPECT_NEAR(g[i], (up - down) / (2 * h), 1e-6)
          << "type " << static_cast<int>(p.type) << " ceil " << p.ceil_mode << " exclusive "
          << p.exclusive << " global " << p.global_pooling << " element " << i;
    }
  }
}

TEST(Pool2d, BadInputsThrowTypedErrorsNamingOpAndArgument) {
  const Tensor x = Tensor::ones({2, 3, 6, 6}, DType::kFloat32);
  using cf::ShapeError;
  using cf::TypeError;
  cf::Pool2dParams p;
  p.ksize = {2, 2};
  auto with = [&](auto f) {
    cf::Pool2dParams q = p;
    f(q);
    return q;
  };
  expect_error<ShapeError>([&] { cf::pool2d(x.reshape({6, 6, 6}), p); }, "pool2d", "x must be 4-D");
  expect_error<ShapeError>([&] { cf::pool2d(x, with([](auto& q) {
                                              q.ksize = {0, 2};
                                            })); },
                           "pool2d", "ksize[0]");
  expect_error<ShapeError>([&] { cf::pool2d(x, with([](auto& q) {
                                              q.strides = {1, 0};
                                            })); },
                           "pool2d", "strides[1]");
  expect_error<ShapeError>([&] { cf::pool2d(x, with([](auto& q) {
                                              q.paddings = {0, -2};
                                            })); },
                           "pool2d", "paddings[1]");
  expect_error<ShapeError>([&] { cf::pool2d(x, with([](auto& q) {
                                              q.ksize = {9, 2};
                                            })); },
                           "pool2d", "exceeds the padded input height");
  expect_error<TypeError>([&] { cf::pool2d(x.cast(DType::kInt32), p); }, "pool2d", "x");
  const Tensor y = cf::pool2d(x, p);
  expect_error<ShapeError>([&] { cf::pool2d_grad(x, y.slice(2, 0, 4), y, p); }, "pool2d_grad",
                           "out shape");
  expect_error<ShapeError>([&] { cf::pool2d_grad(x, y, y.slice(3, 0, 4), p); }, "pool2d_grad",
                           "grad_out shape");
  expect_error<TypeError>([&] { cf::pool2d_grad(x, y.cast(DType::kFloat64), y, p); }, "pool2d_grad",
                          "out");
  expect_error<TypeError>([&] { cf::pool2d_grad(x, y, y.cast(DType::kFloat64), p); }, "pool2d_grad",
                          "grad_out");
  expect_error<TypeError>([&] { cf::pool2d_grad(x.cast(DType::kInt64), y, y, p); }, "pool2d_grad",
                          "x");
}

TEST(Pool2d, ChunkedAndCancellable) {
  std::mt19937_64 rng(23);
  const Shape xs{4, 8, 32, 32};
  const Tensor x = make(random_values(cf::shape_numel(xs), rng), xs, DType::kFloat32);
  const Tensor x0 = x.clone();
  cf::Pool2dParams p;
  p.ksize = {3, 3};
  p.strides = {2, 2};
  p.paddings = {1, 1};
  const Tensor y = cf::pool2d(x, p);
  int64_t calls = 0;
  cf::KernelOptions o;
  o.chunk_elements = 1000;
  o.between_chunks = [&] { ++calls; };
  EXPECT_TRUE(cf::pool2d(x, p, o).equal_to(y));
  // 32 * 16 rows of 16 * 9 window elements: 73728 / 1000, one check per ~6 rows.
  EXPECT_GE(calls, 73728 / 1000 / 2);
  EXPECT_LE(calls, 2 * 73728 / 1000 + 1);
  const Tensor gy = Tensor::ones(y.shape(), DType::kFloat32);
  const Tensor gx = cf::pool2d_grad(x, y, gy, p);
  EXPECT_TRUE(cf::pool2d_grad(x, y, gy, p, o).equal_to(gx));
  int n = 0;
  o.between_chunks = [&] {
    if (++n == 2) throw Stop();
  };
  EXPECT_THROW(cf::pool2d(x, p, o), Stop);
  n = 0;
  EXPECT_THROW(cf::pool2d_grad(x, y, gy, p, o), Stop);
  EXPECT_TRUE(x.equal_to(x0));
}

}  // namespace
