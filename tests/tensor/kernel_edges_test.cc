// Edge cases of the vectorised and tiled kernel paths, against scalar references written here:
//   * max / min / argmax (extremum.h): every size around the vector blocks (16 bytes x 4) and the
//     argmax chunk (16 KiB), NaN first / in the middle / last / in the scalar tail, ties inside
//     and across blocks and chunks, signed zeros, every dtype, reductions over inner and outer
//     axes and over strided views;
//   * elementwise kernels and copies over transposed / permuted / sliced views (the tiled walk
//     with gathered inputs in strided.h), shapes that are not multiples of the tile, broadcasting
//     next to a transposed operand, every element size.
// tensor_numpy_test checks a subset of the same shapes against NumPy itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

const std::vector<int64_t> kSizes = {1,    2,    3,    7,    8,    9,    15,   16,   17,   31,
                                     32,   33,   63,   64,   65,   127,  128,  129,  255,  1000,
                                     2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193, 12289};

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// NumPy's semantics, scalar: the first NaN wins; else the first strict improvement.
template <class T>
int64_t ref_arg(const std::vector<T>& v, bool is_max) {
  int64_t b = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (is_nan(v[i])) return i;
    if (is_max ? v[i] > v[b] : v[i] < v[b]) b = i;
  }
  return b;
}

template <class T>
std::vector<T> random_values(int64_t n, std::mt19937_64& rng) {
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(-100, 100)(rng));
    } else {
      x = static_cast<T>(rng());  // the full range: extremes of the type included
    }
  }
  return v;
}

// The patterns every size is tried with: NaN / extreme positions and ties.
template <class T>
std::vector<std::pair<std::string, std::vector<T>>> patterns(int64_t n, std::mt19937_64& rng) {
  std::vector<std::pair<std::string, std::vector<T>>> out;
  out.emplace_back("random", random_values<T>(n, rng));
  const std::vector<int64_t> spots = {0, n / 2, n - 1, (n / 64) * 64, ((n - 1) / 64) * 64 + 1};
  for (int64_t at : spots) {
    if (at < 0 || at >= n) continue;
    auto v = random_values<T>(n, rng);
    v[static_cast<size_t>(at)] = std::numeric_limits<T>::max();
    out.emplace_back("max at " + std::to_string(at), v);
    v[static_cast<size_t>(at)] = std::numeric_limits<T>::lowest();
    out.emplace_back("lowest at " + std::to_string(at), v);
    if constexpr (std::is_floating_point_v<T>) {
      v[static_cast<size_t>(at)] = std::numeric_limits<T>::quiet_NaN();
      out.emplace_back("NaN at " + std::to_string(at), v);
      if (at + 3 < n) {
        v[static_cast<size_t>(at + 3)] = -std::numeric_limits<T>::quiet_NaN();
        out.emplace_back("two NaNs from " + std::to_string(at), v);
      }
      auto w = random_values<T>(n, rng);
      w[static_cast<size_t>(at)] = std::numeric_limits<T>::infinity();
      if (n > 1) w[static_cast<size_t>((at + n / 3 + 1) % n)] = -std::numeric_limits<T>::infinity();
      out.emplace_back("infinities from " + std::to_string(at), w);
    }
  }
  // Ties: the same extreme at several places, across vector blocks and argmax chunks.
  auto t = random_values<T>(n, rng);
  for (int64_t at : {n - 1, n / 2, int64_t{70}, int64_t{4100}, int64_t{5}}) {
    if (at < n) t[static_cast<size_t>(at)] = std::numeric_limits<T>::max();
  }
  out.emplace_back("ties of the maximum", t);
  for (int64_t at : {n - 1, int64_t{4100}, int64_t{3}, n / 2}) {
    if (at < n) t[static_cast<size_t>(at)] = std::numeric_limits<T>::lowest();
  }
  out.emplace_back("ties of both", t);
  out.emplace_back("all equal", std::vector<T>(static_cast<size_t>(n), T{3}));
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<T> z(static_cast<size_t>(n), T{-1});
    for (int64_t i = 0; i < n; i += 5) z[static_cast<size_t>(i)] = (i / 5) % 2 ? T{0} : T{-0.0};
    out.emplace_back("signed zeros", z);
    z[static_cast<size_t>(n - 1)] = std::numeric_limits<T>::quiet_NaN();
    out.emplace_back("signed zeros, NaN last", z);
  }
  return out;
}

