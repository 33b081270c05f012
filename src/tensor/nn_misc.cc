// nn_misc.cc — leaky_relu, the activation gradients, concat and split (Paddle 1.x semantics, see
// nn.h). The elementwise ones walk their operands with the strided, tiled walk of elementwise.cc
// (any strides, unit-stride runs the compiler vectorises); concat and split copy slices with the
// tensor layer's chunked strided copy.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "nn_common.h"

namespace chanflow {

Tensor leaky_relu(const Tensor& x, float alpha, const KernelOptions& opts) {
  detail::require_float(x, "leaky_relu", "x");
  // Paddle: x.cwiseMax(alpha * x), i.e. (x < alpha * x) ? alpha * x : x, alpha cast to x's type.
  return detail::same_shape_binary(x, x, opts, [alpha](auto u, auto) {
    using T = decltype(u);
    const T ax = static_cast<T>(alpha) * u;
    return u < ax ? ax : u;
  });
}

Tensor leaky_relu_grad(const Tensor& x, const Tensor& grad_out, float alpha,
                       const KernelOptions& opts) {
  detail::require_grad_pair(x, "x", grad_out, "grad_out", "leaky_relu_grad");
  return detail::same_shape_binary(x, grad_out, opts, [alpha](auto u, auto g) {
    using T = decltype(u);
    // The factor alpha, 1 or 0 is picked with bit masks (the two comparisons are exclusive, and
    // both false only for a NaN x): no branch on the random sign, and four vector operations
    // before the multiply instead of the six of an alpha * (x < 0) + (x >= 0) blend, which is
    // also wrong for an infinite alpha (inf * 0 = NaN where the formula says 1).
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits lt = Bits{0} - static_cast<Bits>(u < T{0});
    const Bits ge = Bits{0} - static_cast<Bits>(u >= T{0});
    const Bits factor =
        (std::bit_cast<Bits>(static_cast<T>(alpha)) & lt) | (std::bit_cast<Bits>(T{1}) & ge);
    return g * std::bit_cast<T>(factor);
  });
}

Tensor relu_grad(const Tensor& out, const Tensor& grad, const KernelOptions& opts) {
  detail::require_grad_pair(out, "out", grad, "grad", "relu_grad");
  return detail::same_shape_binary(out, grad, opts, [](auto o, auto g) {
    using T = decltype(o);
    // g * (o > 0 ? 1 : 0), with the 1 or 0 built from bits: written as a select, GCC turns it into
    // a branch that mispredicts on random signs (10x slower); a multiply keeps NaN * 0 = NaN.
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const Bits one = std::bit_cast<Bits>(T{1});
    return g * std::bit_cast<T>(static_cast<Bits>(one & (Bits{0} - static_cast<Bits>(o > T{0}))));
  });
}

Tensor sigmoid_grad(const Tensor& out, const Tensor& grad, const KernelOptions& opts) {
  detail::require_grad_pair(out, "out", grad, "grad", "sigmoid_grad");
  return detail::same_shape_binary(out, grad, opts, [](auto o, auto g) {
    using T = decltype(o);
    return g * o * (T{1} - o);
  });
}

Tensor tanh_grad(const Tensor& out, const Tensor& grad, const KernelOptions& opts) {
  detail::require_grad_pair(out, "out", grad, "grad", "tanh_grad");
  return detail::same_shape_binary(out, grad, opts, [](auto o, auto g) {
    using T = decltype(o);
    return g * (T{1} - o * o);
  });
}

Tensor softmax_grad(const Tensor& out, const Tensor& grad, int64_t axis,
                    const KernelOptions& opts) {
  detail::require_grad_pair(out, "out", grad, "grad", "softmax_grad");
  const int64_t ax = detail::tensor_normalize_axis(axis, out.ndim(), "softmax_grad");
  const KernelOptions o = detail::chunking_only(opts);
  const Tensor dot = sum(mul(out, grad, o), {ax}, /*keepdims=*/true, o);
  return mul(sub(grad, dot, o), out, o);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, const KernelOptions& opts) {
  constexpr const char* kOp = "concat";
  if (xs.empty()) CHANFLOW_THROW(Error) << kOp << ": needs at least one input";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) CHANFLOW_THROW(Error) << kOp << ": input " << i << " is null";
  }
  const Tensor& first = xs[0];
  if (first.ndim() < 1) CHANFLOW_THROW(ShapeError) << kOp << ": input 0 is 0-d";
  const int64_t ax = detail::tensor_normalize_axis(axis, first.ndim(), kOp);
  Shape shape = first.shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    if (t.dtype() != first.dtype()) {
      CHANFLOW_THROW(TypeError) << kOp << ": input " << i << " has dtype " << dtype_name(t.dtype())
                                << ", input 0 " << dtype_name(first.dtype());
    }
    bool fits = t.ndim() == first.ndim();
    for (int64_t d = 0; fits && d < t.ndim(); ++d) {
      fits = d == ax || t.shape()[static_cast<size_t>(d)] == shape[static_cast<size_t>(d)];
    }
    if (!fits) {
      CHANFLOW_THROW(ShapeError) << kOp << ": input " << i << " has shape "
                                 << shape_to_string(t.shape()) << ", which does not match input 0 "
                                 << shape_to_string(first.shape()) << " outside axis " << ax;
    }
    total += t.shape()[static_cast<size_t>(ax)];
  }
  shape[static_cast<size_t>(ax)] = total;
  Tensor out = Tensor::empty(shape, first.dtype());
  const KernelOptions o = detail::chunking_only(opts);
  detail::ChunkClock clock(opts);
  int64_t off = 0;
  for (const Tensor& t : xs) {
    const int64_t e = t.shape()[static_cast<size_t>(ax)];
    if (t.numel() > 0) {
      clock.before(t.numel());
      detail::tensor_copy_into(out.slice(ax, off, off + e), t, o);
    }
    off += e;
  }
  return out;
}

