// elementwise.cc — binary and unary kernels with NumPy broadcasting, any strides, and contiguous
// fast paths whose loops the compiler vectorises (__restrict, unit stride, no calls).
#include <cmath>
#include <limits>
#include <type_traits>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "chanflow/tensor/ops.h"
#include "internal.h"

namespace chanflow {

namespace detail {

Tensor output_tensor(const Shape& shape, DType dtype, const KernelOptions& opts) {
  const Tensor& o = opts.out;
  // One reference held by opts itself: nobody else can observe the writes.
  if (o.defined() && o.use_count() == 1 && o->storage().use_count() == 1 && o.dtype() == dtype &&
      o.shape() == shape && o.is_contiguous()) {
    return o;
  }
  return Tensor::empty(shape, dtype);
}

void require_defined(const Tensor& t, const char* op) {
  if (!t.defined()) CHANFLOW_THROW(Error) << op << ": the tensor is null";
}

}  // namespace detail

namespace {

using detail::ComputeType;

// Wide unsigned arithmetic gives NumPy's wrap-around for signed integers without UB.
template <class T>
using Wide = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;

template <class C>
constexpr bool kWrapInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;

template <class C>
inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

struct AddF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (std::is_same_v<C, bool>)
      return a || b;
    else if constexpr (kWrapInt<C>)
      return static_cast<C>(static_cast<Wide<C>>(a) + static_cast<Wide<C>>(b));
    else
      return a + b;
  }
};
struct SubF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (std::is_same_v<C, bool>)
      return a != b;  // unreachable: rejected up front
    else if constexpr (kWrapInt<C>)
      return static_cast<C>(static_cast<Wide<C>>(a) - static_cast<Wide<C>>(b));
    else
      return a - b;
  }
};
struct MulF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (std::is_same_v<C, bool>)
      return a && b;
    else if constexpr (kWrapInt<C>)
      return static_cast<C>(static_cast<Wide<C>>(a) * static_cast<Wide<C>>(b));
    else
      return a * b;
  }
};
struct DivF {  // only instantiated usefully for floats (integers are promoted to float64)
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (std::is_floating_point_v<C>)
      return a / b;
    else
      return b == 0 ? C{0} : static_cast<C>(a / b);
  }
};
// Integer division truncating toward zero. A zero divisor throws; min / -1 (whose quotient does not
// fit) is computed as 0 - min with wrap-around, i.e. min. Floats never come here (trunc_div sends
// them to DivF).
struct TruncDivF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (kWrapInt<C>) {
      if (b == 0) CHANFLOW_THROW(Error) << "trunc_div: integer division by zero";
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(Wide<C>{0} - static_cast<Wide<C>>(a));
      }
      return static_cast<C>(a / b);
    } else if constexpr (std::is_floating_point_v<C>) {
      return a / b;
    } else {
      return a && b;  // bool: never dispatched (trunc_div sends bools to div)
    }
  }
};
struct PowF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<C, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) {
          CHANFLOW_THROW(Error) << "pow: integers to negative integer powers are not allowed";
        }
      }
      // Sign extension into the unsigned Wide<C> is intended (wrap-around modulo 2^bits, as NumPy);
      // b >= 0 here, so its conversion is exact.
      auto base = static_cast<Wide<C>>(a);  // NOLINT(bugprone-signed-char-misuse)
      Wide<C> r = 1;
      auto e = static_cast<uint64_t>(b);  // NOLINT(bugprone-signed-char-misuse)
      while (e != 0) {
        if (e & 1u) r *= base;
        base *= base;
        e >>= 1;
      }
      return static_cast<C>(r);
    }
  }
};
struct MaxF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    return (a > b || is_nan(a)) ? a : b;  // NaN in either operand propagates
  }
};
struct MinF {
  static constexpr bool kPredicate = false;
  template <class C>
  static C f(C a, C b) {
    return (a < b || is_nan(a)) ? a : b;
  }
};
#define CHANFLOW_PREDICATE(Name, expr)       \
  struct Name {                              \
    static constexpr bool kPredicate = true; \
    template <class C>                       \
    static bool f(C a, C b) {                \
      return expr;                           \
    }                                        \
  }
