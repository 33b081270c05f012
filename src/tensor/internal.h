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
// Splits a kernel's work into chunks of about opts.chunk_elements units: before() calls
// opts.between_chunks before a piece that would take the work since the last call past one
// chunk (never before the first piece, never splitting a piece). `opts` must outlive it.
class Chunker {
 public:
  explicit Chunker(const KernelOptions& o)
      : o_(o), chunk_(o.chunk_elements > 1 ? o.chunk_elements : 1) {}
  void before(int64_t work) {
    if (o_.between_chunks && done_ > 0 && done_ + work > chunk_) {
      o_.between_chunks();
      done_ = 0;
    }
    done_ += work;
  }

 private:
  const KernelOptions& o_;
  int64_t chunk_;
  int64_t done_ = 0;
};
// Throws Error naming `op` when t is null.
void require_defined(const Tensor& t, const char* op);

}  // namespace chanflow::detail

namespace chanflow::detail {
// Applies the OpenBLAS thread policy of blas.h once per process. Thread-safe.
void ensure_blas_initialized();
}  // namespace chanflow::detail
