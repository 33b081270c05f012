// dispatch.h — private: calling a template with the C++ storage type of a runtime DType.
//
//   detail::dispatch_dtype(t.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ...
//   });
#pragma once

#include "chanflow/tensor/dtype.h"

namespace chanflow::detail {

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) where T stores dtype t. All branches must return the same type.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
#define CHANFLOW_DTYPE_CASE(e, T, ...) \
  case DType::e:                       \
    return f(TypeTag<T>{});
    CHANFLOW_DTYPES(CHANFLOW_DTYPE_CASE)
#undef CHANFLOW_DTYPE_CASE
  }
  CHANFLOW_THROW(TypeError) << "unknown dtype code " << static_cast<int>(t);
  __builtin_unreachable();  // the thrower's destructor throws
}

// The type arithmetic on T runs in: float for Half, T otherwise.
template <class T>
using ComputeType = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <class T>
inline ComputeType<T> load(T v) noexcept {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::to_float(v.bits);
  } else {
    return v;
  }
}

template <class T, class C>
inline T store(C v) noexcept {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::from_bits(Half::from_float(static_cast<float>(v)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != C{};
  } else {
    return static_cast<T>(v);
  }
}

// A float converted to integer type To as NumPy 1.24 does on x86-64 (its cvttsd2si results),
// without undefined behaviour: truncation toward zero; for a 64-bit To, NaN, infinities and values
// outside [-2^63, 2^63) give INT64_MIN; for a narrower To, the value is first converted to int32
// the same way (NaN, infinities and values outside (-2^31 - 1, 2^31) give INT32_MIN) and that is
// then reduced modulo 2^bits of To (int8 200.5 -> -56, int8 3e9 -> 0). docs/tensor.md has the
// table; tests/tensor/check_cast_numpy.py compares it with NumPy. The range tests are false for
// NaN, so NaN takes the minimum.
template <class To>
inline To float_to_integer(double d) noexcept {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>);
  if constexpr (sizeof(To) == 8) {
    const int64_t i = (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
                          ? static_cast<int64_t>(d)
                          : INT64_MIN;
    return static_cast<To>(i);
  } else {
    const int32_t i = (d > -2147483649.0 && d < 2147483648.0) ? static_cast<int32_t>(d) : INT32_MIN;
    return static_cast<To>(i);  // modulo 2^bits (C++20 integral conversion)
  }
}

// Value conversion as NumPy's astype (unsafe casting) without undefined behaviour; every
// conversion of an element to another dtype goes through here. Floats to integers: see
// float_to_integer. To bool: x != 0 (NaN is true). Integers to narrower integers: modulo 2^bits.
// To float16: rounds to nearest even, overflow gives infinity.
template <class To, class From>
inline To convert(From x) noexcept {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To, float>(Half::to_float(x.bits));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half::from_bits(Half::from_float(static_cast<float>(x)));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From{};
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_integer<To>(static_cast<double>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace chanflow::detail
