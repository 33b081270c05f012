// tensor.h — Tensor: an n-dimensional array with value semantics, DLPack-compatible.
//
// A Tensor is a cheap handle (one pointer) to a TensorObj. Copies share it; a tensor that is shared
// is never changed: mutating calls (data<T>() non-const, fill, assign) first make the handle's
// object and storage unique, copying if another handle or view still sees them (copy on write).
// So a sender may keep using a tensor after sending it on a channel: the receiver never sees it
// change.
//
//   cf::Tensor a = cf::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   cf::Tensor b = a.transpose();            // a view: shares a's storage, shape (3, 2)
//   float* p = b.data<float>();              // b copies first (a still sees its own values)
//   p[0] = 42;                               // a(0,0) is still 1
//   std::cout << a;                          // tensor([[1., 2., 3.], ...], shape=(2, 3),
//   dtype=float32)
//
// Thread-safety: a Tensor handle is like std::shared_ptr (one handle must not be written by one
// thread while another uses it); distinct handles to one tensor may be used from any threads, and
// all const member functions and kernels only read shared tensors.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <type_traits>
#include <vector>

#include "chanflow/core/object.h"
#include "chanflow/tensor/dtype.h"
#include "chanflow/tensor/tensor_obj.h"

namespace chanflow {

class CHANFLOW_API Tensor : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Tensor, ObjectRef, TensorObj);

  // ---- creation (all return a fresh, unique, C-contiguous tensor; they throw ShapeError on a
  // negative extent and never block) ----

  // Uninitialised elements.
  static Tensor empty(const Shape& shape, DType dtype);
  static Tensor zeros(const Shape& shape, DType dtype);
  static Tensor ones(const Shape& shape, DType dtype);
  // Every element is `value` converted to dtype (as NumPy's astype would).
  static Tensor full(const Shape& shape, double value, DType dtype);
  // A 0-d tensor holding `value`.
  static Tensor scalar(double value, DType dtype);
  // [0, 1, ..., n-1] as a 1-d tensor (default int64, like np.arange(n)).
  static Tensor arange(int64_t n, DType dtype = DType::kInt64);
  // [start, start+step, ...) stopping before `stop`, NumPy's length rule ceil((stop-start)/step).
  // Throws Error when step is 0 or not finite.
  static Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::kFloat64);
  // Copies `values` into a tensor of dtype_of<T>() and `shape` ({} makes a 0-d tensor).
  // Throws ShapeError when the shape's element count differs from values.size().
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  // Copies `values` into a 1-d tensor of dtype_of<T>().
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }

  // ---- properties (never block; thread-safe) ----
  DType dtype() const { return get()->dtype(); }
  const Shape& shape() const { return get()->shape(); }
  // Strides in elements.
  const std::vector<int64_t>& strides() const { return get()->strides(); }
  int64_t ndim() const { return get()->ndim(); }
  int64_t numel() const { return get()->numel(); }
  // Extent of one axis; negative axes count from the end. Throws ShapeError when out of range.
  int64_t size(int64_t axis) const;
  bool is_contiguous() const { return get()->is_contiguous(); }
  int64_t itemsize() const { return dtype_size(dtype()); }
  int64_t nbytes() const { return numel() * itemsize(); }
  // Whether another handle or view shares this tensor's object or storage (a mutation would copy).
  bool is_shared() const;

  // ---- element access ----

  // Read-only pointer to element [0, ..., 0]; elements are at strides() (see is_contiguous()).
  // Throws TypeError unless dtype() == dtype_of<T>(). Valid while this handle holds the tensor.
  template <class T>
  const T* data() const;
  // Mutable pointer to numel() elements in row-major order. Copy on write: if the tensor is
  // shared or not contiguous, this handle first gets its own contiguous copy, so the writes are
  // seen by this handle only. Throws TypeError unless dtype() == dtype_of<T>(). Not thread-safe
  // on one handle (it may replace what the handle points to).
  template <class T>
  T* data();
  // The only element of a one-element tensor (any shape), converted to T as NumPy's astype would.
  // Throws ShapeError when numel() != 1.
  template <class T>
  T item() const;
  // The element at a full index (negative entries count from the end), converted to T.
  // Throws ShapeError when the index has the wrong length or is out of range.
  template <class T>
  T at(const Shape& index) const;

  // ---- in-place mutation (copy on write: shared tensors are copied first, never changed) ----

  // Sets every element to `value` converted to dtype().
  void fill(double value);
  // Copies `src` (broadcast to shape(), converted to dtype()) into this tensor. Throws ShapeError
  // when src does not broadcast to shape().
  void assign(const Tensor& src);

  // ---- views and copies (never block; thread-safe) ----

  // Same elements in a new shape; one extent may be -1 (inferred). A view sharing storage when
  // the tensor is contiguous, else a copy (NumPy's reshape). Throws ShapeError on a count mismatch.
  Tensor reshape(const Shape& shape) const;
  // Axes reversed (NumPy's .T); a view.
  Tensor transpose() const;
  // Axes permuted: result axis i is this tensor's axis perm[i]; a view. Throws ShapeError unless
  // perm is a permutation of [0, ndim).
  Tensor transpose(const std::vector<int64_t>& perm) const;
  // Elements start, start+step, ... before stop along one axis (Python slice semantics for
  // negative and out-of-range bounds; step >= 1); a view. Throws ShapeError on a bad axis or step.
  Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  // Removes or inserts a size-1 axis; views.
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  // This tensor if it is C-contiguous, else a contiguous copy.
  Tensor contiguous() const;
  // A deep, contiguous copy that shares nothing with this tensor.
  Tensor clone() const;
  // Elements converted to `dtype` (NumPy's astype, unsafe casting). Returns a copy even when the
  // dtype is unchanged. Float-to-integer casts of NaN or out-of-range values give an unspecified
  // (but defined) value, as NumPy does.
  Tensor cast(DType dtype) const;

  // Whether both tensors have the same shape, dtype and elements (NaN != NaN).
  bool equal_to(const Tensor& other) const;

 private:
  static Tensor from_raw(const void* values, int64_t count, DType dtype, const Shape& shape);
  void make_unique_contiguous();
  void check_dtype(DType want, const char* what) const;
  double element_as_double(int64_t flat_offset_elems) const;
  int64_t element_as_int64(int64_t flat_offset_elems) const;
  int64_t offset_of(const Shape& index) const;
};