template <class T>
void expect_same_value(T got, T want, const std::string& what) {
  if (is_nan(want)) {
    EXPECT_TRUE(is_nan(got)) << what << ": got " << +got << ", want NaN";
  } else {
    EXPECT_TRUE(got == want) << what << ": got " << +got << ", want " << +want;  // -0 == +0
  }
}

template <class T>
void check_flat_reductions() {
  std::mt19937_64 rng(42);
  for (int64_t n : kSizes) {
    for (const auto& [name, v] : patterns<T>(n, rng)) {
      const std::string what =
          std::string(cf::dtype_name(cf::dtype_of<T>())) + " n=" + std::to_string(n) + " " + name;
      const Tensor t = Tensor::from_vector<T>(v);
      const int64_t imax = ref_arg(v, true);
      const int64_t imin = ref_arg(v, false);
      expect_same_value(cf::max(t).item<T>(), v[static_cast<size_t>(imax)], what + " max");
      expect_same_value(cf::min(t).item<T>(), v[static_cast<size_t>(imin)], what + " min");
      EXPECT_EQ(cf::argmax(t).item<int64_t>(), imax) << what << " argmax";
      EXPECT_EQ(cf::argmax(t, 0).item<int64_t>(), imax) << what << " argmax axis 0";
    }
  }
}

TEST(VectorReductions, MaxMinArgmaxFlatFloat32) { check_flat_reductions<float>(); }
TEST(VectorReductions, MaxMinArgmaxFlatFloat64) { check_flat_reductions<double>(); }
TEST(VectorReductions, MaxMinArgmaxFlatInt8) { check_flat_reductions<int8_t>(); }
TEST(VectorReductions, MaxMinArgmaxFlatUInt8) { check_flat_reductions<uint8_t>(); }
TEST(VectorReductions, MaxMinArgmaxFlatInt16) { check_flat_reductions<int16_t>(); }
TEST(VectorReductions, MaxMinArgmaxFlatInt32) { check_flat_reductions<int32_t>(); }
TEST(VectorReductions, MaxMinArgmaxFlatInt64) { check_flat_reductions<int64_t>(); }

// Rows and columns of matrices (inner-axis runs and outer-axis row updates), also through views.
template <class T>
void check_axis_reductions() {
  std::mt19937_64 rng(7);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {3, 17}, {17, 3}, {5, 64}, {9, 65}, {33, 100}, {4, 4097}}) {
    auto v = random_values<T>(rows * cols, rng);
    if constexpr (std::is_floating_point_v<T>) {
      v[static_cast<size_t>(cols / 2)] = std::numeric_limits<T>::quiet_NaN();         // row 0
      v[static_cast<size_t>(rows * cols - 1)] = std::numeric_limits<T>::quiet_NaN();  // last
    }
    const Tensor base = Tensor::from_vector<T>(v, {rows, cols});
    for (int view = 0; view < 3; ++view) {
      const Tensor a = view == 0 ? base : view == 1 ? base.transpose() : base.slice(1, 1, cols, 2);
      if (a.numel() == 0) continue;
      const int64_t r = a.shape()[0];
      const int64_t c = a.shape()[1];
      const std::string what = std::string(cf::dtype_name(cf::dtype_of<T>())) + " " +
                               std::to_string(rows) + "x" + std::to_string(cols) + " view " +
                               std::to_string(view);
      for (int axis = 0; axis < 2; ++axis) {
        const Tensor mx = cf::max(a, {axis});
        const Tensor mn = cf::min(a, {axis});
        const Tensor am = cf::argmax(a, axis);
        const int64_t outer = axis == 0 ? c : r;
        const int64_t len = axis == 0 ? r : c;
        for (int64_t o = 0; o < outer; ++o) {
          std::vector<T> line;
          for (int64_t k = 0; k < len; ++k)
            line.push_back(a.at<T>(axis == 0 ? cf::Shape{k, o} : cf::Shape{o, k}));
          const std::string w = what + " axis " + std::to_string(axis) + " #" + std::to_string(o);
          expect_same_value(mx.at<T>({o}), line[static_cast<size_t>(ref_arg(line, true))], w);
          expect_same_value(mn.at<T>({o}), line[static_cast<size_t>(ref_arg(line, false))], w);
          EXPECT_EQ(am.at<int64_t>({o}), ref_arg(line, true)) << w;
        }
      }
    }
  }
}

