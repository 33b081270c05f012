// nn_loss.cc — cross_entropy, softmax_with_cross_entropy (and their gradients), top_k and
// accuracy, with Paddle 1.x semantics (see nn.h). All work row by row along the last axis of a
// contiguous copy of the input (the input itself when it is contiguous).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "nn_common.h"

namespace chanflow {

namespace {

using detail::ChunkClock;

// Paddle's TolerableValue: log's infinities become +-1e20.
template <class T>
inline T tolerable(T v) {
  constexpr T kApproInf = static_cast<T>(1e20);
  if (v == std::numeric_limits<T>::infinity()) return kApproInf;
  if (v == -std::numeric_limits<T>::infinity()) return -kApproInf;
  return v;
}

struct Rows {
  int64_t rows = 0;
  int64_t classes = 0;
  Shape loss_shape;  // x.shape[:-1] + [1]
};

Rows plan_rows(const Tensor& x, const char* op, const char* arg) {
  if (x.ndim() < 1) {
    CHANFLOW_THROW(ShapeError) << op << ": " << arg << " must have rank >= 1 (classes on the last "
                               << "axis), got a 0-d tensor";
  }
  Rows r;
  r.classes = x.shape().back();
  r.loss_shape = x.shape();
  r.loss_shape.back() = 1;
  r.rows = 1;
  for (size_t d = 0; d + 1 < x.shape().size(); ++d) r.rows *= x.shape()[d];
  return r;
}

// Checks label against x: hard labels are int64 of loss_shape, soft labels have x's shape/dtype.
void check_label(const Tensor& x, const Tensor& label, bool soft, const Rows& r, const char* op) {
  if (soft) {
    detail::require_dtype(label, x.dtype(), op, "label (soft_label)");
    detail::require_shape(label, x.shape(), op, "label (soft_label)");
  } else {
    detail::require_dtype(label, DType::kInt64, op, "label");
    detail::require_shape(label, r.loss_shape, op, "label");
  }
}

// The hard label of row `row`, checked: in [0, classes) or ignore_index.
inline int64_t checked_label(const int64_t* lbl, int64_t row, int64_t classes, int64_t ignore,
                             const char* op) {
  const int64_t v = lbl[row];
  if (v != ignore && (v < 0 || v >= classes)) {
    CHANFLOW_THROW(Error) << op << ": label " << v << " of row " << row << " is outside [0, "
                          << classes << ") and is not ignore_index (" << ignore << ")";
  }
  return v;
}

template <class T>
Tensor xent(const Tensor& x, const Tensor& label, bool soft, int64_t ignore, const Rows& r,
            const KernelOptions& opts) {
  constexpr const char* kOp = "cross_entropy";
  Tensor out = Tensor::empty(r.loss_shape, x.dtype());
  T* o = out.data<T>();
  const Tensor xd = detail::dense(x, opts);
  const T* xp = xd.data<T>();
  const int64_t D = r.classes;
  ChunkClock clock(opts);
  if (soft) {
    const Tensor ld = detail::dense(label, opts);
    const T* lp = ld.data<T>();
    for (int64_t i = 0; i < r.rows; ++i) {
      clock.before(D);
      double acc = 0;
      for (int64_t j = 0; j < D; ++j) {
        acc += static_cast<double>(lp[i * D + j] * tolerable<T>(std::log(xp[i * D + j])));
      }
      o[i] = static_cast<T>(-acc);
    }
  } else {
    const Tensor ld = detail::dense(label, opts);
    const int64_t* lp = ld.data<int64_t>();
    for (int64_t i = 0; i < r.rows; ++i) {
      clock.before(1);
      const int64_t l = checked_label(lp, i, D, ignore, kOp);
      o[i] = l == ignore ? T{0} : -tolerable<T>(std::log(xp[i * D + l]));
    }
  }
  return out;
}

template <class T>
Tensor xent_grad(const Tensor& x, const Tensor& label, const Tensor& grad_y, bool soft,
                 int64_t ignore, const Rows& r, const KernelOptions& opts) {
  constexpr const char* kOp = "cross_entropy_grad";
  const Tensor xd = detail::dense(x, opts);
  const Tensor gd = detail::dense(grad_y, opts);
  const T* xp = xd.data<T>();
  const T* gp = gd.data<T>();
  const int64_t D = r.classes;
  Tensor dx = Tensor::empty(x.shape(), x.dtype());
  T* o = dx.data<T>();
  ChunkClock clock(opts);
  const Tensor ld = detail::dense(label, opts);
  if (soft) {
    const T* lp = ld.data<T>();
    for (int64_t i = 0; i < r.rows; ++i) {
      clock.before(D);
      const T g = gp[i];
      for (int64_t j = 0; j < D; ++j) o[i * D + j] = -lp[i * D + j] * g / xp[i * D + j];
    }
  } else {
    const int64_t* lp = ld.data<int64_t>();
    for (int64_t i = 0; i < r.rows; ++i) {
      clock.before(D);
      const int64_t l = checked_label(lp, i, D, ignore, kOp);
      std::fill(o + i * D, o + (i + 1) * D, T{0});
      if (l != ignore) o[i * D + l] = -gp[i] / xp[i * D + l];
    }
  }
  return dx;
}

// Paddle's ValueClip on the shifted logits (NaN stays NaN).
template <class T>
inline T clip_low(T z) {
  constexpr T kThreshold = static_cast<T>(-64.0);
  return z < kThreshold ? kThreshold : z;
}

template <class T>
SoftmaxWithCrossEntropyResult swce(const Tensor& logits, const Tensor& label, bool soft,
                                   int64_t ignore, const Rows& r, const KernelOptions& opts) {
  constexpr const char* kOp = "softmax_with_cross_entropy";
  const Tensor xd = detail::dense(logits, opts);
  const T* xp = xd.data<T>();
  const int64_t D = r.classes;
  Tensor sm = Tensor::empty(logits.shape(), logits.dtype());
  Tensor loss = Tensor::empty(r.loss_shape, logits.dtype());
  T* sp = sm.data<T>();
  T* lo = loss.data<T>();
  const Tensor ld = detail::dense(label, opts);
  ChunkClock clock(opts);
  for (int64_t i = 0; i < r.rows; ++i) {
    clock.before(D);
    const T* row = xp + i * D;
    T* srow = sp + i * D;
    T m = D > 0 ? row[0] : T{0};
    for (int64_t j = 1; j < D; ++j) m = (row[j] > m || row[j] != row[j]) ? row[j] : m;
    // srow holds the clipped shifted logits z first, then the softmax.
    double s = 0;
    for (int64_t j = 0; j < D; ++j) {
      srow[j] = clip_low<T>(row[j] - m);
      s += static_cast<double>(std::exp(srow[j]));
    }
    const T lse = static_cast<T>(std::log(s));
    T li;
    if (soft) {
      const T* lp = ld.data<T>() + i * D;
      double acc = 0;
      for (int64_t j = 0; j < D; ++j) acc += static_cast<double>(lp[j] * (lse - srow[j]));
      li = static_cast<T>(acc);
    } else {
      const int64_t l = checked_label(ld.data<int64_t>(), i, D, ignore, kOp);
      li = l == ignore ? T{0} : lse - srow[l];
    }
    lo[i] = li;
    const T inv = static_cast<T>(1.0 / s);
    for (int64_t j = 0; j < D; ++j) srow[j] = std::exp(srow[j]) * inv;
  }
  return {std::move(sm), std::move(loss)};
}

template <class T>
Tensor swce_grad(const Tensor& softmax, const Tensor& label, const Tensor& grad_loss, bool soft,
                 int64_t ignore, const Rows& r, const KernelOptions& opts) {
  constexpr const char* kOp = "softmax_with_cross_entropy_grad";
  const Tensor sd = detail::dense(softmax, opts);
  const Tensor gd = detail::dense(grad_loss, opts);
  const Tensor ld = detail::dense(label, opts);
  const T* sp = sd.data<T>();
  const T* gp = gd.data<T>();
  const int64_t D = r.classes;
  Tensor dx = Tensor::empty(softmax.shape(), softmax.dtype());
  T* o = dx.data<T>();
  ChunkClock clock(opts);
  for (int64_t i = 0; i < r.rows; ++i) {
    clock.before(D);
    const T g = gp[i];
    const T* srow = sp + i * D;
    T* orow = o + i * D;
    if (soft) {
      const T* lp = ld.data<T>() + i * D;
      for (int64_t j = 0; j < D; ++j) orow[j] = (srow[j] - lp[j]) * g;
    } else {
      const int64_t l = checked_label(ld.data<int64_t>(), i, D, ignore, kOp);
      if (l == ignore) {
        std::fill(orow, orow + D, T{0});
      } else {
        for (int64_t j = 0; j < D; ++j) orow[j] = srow[j] * g;
        orow[l] = (srow[l] - T{1}) * g;
      }
    }
  }
  return dx;
}

void require_same_float(const Tensor& a, const char* an, const Tensor& b, const char* bn,
                        const char* op) {
  detail::require_float(a, op, an);
  detail::require_dtype(b, a.dtype(), op, bn);
}

}  // namespace

Tensor cross_entropy(const Tensor& x, const Tensor& label, bool soft_label, int64_t ignore_index,
                     const KernelOptions& opts) {
  constexpr const char* kOp = "cross_entropy";
  detail::require_float(x, kOp, "x");
  const Rows r = plan_rows(x, kOp, "x");
  check_label(x, label, soft_label, r, kOp);
  if (x.dtype() == DType::kFloat32) return xent<float>(x, label, soft_label, ignore_index, r, opts);
  return xent<double>(x, label, soft_label, ignore_index, r, opts);
}

Tensor cross_entropy_grad(const Tensor& x, const Tensor& label, const Tensor& grad_y,
                          bool soft_label, int64_t ignore_index, const KernelOptions& opts) {
  constexpr const char* kOp = "cross_entropy_grad";
  detail::require_float(x, kOp, "x");
  const Rows r = plan_rows(x, kOp, "x");
  check_label(x, label, soft_label, r, kOp);
  require_same_float(x, "x", grad_y, "grad_y", kOp);
  detail::require_shape(grad_y, r.loss_shape, kOp, "grad_y");
  if (x.dtype() == DType::kFloat32) {
    return xent_grad<float>(x, label, grad_y, soft_label, ignore_index, r, opts);
  }
  return xent_grad<double>(x, label, grad_y, soft_label, ignore_index, r, opts);
}

SoftmaxWithCrossEntropyResult softmax_with_cross_entropy(const Tensor& logits, const Tensor& label,
                                                         bool soft_label, int64_t ignore_index,
                                                         const KernelOptions& opts) {
  constexpr const char* kOp = "softmax_with_cross_entropy";
  detail::require_float(logits, kOp, "logits");
  const Rows r = plan_rows(logits, kOp, "logits");
  check_label(logits, label, soft_label, r, kOp);
  if (logits.dtype() == DType::kFloat32) {
    return swce<float>(logits, label, soft_label, ignore_index, r, opts);
  }
  return swce<double>(logits, label, soft_label, ignore_index, r, opts);
}

Tensor softmax_with_cross_entropy_grad(const Tensor& softmax, const Tensor& label,
                                       const Tensor& grad_loss, bool soft_label,
                                       int64_t ignore_index, const KernelOptions& opts) {
  constexpr const char* kOp = "softmax_with_cross_entropy_grad";
  detail::require_float(softmax, kOp, "softmax");
  const Rows r = plan_rows(softmax, kOp, "softmax");
  check_label(softmax, label, soft_label, r, kOp);
  require_same_float(softmax, "softmax", grad_loss, "grad_loss", kOp);
  detail::require_shape(grad_loss, r.loss_shape, kOp, "grad_loss");
  if (softmax.dtype() == DType::kFloat32) {
    return swce_grad<float>(softmax, label, grad_loss, soft_label, ignore_index, r, opts);
  }
  return swce_grad<double>(softmax, label, grad_loss, soft_label, ignore_index, r, opts);
}

TopKResult top_k(const Tensor& x, int64_t k, const KernelOptions& opts) {
  constexpr const char* kOp = "top_k";
  if (!x.defined()) CHANFLOW_THROW(Error) << kOp << ": x is null";
  const DType dt = x.dtype();
  if (dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kInt32 &&
      dt != DType::kInt64) {
    CHANFLOW_THROW(TypeError) << kOp << ": x must be float32, float64, int32 or int64, got "
                              << dtype_name(dt);
  }
  if (x.ndim() < 1) CHANFLOW_THROW(ShapeError) << kOp << ": x must have rank >= 1, got 0-d";
  const int64_t D = x.shape().back();
  if (k < 1 || k > D) {
    CHANFLOW_THROW(ShapeError) << kOp << ": k = " << k << " must be in [1, " << D
                               << "] (the last extent of x " << shape_to_string(x.shape()) << ")";
  }
  Shape out_shape = x.shape();
  out_shape.back() = k;
  const int64_t rows = x.numel() / D;
  TopKResult res;
  res.values = Tensor::empty(out_shape, dt);
  res.indices = Tensor::empty(out_shape, DType::kInt64);
  const Tensor xd = detail::dense(x, opts);
  int64_t* ip = res.indices.data<int64_t>();
  detail::dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const T* xp = xd.data<T>();
      T* vp = res.values.data<T>();
      std::vector<int64_t> idx(static_cast<size_t>(D));
      ChunkClock clock(opts);
      for (int64_t i = 0; i < rows; ++i) {
        clock.before(D);
        const T* row = xp + i * D;
        // a before b: a is NaN and b is not, or a > b, or equal (or both NaN) and a's index lower.
        auto before = [row](int64_t a, int64_t b) {
          const T va = row[a];
          const T vb = row[b];
          const bool na = va != va;  // NOLINT(misc-redundant-expression): NaN test
          const bool nb = vb != vb;  // NOLINT(misc-redundant-expression): NaN test
          if (na || nb) return na && nb ? a < b : na;
          if (va != vb) return va > vb;
          return a < b;
        };
        std::iota(idx.begin(), idx.end(), int64_t{0});
        if (k == 1) {
          int64_t best = 0;
          for (int64_t j = 1; j < D; ++j) {
            if (before(j, best)) best = j;
          }
          idx[0] = best;
        } else {
          std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
        }
        for (int64_t j = 0; j < k; ++j) {
          ip[i * k + j] = idx[static_cast<size_t>(j)];
          vp[i * k + j] = row[idx[static_cast<size_t>(j)]];
        }
      }
    }
  });
  return res;
}

