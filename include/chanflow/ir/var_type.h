// var_type.h — VarType, Fluid's numbering of variable kinds and tensor element types.
//
// A program's variables are tensors (LOD_TENSOR, with an element type), channels (CHANNEL, with an
// element type and a capacity) or bookkeeping kinds the executor keeps for itself (STEP_SCOPES).
// The numbers are PaddlePaddle Fluid's, so `dtype: 3` in an attribute means INT64 and
// `data_type: 7` means LOD_TENSOR, as in Fluid's program listings:
//
//   cf::VarType t = cf::var_type_from_dtype(cf::DType::kInt64);     // VarType::kInt64 (3)
//   cf::DType d = cf::dtype_from_var_type(cf::VarType::kFP64);       // DType::kFloat64
//   std::string_view n = cf::var_type_name(cf::VarType::kChannel);   // "CHANNEL"
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

// Fluid's VarType.Type. The numeric values are the file format: they never change.
enum class VarType : int32_t {
  kBool = 0,
  kInt16 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFP16 = 4,
  kFP32 = 5,
  kFP64 = 6,
  kLoDTensor = 7,
  kSelectedRows = 8,
  kFeedMinibatch = 9,
  kFetchList = 10,
  kStepScopes = 11,
  kLoDRankTable = 12,
  kLoDTensorArray = 13,
  kPlaceList = 14,
  kReader = 15,
  kChannel = 16,
  kRaw = 17,
  kTuple = 18,
  kSizeT = 19,
  kUInt8 = 20,
  kInt8 = 21,
};

// Whether `v` is one of Fluid's VarType numbers (0..21). Thread-safe.
constexpr bool is_valid_var_type(int64_t v) noexcept { return v >= 0 && v <= 21; }

// Whether t names a tensor element type that chanflow tensors hold (BOOL, INT8, INT16, INT32,
// INT64, UINT8, FP16, FP32, FP64). SIZE_T is Fluid's but has no chanflow dtype. Thread-safe.
CHANFLOW_API bool is_element_type(VarType t) noexcept;

// The Fluid name of a VarType ("INT64", "LOD_TENSOR", "CHANNEL" ...); "?" for a value outside the
// enum. Thread-safe.
CHANFLOW_API std::string_view var_type_name(VarType t) noexcept;

// Parses a Fluid VarType name; nullopt when it is not one. Thread-safe.
CHANFLOW_API std::optional<VarType> var_type_from_name(std::string_view name) noexcept;

// The VarType of a tensor dtype (DType::kFloat64 -> VarType::kFP64). Total. Thread-safe.
CHANFLOW_API VarType var_type_from_dtype(DType d) noexcept;

// The tensor dtype of an element VarType; throws TypeError naming the type when t is not an
// element type (e.g. LOD_TENSOR or CHANNEL). Thread-safe. Both directions read the VarType column
// of CHANFLOW_DTYPES (dtype.h), the one list of element types.
CHANFLOW_API DType dtype_from_var_type(VarType t);

}  // namespace chanflow
