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

// The dtype of each element VarType number, or -1.
constexpr std::array<int8_t, 22> kDTypeOfVarType = [] {
  std::array<int8_t, 22> a{};
  a.fill(-1);
  for (const DTypeInfo& i : kDTypeTable)
    a[static_cast<size_t>(i.var_type)] = static_cast<int8_t>(i.dtype);
  return a;
}();

bool is_element_type(VarType t) noexcept {
  const auto i = static_cast<int64_t>(t);
  return is_valid_var_type(i) && kDTypeOfVarType[static_cast<size_t>(i)] >= 0;
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
  return static_cast<VarType>(dtype_info(d).var_type);
}

DType dtype_from_var_type(VarType t) {
  if (is_element_type(t)) return static_cast<DType>(kDTypeOfVarType[static_cast<size_t>(t)]);
  throw TypeError("VarType " + std::string(var_type_name(t)) + " (" +
                  std::to_string(static_cast<int>(t)) + ") is not a tensor element type");
}

}  // namespace chanflow