// Prints like NumPy: "tensor([[1., 2.],\n        [3., 4.]], shape=(2, 2), dtype=float32)".
// Axes longer than 6 are elided to 3 + "..." + 3 when the tensor has more than 1000 elements.
// A null tensor prints "tensor(null)". Thread-safe.
CHANFLOW_API std::string to_string(const Tensor& t);
CHANFLOW_API std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- inline templates ----

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());  // vector<bool> is packed
    return from_raw(bytes.data(), static_cast<int64_t>(bytes.size()), DType::kBool, shape);
  } else {
    return from_raw(values.data(), static_cast<int64_t>(values.size()), dtype_of<T>(), shape);
  }
}

template <class T>
const T* Tensor::data() const {
  check_dtype(dtype_of<T>(), "data");
  return static_cast<const T*>(get()->raw_data());
}

template <class T>
T* Tensor::data() {
  check_dtype(dtype_of<T>(), "data");
  make_unique_contiguous();
  return static_cast<T*>(const_cast<void*>(get()->raw_data()));
}

template <class T>
T Tensor::item() const {
  if (numel() != 1) {
    CHANFLOW_THROW(ShapeError) << "item: expected a one-element tensor, got shape "
                               << shape_to_string(shape());
  }
  if constexpr (std::is_same_v<T, bool>) {
    return element_as_double(0) != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(element_as_int64(0));
  } else if constexpr (std::is_same_v<T, Half>) {
    return Half(static_cast<float>(element_as_double(0)));
  } else {
    return static_cast<T>(element_as_double(0));
  }
}

template <class T>
T Tensor::at(const Shape& index) const {
  const int64_t off = offset_of(index);
  if constexpr (std::is_same_v<T, bool>) {
    return element_as_double(off) != 0.0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(element_as_int64(off));
  } else if constexpr (std::is_same_v<T, Half>) {
    return Half(static_cast<float>(element_as_double(off)));
  } else {
    return static_cast<T>(element_as_double(off));
  }
}

}  // namespace chanflow