TEST(VectorReductions, AxesAndViewsFloat32) { check_axis_reductions<float>(); }
TEST(VectorReductions, AxesAndViewsFloat64) { check_axis_reductions<double>(); }
TEST(VectorReductions, AxesAndViewsInt8) { check_axis_reductions<int8_t>(); }
TEST(VectorReductions, AxesAndViewsInt64) { check_axis_reductions<int64_t>(); }

TEST(VectorReductions, Float16AndBoolKeepTheirPaths) {
  const Tensor h = Tensor::from_vector<float>({1, -3, 7, 7, NAN, 2}).cast(DType::kFloat16);
  EXPECT_TRUE(std::isnan(cf::max(h).item<float>()));
  EXPECT_EQ(cf::argmax(h).item<int64_t>(), 4);
  EXPECT_EQ(cf::argmax(h.slice(0, 0, 4)).item<int64_t>(), 2);
  EXPECT_EQ(cf::min(h.slice(0, 0, 4)).item<float>(), -3.0f);
  const Tensor b = Tensor::from_vector<bool>({false, false, true, true, false});
  EXPECT_EQ(cf::argmax(b).item<int64_t>(), 2);
  EXPECT_TRUE(cf::max(b).item<bool>());
  EXPECT_FALSE(cf::min(b).item<bool>());
}

TEST(VectorReductions, EmptyStillErrors) {
  const Tensor e = Tensor::zeros({0}, DType::kFloat32);
  EXPECT_THROW((void)cf::max(e), cf::ShapeError);
  EXPECT_THROW((void)cf::min(e), cf::ShapeError);
  EXPECT_THROW((void)cf::argmax(e), cf::ShapeError);
  EXPECT_THROW((void)cf::argmax(Tensor::zeros({3, 0}, DType::kFloat64), 1), cf::ShapeError);
}

// ---- elementwise over views (the tiled walk) ----

// A tensor of `shape` with distinct, exactly representable values.
Tensor ramp(const cf::Shape& shape, DType dtype, int64_t seed) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<double>((i * 37 + seed) % 97 - 48);
  return Tensor::from_vector<double>(v, shape).cast(dtype);
}

// Visits every index of `shape`.
template <class F>
void for_each_index(const cf::Shape& shape, F&& f) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  cf::Shape idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

// A contiguous copy of t built element by element through at() (no kernel involved).
Tensor materialise(const Tensor& t) {
  std::vector<double> v;
  for_each_index(t.shape(), [&](const cf::Shape& idx) { v.push_back(t.at<double>(idx)); });
  return Tensor::from_vector<double>(v, t.shape()).cast(t.dtype());
}

// Kernels on the views must give bit-identical results to the same kernels on contiguous copies.
void check_binary_views(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor ca = materialise(a);
  const Tensor cb = materialise(b);
  EXPECT_TRUE(a.contiguous().equal_to(ca)) << what << ": contiguous()";
  EXPECT_TRUE(cf::add(a, b).equal_to(cf::add(ca, cb))) << what << ": add";
  EXPECT_TRUE(cf::mul(a, b).equal_to(cf::mul(ca, cb))) << what << ": mul";
  EXPECT_TRUE(cf::maximum(a, b).equal_to(cf::maximum(ca, cb))) << what << ": maximum";
  EXPECT_TRUE(cf::greater(a, b).equal_to(cf::greater(ca, cb))) << what << ": greater";
  EXPECT_TRUE(cf::abs(b).equal_to(cf::abs(cb))) << what << ": abs";
  EXPECT_TRUE(a.cast(DType::kFloat64).equal_to(ca.cast(DType::kFloat64))) << what << ": cast";
}

