// nn_norm.cc — batch norm (training, inference, gradient) and dropout, with Paddle 1.x semantics
// (see nn.h).
//
// Batch norm views x as (outer, C, inner): NCHW is (N, C, H*W...), NHWC is (N*H*W..., C, 1). The
// statistics take one pass over x: per channel, sums of (x - shift) and its square (blocks in x's
// type, accumulated across blocks in double), with shift the channel's first element so that the
// one-pass variance does not cancel when |mean| is large against the spread. The normalisation is a
// second pass, y = x * a[c] + b[c]. So training reads x twice and writes y once; inference reads
// once and writes once. The training statistics (channel_moments) use 16-byte generic vectors so
// that the lanes stay in registers; the gradient's two-input sums (channel_sums) are plain loops.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "nn_common.h"

namespace chanflow {

namespace {

using detail::ChunkClock;

struct ChannelView {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  int64_t per_channel() const { return outer * inner; }  // M
};

ChannelView channel_view(const Tensor& x, DataLayout layout, const char* op) {
  const int64_t nd = x.ndim();
  if (nd < 2 || nd > 5) {
    CHANFLOW_THROW(ShapeError) << op << ": x must have rank 2 to 5, got shape "
                               << shape_to_string(x.shape());
  }
  const Shape& s = x.shape();
  ChannelView v;
  if (layout == DataLayout::kNCHW) {
    v.outer = s[0];
    v.channels = s[1];
    for (int64_t d = 2; d < nd; ++d) v.inner *= s[static_cast<size_t>(d)];
  } else {
    v.channels = s[static_cast<size_t>(nd - 1)];
    for (int64_t d = 0; d < nd - 1; ++d) v.outer *= s[static_cast<size_t>(d)];
  }
  return v;
}

void require_channel_vector(const Tensor& t, const Tensor& x, int64_t channels, const char* op,
                            const char* arg) {
  detail::require_float(t, op, arg);
  if (t.dtype() != x.dtype()) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " must have x's dtype "
                              << dtype_name(x.dtype()) << ", got " << dtype_name(t.dtype());
  }
  if (t.ndim() != 1 || t.shape()[0] != channels) {
    CHANFLOW_THROW(ShapeError) << op << ": " << arg << " must have shape (" << channels
                               << ",) (the channels of x " << shape_to_string(x.shape())
                               << "), got " << shape_to_string(t.shape());
  }
}

void require_finite_attr(float v, const char* op, const char* attr, bool non_negative) {
  if (!std::isfinite(v) || (non_negative && v < 0)) {
    CHANFLOW_THROW(Error) << op << ": " << attr << " must be finite"
                          << (non_negative ? " and >= 0" : "") << ", got " << v;
  }
}

// A channel vector as doubles.
template <class T>
std::vector<double> channel_values(const Tensor& t) {
  const Tensor d = t.contiguous();
  const T* p = d.data<T>();
  return std::vector<double>(p, p + d.numel());
}

// Per channel c: s1[c] += sum(p), s2[c] += sum(p * q) over the channel's elements, where
// p = P - pc[c] and q = Q - qc[c]. P, Q are contiguous in the (outer, C, inner) view.
template <class T>
void channel_sums(const T* P, const double* pc, const T* Q, const double* qc, const ChannelView& v,
                  double* s1, double* s2, ChunkClock& clock) {
  const int64_t C = v.channels;
  if (v.inner == 1) {
    for (int64_t o = 0; o < v.outer; ++o) {
      clock.before(C);
      const T* __restrict pr = P + o * C;
      const T* __restrict qr = Q + o * C;
      for (int64_t c = 0; c < C; ++c) {
        const double p = static_cast<double>(pr[c]) - pc[c];
        const double q = static_cast<double>(qr[c]) - qc[c];
        s1[c] += p;
        s2[c] += p * q;
      }
    }
    return;
  }
  // Along a row: blocks of kBlock elements summed in T with kLanes independent partial sums (a
  // loop the compiler vectorises), each block's sums then added in double. In float32 a block's
  // rounding is ~1e-7 relative, and the double sums across blocks keep it there for any M.
  const int64_t piece = std::max<int64_t>(1, clock.chunk());
  constexpr int kLanes = 16;
  constexpr int64_t kBlock = 256;
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t row = (o * C + c) * v.inner;
      const T pcc = static_cast<T>(pc[c]);
      const T qcc = static_cast<T>(qc[c]);
      for (int64_t lo = 0; lo < v.inner; lo += piece) {
        const int64_t n = std::min(piece, v.inner - lo);
        clock.before(n);
        const T* __restrict pr = P + row + lo;
        const T* __restrict qr = Q + row + lo;
        double a1 = 0;
        double a2 = 0;
        int64_t i = 0;
        for (; i + kBlock <= n; i += kBlock) {
          T l1[kLanes] = {};
          T l2[kLanes] = {};
          for (int64_t b = i; b < i + kBlock; b += kLanes) {
            for (int j = 0; j < kLanes; ++j) {
              const T p = pr[b + j] - pcc;
              const T q = qr[b + j] - qcc;
              l1[j] += p;
              l2[j] += p * q;
            }
          }
          T b1 = 0;
          T b2 = 0;
          for (int j = 0; j < kLanes; ++j) {
            b1 += l1[j];
            b2 += l2[j];
          }
          a1 += static_cast<double>(b1);
          a2 += static_cast<double>(b2);
        }
        for (; i < n; ++i) {
          const double p = static_cast<double>(pr[i]) - pc[c];
          const double q = static_cast<double>(qr[i]) - qc[c];
          a1 += p;
          a2 += p * q;
        }
        s1[c] += a1;
        s2[c] += a2;
      }
    }
  }
}

