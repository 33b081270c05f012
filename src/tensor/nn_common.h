// nn_common.h — helpers shared by the neural-network kernels (nn_*.cc; not installed): argument
// checks, a chunk clock, dense copies and a same-shape elementwise walk over any strides.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "chanflow/tensor/nn.h"
#include "internal.h"

namespace chanflow::detail {

// Throws Error when t is null, TypeError unless it is float32/float64; names op and argument.
inline void require_float(const Tensor& t, const char* op, const char* arg) {
  if (!t.defined()) CHANFLOW_THROW(Error) << op << ": " << arg << " is null";
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " must be float32 or float64, got "
                              << dtype_name(t.dtype());
  }
}

// Throws TypeError unless t has dtype `want` (after a null check).
inline void require_dtype(const Tensor& t, DType want, const char* op, const char* arg) {
  if (!t.defined()) CHANFLOW_THROW(Error) << op << ": " << arg << " is null";
  if (t.dtype() != want) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " must be " << dtype_name(want) << ", got "
                              << dtype_name(t.dtype());
  }
}

// Throws ShapeError unless t has shape `want`.
inline void require_shape(const Tensor& t, const Shape& want, const char* op, const char* arg) {
  if (t.shape() != want) {
    CHANFLOW_THROW(ShapeError) << op << ": " << arg << " must have shape " << shape_to_string(want)
                               << ", got " << shape_to_string(t.shape());
  }
}

// Calls opts.between_chunks between pieces of work of about opts.chunk_elements elements: call
// before(n) before each piece of n elements (never calls before the first piece).
class ChunkClock {
 public:
  explicit ChunkClock(const KernelOptions& opts)
      : opts_(opts), chunk_(opts.chunk_elements < 1 ? 1 : opts.chunk_elements) {}
  void before(int64_t n) {
    if (!opts_.between_chunks) return;
    if (done_ > 0 && done_ + n > chunk_) {
      opts_.between_chunks();
      done_ = 0;
    }
    done_ += n;
  }
  int64_t chunk() const { return chunk_; }

 private:
  const KernelOptions& opts_;
  int64_t chunk_;
  int64_t done_ = 0;
};

// t itself when it is C-contiguous, else a contiguous copy made in chunks.
inline Tensor dense(const Tensor& t, const KernelOptions& opts) {
  if (t.is_contiguous()) return t;
  Tensor d = Tensor::empty(t.shape(), t.dtype());
  tensor_copy_into(d, t, chunking_only(opts));
  return d;
}

// A fresh tensor of a's shape and dtype with out[i] = f(a[i], b[i]) (a, b: same shape and
// float32/float64 dtype, any strides), walked in chunks. f is generic over the element type.
template <class F>
Tensor same_shape_binary(const Tensor& a, const Tensor& b, const KernelOptions& opts, F f) {
  const Shape& shape = a.shape();
  Tensor out = Tensor::empty(shape, a.dtype());
  if (out.numel() == 0) return out;
  const std::array<std::vector<int64_t>, 3> strides = {broadcast_byte_strides(out, shape),
                                                       broadcast_byte_strides(a, shape),
                                                       broadcast_byte_strides(b, shape)};
  const auto layout = make_layout<3>(shape, strides);
  const std::array<char*, 3> base = {static_cast<char*>(out->raw_data()),
                                     static_cast<char*>(a->raw_data()),
                                     static_cast<char*>(b->raw_data())};
  const KernelOptions o = chunking_only(opts);
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_run_blocked<3>(
        layout, base, {sizeof(T), sizeof(T), sizeof(T)}, o,
        [f](const std::array<char*, 3>& p, int64_t n, const std::array<int64_t, 3>& s) {
          if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
            T* __restrict y = reinterpret_cast<T*>(p[0]);
            const T* __restrict u = reinterpret_cast<const T*>(p[1]);
            const T* __restrict v = reinterpret_cast<const T*>(p[2]);
            for (int64_t i = 0; i < n; ++i) y[i] = f(u[i], v[i]);
            return;
          }
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<T*>(p[0] + i * s[0]) =
                f(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                  *reinterpret_cast<const T*>(p[2] + i * s[2]));
          }
        });
  };
  if (a.dtype() == DType::kFloat32) {
    go(TypeTag<float>{});
  } else {
    go(TypeTag<double>{});
  }
  return out;
}

// Checks a binary gradient's operands (float, same dtype, same shape), naming op and arguments.
inline void require_grad_pair(const Tensor& a, const char* an, const Tensor& b, const char* bn,
                              const char* op) {
  require_float(a, op, an);
  require_float(b, op, bn);
  if (a.dtype() != b.dtype()) {
    CHANFLOW_THROW(TypeError) << op << ": " << an << " (" << dtype_name(a.dtype()) << ") and " << bn
                              << " (" << dtype_name(b.dtype()) << ") must share a dtype";
  }
  if (a.shape() != b.shape()) {
    CHANFLOW_THROW(ShapeError) << op << ": " << an << " " << shape_to_string(a.shape()) << " and "
                               << bn << " " << shape_to_string(b.shape())
                               << " must have the same shape";
  }
}

}  // namespace chanflow::detail
