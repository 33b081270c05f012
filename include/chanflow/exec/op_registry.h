// op_registry.h — the executor's side of each op type: its kernel and its shape/dtype inference.
//
// The ir layer's OpSchemaRegistry says what an op accepts; the exec layer attaches to each schema
// (OpSchema::set_extension) the kernel that runs it and a function that infers its outputs'
// dtypes and shapes from its inputs'. Executor attaches them on first use; inference is also
// usable on its own:
//
//   cf::register_exec_kernels();                        // idempotent
//   cf::OpDesc add = cf::OpDesc::make("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}},
//                                     {{"Out", {"c"}}});
//   auto out = cf::infer_op(add, {{cf::DType::kFloat32, {2, 3}}, {cf::DType::kFloat32, {3}}});
//   // out[0].dtype == kFloat32, out[0].shape == {2, 3}
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

// A tensor's static type: dtype and shape (-1: extent unknown).
struct TensorInfo {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};

// Attaches the exec layer's kernels to every built-in op of `registry`. Idempotent and
// thread-safe; Executor calls it for the global registry.
CHANFLOW_API void register_exec_kernels(OpSchemaRegistry& registry = OpSchemaRegistry::global());

// Whether `type` has a kernel in `registry` (after register_exec_kernels). Thread-safe.
CHANFLOW_API bool has_kernel(std::string_view type,
                             const OpSchemaRegistry& registry = OpSchemaRegistry::global());

// The dtypes and shapes of a compute op's outputs, given its tensor inputs in schema order
// (X, Y ...). Throws TypeError or ShapeError when the inputs cannot work (e.g. matmul of (2, 3) by
// (4, 5)); Error for control-flow and channel ops, which have no tensor inference. Thread-safe.
CHANFLOW_API std::vector<TensorInfo> infer_op(const OpDesc& op,
                                              const std::vector<TensorInfo>& inputs);

}  // namespace chanflow