// A 16-byte vector of T (GCC's generic vector extension).
template <class T>
struct Vec16 {
  typedef T type __attribute__((vector_size(16)));
};

// Per channel c: s1[c] += sum(d), s2[c] += sum(d * d) with d = X - shift[c], X contiguous in the
// (outer, C, inner) view: batch_norm_train's statistics, one read of each element. Rows (inner
// > 1) are summed in blocks of kBlock elements in T with two vectors of independent partial sums
// each, then each block's sums added in double; in float32 a block's rounding is ~1e-7 relative,
// and the double sums across blocks keep it there for any M. NHWC (inner == 1) sums each row of C
// channels into C-long partial sums in T, added into double every kBlock rows.
template <class T>
void channel_moments(const T* X, const double* shift, const ChannelView& v, double* s1, double* s2,
                     ChunkClock& clock) {
  // GCC's generic vectors (16 bytes: SSE2 / NEON registers, split into scalars elsewhere), so
  // the lanes stay in registers and the summation order is the same on every target.
  using Vec = typename Vec16<T>::type;
  constexpr int kWidth = static_cast<int>(16 / sizeof(T));
  constexpr int64_t kBlock = 256;
  const int64_t C = v.channels;
  if (v.inner == 1) {
    std::vector<T> sh(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) sh[static_cast<size_t>(c)] = static_cast<T>(shift[c]);
    std::vector<T> l1(static_cast<size_t>(C));
    std::vector<T> l2(static_cast<size_t>(C));
    const T* __restrict shv = sh.data();
    T* __restrict p1 = l1.data();
    T* __restrict p2 = l2.data();
    for (int64_t o0 = 0; o0 < v.outer; o0 += kBlock) {
      const int64_t o1 = std::min(v.outer, o0 + kBlock);
      std::fill(l1.begin(), l1.end(), T{0});
      std::fill(l2.begin(), l2.end(), T{0});
      for (int64_t o = o0; o < o1; ++o) {
        clock.before(C);
        const T* __restrict row = X + o * C;
        for (int64_t c = 0; c < C; ++c) {
          const T d = row[c] - shv[c];
          p1[c] += d;
          p2[c] += d * d;
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        s1[c] += static_cast<double>(p1[c]);
        s2[c] += static_cast<double>(p2[c]);
      }
    }
    return;
  }
  const int64_t piece = std::max<int64_t>(1, clock.chunk());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      const T* row = X + (o * C + c) * v.inner;
      const T sh = static_cast<T>(shift[c]);
      for (int64_t lo = 0; lo < v.inner; lo += piece) {
        const int64_t n = std::min(piece, v.inner - lo);
        clock.before(n);
        const T* __restrict pr = row + lo;
        double a1 = 0;
        double a2 = 0;
        int64_t i = 0;
        for (; i + kBlock <= n; i += kBlock) {
          Vec u1{};
          Vec u2{};
          Vec w1{};
          Vec w2{};
          for (int64_t b = i; b < i + kBlock; b += 2 * kWidth) {
            Vec d;
            Vec e;
            std::memcpy(&d, pr + b, sizeof(Vec));
            std::memcpy(&e, pr + b + kWidth, sizeof(Vec));
            d -= sh;
            e -= sh;
            u1 += d;
            w1 += e;
            u2 += d * d;
            w2 += e * e;
          }
          u1 += w1;
          u2 += w2;
          T b1 = 0;
          T b2 = 0;
          for (int j = 0; j < kWidth; ++j) {
            b1 += u1[j];
            b2 += u2[j];
          }
          a1 += static_cast<double>(b1);
          a2 += static_cast<double>(b2);
        }
        for (; i < n; ++i) {
          const double d = static_cast<double>(pr[i]) - shift[c];
          a1 += d;
          a2 += d * d;
        }
        s1[c] += a1;
        s2[c] += a2;
      }
    }
  }
}

