// internal.h — helpers shared by the tensor layer's source files (not installed).
#pragma once

#include <cstdint>

#include "chanflow/tensor/ops.h"

namespace chanflow::detail {

// Copies src (any strides and dtype, broadcast to dst's shape) into dst (contiguous).
void tensor_copy_into(const Tensor& dst, const Tensor& src, const KernelOptions& opts);
// Axis in [0, ndim) or ShapeError naming `op`.
int64_t tensor_normalize_axis(int64_t axis, int64_t ndim, const char* op);
// opts.out when it can take the result (see KernelOptions::out), else a fresh tensor.
Tensor output_tensor(const Shape& shape, DType dtype, const KernelOptions& opts);
// The chunking part of opts (no `out`), for kernels built from other kernels.
inline KernelOptions chunking_only(const KernelOptions& opts) {
  KernelOptions o;
  o.between_chunks = opts.between_chunks;
  o.chunk_elements = opts.chunk_elements;
  return o;
}
// Throws Error naming `op` when t is null.
void require_defined(const Tensor& t, const char* op);

}  // namespace chanflow::detail

namespace chanflow::detail {
// Applies the OpenBLAS thread policy of blas.h once per process. Thread-safe.
void ensure_blas_initialized();
}  // namespace chanflow::detail
