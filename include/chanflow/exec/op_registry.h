// op_registry.h — the executor's side of each op type: its kernel and its shape/dtype inference.
//
// The ir layer's OpSchemaRegistry says what an op accepts; the exec layer attaches to each schema
// (OpSchema::set_extension) the kernel that runs it and a function that infers its outputs'
// dtypes and shapes from its inputs'. Every kernel has a schema and reads only attributes its
// schema declares, with the declared types (register_exec_kernels checks both); every built-in
// schema has a kernel unless it is marked OpSchema::kernel_elsewhere (tests/exec checks that).
// Executor attaches them on first use; inference is also usable on its own:
//
//   cf::register_exec_kernels();                        // idempotent
//   cf::OpDesc add = cf::OpDesc::make("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}},
//                                     {{"Out", {"c"}}});
//   auto out = cf::infer_op(add, {{cf::DType::kFloat32, {2, 3}}, {cf::DType::kFloat32, {3}}});
//   // out[0].dtype == kFloat32, out[0].shape == {2, 3}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/ops/op_table.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

// TensorInfo (a tensor's static type) is the op table's (chanflow/ops/op_table.h).

// Attaches the exec layer's kernels to the schemas of `registry`. Throws Error, attaching
// nothing, when a kernel's op has no schema there or the kernel reads an attribute the schema
// does not declare with a type it can read (naming the op and the attribute). Idempotent and
// thread-safe; Executor calls it for the global registry.
CHANFLOW_API void register_exec_kernels(OpSchemaRegistry& registry = OpSchemaRegistry::global());

// The op types the exec layer has a kernel for, sorted. Thread-safe.
CHANFLOW_API std::vector<std::string> exec_kernel_types();

// Whether `type` has a kernel in `registry` (after register_exec_kernels). Thread-safe.
CHANFLOW_API bool has_kernel(std::string_view type,
                             const OpSchemaRegistry& registry = OpSchemaRegistry::global());

// The dtypes and shapes of a compute op's outputs, given its tensor inputs in schema order
// (X, Y ...), and its attributes (the schema's defaults for those it omits). Throws TypeError or
// ShapeError when the inputs cannot work (e.g. matmul of (2, 3) by (4, 5)); TypeError naming the
// op and the attribute when an attribute has a type the kernel cannot read; Error for control-flow
// and channel ops, which have no tensor inference. Thread-safe.
CHANFLOW_API std::vector<TensorInfo> infer_op(const OpDesc& op,
                                              const std::vector<TensorInfo>& inputs);

}  // namespace chanflow