// out = in1 * a[c] + (in2 ? in2 * b[c] : 0) + d[c], all contiguous in the (outer, C, inner) view.
template <class T>
void channel_affine(T* out, const T* in1, const T* in2, const std::vector<T>& a,
                    const std::vector<T>& b, const std::vector<T>& d, const ChannelView& v,
                    ChunkClock& clock) {
  const int64_t C = v.channels;
  if (v.inner == 1) {
    const T* __restrict av = a.data();
    const T* __restrict bv = b.data();
    const T* __restrict dv = d.data();
    for (int64_t o = 0; o < v.outer; ++o) {
      clock.before(C);
      T* __restrict y = out + o * C;
      const T* __restrict u = in1 + o * C;
      if (in2 != nullptr) {
        const T* __restrict w = in2 + o * C;
        for (int64_t c = 0; c < C; ++c) y[c] = u[c] * av[c] + w[c] * bv[c] + dv[c];
      } else {
        for (int64_t c = 0; c < C; ++c) y[c] = u[c] * av[c] + dv[c];
      }
    }
    return;
  }
  const int64_t piece = std::max<int64_t>(1, clock.chunk());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t row = (o * C + c) * v.inner;
      const T ac = a[static_cast<size_t>(c)];
      const T bc = b[static_cast<size_t>(c)];
      const T dc = d[static_cast<size_t>(c)];
      for (int64_t lo = 0; lo < v.inner; lo += piece) {
        const int64_t n = std::min(piece, v.inner - lo);
        clock.before(n);
        T* __restrict y = out + row + lo;
        const T* __restrict u = in1 + row + lo;
        if (in2 != nullptr) {
          const T* __restrict w = in2 + row + lo;
          for (int64_t i = 0; i < n; ++i) y[i] = u[i] * ac + w[i] * bc + dc;
        } else {
          for (int64_t i = 0; i < n; ++i) y[i] = u[i] * ac + dc;
        }
      }
    }
  }
}

template <class T>
Tensor channel_tensor(const std::vector<double>& v) {
  std::vector<T> t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = static_cast<T>(v[i]);
  return Tensor::from_vector(t);
}

