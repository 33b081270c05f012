// VarType names and the mapping between Fluid's element VarTypes and tensor dtypes.
#include "chanflow/ir/var_type.h"

#include <array>
#include <string>

#include "chanflow/core/error.h"

namespace chanflow {
namespace {

constexpr std::array<std::string_view, 22> kNames = {"BOOL",           "INT16",
                                                     "INT32",          "INT64",
                                                     "FP16",           "FP32",
                                                     "FP64",           "LOD_TENSOR",
                                                     "SELECTED_ROWS",  "FEED_MINIBATCH",
                                                     "FETCH_LIST",     "STEP_SCOPES",
                                                     "LOD_RANK_TABLE", "LOD_TENSOR_ARRAY",
                                                     "PLACE_LIST",     "READER",
                                                     "CHANNEL",        "RAW",
                                                     "TUPLE",          "SIZE_T",
                                                     "UINT8",          "INT8"};

}  // namespace

bool is_element_type(VarType t) noexcept {
  switch (t) {
    case VarType::kBool:
    case VarType::kInt16:
    case VarType::kInt32:
    case VarType::kInt64:
    case VarType::kFP16:
    case VarType::kFP32:
    case VarType::kFP64:
    case VarType::kUInt8:
    case VarType::kInt8:
      return true;
    default:
      return false;
  }
}

std::string_view var_type_name(VarType t) noexcept {
  const auto i = static_cast<int64_t>(t);
  if (!is_valid_var_type(i)) return "?";
  return kNames[static_cast<size_t>(i)];
}

std::optional<VarType> var_type_from_name(std::string_view name) noexcept {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<VarType>(i);
  }
  return std::nullopt;
}

VarType var_type_from_dtype(DType d) noexcept {
  switch (d) {
    case DType::kBool:
      return VarType::kBool;
    case DType::kInt8:
      return VarType::kInt8;
    case DType::kInt16:
      return VarType::kInt16;
    case DType::kInt32:
      return VarType::kInt32;
    case DType::kInt64:
      return VarType::kInt64;
    case DType::kUInt8:
      return VarType::kUInt8;
    case DType::kFloat16:
      return VarType::kFP16;
    case DType::kFloat32:
      return VarType::kFP32;
    case DType::kFloat64:
      return VarType::kFP64;
  }
  return VarType::kFP32;  // unreachable: the switch is exhaustive
}

DType dtype_from_var_type(VarType t) {
  switch (t) {
    case VarType::kBool:
      return DType::kBool;
    case VarType::kInt8:
      return DType::kInt8;
    case VarType::kInt16:
      return DType::kInt16;
    case VarType::kInt32:
      return DType::kInt32;
    case VarType::kInt64:
      return DType::kInt64;
    case VarType::kUInt8:
      return DType::kUInt8;
    case VarType::kFP16:
      return DType::kFloat16;
    case VarType::kFP32:
      return DType::kFloat32;
    case VarType::kFP64:
      return DType::kFloat64;
    default:
      break;
  }
  throw TypeError("VarType " + std::string(var_type_name(t)) + " (" +
                  std::to_string(static_cast<int>(t)) + ") is not a tensor element type");
}

}  // namespace chanflow
