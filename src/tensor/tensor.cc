// tensor.cc — storage, the tensor node, creation, views and copy on write.
#include "chanflow/tensor/tensor.h"

#include <sys/mman.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "buffer_pool.h"
#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "chanflow/tensor/ops.h"
#include "internal.h"
#include "memory_budget.h"

namespace chanflow {

// ---------------------------------------------------------------- storage

ObjectPtr<TensorStorageObj> TensorStorageObj::allocate(int64_t nbytes) {
  if (nbytes < 0) CHANFLOW_THROW(Error) << "tensor storage: negative size " << nbytes;
  ObjectPtr<TensorStorageObj> s = make_object<TensorStorageObj>();  // first: nothing leaks
  s->nbytes_ = nbytes;
  // The memory budget of this thread of control, if any (memory_budget.h): charged before any
  // memory is taken; the destructor gives the bytes back, also when an allocation below throws.
  if (detail::BudgetState* budget = nbytes > 0 ? detail::current_budget() : nullptr) {
    budget->charge(nbytes);
    s->budget_ = budget;
  }
  // 4 KiB .. 32 MiB: recycled through the buffer cache (buffer_cache.h).
  if (const int64_t capacity = detail::buffer_class_capacity(nbytes); capacity > 0) {
    void* p = detail::buffer_get(capacity);
    if (p == nullptr) {
      if (std::string bad = detail::buffer_cache_setting_error(); !bad.empty()) throw Error(bad);
      CHANFLOW_THROW(Error) << "tensor storage: cannot allocate " << nbytes << " bytes";
    }
    s->data_ = p;
    s->capacity_ = capacity;
    return s;
  }
  // Buffers of 32 MiB and more (glibc's largest mmap threshold: always fresh pages from the kernel)
  // are 2 MiB aligned and advised as transparent huge pages, so a fresh 64 MiB output costs 32
  // page faults instead of 16384. Smaller ones are left to malloc, which reuses freed memory.
  constexpr int64_t kHugePage = int64_t{2} << 20;
  const int64_t align = nbytes >= 16 * kHugePage ? kHugePage : kAlignment;
  if (nbytes > INT64_MAX - align) {
    CHANFLOW_THROW(Error) << "tensor storage: cannot allocate " << nbytes << " bytes";
  }
  // aligned_alloc needs a multiple of the alignment; never zero so data() is never null.
  const int64_t rounded = std::max<int64_t>(align, (nbytes + align - 1) / align * align);
  void* p = std::aligned_alloc(static_cast<size_t>(align), static_cast<size_t>(rounded));
  if (p == nullptr) {
    CHANFLOW_THROW(Error) << "tensor storage: cannot allocate " << nbytes << " bytes";
  }
#if defined(MADV_HUGEPAGE)
  if (align == kHugePage) (void)madvise(p, static_cast<size_t>(rounded), MADV_HUGEPAGE);
#endif
  s->data_ = p;
  return s;
}

ObjectPtr<TensorStorageObj> TensorStorageObj::adopt_dlpack(DLManagedTensor* owner, int64_t nbytes) {
  ObjectPtr<TensorStorageObj> s = make_object<TensorStorageObj>();
  s->data_ = owner->dl_tensor.data;
  s->nbytes_ = nbytes;
  s->foreign_ = owner;
  return s;
}

TensorStorageObj::~TensorStorageObj() {
  if (budget_ != nullptr) budget_->release(nbytes_);
  if (foreign_ != nullptr) {
    if (foreign_->deleter != nullptr) foreign_->deleter(foreign_);
  } else if (capacity_ > 0) {
    detail::buffer_put(data_, capacity_);
  } else {
    std::free(data_);
  }
}

// ---------------------------------------------------------------- shape helpers

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    // Saturate: only zero-size tensors can get here with a product beyond int64, and their
    // strides are never used to address memory.
    int64_t next;
    if (__builtin_mul_overflow(acc, std::max<int64_t>(shape[i], 1), &next)) next = INT64_MAX;
    acc = next;
  }
  return s;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) {
    if (e < 0) {
      CHANFLOW_THROW(ShapeError) << "shape " << shape_to_string(shape) << " has a negative extent";
    }
    if (e != 0 && n > INT64_MAX / e) {
      CHANFLOW_THROW(ShapeError) << "shape " << shape_to_string(shape)
                                 << " has more elements than int64 can count";
    }
    n *= e;
  }
  return n;
}

int64_t shape_nbytes(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape);
  const int64_t item = dtype_size(dtype);
  if (n > INT64_MAX / item) {
    CHANFLOW_THROW(ShapeError) << "shape " << shape_to_string(shape) << " of " << dtype_name(dtype)
                               << " needs more bytes than int64 can count";
  }
  return n * item;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// ---------------------------------------------------------------- node

