// reduce.cc — sum, mean, max, min, argmax over axes, and softmax / log_softmax.
//
// A reduction walks the input in its own memory order with an accumulator tensor that has stride 0
// along the reduced axes, so both reducing the innermost axis (a run folds into one accumulator,
// with 16 independent partial results the compiler can vectorise) and reducing an outer axis (a
// run is an elementwise update of a row of accumulators) stream through memory.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "chanflow/tensor/ops.h"
#include "extremum.h"
#include "internal.h"

namespace chanflow {

namespace {

template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

struct SumOp {
  static constexpr int kExtremum = 0;  // not max (1) or min (-1)
  template <class A>
  static A identity() {
    return A{0};
  }
  template <class A>
  static A combine(A acc, A x) {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(x));  // wraps
    } else {
      return acc + x;
    }
  }
};
// Once the accumulator is NaN it stays NaN: x > NaN is false and x is not NaN, so acc is kept.
// The contiguous runs go to the vector loops of extremum.h instead (this select does not
// vectorise); this scalar form serves float16, bool and strided runs.
struct MaxOp {
  static constexpr int kExtremum = 1;
  template <class A>
  static A identity() {
    if constexpr (std::is_floating_point_v<A>)
      return -std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::lowest();
  }
  template <class A>
  static A combine(A acc, A x) {
    return (x > acc || is_nan(x)) ? x : acc;
  }
};
struct MinOp {
  static constexpr int kExtremum = -1;
  template <class A>
  static A identity() {
    if constexpr (std::is_floating_point_v<A>)
      return std::numeric_limits<A>::infinity();
    else
      return std::numeric_limits<A>::max();
  }
  template <class A>
  static A combine(A acc, A x) {
    return (x < acc || is_nan(x)) ? x : acc;
  }
};

struct ReducePlan {
  Shape keep_shape;   // input shape with reduced axes set to 1
  Shape out_shape;    // keep_shape, or with the reduced axes removed
  int64_t count = 1;  // elements folded into each output
};

ReducePlan plan_reduction(const Tensor& a, const Axes& axes, bool keepdims, const char* op) {
  const int64_t nd = a.ndim();
  std::vector<bool> reduced(static_cast<size_t>(nd), axes.empty());
  for (int64_t ax : axes) {
    const int64_t n = detail::tensor_normalize_axis(ax, nd, op);
    if (reduced[static_cast<size_t>(n)]) {
      CHANFLOW_THROW(ShapeError) << op << ": axis " << ax << " repeated for shape "
                                 << shape_to_string(a.shape());
    }
    reduced[static_cast<size_t>(n)] = true;
  }
  ReducePlan p;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t e = a.shape()[static_cast<size_t>(d)];
    if (reduced[static_cast<size_t>(d)]) {
      p.count *= e;
      p.keep_shape.push_back(1);
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.keep_shape.push_back(e);
      p.out_shape.push_back(e);
    }
  }
  return p;
}

// Folds a into acc (keep_shape, dtype of A) with Op.
template <class Op, class A, class T>
void fold(const Tensor& acc, const Tensor& a, const KernelOptions& opts) {
  const Shape& shape = a.shape();
  const std::array<std::vector<int64_t>, 2> strides = {detail::broadcast_byte_strides(acc, shape),
                                                       detail::broadcast_byte_strides(a, shape)};
  const auto layout = detail::make_layout<2>(shape, strides);
  const std::array<char*, 2> base = {static_cast<char*>(acc->raw_data()),
                                     static_cast<char*>(a->raw_data())};
  auto run = [](const std::array<char*, 2>& p, int64_t n, const std::array<int64_t, 2>& s) {
    A* acc_p = reinterpret_cast<A*>(p[0]);
    constexpr bool kVectorMinMax =
        Op::kExtremum != 0 && std::is_same_v<A, T> && detail::kVectorExtremum<T>;
    if (s[0] == 0) {
      if constexpr (kVectorMinMax) {
        if (s[1] == sizeof(T)) {
          *acc_p = detail::extremum_run<(Op::kExtremum > 0)>(reinterpret_cast<const T*>(p[1]), n,
                                                             *acc_p);
          return;
        }
      }
      constexpr int kLanes = 16;
      A lane[kLanes];
      for (A& l : lane) l = Op::template identity<A>();
      int64_t i = 0;
      if (s[1] == sizeof(T)) {
        const T* __restrict x = reinterpret_cast<const T*>(p[1]);
        for (; i + kLanes <= n; i += kLanes) {
          for (int j = 0; j < kLanes; ++j) {
            lane[j] = Op::combine(lane[j], static_cast<A>(detail::load(x[i + j])));
          }
        }
      }
      A r = *acc_p;
      for (A l : lane) r = Op::combine(r, l);
      const char* x = p[1] + i * s[1];
      for (; i < n; ++i, x += s[1]) {
        r = Op::combine(r, static_cast<A>(detail::load(*reinterpret_cast<const T*>(x))));
      }
      *acc_p = r;
      return;
    }
    if (s[0] == sizeof(A) && s[1] == sizeof(T)) {
      if constexpr (kVectorMinMax) {
        detail::extremum_rows<(Op::kExtremum > 0)>(acc_p, reinterpret_cast<const T*>(p[1]), n);
        return;
      }
      A* __restrict o = acc_p;
      const T* __restrict x = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = Op::combine(o[i], static_cast<A>(detail::load(x[i])));
      return;
    }
    char* o = p[0];
    const char* x = p[1];
    for (int64_t i = 0; i < n; ++i, o += s[0], x += s[1]) {
      A* op = reinterpret_cast<A*>(o);
      *op = Op::combine(*op, static_cast<A>(detail::load(*reinterpret_cast<const T*>(x))));
    }
  };
  detail::run_chunked(layout.numel, opts, [&](int64_t lo, int64_t hi) {
    detail::for_each_run<2>(layout, base, lo, hi, run);
  });
}