CHANFLOW_PREDICATE(EqF, a == b);
CHANFLOW_PREDICATE(NeF, a != b);
CHANFLOW_PREDICATE(LtF, a < b);
CHANFLOW_PREDICATE(LeF, a <= b);
CHANFLOW_PREDICATE(GtF, a > b);
CHANFLOW_PREDICATE(GeF, a >= b);
CHANFLOW_PREDICATE(AndF, a != C{} && b != C{});
CHANFLOW_PREDICATE(OrF, a != C{} || b != C{});
#undef CHANFLOW_PREDICATE

template <class T, class R, class F>
void binary_run(const std::array<char*, 3>& p, int64_t n, const std::array<int64_t, 3>& s) {
  constexpr int64_t kT = sizeof(T);
  constexpr int64_t kR = sizeof(R);
  if (s[0] == kR) {
    R* __restrict o = reinterpret_cast<R*>(p[0]);
    const T* __restrict a = reinterpret_cast<const T*>(p[1]);
    const T* __restrict b = reinterpret_cast<const T*>(p[2]);
    if (s[1] == kT && s[2] == kT) {
      for (int64_t i = 0; i < n; ++i) {
        o[i] = detail::store<R>(F::f(detail::load(a[i]), detail::load(b[i])));
      }
      return;
    }
    if (s[1] == kT && s[2] == 0) {
      const auto bv = detail::load(b[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = detail::store<R>(F::f(detail::load(a[i]), bv));
      return;
    }
    if (s[1] == 0 && s[2] == kT) {
      const auto av = detail::load(a[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = detail::store<R>(F::f(av, detail::load(b[i])));
      return;
    }
  }
  char* o = p[0];
  const char* a = p[1];
  const char* b = p[2];
  for (int64_t i = 0; i < n; ++i, o += s[0], a += s[1], b += s[2]) {
    const R r = detail::store<R>(F::f(detail::load(*reinterpret_cast<const T*>(a)),
                                      detail::load(*reinterpret_cast<const T*>(b))));
    *reinterpret_cast<R*>(o) = r;
  }
}

template <class F>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, DType compute,
              const KernelOptions& opts) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const Tensor ca = a.dtype() == compute ? a : cast(a, compute);
  const Tensor cb = b.dtype() == compute ? b : cast(b, compute);
  const DType out_dtype = F::kPredicate ? DType::kBool : compute;
  Tensor out = detail::output_tensor(shape, out_dtype, opts);
  if (out->storage() == ca->storage() || out->storage() == cb->storage()) {
    out = Tensor::empty(shape, out_dtype);  // never write over an input (the loops use restrict)
  }
  if (out.numel() == 0) return out;
  const std::array<std::vector<int64_t>, 3> strides = {detail::broadcast_byte_strides(out, shape),
                                                       detail::broadcast_byte_strides(ca, shape),
                                                       detail::broadcast_byte_strides(cb, shape)};
  const auto layout = detail::make_layout<3>(shape, strides);
  const std::array<char*, 3> base = {static_cast<char*>(out->raw_data()),
                                     static_cast<char*>(ca->raw_data()),
                                     static_cast<char*>(cb->raw_data())};
  detail::dispatch_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<F::kPredicate, bool, T>;
    detail::for_each_run_blocked<3>(layout, base, {sizeof(R), sizeof(T), sizeof(T)}, opts,
                                    &binary_run<T, R, F>);
  });
  return out;
}

void require_pair(const Tensor& a, const Tensor& b, const char* op) {
  detail::require_defined(a, op);
  detail::require_defined(b, op);
}

// ---- unary ----

struct NegF {
  template <class C>
  static C f(C a) {
    if constexpr (kWrapInt<C>)
      return static_cast<C>(Wide<C>{0} - static_cast<Wide<C>>(a));
    else
      return -a;
  }
};
struct AbsF {
  template <class C>
  static C f(C a) {
    if constexpr (std::is_same_v<C, bool>)
      return a;
    else if constexpr (kWrapInt<C>) {
      if constexpr (std::is_signed_v<C>) {
        return a < 0 ? static_cast<C>(Wide<C>{0} - static_cast<Wide<C>>(a)) : a;
      } else {
        return a;
      }
    } else {
      return std::fabs(a);
    }
  }
};
struct SignF {
  template <class C>
  static C f(C a) {
    if constexpr (std::is_same_v<C, bool>) {
      return a;
    } else if constexpr (std::is_unsigned_v<C>) {
      return static_cast<C>(a != C{});
    } else {
      if (is_nan(a)) return a;
      return static_cast<C>(static_cast<int>(C{} < a) - static_cast<int>(a < C{}));
    }
  }
};
struct ReluF {
  template <class C>
  static C f(C a) {
    return (a > C{} || is_nan(a)) ? a : C{};
  }
};
// Float-valued unary functions only ever run on float types (float_unary casts to
// float_result_type first); the dispatcher still instantiates them for the others.
template <class C>
constexpr bool kFloatOnly = std::is_floating_point_v<C>;