AccuracyResult accuracy(const Tensor& indices, const Tensor& label, const KernelOptions& opts) {
  constexpr const char* kOp = "accuracy";
  detail::require_dtype(indices, DType::kInt64, kOp, "indices");
  detail::require_dtype(label, DType::kInt64, kOp, "label");
  if (indices.ndim() != 2) {
    CHANFLOW_THROW(ShapeError) << kOp << ": indices must be (N, k), got "
                               << shape_to_string(indices.shape());
  }
  const int64_t n = indices.shape()[0];
  const int64_t k = indices.shape()[1];
  detail::require_shape(label, {n, 1}, kOp, "label");
  const Tensor id = detail::dense(indices, opts);
  const Tensor ld = detail::dense(label, opts);
  const int64_t* ip = id.data<int64_t>();
  const int64_t* lp = ld.data<int64_t>();
  int64_t correct = 0;
  ChunkClock clock(opts);
  for (int64_t i = 0; i < n; ++i) {
    clock.before(k);
    for (int64_t j = 0; j < k; ++j) {
      if (ip[i * k + j] == lp[i]) {
        ++correct;
        break;
      }
    }
  }
  AccuracyResult r;
  const float acc = n == 0 ? 0.0f : static_cast<float>(correct) / static_cast<float>(n);
  r.accuracy = Tensor::from_vector<float>({acc});
  r.correct = Tensor::from_vector<int32_t>({static_cast<int32_t>(correct)});
  r.total = Tensor::from_vector<int32_t>({static_cast<int32_t>(n)});
  return r;
}

}  // namespace chanflow