TensorObj::TensorObj(ObjectPtr<TensorStorageObj> storage, DType dtype, Shape shape,
                     std::vector<int64_t> strides, int64_t byte_offset)
    : shape_(std::move(shape)),
      strides_(std::move(strides)),
      storage_(std::move(storage)),
      dtype_(dtype) {
  CHANFLOW_CHECK(shape_.size() == strides_.size());
  numel_ = shape_numel(shape_);
  if (numel_ > 0) {  // then every partial product fits in int64
    int64_t expect = 1;
    for (size_t i = shape_.size(); i-- > 0;) {
      if (shape_[i] != 1 && strides_[i] != expect) contiguous_ = false;
      expect *= shape_[i];
    }
  }
  dl_.data = storage_->data();
  dl_.device = DLDevice{kDLCPU, 0};
  dl_.ndim = static_cast<int32_t>(shape_.size());
  dl_.dtype = to_dl_dtype(dtype_);
  dl_.shape = shape_.data();
  dl_.strides = strides_.data();
  dl_.byte_offset = static_cast<uint64_t>(byte_offset);
}

// ---------------------------------------------------------------- creation

namespace {

Tensor make_view(const Tensor& base, Shape shape, std::vector<int64_t> strides,
                 int64_t byte_offset) {
  return Tensor(make_object<TensorObj>(base->storage(), base.dtype(), std::move(shape),
                                       std::move(strides), byte_offset));
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) {
    CHANFLOW_THROW(ShapeError) << op << ": axis " << axis << " is out of range for a tensor with "
                               << ndim << " dimension(s)";
  }
  return a;
}

// Copies src (any strides, broadcast to dst's shape, any dtype) into dst (contiguous, unique).
void copy_into(const Tensor& dst, const Tensor& src, const KernelOptions& opts) {
  const Shape& shape = dst.shape();
  std::array<std::vector<int64_t>, 2> strides = {detail::broadcast_byte_strides(dst, shape),
                                                 detail::broadcast_byte_strides(src, shape)};
  const auto layout = detail::make_layout<2>(shape, strides);
  std::array<char*, 2> base = {static_cast<char*>(dst->raw_data()),
                               static_cast<char*>(src->raw_data())};
  detail::dispatch_dtype(dst.dtype(), [&](auto dtag) {
    using To = typename decltype(dtag)::type;
    detail::dispatch_dtype(src.dtype(), [&](auto stag) {
      using From = typename decltype(stag)::type;
      detail::for_each_run_blocked<2>(
          layout, base, {sizeof(To), sizeof(From)}, opts,
          [](const std::array<char*, 2>& p, int64_t n, const std::array<int64_t, 2>& s) {
            if constexpr (std::is_same_v<To, From>) {
              if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
                std::memcpy(p[0], p[1], static_cast<size_t>(n) * sizeof(To));
                return;
              }
            }
            if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
              To* __restrict o = reinterpret_cast<To*>(p[0]);
              const From* __restrict in = reinterpret_cast<const From*>(p[1]);
              for (int64_t i = 0; i < n; ++i) {
                o[i] = detail::convert<To>(in[i]);
              }
              return;
            }
            char* o = p[0];
            const char* in = p[1];
            for (int64_t i = 0; i < n; ++i, o += s[0], in += s[1]) {
              From v;
              std::memcpy(&v, in, sizeof(From));
              const To r = detail::convert<To>(v);
              std::memcpy(o, &r, sizeof(To));
            }
          });
    });
  });
}

}  // namespace

namespace detail {
// Shared with the kernels: copy with broadcasting and conversion.
void tensor_copy_into(const Tensor& dst, const Tensor& src, const KernelOptions& opts) {
  copy_into(dst, src, opts);
}
int64_t tensor_normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  return normalize_axis(axis, ndim, op);
}
}  // namespace detail

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  if (static_cast<unsigned>(dtype) >= static_cast<unsigned>(kNumDTypes)) {
    CHANFLOW_THROW(TypeError) << "empty: invalid dtype code " << static_cast<int>(dtype);
  }
  int64_t nbytes = 0;
  try {
    nbytes = shape_nbytes(shape, dtype);
  } catch (const ShapeError& e) {
    CHANFLOW_THROW(ShapeError) << "empty: " << e.what();
  }
  auto storage = TensorStorageObj::allocate(nbytes);
  return Tensor(
      make_object<TensorObj>(std::move(storage), dtype, shape, contiguous_strides(shape), 0));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t->raw_data(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = detail::convert<T>(value);
    T* p = static_cast<T*>(t->raw_data());
    std::fill(p, p + t.numel(), v);
  });
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(int64_t n, DType dtype) {
  if (n < 0) n = 0;
  Tensor t = empty({n}, dtype);
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t->raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = detail::convert<T>(i);
  });
  return t;
}