struct ExpF {
  template <class C>
  static C f(C a) {
    return kFloatOnly<C> ? static_cast<C>(std::exp(a)) : a;
  }
};
struct LogF {
  template <class C>
  static C f(C a) {
    return kFloatOnly<C> ? static_cast<C>(std::log(a)) : a;
  }
};
struct SqrtF {
  template <class C>
  static C f(C a) {
    return kFloatOnly<C> ? static_cast<C>(std::sqrt(a)) : a;
  }
};
struct TanhF {
  template <class C>
  static C f(C a) {
    return kFloatOnly<C> ? static_cast<C>(std::tanh(a)) : a;
  }
};
struct SigmoidF {
  template <class C>
  static C f(C a) {
    if constexpr (!std::is_floating_point_v<C>) {
      return a;  // never dispatched: float-valued functions run in float_result_type
    } else {
      // Both branches only take exp of a non-positive number: no overflow.
      if (a >= C{0}) return C{1} / (C{1} + std::exp(-a));
      const C e = std::exp(a);
      return e / (C{1} + e);
    }
  }
};
struct SoftplusF {
  template <class C>
  static C f(C a) {
    if constexpr (!std::is_floating_point_v<C>) {
      return a;  // never dispatched: float-valued functions run in float_result_type
    } else {
      // log(1 + e^a) = max(a, 0) + log1p(e^-|a|): exp only of a non-positive number (no overflow
      // for large a), and log1p keeps e^a's relative precision for very negative a, where
      // 1 + e^a rounds to 1. NaN propagates through max's first operand.
      return (a < C{0} ? C{0} : a) + std::log1p(std::exp(-std::abs(a)));
    }
  }
};
struct NotF {
  template <class C>
  static bool f(C a) {
    return !(a != C{});
  }
};

template <class T, class R, class F>
void unary_run(const std::array<char*, 2>& p, int64_t n, const std::array<int64_t, 2>& s) {
  if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
    R* __restrict o = reinterpret_cast<R*>(p[0]);
    const T* __restrict a = reinterpret_cast<const T*>(p[1]);
    for (int64_t i = 0; i < n; ++i) o[i] = detail::store<R>(F::f(detail::load(a[i])));
    return;
  }
  char* o = p[0];
  const char* a = p[1];
  for (int64_t i = 0; i < n; ++i, o += s[0], a += s[1]) {
    *reinterpret_cast<R*>(o) = detail::store<R>(F::f(detail::load(*reinterpret_cast<const T*>(a))));
  }
}

template <class F, bool kToBool = false>
Tensor unary(const char* op, const Tensor& a, DType compute, const KernelOptions& opts) {
  detail::require_defined(a, op);
  const Tensor ca = a.dtype() == compute ? a : cast(a, compute);
  Tensor out = detail::output_tensor(a.shape(), kToBool ? DType::kBool : compute, opts);
  if (out->storage() == ca->storage()) out = Tensor::empty(a.shape(), out->dtype());
  if (out.numel() == 0) return out;
  const std::array<std::vector<int64_t>, 2> strides = {
      detail::broadcast_byte_strides(out, a.shape()),
      detail::broadcast_byte_strides(ca, a.shape())};
  const auto layout = detail::make_layout<2>(a.shape(), strides);
  const std::array<char*, 2> base = {static_cast<char*>(out->raw_data()),
                                     static_cast<char*>(ca->raw_data())};
  detail::dispatch_dtype(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<kToBool, bool, T>;
    detail::for_each_run_blocked<2>(layout, base, {sizeof(R), sizeof(T)}, opts,
                                    &unary_run<T, R, F>);
  });
  return out;
}

