// conv.h — 2-d convolution and pooling over NCHW tensors, with their gradients (Paddle 1.x's
// conv2d / depthwise_conv2d / pool2d ops and their grad ops).
//
// Convolution is cross-correlation (no filter flip), as in Paddle and PyTorch. It runs as
// im2col + OpenBLAS GEMM per sample and group (one GEMM over several samples when the per-sample
// GEMM is too small to run well), with a small bounded workspace; pooling is a direct loop.
//
//   cf::Tensor x = cf::uniform({64, 1, 28, 28}, -1, 1, 1);        // N, C, H, W
//   cf::Tensor w = cf::uniform({20, 1, 5, 5}, -1, 1, 2);          // M, C / groups, KH, KW
//   cf::Tensor y = cf::conv2d(x, w, {});                           // (64, 20, 24, 24)
//   cf::Tensor gy = cf::Tensor::ones(y.shape(), cf::DType::kFloat32);
//   cf::Tensor gx = cf::conv2d_grad_input(gy, w, x.shape(), {});   // (64, 1, 28, 28)
//   cf::Tensor gw = cf::conv2d_grad_filter(gy, x, w.shape(), {});  // (20, 1, 5, 5)
//   cf::Pool2dParams pp;
//   pp.ksize = {2, 2};
//   pp.strides = {2, 2};
//   cf::Tensor z = cf::pool2d(y, pp);                              // (64, 20, 12, 12)
//
// All kernels take float32 or float64 (every tensor argument of one call has the same dtype),
// accept any strided views, never change their inputs, and return a fresh C-contiguous tensor.
// Errors name the op and the argument: TypeError for a dtype, ShapeError for a rank, an extent or
// a parameter (non-positive stride, dilation, ksize or groups, negative padding, a window larger
// than the padded input). NaN and Inf propagate as IEEE arithmetic does: padding contributes
// explicit zeros to the sums (so an infinite weight over padding gives NaN, as in Paddle's
// im2col), and a NaN in a max-pooling window makes that output NaN.
//
// Thread-safety: no shared mutable state; any number of threads may run these at once, on the same
// tensors too. They never block (OpenBLAS runs in the calling thread; see blas.h).
// KernelOptions::between_chunks is called about every chunk_elements multiply-adds (convolution)
// or input elements read (pooling); if it throws, the exception propagates, the partial result is
// freed and the inputs are untouched. KernelOptions::out is ignored. For chunk_by_policy, a
// convolution (any of the three) is N * M * OH * OW * (C / groups) * KH * KW multiply-adds
// (WorkKind::kMultiplyAdds) and a pooling N * C * OH * OW * KH * KW elements (WorkKind::kElements).
#pragma once

#include <array>
#include <cstdint>

#include "chanflow/core/export.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Convolution parameters, (height, width) pairs. Paddle's conv2d attributes; depthwise_conv2d is
// conv2d with groups == C.
struct Conv2dParams {
  std::array<int64_t, 2> strides{1, 1};    // >= 1
  std::array<int64_t, 2> paddings{0, 0};   // >= 0, zeros on both sides
  std::array<int64_t, 2> dilations{1, 1};  // >= 1
  int64_t groups = 1;                      // >= 1, divides C and M
};

// The output shape of conv2d: input (N, C, H, W), filter (M, C / groups, KH, KW) give
// (N, M, OH, OW) with OH = (H + 2 * pad_h - (dil_h * (KH - 1) + 1)) / stride_h + 1 (OW alike).
// Usable without data: -1 extents (unknown at build time) give -1 where they matter and skip the
// checks they take part in. Throws ShapeError (naming "conv2d") for a rank other than 4, a bad
// parameter, C not divisible by groups or filter channels != C / groups, M not divisible by
// groups, or a dilated kernel larger than the padded input (an output extent < 1). Thread-safe.
CHANFLOW_API Shape conv2d_output_shape(const Shape& input, const Shape& filter,
                                       const Conv2dParams& p);