Tensor Tensor::arange(double start, double stop, double step, DType dtype) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop)) {
    CHANFLOW_THROW(Error) << "arange: start, stop and step must be finite and step non-zero (got "
                          << start << ", " << stop << ", " << step << ")";
  }
  const double len = std::ceil((stop - start) / step);
  if (len > 9.0e15) CHANFLOW_THROW(Error) << "arange: " << len << " elements is too many";
  const int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  Tensor t = empty({n}, dtype);
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t->raw_data());
    for (int64_t i = 0; i < n; ++i)
      p[i] = detail::convert<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

Tensor Tensor::from_raw(const void* values, int64_t count, DType dtype, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  if (n != count) {
    CHANFLOW_THROW(ShapeError) << "from_vector: " << count << " value(s) do not fill shape "
                               << shape_to_string(shape) << " (" << n << " elements)";
  }
  Tensor t = empty(shape, dtype);
  if (n > 0) std::memcpy(t->raw_data(), values, static_cast<size_t>(n * dtype_size(dtype)));
  return t;
}

// ---------------------------------------------------------------- properties

int64_t Tensor::size(int64_t axis) const {
  return shape()[static_cast<size_t>(normalize_axis(axis, ndim(), "size"))];
}

bool Tensor::is_shared() const { return use_count() > 1 || get()->storage().use_count() > 1; }

void Tensor::check_dtype(DType want, const char* what) const {
  if (!defined()) CHANFLOW_THROW(Error) << what << ": the tensor is null";
  if (dtype() != want) {
    CHANFLOW_THROW(TypeError) << what << ": the tensor holds " << dtype_name(dtype()) << ", not "
                              << dtype_name(want);
  }
}

void Tensor::make_unique_contiguous() {
  // use_count() == 1 means no other handle can appear concurrently (only this handle could copy
  // it), and a storage count of 1 means no other view shares the bytes.
  if (!is_shared() && is_contiguous()) return;
  *this = clone();
}

int64_t Tensor::offset_of(const Shape& index) const {
  if (static_cast<int64_t>(index.size()) != ndim()) {
    CHANFLOW_THROW(ShapeError) << "at: index of length " << index.size() << " for shape "
                               << shape_to_string(shape());
  }
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t v = index[i] < 0 ? index[i] + shape()[i] : index[i];
    if (v < 0 || v >= shape()[i]) {
      CHANFLOW_THROW(ShapeError) << "at: index " << index[i] << " is out of range for axis " << i
                                 << " of shape " << shape_to_string(shape());
    }
    off += v * strides()[i];
  }
  return off;
}

double Tensor::element_as_double(int64_t off) const {
  return detail::dispatch_dtype(dtype(), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return detail::convert<double>(static_cast<const T*>(get()->raw_data())[off]);
  });
}

int64_t Tensor::element_as_int64(int64_t off) const {
  return detail::dispatch_dtype(dtype(), [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    return detail::convert<int64_t>(static_cast<const T*>(get()->raw_data())[off]);
  });
}

// ---------------------------------------------------------------- mutation

void Tensor::fill(double value) {
  if (!defined()) CHANFLOW_THROW(Error) << "fill: the tensor is null";
  if (is_shared() || !is_contiguous()) {
    *this = full(shape(), value, dtype());
    return;
  }
  detail::dispatch_dtype(dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(get()->raw_data());
    std::fill(p, p + numel(), detail::convert<T>(value));
  });
}

void Tensor::assign(const Tensor& src) {
  if (!defined() || !src.defined()) CHANFLOW_THROW(Error) << "assign: a tensor is null";
  const Shape b = broadcast_shapes(shape(), src.shape(), "assign");
  if (b != shape()) {
    CHANFLOW_THROW(ShapeError) << "assign: " << shape_to_string(src.shape())
                               << " does not broadcast to " << shape_to_string(shape());
  }
  // Copy `src` before making this unique: src may be (a view of) this very tensor, and the copy's
  // reference keeps the old storage alive while this tensor is given a new one.
  Tensor keep = src;  // NOLINT(performance-unnecessary-copy-initialization)
  if (is_shared() || !is_contiguous()) {
    Tensor fresh = empty(shape(), dtype());
    copy_into(fresh, keep, {});
    *this = std::move(fresh);
    return;
  }
  copy_into(*this, keep, {});
}

// ---------------------------------------------------------------- views

