// dtype.h — element types of tensors, float16 storage, NumPy's type promotion.
//
// A DType names how one element is stored. CHANFLOW_DTYPES is the one list of them: the enum, the
// C++ storage types, names, sizes, the .npy/NumPy kind, Paddle Fluid's VarType number and the
// DLPack code all come from its rows (dtype_info), and so do the type switches of every layer
// (detail::dispatch_dtype, .npy, VarType, DLPack, the executor's channels). Mixed-dtype binary
// kernels compute in the type NumPy would pick (promote_types); float16 is a storage type whose
// arithmetic runs in float32:
//
//   cf::DType t = cf::promote_types(cf::DType::kInt8, cf::DType::kUInt8);   // kInt16
//   cf::Half h(1.5f);  float f = static_cast<float>(h);                      // 1.5f
//   std::string_view n = cf::dtype_name(cf::DType::kFloat32);                // "float32"
#pragma once

#include <dlpack/dlpack.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "chanflow/core/error.h"
#include "chanflow/core/export.h"

namespace chanflow {

// The element types, one row each: X(enumerator, C++ storage type, NumPy name, bytes, NumPy kind
// ('b' bool, 'i' signed, 'u' unsigned, 'f' float: with the bytes, the .npy descr), Paddle Fluid's
// VarType number (the program format: never changes), DLPack type code). The row order is the
// enum's numbering, which is stable. DLPack 0.6 (Debian's header) has no bool code; 0.8's kDLBool
// is 6 (8 bits), what NumPy and PyTorch exchange, so the number is spelled.
#define CHANFLOW_DTYPES(X)                           \
  X(kBool, bool, "bool", 1, 'b', 0, 6)               \
  X(kInt8, int8_t, "int8", 1, 'i', 21, kDLInt)       \
  X(kInt16, int16_t, "int16", 2, 'i', 1, kDLInt)     \
  X(kInt32, int32_t, "int32", 4, 'i', 2, kDLInt)     \
  X(kInt64, int64_t, "int64", 8, 'i', 3, kDLInt)     \
  X(kUInt8, uint8_t, "uint8", 1, 'u', 20, kDLUInt)   \
  X(kFloat16, Half, "float16", 2, 'f', 4, kDLFloat)  \
  X(kFloat32, float, "float32", 4, 'f', 5, kDLFloat) \
  X(kFloat64, double, "float64", 8, 'f', 6, kDLFloat)

// The element types a tensor can hold. The numeric values are stable.
enum class DType : uint8_t {
#define CHANFLOW_DTYPE_ENUMERATOR(e, ...) e,
  CHANFLOW_DTYPES(CHANFLOW_DTYPE_ENUMERATOR)
#undef CHANFLOW_DTYPE_ENUMERATOR
};
#define CHANFLOW_DTYPE_COUNT(...) +1
inline constexpr int kNumDTypes = 0 CHANFLOW_DTYPES(CHANFLOW_DTYPE_COUNT);
#undef CHANFLOW_DTYPE_COUNT

// What the table says about one dtype.
struct DTypeInfo {
  DType dtype;
  std::string_view name;  // NumPy's
  int8_t size;            // bytes per element
  char kind;              // NumPy's dtype.kind: 'b', 'i', 'u' or 'f'
  int8_t var_type;        // Paddle Fluid's VarType number
  uint8_t dl_code;        // DLPack's DLDataTypeCode (bits = 8 * size, lanes = 1)
};
#define CHANFLOW_DTYPE_INFO(e, type, name, size, kind, var_type, dl_code) \
  DTypeInfo{DType::e, name, size, kind, var_type, static_cast<uint8_t>(dl_code)},
inline constexpr DTypeInfo kDTypeTable[kNumDTypes] = {CHANFLOW_DTYPES(CHANFLOW_DTYPE_INFO)};
#undef CHANFLOW_DTYPE_INFO

// The row of dtype t (t must be a DType value). Thread-safe.
constexpr const DTypeInfo& dtype_info(DType t) noexcept {
  return kDTypeTable[static_cast<size_t>(t)];
}
// The dtype of NumPy kind `kind` ('b', 'i', 'u', 'f') and `size` bytes, or nullopt when chanflow
// has none (e.g. 'u' 2, 'c' 8). Thread-safe.
constexpr std::optional<DType> dtype_from_kind(char kind, int64_t size) noexcept {
  for (const DTypeInfo& i : kDTypeTable) {
    if (i.kind == kind && i.size == size) return i.dtype;
  }
  return std::nullopt;
}

// An IEEE 754 binary16 value stored as its 16 bits. Converting from float rounds to nearest even
// (overflow gives infinity, NaN stays NaN); converting to float is exact. Trivially copyable, so a
// float16 tensor's storage is an array of Half. Thread-safe (a plain value).
struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) noexcept : bits(from_float(f)) {}
  explicit operator float() const noexcept { return to_float(bits); }

  static Half from_bits(uint16_t b) noexcept {
    Half h;
    h.bits = b;
    return h;
  }
  static constexpr uint16_t from_float(float f) noexcept {
    const auto x = std::bit_cast<uint32_t>(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) {  // inf or NaN (keep NaN quiet and non-zero)
      return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
    if (abs < 0x38800000u) {  // result is subnormal or zero: align to 2^-24 units
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the min subnormal
      const uint32_t exp = abs >> 23;
      const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
      const uint32_t shift = 126u - exp;  // 14 + (127 - 1 - exp) + ... yields 2^-24 units
      const uint32_t q = mant >> shift;
      const uint32_t rem = mant & ((1u << shift) - 1u);
      const uint32_t halfway = 1u << (shift - 1u);
      const uint32_t r = q + ((rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u);
      return static_cast<uint16_t>(sign | r);
    }
    // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
    const uint32_t rebased = abs - 0x38000000u;
    const uint32_t q = rebased >> 13;
    const uint32_t rem = rebased & 0x1FFFu;
    const uint32_t r = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | r);
  }
  static constexpr float to_float(uint16_t h) noexcept {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t mant = h & 0x3FFu;
    if (exp == 0x1Fu) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
    if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
    // Subnormal or zero: mant * 2^-24 is exact in float.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign != 0 ? -v : v;
  }
};
static_assert(sizeof(Half) == 2 && std::is_trivially_copyable_v<Half>);

