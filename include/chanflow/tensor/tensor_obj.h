// tensor_obj.h — the data node behind a Tensor: a DLPack DLTensor over shared, aligned storage.
//
// A TensorObj is immutable once shared: its header is a DLTensor (data, device, ndim, dtype, shape,
// strides, byte_offset) that any DLPack consumer understands; its bytes live in a TensorStorageObj
// that several views (reshape, transpose, slice) share. Users hold a Tensor (tensor.h), not this:
//
//   cf::Tensor t = cf::Tensor::zeros({2, 3}, cf::DType::kFloat32);
//   const DLTensor& dl = t->dl_tensor();      // dl.shape[1] == 3, dl.strides[1] == 1
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <vector>

#include "chanflow/core/object.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

namespace detail {
struct BudgetState;
}

// A tensor's shape: one extent per axis, row-major. Brace lists convert: Shape{2, 3}.
using Shape = std::vector<int64_t>;

// Bytes a tensor's elements live in: either 64-byte aligned memory chanflow allocated, or memory
// imported through DLPack whose producer's deleter runs exactly once, when the last view drops.
// Thread-safe to share; the bytes themselves follow the value semantics of Tensor.
class CHANFLOW_API TensorStorageObj final : public Object {
 public:
  static constexpr const char* kTypeKey = "TensorStorage";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(TensorStorageObj, Object);

  // The alignment of storage chanflow allocates (a cache line; enough for AVX-512 loads).
  static constexpr int64_t kAlignment = 64;

  // Allocates nbytes (rounded up to kAlignment, at least one line) of uninitialised, 64-byte
  // aligned memory; buffers of 4 KiB .. 32 MiB are recycled through the buffer cache
  // (buffer_cache.h). Charged to the calling thread of control's MemoryBudget, if any
  // (memory_budget.h: LimitError past its limit). Throws Error if nbytes is negative or the
  // allocation fails. Thread-safe.
  static ObjectPtr<TensorStorageObj> allocate(int64_t nbytes);
  // Wraps a DLPack producer's memory; `owner`'s deleter runs when this storage is destroyed.
  static ObjectPtr<TensorStorageObj> adopt_dlpack(DLManagedTensor* owner, int64_t nbytes);

  void* data() const noexcept { return data_; }
  int64_t nbytes() const noexcept { return nbytes_; }
  // Whether the memory came from a DLPack producer (its alignment is then the producer's).
  bool is_foreign() const noexcept { return foreign_ != nullptr; }

  TensorStorageObj() = default;
  ~TensorStorageObj();

 private:
  void* data_ = nullptr;
  int64_t nbytes_ = 0;
  int64_t capacity_ = 0;  // > 0: a buffer of this size class of the buffer cache
  DLManagedTensor* foreign_ = nullptr;
  detail::BudgetState* budget_ = nullptr;  // charged nbytes_ at allocation; given back when freed
};

// The node of a Tensor. Final: its static type index (TypeIndex::kTensor) cannot reserve child
// slots, and a final type makes is_instance one compare. Fields are set once by the tensor layer
// and never change after the object is shared.
class CHANFLOW_API TensorObj final : public Object {
 public:
  static constexpr const char* kTypeKey = "Tensor";
  static constexpr uint32_t kTypeIndex = TypeIndex::kTensor;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(TensorObj, Object);

  // Makes a view of `storage` (not copied). Strides are in elements, as in DLPack; byte_offset is
  // where element [0, ..., 0] starts. The caller guarantees every addressed byte is in storage.
  TensorObj(ObjectPtr<TensorStorageObj> storage, DType dtype, Shape shape,
            std::vector<int64_t> strides, int64_t byte_offset);

  // The DLPack view of this tensor (device kDLCPU). Valid while the object lives.
  const DLTensor& dl_tensor() const noexcept { return dl_; }
  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  // Strides in elements (may be zero for broadcast-free views never; negative never).
  const std::vector<int64_t>& strides() const noexcept { return strides_; }
  int64_t ndim() const noexcept { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const noexcept { return numel_; }
  int64_t byte_offset() const noexcept { return static_cast<int64_t>(dl_.byte_offset); }
  // Whether elements are laid out row-major without gaps (size-1 axes' strides do not matter).
  bool is_contiguous() const noexcept { return contiguous_; }
  const ObjectPtr<TensorStorageObj>& storage() const noexcept { return storage_; }
  // Address of element [0, ..., 0].
  void* raw_data() const noexcept {
    return static_cast<char*>(dl_.data) + static_cast<int64_t>(dl_.byte_offset);
  }

 private:
  DLTensor dl_{};
  Shape shape_;
  std::vector<int64_t> strides_;
  ObjectPtr<TensorStorageObj> storage_;
  DType dtype_;
  int64_t numel_ = 1;
  bool contiguous_ = true;
};

// Row-major strides (in elements) of a shape.
CHANFLOW_API std::vector<int64_t> contiguous_strides(const Shape& shape);
// Number of elements of a shape; throws ShapeError on a negative extent or int64 overflow.
CHANFLOW_API int64_t shape_numel(const Shape& shape);
// Bytes of a contiguous tensor of `shape` and `dtype`: what a tensor may hold. Throws ShapeError as
// shape_numel does, and when the byte count overflows int64.
CHANFLOW_API int64_t shape_nbytes(const Shape& shape, DType dtype);
// "(2, 3)" — NumPy's tuple notation; "()" for a scalar, "(5,)" for one axis.
CHANFLOW_API std::string shape_to_string(const Shape& shape);

}  // namespace chanflow
