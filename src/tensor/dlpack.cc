// dlpack.cc — zero-copy export and import through DLManagedTensor.
#include <dlpack/dlpack.h>

#include <vector>

#include "chanflow/tensor/dlpack_interop.h"
#include "internal.h"

namespace chanflow {

namespace {

// What an exported DLManagedTensor owns: a handle keeping the tensor (and its storage) alive.
// The DLTensor inside points at the TensorObj's own shape and strides arrays, which never change.
struct ExportContext {
  Tensor tensor;
  DLManagedTensor managed{};
};

void export_deleter(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  detail::require_defined(t, "to_dlpack");
  auto* ctx = new ExportContext{t, {}};
  ctx->managed.dl_tensor = t->dl_tensor();
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &export_deleter;
  return &ctx->managed;
}

Tensor from_dlpack(DLManagedTensor* m) {
  if (m == nullptr) CHANFLOW_THROW(Error) << "from_dlpack: null DLManagedTensor";
  const DLTensor& dl = m->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    CHANFLOW_THROW(TypeError) << "from_dlpack: only CPU tensors are supported (device type "
                              << static_cast<int>(dl.device.device_type) << ")";
  }
  const DType dtype = from_dl_dtype(dl.dtype);
  if (dl.ndim < 0 || (dl.ndim > 0 && dl.shape == nullptr)) {
    CHANFLOW_THROW(Error) << "from_dlpack: invalid ndim " << dl.ndim << " or null shape";
  }
  Shape shape(dl.shape, dl.shape + dl.ndim);
  const int64_t numel = shape_numel(shape);  // ShapeError on negative extents and on overflow
  std::vector<int64_t> strides = dl.strides != nullptr
                                     ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                     : contiguous_strides(shape);
  const int64_t item = dtype_size(dtype);
  // The span of the view in bytes from its first element (byte_offset + extent * item, which
  // sizes the storage object) must fit int64: a producer's strides are not trusted, and their
  // products overflowing would be undefined behaviour and a storage size that is a lie.
  auto overflow = [&] {
    CHANFLOW_THROW(ShapeError) << "from_dlpack: shape " << shape_to_string(shape)
                               << " with strides " << shape_to_string(strides)
                               << " and byte_offset " << dl.byte_offset
                               << " spans more bytes than int64 can count";
  };
  int64_t extent = numel > 0 ? 1 : 0;  // in elements
  for (int64_t i = 0; i < dl.ndim && numel > 0; ++i) {
    const int64_t stride = strides[static_cast<size_t>(i)];
    if (stride < 0) {
      CHANFLOW_THROW(Error) << "from_dlpack: negative strides are not supported";
    }
    int64_t span = 0;
    if (__builtin_mul_overflow(shape[static_cast<size_t>(i)] - 1, stride, &span) ||
        __builtin_add_overflow(extent, span, &extent)) {
      overflow();
    }
  }
  int64_t span_bytes = 0;
  if (dl.byte_offset > static_cast<uint64_t>(INT64_MAX) ||
      __builtin_mul_overflow(extent, item, &span_bytes) ||
      __builtin_add_overflow(span_bytes, static_cast<int64_t>(dl.byte_offset), &span_bytes)) {
    overflow();
  }
  if (numel > 0 && dl.data == nullptr) CHANFLOW_THROW(Error) << "from_dlpack: null data pointer";
  uintptr_t addr = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(dl.data), dl.byte_offset, &addr)) {
    overflow();
  }
  if (addr % static_cast<uintptr_t>(item) != 0) {
    CHANFLOW_THROW(Error) << "from_dlpack: data pointer is not aligned to " << item
                          << " bytes (the element size)";
  }
  // Every check is done: from here on only std::bad_alloc can be thrown. If allocating the storage
  // node fails, m still belongs to the caller; if the tensor node then fails, the storage already
  // owns m and releases it (the deleter still runs exactly once).
  auto storage = TensorStorageObj::adopt_dlpack(m, span_bytes);
  return Tensor(make_object<TensorObj>(std::move(storage), dtype, std::move(shape),
                                       std::move(strides), static_cast<int64_t>(dl.byte_offset)));
}

}  // namespace chanflow