TEST(TiledElementwise, TransposedAndPermutedViewsEveryElementSize) {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kInt16, DType::kInt64,
                   DType::kFloat16, DType::kUInt8, DType::kBool, DType::kInt32}) {
    for (const auto& [r, c] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 300}, {17, 40}, {33, 257}, {70, 513}, {300, 37}, {64, 256}, {257, 31}}) {
      const std::string what =
          std::string(cf::dtype_name(dt)) + " " + std::to_string(r) + "x" + std::to_string(c);
      const Tensor bt = ramp({c, r}, dt, 1).transpose();  // (r, c), fastest along axis 0
      const Tensor a = ramp({r, c}, dt, 2);
      check_binary_views(a, bt, what + " contiguous + transposed");
      check_binary_views(bt, a, what + " transposed + contiguous");
      check_binary_views(bt, bt, what + " transposed + itself");
      check_binary_views(ramp({c + 3, r}, dt, 3).slice(0, 2, c + 2).transpose(), a,
                         what + " sliced transposed");
      check_binary_views(ramp({2 * c, r}, dt, 4).slice(0, 1, 2 * c, 2).transpose(), bt,
                         what + " strided slice transposed");
    }
  }
}

TEST(TiledElementwise, ThreeDimensionalPermutationsAndBroadcasting) {
  const Tensor base = ramp({5, 70, 33}, DType::kFloat32, 5);
  const Tensor p = base.transpose({2, 0, 1});  // (33, 5, 70): fastest along the last axis? no
  const Tensor q = base.transpose({1, 2, 0});  // (70, 33, 5)
  check_binary_views(p, ramp({33, 5, 70}, DType::kFloat32, 6), "perm (2,0,1)");
  check_binary_views(q, ramp({70, 33, 5}, DType::kFloat32, 7), "perm (1,2,0)");
  check_binary_views(base.transpose({2, 1, 0}), ramp({33, 70, 5}, DType::kFloat32, 8),
                     "perm (2,1,0)");
  // Broadcasting next to a transposed operand: a row, a column and a scalar.
  const Tensor t = ramp({90, 130}, DType::kFloat64, 9).transpose();  // (130, 90)
  check_binary_views(t, ramp({90}, DType::kFloat64, 10), "transposed + row");
  check_binary_views(ramp({130, 1}, DType::kFloat64, 11), t, "column + transposed");
  check_binary_views(ramp({}, DType::kFloat64, 12), t, "scalar + transposed");
  check_binary_views(ramp({4, 1, 1}, DType::kFloat64, 13), t, "3-D broadcast + transposed");
  check_binary_views(t.unsqueeze(0), ramp({3, 130, 90}, DType::kFloat64, 14),
                     "broadcast transposed over a batch");
  // Mixed dtypes: the transposed operand is cast first (also a tiled copy).
  check_binary_views(ramp({90, 130}, DType::kInt32, 15).transpose(), t, "int32^T + float64^T");
}

TEST(TiledElementwise, ChunkCallbackStillRunsAndCancels) {
  const Tensor a = ramp({300, 400}, DType::kFloat32, 1);
  const Tensor b = ramp({400, 300}, DType::kFloat32, 2).transpose();
  int calls = 0;
  cf::KernelOptions opts;
  opts.chunk_elements = 8192;
  opts.between_chunks = [&] { ++calls; };
  const Tensor r = cf::add(a, b, opts);
  EXPECT_GT(calls, 5);
  EXPECT_TRUE(r.equal_to(cf::add(a, b)));
  calls = 0;
  opts.between_chunks = [&] {
    if (++calls == 2) throw cf::CanceledError("canceled");
  };
  EXPECT_THROW((void)cf::mul(a, b, opts), cf::CanceledError);
  EXPECT_EQ(calls, 2);
}

}  // namespace