// Forward convolution, shape as conv2d_output_shape. Throws as that function, and TypeError when
// input is not float32/float64 or filter's dtype differs from input's.
CHANFLOW_API Tensor conv2d(const Tensor& input, const Tensor& filter, const Conv2dParams& p,
                           const KernelOptions& o = {});

// The gradient of conv2d with respect to its input: a tensor of input_shape (fully known), given
// the gradient of the output (whose shape must be conv2d_output_shape(input_shape, filter.shape()))
// and the filter. Throws ShapeError / TypeError as conv2d, naming "conv2d_grad_input".
CHANFLOW_API Tensor conv2d_grad_input(const Tensor& grad_output, const Tensor& filter,
                                      const Shape& input_shape, const Conv2dParams& p,
                                      const KernelOptions& o = {});

// The gradient of conv2d with respect to its filter: a tensor of filter_shape, given the gradient
// of the output (shape conv2d_output_shape(input.shape(), filter_shape)) and the input. Throws
// ShapeError / TypeError as conv2d, naming "conv2d_grad_filter".
CHANFLOW_API Tensor conv2d_grad_filter(const Tensor& grad_output, const Tensor& input,
                                       const Shape& filter_shape, const Conv2dParams& p,
                                       const KernelOptions& o = {});

enum class PoolType : uint8_t { kMax, kAvg };

// Pooling parameters, (height, width) pairs; Paddle's pool2d attributes.
struct Pool2dParams {
  PoolType type = PoolType::kMax;
  std::array<int64_t, 2> ksize{1, 1};     // >= 1; ignored (the whole plane) with global_pooling
  std::array<int64_t, 2> strides{1, 1};   // >= 1
  std::array<int64_t, 2> paddings{0, 0};  // >= 0; ignored (0) with global_pooling
  bool global_pooling = false;
  // OH = (H + 2 * pad - ksize + (ceil_mode ? stride - 1 : 0)) / stride + 1.
  bool ceil_mode = false;
  // Average pooling only: divide by the number of input elements in the window (true) or by
  // ksize_h * ksize_w, counting padding as zeros (false).
  bool exclusive = true;
};

// The output shape of pool2d: (N, C, OH, OW), OH as in Pool2dParams::ceil_mode, (N, C, 1, 1)
// with global_pooling. -1 extents stay -1. Throws ShapeError (naming "pool2d") for a rank other
// than 4, a bad parameter or a window larger than the padded input. Thread-safe.
CHANFLOW_API Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);

// Max or average pooling. Window (i, j) covers rows [i * stride_h - pad_h, ... + ksize_h) clipped
// to the input (Paddle's rule; with ceil_mode the last window may reach past the padding). Max:
// the largest element, NaN if the window holds a NaN, -inf for a window lying wholly in the
// padding. Avg: the window's sum over its divisor (see exclusive); 0 for a window wholly in the
// padding. Throws as pool2d_output_shape, and TypeError unless x is float32/float64.
CHANFLOW_API Tensor pool2d(const Tensor& x, const Pool2dParams& p, const KernelOptions& o = {});

// The gradient of pool2d with respect to x (shape of x), given x, out = pool2d(x, p) and the
// gradient of out. Max: each output's gradient goes to the first element of its window (row-major)
// equal to out, or, when out is NaN, to the window's first NaN; none for windows without one.
// Avg: spread evenly over the window's input elements with the forward divisor. Throws
// ShapeError when out or grad_out does not have pool2d_output_shape(x.shape(), p), TypeError when
// dtypes differ or are not float32/float64 (naming "pool2d_grad" and the argument).
CHANFLOW_API Tensor pool2d_grad(const Tensor& x, const Tensor& out, const Tensor& grad_out,
                                const Pool2dParams& p, const KernelOptions& o = {});

}  // namespace chanflow