DType sum_acc_dtype(DType t) {
  switch (t) {
    case DType::kFloat16:
    case DType::kFloat32:
      return DType::kFloat32;
    case DType::kFloat64:
      return DType::kFloat64;
    default:
      return DType::kInt64;
  }
}

// Reduces `a` with Op in accumulator dtype acc_dtype; returns the accumulator in keep_shape.
template <class Op>
Tensor reduce_into_acc(const Tensor& a, const ReducePlan& p, DType acc_dtype,
                       const KernelOptions& opts) {
  Tensor acc = Tensor::empty(p.keep_shape, acc_dtype);
  detail::dispatch_dtype(acc_dtype, [&](auto atag) {
    using A = typename decltype(atag)::type;
    if constexpr (std::is_same_v<A, Half>) {
      CHANFLOW_CHECK(false) << "float16 is never an accumulator";
    } else {
      A* p0 = acc.data<A>();
      std::fill(p0, p0 + acc.numel(), Op::template identity<A>());
      detail::dispatch_dtype(a.dtype(), [&](auto ttag) {
        using T = typename decltype(ttag)::type;
        fold<Op, A, T>(acc, a, opts);
      });
    }
  });
  return acc;
}

Tensor minmax(const char* op, bool is_max, const Tensor& a, const Axes& axes, bool keepdims,
              const KernelOptions& opts) {
  detail::require_defined(a, op);
  const ReducePlan p = plan_reduction(a, axes, keepdims, op);
  if (p.count == 0) {
    CHANFLOW_THROW(ShapeError) << op << ": zero-size reduction over shape "
                               << shape_to_string(a.shape()) << " has no identity";
  }
  // Half accumulates in float32 (exact: max/min only pick values).
  const DType acc_dtype = a.dtype() == DType::kFloat16 ? DType::kFloat32 : a.dtype();
  Tensor acc = is_max ? reduce_into_acc<MaxOp>(a, p, acc_dtype, opts)
                      : reduce_into_acc<MinOp>(a, p, acc_dtype, opts);
  if (acc_dtype != a.dtype()) acc = cast(acc, a.dtype());
  return acc.reshape(p.out_shape);
}

}  // namespace

Tensor sum(const Tensor& a, const Axes& axes, bool keepdims, const KernelOptions& opts) {
  detail::require_defined(a, "sum");
  const ReducePlan p = plan_reduction(a, axes, keepdims, "sum");
  const DType acc_dtype = sum_acc_dtype(a.dtype());
  Tensor acc = reduce_into_acc<SumOp>(a, p, acc_dtype, opts);
  const DType out_dtype = is_floating(a.dtype()) ? a.dtype() : DType::kInt64;
  if (out_dtype != acc_dtype) acc = cast(acc, out_dtype);
  return acc.reshape(p.out_shape);
}

Tensor mean(const Tensor& a, const Axes& axes, bool keepdims, const KernelOptions& opts) {
  detail::require_defined(a, "mean");
  const ReducePlan p = plan_reduction(a, axes, keepdims, "mean");
  const DType out_dtype = is_floating(a.dtype()) ? a.dtype() : DType::kFloat64;
  const DType acc_dtype = out_dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  Tensor acc = reduce_into_acc<SumOp>(a, p, acc_dtype, opts);
  detail::dispatch_dtype(acc_dtype, [&](auto tag) {
    using A = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<A>) {
      A* q = acc.data<A>();
      const A n = static_cast<A>(p.count);
      for (int64_t i = 0; i < acc.numel(); ++i) q[i] = q[i] / n;  // 0/0 = NaN for empty
    }
  });
  if (out_dtype != acc_dtype) acc = cast(acc, out_dtype);
  return acc.reshape(p.out_shape);
}

Tensor max(const Tensor& a, const Axes& axes, bool keepdims, const KernelOptions& opts) {
  return minmax("max", true, a, axes, keepdims, opts);
}