// Bytes per element. Thread-safe.
CHANFLOW_API int64_t dtype_size(DType t) noexcept;
// NumPy's name: "bool", "int8", ..., "float16", "float32", "float64". Thread-safe.
CHANFLOW_API std::string_view dtype_name(DType t) noexcept;
// Parses a name of dtype_name; throws TypeError naming the unknown name.
CHANFLOW_API DType dtype_from_name(std::string_view name);
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

// The dtype NumPy's np.promote_types gives for a mixed binary op (e.g. int8+uint8 -> int16,
// int32+float32 -> float64, int8+float16 -> float16). Symmetric. Thread-safe.
CHANFLOW_API DType promote_types(DType a, DType b) noexcept;
// True for float16/32/64.
constexpr bool is_floating(DType t) noexcept { return dtype_info(t).kind == 'f'; }
// The float type NumPy gives a float-valued unary function (exp, log ...) of dtype t: itself for
// floats, float16 for bool/int8/uint8, float32 for int16, float64 for int32/int64.
CHANFLOW_API DType float_result_type(DType t) noexcept;

// Whether dtype t holds the value v as it is: for bool, v is 0 or 1; for an integer dtype, v is an
// integer in the dtype's range; for a float dtype, v is NaN, infinite, or finite and stays finite
// (rounding is allowed, overflow to infinity is not). A value that fails this would be changed by
// the conversion (see detail::convert). Thread-safe.
CHANFLOW_API bool dtype_holds(DType t, double v) noexcept;
// The values dtype_holds accepts, for messages: "an integer in -128..127", "0 or 1",
// "a value of magnitude at most 65504 (or NaN, inf)". Thread-safe.
CHANFLOW_API std::string dtype_range_text(DType t);

// DLPack conversion. to_dl_dtype is total; from_dl_dtype throws TypeError for a DLDataType with
// lanes != 1 or a code/bits combination chanflow does not hold (e.g. uint16, bfloat16, complex).
CHANFLOW_API DLDataType to_dl_dtype(DType t) noexcept;
CHANFLOW_API DType from_dl_dtype(DLDataType t);

// The C++ storage type of each dtype (bool is stored as bool, always 0 or 1; float16 as Half).
template <DType D>
struct DTypeStorage;
#define CHANFLOW_DTYPE_STORAGE(e, T, ...) \
  template <>                             \
  struct DTypeStorage<DType::e> {         \
    using type = T;                       \
  };
CHANFLOW_DTYPES(CHANFLOW_DTYPE_STORAGE)
#undef CHANFLOW_DTYPE_STORAGE

// The dtype of a C++ storage type: dtype_of<float>() == DType::kFloat32.
template <class T>
constexpr DType dtype_of() noexcept {
#define CHANFLOW_DTYPE_OF(e, U, ...)  \
  if constexpr (std::is_same_v<T, U>) \
    return DType::e;                  \
  else
  CHANFLOW_DTYPES(CHANFLOW_DTYPE_OF)
#undef CHANFLOW_DTYPE_OF
  static_assert(!sizeof(T), "no chanflow dtype stores this C++ type");
}

}  // namespace chanflow