namespace {

std::vector<Tensor> split_at(const Tensor& x, const std::vector<int64_t>& extents, int64_t ax,
                             const KernelOptions& opts) {
  std::vector<Tensor> parts;
  parts.reserve(extents.size());
  const KernelOptions o = detail::chunking_only(opts);
  detail::ChunkClock clock(opts);
  int64_t off = 0;
  for (const int64_t e : extents) {
    Shape s = x.shape();
    s[static_cast<size_t>(ax)] = e;
    Tensor part = Tensor::empty(s, x.dtype());
    if (part.numel() > 0) {
      clock.before(part.numel());
      detail::tensor_copy_into(part, x.slice(ax, off, off + e), o);
    }
    parts.push_back(std::move(part));
    off += e;
  }
  return parts;
}

int64_t split_axis(const Tensor& x, int64_t axis, const char* op) {
  if (!x.defined()) CHANFLOW_THROW(Error) << op << ": x is null";
  if (x.ndim() < 1) CHANFLOW_THROW(ShapeError) << op << ": x is 0-d";
  return detail::tensor_normalize_axis(axis, x.ndim(), op);
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis, const KernelOptions& opts) {
  constexpr const char* kOp = "split";
  const int64_t ax = split_axis(x, axis, kOp);
  const int64_t extent = x.shape()[static_cast<size_t>(ax)];
  if (num < 1 || extent % num != 0) {
    CHANFLOW_THROW(ShapeError) << kOp << ": num = " << num << " must be >= 1 and divide the extent "
                               << extent << " of axis " << ax << " of x "
                               << shape_to_string(x.shape());
  }
  return split_at(x, std::vector<int64_t>(static_cast<size_t>(num), extent / num), ax, opts);
}

std::vector<Tensor> split_sections(const Tensor& x, const std::vector<int64_t>& sections,
                                   int64_t axis, const KernelOptions& opts) {
  constexpr const char* kOp = "split";
  const int64_t ax = split_axis(x, axis, kOp);
  const int64_t extent = x.shape()[static_cast<size_t>(ax)];
  if (sections.empty()) CHANFLOW_THROW(Error) << kOp << ": sections is empty";
  std::vector<int64_t> ext = sections;
  int64_t known = 0;
  int64_t unknown = -1;
  for (size_t i = 0; i < ext.size(); ++i) {
    if (ext[i] == -1 && unknown < 0) {
      unknown = static_cast<int64_t>(i);
    } else if (ext[i] < 0) {
      CHANFLOW_THROW(ShapeError) << kOp << ": sections[" << i << "] = " << ext[i]
                                 << " is negative (only one entry may be -1)";
    } else {
      known += ext[i];
    }
  }
  if (unknown >= 0) {
    if (known > extent) {
      CHANFLOW_THROW(ShapeError) << kOp << ": sections sum to " << known
                                 << ", more than the extent " << extent << " of axis " << ax;
    }
    ext[static_cast<size_t>(unknown)] = extent - known;
  } else if (known != extent) {
    CHANFLOW_THROW(ShapeError) << kOp << ": sections sum to " << known << ", not the extent "
                               << extent << " of axis " << ax << " of x "
                               << shape_to_string(x.shape());
  }
  return split_at(x, ext, ax, opts);
}

}  // namespace chanflow