// Unary math that is only defined on floats: runs in float_result_type.
template <class F>
Tensor float_unary(const char* op, const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, op);
  return unary<F>(op, a, float_result_type(a.dtype()), opts);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      CHANFLOW_THROW(ShapeError) << op << ": shapes " << shape_to_string(a) << " and "
                                 << shape_to_string(b) << " cannot be broadcast together";
    }
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "add");
  return binary<AddF>("add", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

Tensor sub(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "sub");
  const DType t = promote_types(a.dtype(), b.dtype());
  if (t == DType::kBool) {
    CHANFLOW_THROW(TypeError) << "sub: subtracting bool tensors is not supported (as in NumPy); "
                                 "use logical_and/logical_not or cast first";
  }
  return binary<SubF>("sub", a, b, t, opts);
}

Tensor mul(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "mul");
  return binary<MulF>("mul", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

Tensor div(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "div");
  const DType t = promote_types(a.dtype(), b.dtype());
  return binary<DivF>("div", a, b, is_floating(t) ? t : DType::kFloat64, opts);
}

Tensor trunc_div(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "trunc_div");
  const DType t = promote_types(a.dtype(), b.dtype());
  if (is_floating(t) || t == DType::kBool) return div(a, b, opts);
  return binary<TruncDivF>("trunc_div", a, b, t, opts);
}

Tensor pow(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "pow");
  const DType t = promote_types(a.dtype(), b.dtype());
  return binary<PowF>("pow", a, b, t == DType::kBool ? DType::kInt8 : t, opts);
}

Tensor maximum(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "maximum");
  return binary<MaxF>("maximum", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

Tensor minimum(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "minimum");
  return binary<MinF>("minimum", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

#define CHANFLOW_COMPARISON(name, F)                                          \
  Tensor name(const Tensor& a, const Tensor& b, const KernelOptions& opts) {  \
    require_pair(a, b, #name);                                                \
    return binary<F>(#name, a, b, promote_types(a.dtype(), b.dtype()), opts); \
  }
CHANFLOW_COMPARISON(equal, EqF)
CHANFLOW_COMPARISON(not_equal, NeF)
CHANFLOW_COMPARISON(less, LtF)
CHANFLOW_COMPARISON(less_equal, LeF)
CHANFLOW_COMPARISON(greater, GtF)
CHANFLOW_COMPARISON(greater_equal, GeF)
#undef CHANFLOW_COMPARISON

Tensor logical_and(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "logical_and");
  return binary<AndF>("logical_and", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

Tensor logical_or(const Tensor& a, const Tensor& b, const KernelOptions& opts) {
  require_pair(a, b, "logical_or");
  return binary<OrF>("logical_or", a, b, promote_types(a.dtype(), b.dtype()), opts);
}

Tensor logical_not(const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, "logical_not");
  return unary<NotF, true>("logical_not", a, a.dtype(), opts);
}

Tensor neg(const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, "neg");
  if (a.dtype() == DType::kBool) {
    CHANFLOW_THROW(TypeError) << "neg: negating a bool tensor is not supported (as in NumPy); "
                                 "use logical_not";
  }
  return unary<NegF>("neg", a, a.dtype(), opts);
}

Tensor abs(const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, "abs");
  return unary<AbsF>("abs", a, a.dtype(), opts);
}

Tensor sign(const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, "sign");
  return unary<SignF>("sign", a, a.dtype(), opts);
}

Tensor relu(const Tensor& a, const KernelOptions& opts) {
  detail::require_defined(a, "relu");
  return unary<ReluF>("relu", a, a.dtype(), opts);
}

Tensor exp(const Tensor& a, const KernelOptions& opts) { return float_unary<ExpF>("exp", a, opts); }
Tensor log(const Tensor& a, const KernelOptions& opts) { return float_unary<LogF>("log", a, opts); }
Tensor sqrt(const Tensor& a, const KernelOptions& opts) {
  return float_unary<SqrtF>("sqrt", a, opts);
}
Tensor tanh(const Tensor& a, const KernelOptions& opts) {
  return float_unary<TanhF>("tanh", a, opts);
}
Tensor sigmoid(const Tensor& a, const KernelOptions& opts) {
  return float_unary<SigmoidF>("sigmoid", a, opts);
}
Tensor softplus(const Tensor& a, const KernelOptions& opts) {
  return float_unary<SoftplusF>("softplus", a, opts);
}

}  // namespace chanflow