template <class T>
BatchNormTrainResult bn_train(const Tensor& x_in, const Tensor& scale, const Tensor& bias,
                              const Tensor& running_mean, const Tensor& running_var,
                              double momentum, double eps, const ChannelView& v,
                              const KernelOptions& opts) {
  const auto C = static_cast<size_t>(v.channels);
  const double M = static_cast<double>(v.per_channel());
  BatchNormTrainResult r;
  if (v.per_channel() == 1) {
    r.y = x_in.clone();
    r.mean_out = running_mean.clone();
    r.variance_out = running_var.clone();
    r.saved_mean = Tensor::zeros({v.channels}, x_in.dtype());
    r.saved_variance = Tensor::zeros({v.channels}, x_in.dtype());
    return r;
  }
  const Tensor x = detail::dense(x_in, opts);
  const T* xp = x.data<T>();
  ChunkClock clock(opts);
  std::vector<double> shift(C);
  for (size_t c = 0; c < C; ++c) shift[c] = static_cast<double>(xp[c * v.inner]);
  std::vector<double> s1(C, 0.0);
  std::vector<double> s2(C, 0.0);
  channel_moments<T>(xp, shift.data(), v, s1.data(), s2.data(), clock);
  std::vector<double> mean(C);
  std::vector<double> var(C);
  std::vector<double> inv_std(C);
  const std::vector<double> sc = channel_values<T>(scale);
  const std::vector<double> bi = channel_values<T>(bias);
  const std::vector<double> rm = channel_values<T>(running_mean);
  const std::vector<double> rv = channel_values<T>(running_var);
  std::vector<double> mean_out(C);
  std::vector<double> var_out(C);
  std::vector<T> a(C);
  std::vector<T> zero(C, T{0});
  std::vector<T> b(C);
  for (size_t c = 0; c < C; ++c) {
    mean[c] = shift[c] + s1[c] / M;
    const double ss = (s2[c] - s1[c] * s1[c] / M) / M;
    var[c] = ss < 0 ? 0.0 : ss;  // rounding can make it slightly negative; NaN stays NaN
    inv_std[c] = 1.0 / std::sqrt(var[c] + eps);
    mean_out[c] = rm[c] * momentum + mean[c] * (1.0 - momentum);
    var_out[c] = rv[c] * momentum + var[c] * (1.0 - momentum);
    a[c] = static_cast<T>(sc[c] * inv_std[c]);
    b[c] = static_cast<T>(bi[c] - mean[c] * inv_std[c] * sc[c]);
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  channel_affine<T>(y.data<T>(), xp, nullptr, a, zero, b, v, clock);
  r.y = std::move(y);
  r.mean_out = channel_tensor<T>(mean_out);
  r.variance_out = channel_tensor<T>(var_out);
  r.saved_mean = channel_tensor<T>(mean);
  r.saved_variance = channel_tensor<T>(inv_std);
  return r;
}

template <class T>
Tensor bn_infer(const Tensor& x_in, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                const Tensor& var, double eps, const ChannelView& v, const KernelOptions& opts) {
  const auto C = static_cast<size_t>(v.channels);
  const std::vector<double> sc = channel_values<T>(scale);
  const std::vector<double> bi = channel_values<T>(bias);
  const std::vector<double> mu = channel_values<T>(mean);
  const std::vector<double> va = channel_values<T>(var);
  std::vector<T> a(C);
  std::vector<T> b(C);
  std::vector<T> zero(C, T{0});
  for (size_t c = 0; c < C; ++c) {
    const double inv_std = 1.0 / std::sqrt(va[c] + eps);
    a[c] = static_cast<T>(sc[c] * inv_std);
    b[c] = static_cast<T>(bi[c] - mu[c] * inv_std * sc[c]);
  }
  const Tensor x = detail::dense(x_in, opts);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  if (y.numel() == 0) return y;
  ChunkClock clock(opts);
  channel_affine<T>(y.data<T>(), x.data<T>(), nullptr, a, zero, b, v, clock);
  return y;
}

template <class T>
BatchNormGradResult bn_grad(const Tensor& x_in, const Tensor& scale, const Tensor& saved_mean,
                            const Tensor& saved_inv_std, const Tensor& dy_in, const ChannelView& v,
                            const KernelOptions& opts) {
  const auto C = static_cast<size_t>(v.channels);
  const double M = static_cast<double>(v.per_channel());
  BatchNormGradResult r;
  if (v.per_channel() == 1) {
    r.grad_x = dy_in.clone();
    r.grad_scale = Tensor::zeros({v.channels}, x_in.dtype());
    r.grad_bias = Tensor::zeros({v.channels}, x_in.dtype());
    return r;
  }
  const Tensor x = detail::dense(x_in, opts);
  const Tensor dy = detail::dense(dy_in, opts);
  const std::vector<double> sc = channel_values<T>(scale);
  const std::vector<double> mean = channel_values<T>(saved_mean);
  const std::vector<double> inv = channel_values<T>(saved_inv_std);
  const std::vector<double> zero(C, 0.0);
  std::vector<double> sum_dy(C, 0.0);
  std::vector<double> sum_dy_xmu(C, 0.0);
  ChunkClock clock(opts);
  channel_sums<T>(dy.data<T>(), zero.data(), x.data<T>(), mean.data(), v, sum_dy.data(),
                  sum_dy_xmu.data(), clock);
  // grad_x = a * dy + b * x + d, expanding the formula of nn.h per channel.
  std::vector<T> a(C);
  std::vector<T> b(C);
  std::vector<T> d(C);
  std::vector<double> gs(C);
  for (size_t c = 0; c < C; ++c) {
    const double k = sc[c] * inv[c];
    const double bb = -k * inv[c] * inv[c] * sum_dy_xmu[c] / M;
    a[c] = static_cast<T>(k);
    b[c] = static_cast<T>(bb);
    d[c] = static_cast<T>(-k * sum_dy[c] / M - bb * mean[c]);
    gs[c] = sum_dy_xmu[c] * inv[c];
  }
  Tensor dx = Tensor::empty(x.shape(), x.dtype());
  channel_affine<T>(dx.data<T>(), dy.data<T>(), x.data<T>(), a, b, d, v, clock);
  r.grad_x = std::move(dx);
  r.grad_scale = channel_tensor<T>(gs);
  r.grad_bias = channel_tensor<T>(sum_dy);
  return r;
}

// ---- dropout ----

// The (j+1)-th output of SplitMix64 seeded with `seed`.
inline uint64_t splitmix64_at(uint64_t seed, uint64_t j) {
  uint64_t z = seed + (j + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Elements [begin, begin + n) of the mask rule of nn.h: element i is decided by 32-bit half
// (i & 1) (0: the low half) of SplitMix64's (i / 2 + 1)-th output, dropped when that half is
// < threshold (threshold <= 2^32 - 1 here; prob 1 is handled by the caller).
template <class T>
void dropout_run(const T* __restrict x, T* __restrict out, T* __restrict mask, int64_t begin,
                 int64_t n, uint64_t seed, uint32_t threshold) {
  // In blocks, three loops the compiler vectorises: the hashes of the block's element pairs (only
  // 64-bit integer operations, two lanes per SSE2 vector), their 32-bit halves as keep words,
  // then a branch-free apply (the decisions are random): the output's bits are x's bits and-ed
  // with an all-ones or all-zeros word, so a dropped NaN or infinity gives +0 as Paddle's select
  // does. A block may start on an odd element: the pair of element begin + lo is hashed whole
  // and its first half skipped, so the mask does not depend on where chunks or blocks start.
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr int64_t kBlock = 512;  // elements per block
  alignas(64) uint64_t hash[kBlock / 2 + 1];
  alignas(64) uint32_t half[kBlock + 2];
  alignas(64) Bits keep[kBlock];
  const Bits one = std::bit_cast<Bits>(T{1});
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    const int64_t m = std::min(kBlock, n - lo);
    const auto first = static_cast<uint64_t>(begin + lo);
    const uint64_t pair0 = first >> 1;
    const int64_t skip = static_cast<int64_t>(first & 1);
    const int64_t pairs = (skip + m + 1) >> 1;
    for (int64_t j = 0; j < pairs; ++j) {
      hash[j] = splitmix64_at(seed, pair0 + static_cast<uint64_t>(j));
    }
    for (int64_t j = 0; j < pairs; ++j) {
      half[2 * j] = static_cast<uint32_t>(hash[j]);
      half[2 * j + 1] = static_cast<uint32_t>(hash[j] >> 32);
    }
    const uint32_t* __restrict h = half + skip;
    for (int64_t i = 0; i < m; ++i) keep[i] = Bits{0} - static_cast<Bits>(h[i] >= threshold);
    for (int64_t i = 0; i < m; ++i) {
      mask[lo + i] = std::bit_cast<T>(static_cast<Bits>(one & keep[i]));
      out[lo + i] = std::bit_cast<T>(static_cast<Bits>(std::bit_cast<Bits>(x[lo + i]) & keep[i]));
    }
  }
}

}  // namespace

DataLayout parse_data_layout(std::string_view name) {
  if (name == "NCHW" || name == "AnyLayout") return DataLayout::kNCHW;
  if (name == "NHWC") return DataLayout::kNHWC;
  CHANFLOW_THROW(Error) << "batch_norm: data_layout must be \"NCHW\" or \"NHWC\", got \"" << name
                        << "\"";
  __builtin_unreachable();
}

BatchNormTrainResult batch_norm_train(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                      const Tensor& running_mean, const Tensor& running_var,
                                      float momentum, float epsilon, DataLayout layout,
                                      const KernelOptions& opts) {
  constexpr const char* kOp = "batch_norm_train";
  detail::require_float(x, kOp, "x");
  const ChannelView v = channel_view(x, layout, kOp);
  require_channel_vector(scale, x, v.channels, kOp, "scale");
  require_channel_vector(bias, x, v.channels, kOp, "bias");
  require_channel_vector(running_mean, x, v.channels, kOp, "running_mean");
  require_channel_vector(running_var, x, v.channels, kOp, "running_var");
  require_finite_attr(momentum, kOp, "momentum", false);
  require_finite_attr(epsilon, kOp, "epsilon", true);
  if (v.per_channel() == 0) {
    CHANFLOW_THROW(ShapeError) << kOp << ": x " << shape_to_string(x.shape())
                               << " has no elements per channel to take statistics of";
  }
  if (x.dtype() == DType::kFloat32) {
    return bn_train<float>(x, scale, bias, running_mean, running_var, momentum, epsilon, v, opts);
  }
  return bn_train<double>(x, scale, bias, running_mean, running_var, momentum, epsilon, v, opts);
}

Tensor batch_norm_infer(const Tensor& x, const Tensor& scale, const Tensor& bias,
                        const Tensor& mean, const Tensor& var, float epsilon, DataLayout layout,
                        const KernelOptions& opts) {
  constexpr const char* kOp = "batch_norm_infer";
  detail::require_float(x, kOp, "x");
  const ChannelView v = channel_view(x, layout, kOp);
  require_channel_vector(scale, x, v.channels, kOp, "scale");
  require_channel_vector(bias, x, v.channels, kOp, "bias");
  require_channel_vector(mean, x, v.channels, kOp, "mean");
  require_channel_vector(var, x, v.channels, kOp, "variance");
  require_finite_attr(epsilon, kOp, "epsilon", true);
  if (x.dtype() == DType::kFloat32) {
    return bn_infer<float>(x, scale, bias, mean, var, epsilon, v, opts);
  }
  return bn_infer<double>(x, scale, bias, mean, var, epsilon, v, opts);
}

BatchNormGradResult batch_norm_grad(const Tensor& x, const Tensor& scale, const Tensor& saved_mean,
                                    const Tensor& saved_variance, const Tensor& grad_y,
                                    float epsilon, DataLayout layout, const KernelOptions& opts) {
  constexpr const char* kOp = "batch_norm_grad";
  detail::require_float(x, kOp, "x");
  const ChannelView v = channel_view(x, layout, kOp);
  require_channel_vector(scale, x, v.channels, kOp, "scale");
  require_channel_vector(saved_mean, x, v.channels, kOp, "saved_mean");
  require_channel_vector(saved_variance, x, v.channels, kOp, "saved_variance");
  detail::require_grad_pair(x, "x", grad_y, "grad_y", kOp);
  require_finite_attr(epsilon, kOp, "epsilon", true);
  if (v.per_channel() == 0) {
    CHANFLOW_THROW(ShapeError) << kOp << ": x " << shape_to_string(x.shape())
                               << " has no elements per channel";
  }
  if (x.dtype() == DType::kFloat32) {
    return bn_grad<float>(x, scale, saved_mean, saved_variance, grad_y, v, opts);
  }
  return bn_grad<double>(x, scale, saved_mean, saved_variance, grad_y, v, opts);
}

DropoutResult dropout(const Tensor& x_in, float prob, bool is_test, uint64_t seed,
                      const KernelOptions& opts) {
  constexpr const char* kOp = "dropout";
  detail::require_float(x_in, kOp, "x");
  if (!(prob >= 0.0f && prob <= 1.0f)) {
    CHANFLOW_THROW(Error) << kOp << ": dropout_prob must be in [0, 1], got " << prob;
  }
  DropoutResult r;
  if (is_test) {
    // Paddle: Y = X * (1.0f - dropout_prob), the factor computed in float.
    const float keep = 1.0f - prob;
    const Tensor f = Tensor::scalar(keep, x_in.dtype());
    r.out = mul(x_in, f, detail::chunking_only(opts));
    return r;
  }
  const Tensor x = detail::dense(x_in, opts);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  Tensor mask = Tensor::empty(x.shape(), x.dtype());
  // Dropped when the 32-bit draw u < prob * 2^32, i.e. u < ceil(prob * 2^32) (exact in double).
  // prob 1 gives 2^32, above every 32-bit draw: all dropped, without hashing.
  const auto threshold = static_cast<uint64_t>(std::ceil(static_cast<double>(prob) * 0x1p32));
  const bool drop_all = threshold > 0xFFFFFFFFull;
  const int64_t n = x.numel();
  ChunkClock clock(opts);
  const int64_t piece = clock.chunk();
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    T* mp = mask.data<T>();
    for (int64_t lo = 0; lo < n; lo += piece) {
      const int64_t m = std::min(piece, n - lo);
      clock.before(m);
      if (drop_all) {
        std::memset(op + lo, 0, static_cast<size_t>(m) * sizeof(T));  // all-zero bits: +0
        std::memset(mp + lo, 0, static_cast<size_t>(m) * sizeof(T));
      } else {
        dropout_run<T>(xp + lo, op + lo, mp + lo, lo, m, seed, static_cast<uint32_t>(threshold));
      }
    }
  };
  if (x.dtype() == DType::kFloat32) {
    go(detail::TypeTag<float>{});
  } else {
    go(detail::TypeTag<double>{});
  }
  r.out = std::move(out);
  r.mask = std::move(mask);
  return r;
}

Tensor dropout_grad(const Tensor& grad_out, const Tensor& mask, const KernelOptions& opts) {
  detail::require_grad_pair(grad_out, "grad_out", mask, "mask", "dropout_grad");
  return detail::same_shape_binary(grad_out, mask, opts, [](auto g, auto m) { return g * m; });
}

}  // namespace chanflow
