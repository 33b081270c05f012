// dtype.cc — dtype names, sizes, NumPy promotion and DLPack codes.
#include "chanflow/tensor/dtype.h"

#include <cfloat>
#include <cmath>
#include <string>

namespace chanflow {

namespace {
using D = DType;
// np.promote_types over (bool, i8, i16, i32, i64, u8, f16, f32, f64), checked against NumPy by
// tests/tensor/gen_fixtures.py. Indexed in CHANFLOW_DTYPES' order: a new row needs a row and a
// column here.
static_assert(kNumDTypes == 9, "a new dtype needs its promotions in kPromote");
constexpr D kPromote[kNumDTypes][kNumDTypes] = {
    {D::kBool, D::kInt8, D::kInt16, D::kInt32, D::kInt64, D::kUInt8, D::kFloat16, D::kFloat32,
     D::kFloat64},
    {D::kInt8, D::kInt8, D::kInt16, D::kInt32, D::kInt64, D::kInt16, D::kFloat16, D::kFloat32,
     D::kFloat64},
    {D::kInt16, D::kInt16, D::kInt16, D::kInt32, D::kInt64, D::kInt16, D::kFloat32, D::kFloat32,
     D::kFloat64},
    {D::kInt32, D::kInt32, D::kInt32, D::kInt32, D::kInt64, D::kInt32, D::kFloat64, D::kFloat64,
     D::kFloat64},
    {D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kInt64, D::kFloat64, D::kFloat64,
     D::kFloat64},
    {D::kUInt8, D::kInt16, D::kInt16, D::kInt32, D::kInt64, D::kUInt8, D::kFloat16, D::kFloat32,
     D::kFloat64},
    {D::kFloat16, D::kFloat16, D::kFloat32, D::kFloat64, D::kFloat64, D::kFloat16, D::kFloat16,
     D::kFloat32, D::kFloat64},
    {D::kFloat32, D::kFloat32, D::kFloat32, D::kFloat64, D::kFloat64, D::kFloat32, D::kFloat32,
     D::kFloat32, D::kFloat64},
    {D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64, D::kFloat64,
     D::kFloat64, D::kFloat64},
};
}  // namespace

int64_t dtype_size(DType t) noexcept { return dtype_info(t).size; }

std::string_view dtype_name(DType t) noexcept {
  const auto i = static_cast<size_t>(t);
  return i < static_cast<size_t>(kNumDTypes) ? kDTypeTable[i].name : std::string_view("invalid");
}

DType dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kDTypeTable) {
    if (i.name == name) return i.dtype;
  }
  CHANFLOW_THROW(TypeError) << "unknown dtype name '" << std::string(name) << "'";
  __builtin_unreachable();  // the thrower's destructor throws
}

DType promote_types(DType a, DType b) noexcept {
  return kPromote[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

DType float_result_type(DType t) noexcept {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return DType::kFloat16;
    case DType::kInt16:
      return DType::kFloat32;
    case DType::kInt32:
    case DType::kInt64:
      return DType::kFloat64;
    default:
      return t;
  }
}

bool dtype_holds(DType t, double v) noexcept {
  // The integer bounds are powers of two (exact in double); the range tests are false for NaN.
  auto integer_in = [v](double lo, double hi) { return v >= lo && v <= hi && std::trunc(v) == v; };
  switch (t) {
    case DType::kBool:
      return v == 0.0 || v == 1.0;
    case DType::kInt8:
      return integer_in(-128.0, 127.0);
    case DType::kInt16:
      return integer_in(-32768.0, 32767.0);
    case DType::kInt32:
      return integer_in(-2147483648.0, 2147483647.0);
    case DType::kInt64:
      // 2^63 - 1 is not a double: the largest double below 2^63 is the bound.
      return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && std::trunc(v) == v;
    case DType::kUInt8:
      return integer_in(0.0, 255.0);
    case DType::kFloat16:
      // Decided by the conversion itself (double -> float -> half rounds twice); values this far
      // from 65504 overflow in any case, and keep the float conversion in range.
      if (!std::isfinite(v)) return true;
      if (std::fabs(v) >= 65520.0) return false;
      return std::isfinite(Half::to_float(Half::from_float(static_cast<float>(v))));
    case DType::kFloat32:
      // Below FLT_MAX + half its ulp (2^103) a double rounds to a finite float; at or above it,
      // to infinity.
      return !std::isfinite(v) || std::fabs(v) < static_cast<double>(FLT_MAX) + 0x1p103;
    case DType::kFloat64:
      return true;
  }
  return false;
}

std::string dtype_range_text(DType t) {
  switch (t) {
    case DType::kBool:
      return "0 or 1";
    case DType::kInt8:
      return "an integer in -128..127";
    case DType::kInt16:
      return "an integer in -32768..32767";
    case DType::kInt32:
      return "an integer in -2147483648..2147483647";
    case DType::kInt64:
      return "an integer in -9223372036854775808..9223372036854775807";
    case DType::kUInt8:
      return "an integer in 0..255";
    case DType::kFloat16:
      return "a value of magnitude at most 65504, or NaN or an infinity";
    case DType::kFloat32:
      return "a value of magnitude at most 3.4028235e+38, or NaN or an infinity";
    case DType::kFloat64:
      return "any double";
  }
  return "nothing (invalid dtype)";
}

DLDataType to_dl_dtype(DType t) noexcept {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(dtype_info(t).size * 8);
  d.code = dtype_info(t).dl_code;
  return d;
}

DType from_dl_dtype(DLDataType d) {
  if (d.lanes != 1) {
    CHANFLOW_THROW(TypeError) << "DLPack dtype with " << d.lanes
                              << " lanes is not supported (only scalar lanes = 1)";
  }
  for (const DTypeInfo& i : kDTypeTable) {
    if (i.dl_code == d.code && i.size * 8 == d.bits) return i.dtype;
  }
  CHANFLOW_THROW(TypeError) << "DLPack dtype (code " << static_cast<int>(d.code) << ", bits "
                            << static_cast<int>(d.bits)
                            << ") has no chanflow dtype (supported: bool, int8/16/32/64, uint8, "
                               "float16/32/64)";
  __builtin_unreachable();  // the thrower's destructor throws
}

}  // namespace chanflow