Tensor Tensor::reshape(const Shape& new_shape) const {
  Shape s = new_shape;
  int64_t infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) {
        CHANFLOW_THROW(ShapeError) << "reshape: more than one -1 in " << shape_to_string(new_shape);
      }
      infer = static_cast<int64_t>(i);
    } else if (s[i] < 0) {
      CHANFLOW_THROW(ShapeError) << "reshape: negative extent in " << shape_to_string(new_shape);
    } else {
      known = shape_numel({known, s[i]});
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0) {
      CHANFLOW_THROW(ShapeError) << "reshape: cannot reshape " << shape_to_string(shape())
                                 << " into " << shape_to_string(new_shape);
    }
    s[static_cast<size_t>(infer)] = numel() / known;
    known = numel();
  }
  if (known != numel()) {
    CHANFLOW_THROW(ShapeError) << "reshape: cannot reshape " << shape_to_string(shape()) << " ("
                               << numel() << " elements) into " << shape_to_string(new_shape);
  }
  const Tensor base = is_contiguous() ? *this : contiguous();
  return make_view(base, s, contiguous_strides(s), base->byte_offset());
}

Tensor Tensor::transpose() const {
  std::vector<int64_t> perm(static_cast<size_t>(ndim()));
  for (int64_t i = 0; i < ndim(); ++i) perm[static_cast<size_t>(i)] = ndim() - 1 - i;
  return transpose(perm);
}

Tensor Tensor::transpose(const std::vector<int64_t>& perm) const {
  if (static_cast<int64_t>(perm.size()) != ndim()) {
    CHANFLOW_THROW(ShapeError) << "transpose: " << perm.size() << " axes given for shape "
                               << shape_to_string(shape());
  }
  std::vector<bool> seen(perm.size(), false);
  Shape s(perm.size());
  std::vector<int64_t> st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t a = normalize_axis(perm[i], ndim(), "transpose");
    if (seen[static_cast<size_t>(a)]) {
      CHANFLOW_THROW(ShapeError) << "transpose: axis " << perm[i] << " repeated";
    }
    seen[static_cast<size_t>(a)] = true;
    s[i] = shape()[static_cast<size_t>(a)];
    st[i] = strides()[static_cast<size_t>(a)];
  }
  return make_view(*this, s, st, get()->byte_offset());
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  const int64_t a = normalize_axis(axis, ndim(), "slice");
  if (step < 1) CHANFLOW_THROW(ShapeError) << "slice: step must be >= 1, got " << step;
  const int64_t n = shape()[static_cast<size_t>(a)];
  auto clamp = [n](int64_t v) {
    if (v < 0) v += n;
    return std::clamp<int64_t>(v, 0, n);
  };
  const int64_t b = clamp(start);
  const int64_t e = std::max(clamp(stop), b);
  const int64_t len = (e - b + step - 1) / step;
  Shape s = shape();
  std::vector<int64_t> st = strides();
  s[static_cast<size_t>(a)] = len;
  st[static_cast<size_t>(a)] *= step;
  const int64_t off = len > 0 ? b * strides()[static_cast<size_t>(a)] * itemsize() : 0;
  return make_view(*this, s, st, get()->byte_offset() + off);
}

Tensor Tensor::squeeze(int64_t axis) const {
  const int64_t a = normalize_axis(axis, ndim(), "squeeze");
  if (shape()[static_cast<size_t>(a)] != 1) {
    CHANFLOW_THROW(ShapeError) << "squeeze: axis " << axis << " of shape "
                               << shape_to_string(shape()) << " is not of size 1";
  }
  Shape s = shape();
  std::vector<int64_t> st = strides();
  s.erase(s.begin() + a);
  st.erase(st.begin() + a);
  return make_view(*this, s, st, get()->byte_offset());
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  const int64_t a = normalize_axis(axis, ndim() + 1, "unsqueeze");
  Shape s = shape();
  std::vector<int64_t> st = strides();
  const int64_t inner = a < ndim() ? st[static_cast<size_t>(a)] * s[static_cast<size_t>(a)] : 1;
  s.insert(s.begin() + a, 1);
  st.insert(st.begin() + a, inner);
  return make_view(*this, s, st, get()->byte_offset());
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  if (!defined()) CHANFLOW_THROW(Error) << "clone: the tensor is null";
  Tensor t = empty(shape(), dtype());
  copy_into(t, *this, {});
  return t;
}

Tensor Tensor::cast(DType dtype) const { return chanflow::cast(*this, dtype); }

Tensor cast(const Tensor& a, DType dtype, const KernelOptions& opts) {
  if (!a.defined()) CHANFLOW_THROW(Error) << "cast: the tensor is null";
  Tensor t = detail::output_tensor(a.shape(), dtype, opts);
  if (t->storage() == a->storage()) t = Tensor::empty(a.shape(), dtype);
  copy_into(t, a, opts);
  return t;
}

bool Tensor::equal_to(const Tensor& other) const {
  if (!defined() || !other.defined()) return defined() == other.defined();
  if (dtype() != other.dtype() || shape() != other.shape()) return false;
  const Tensor eq = equal(*this, other);
  const bool* p = eq.data<bool>();
  return std::all_of(p, p + eq.numel(), [](bool b) { return b; });
}

}  // namespace chanflow