Tensor min(const Tensor& a, const Axes& axes, bool keepdims, const KernelOptions& opts) {
  return minmax("min", false, a, axes, keepdims, opts);
}

Tensor argmax(const Tensor& a, std::optional<int64_t> axis, bool keepdims,
              const KernelOptions& opts) {
  detail::require_defined(a, "argmax");
  if (!axis.has_value()) {
    if (a.numel() == 0) {
      CHANFLOW_THROW(ShapeError) << "argmax: attempt to get argmax of an empty sequence (shape "
                                 << shape_to_string(a.shape()) << ")";
    }
    Tensor flat = a.contiguous().reshape({-1});
    Tensor r = argmax(flat, 0, false, opts);
    if (keepdims) r = r.reshape(Shape(static_cast<size_t>(a.ndim()), 1));
    return r;
  }
  const int64_t ax = detail::tensor_normalize_axis(*axis, a.ndim(), "argmax");
  const int64_t n = a.shape()[static_cast<size_t>(ax)];
  if (n == 0) {
    CHANFLOW_THROW(ShapeError) << "argmax: attempt to get argmax of an empty sequence (axis "
                               << *axis << " of shape " << shape_to_string(a.shape()) << ")";
  }
  const ReducePlan p = plan_reduction(a, {ax}, keepdims, "argmax");
  Tensor out = Tensor::empty(p.keep_shape, DType::kInt64);
  if (out.numel() > 0) {
    const Shape& ks = p.keep_shape;
    const std::array<std::vector<int64_t>, 2> strides = {detail::broadcast_byte_strides(out, ks),
                                                         detail::broadcast_byte_strides(a, ks)};
    const auto layout = detail::make_layout<2>(ks, strides);
    const std::array<char*, 2> base = {static_cast<char*>(out->raw_data()),
                                       static_cast<char*>(a->raw_data())};
    const int64_t step = a.strides()[static_cast<size_t>(ax)] * a.itemsize();
    detail::dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto run = [&](const std::array<char*, 2>& ptr, int64_t cnt,
                     const std::array<int64_t, 2>& s) {
        char* o = ptr[0];
        const char* x = ptr[1];
        if constexpr (detail::kVectorExtremum<T>) {
          if (step == sizeof(T)) {  // contiguous along the axis: the vector loops
            for (int64_t i = 0; i < cnt; ++i, o += s[0], x += s[1]) {
              const int64_t bi = detail::argmax_run(reinterpret_cast<const T*>(x), n);
              std::memcpy(o, &bi, sizeof(bi));
            }
            return;
          }
        }
        for (int64_t i = 0; i < cnt; ++i, o += s[0], x += s[1]) {
          auto best = detail::load(*reinterpret_cast<const T*>(x));
          int64_t bi = 0;
          const char* y = x + step;
          for (int64_t k = 1; k < n && !is_nan(best); ++k, y += step) {
            const auto v = detail::load(*reinterpret_cast<const T*>(y));
            if (v > best || is_nan(v)) {
              best = v;
              bi = k;
            }
          }
          *reinterpret_cast<int64_t*>(o) = bi;
        }
      };
      KernelOptions row_opts;
      row_opts.between_chunks = opts.between_chunks;
      row_opts.chunk_elements = std::max<int64_t>(1, opts.chunk_elements / n);
      detail::run_chunked(layout.numel, row_opts, [&](int64_t lo, int64_t hi) {
        detail::for_each_run<2>(layout, base, lo, hi, run);
      });
    });
  }
  return out.reshape(p.out_shape);
}

Tensor softmax(const Tensor& a, int64_t axis, const KernelOptions& user_opts) {
  detail::require_defined(a, "softmax");
  const KernelOptions opts = detail::chunking_only(user_opts);
  const int64_t ax = detail::tensor_normalize_axis(axis, a.ndim(), "softmax");
  Tensor x = a.cast(float_result_type(a.dtype()));
  if (x.numel() == 0) return x;
  const Tensor shifted = sub(x, max(x, {ax}, true, opts), opts);
  const Tensor e = exp(shifted, opts);
  return div(e, sum(e, {ax}, true, opts), opts);
}

Tensor log_softmax(const Tensor& a, int64_t axis, const KernelOptions& user_opts) {
  detail::require_defined(a, "log_softmax");
  const KernelOptions opts = detail::chunking_only(user_opts);
  const int64_t ax = detail::tensor_normalize_axis(axis, a.ndim(), "log_softmax");
  Tensor x = a.cast(float_result_type(a.dtype()));
  if (x.numel() == 0) return x;
  const Tensor shifted = sub(x, max(x, {ax}, true, opts), opts);
  const Tensor lse = log(sum(exp(shifted, opts), {ax}, true, opts), opts);
  return sub(shifted, lse, opts);
}

}  // namespace chanflow
