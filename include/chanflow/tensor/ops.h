// ops.h — tensor kernels: elementwise math with NumPy broadcasting, reductions, softmax, matmul.
//
// Every kernel returns a new tensor and never changes its inputs, takes inputs of any strides
// (views), follows NumPy's broadcasting and dtype rules (mixed dtypes compute in promote_types),
// and throws ShapeError naming both shapes and the op, or TypeError for an unsupported dtype:
//
//   cf::Tensor x = cf::Tensor::arange(6).reshape({2, 3}).cast(cf::DType::kFloat32);
//   cf::Tensor y = cf::add(x, cf::Tensor::from_vector<float>({10, 20, 30}));   // (2, 3)
//   cf::Tensor s = cf::sum(y, {1}, /*keepdims=*/true);                        // (2, 1)
//   cf::Tensor p = cf::softmax(y, -1);
//   cf::Tensor m = cf::matmul(x, x.transpose());                              // (2, 2), sgemm
//
// Thread-safety: kernels keep no shared mutable state; any number of threads may run kernels at
// once, on the same input tensors too. They never block (matmul runs OpenBLAS in the calling
// thread; see blas.h). Long kernels can be split into chunks with KernelOptions::between_chunks,
// which lets a scheduler check for cancellation or yield between pieces of work.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Options every kernel accepts. The default runs the whole kernel in one go.
struct KernelOptions {
  // Called on the calling thread between chunks of about `chunk_elements` output elements
  // (elementwise, cast), input elements (reductions) or multiply-adds (matmul). It may throw
  // (e.g. CanceledError) to abandon the kernel: the exception propagates out of the kernel, the
  // partial result is freed and the inputs are untouched. Empty: no chunking.
  std::function<void()> between_chunks;
  int64_t chunk_elements = int64_t{1} << 20;
  // Elementwise kernels and cast only: when `out` is a tensor of exactly the result's shape and
  // dtype, C-contiguous and not shared with anything else (move your handle in), the result is
  // written into it and returned, with no allocation. Otherwise it is ignored. Lets a loop reuse a
  // buffer instead of faulting in fresh pages on every call.
  Tensor out;
};

// The chunking policy of the layers that run kernels under a cancelable run (the graph's machines,
// the executor): a kernel doing more than one chunk of work is split, and the run's cancellation
// is checked between chunks. A chunk is about 0.1-1 ms of work, so the checks cost nothing
// measurable and a canceled run stops within about a millisecond, whatever the kernel's size.
enum class WorkKind : uint8_t {
  kElements,      // elementwise ops, casts, reductions, softmax: elements read
  kMultiplyAdds,  // matmul
};
constexpr int64_t chunk_work(WorkKind kind) noexcept {
  return kind == WorkKind::kMultiplyAdds ? int64_t{1} << 24 : int64_t{1} << 18;
}
// Sets `o` to call `check` between chunks when `work` units of `kind` exceed one chunk; returns
// whether it did (a smaller kernel runs in one go: no check, no cost).
template <class Check>
bool chunk_by_policy(KernelOptions& o, int64_t work, WorkKind kind, Check&& check) {
  if (work <= chunk_work(kind)) return false;
  o.between_chunks = std::forward<Check>(check);
  o.chunk_elements = chunk_work(kind);
  return true;
}

// Axes to reduce over; empty means all axes. Negative axes count from the end.
using Axes = std::vector<int64_t>;

// The shape NumPy broadcasting gives a and b; throws ShapeError naming `op` and both shapes.
CHANFLOW_API Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");

// ---- binary arithmetic (result dtype: promote_types(a, b)) ----
// add on bools is logical or, mul logical and, sub of bools throws TypeError (as NumPy).
CHANFLOW_API Tensor add(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor sub(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor mul(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
// True division: integer and bool inputs give float64 (as NumPy). Division by zero gives inf/NaN.
CHANFLOW_API Tensor div(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
// Division whose integer quotients truncate toward zero (C++'s `/`, Paddle's elementwise_div):
// when promote_types(a, b) is an integer dtype the result has that dtype, -7 / 2 == -3, the
// minimum divided by -1 wraps to the minimum (as NumPy's floor_divide), and a zero divisor throws
// Error ("trunc_div: integer division by zero"). Float and bool operands divide as div().
CHANFLOW_API Tensor trunc_div(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
// a ** b. Integer powers wrap on overflow; a negative integer exponent throws Error (as NumPy);
// bool ** bool gives int8.
CHANFLOW_API Tensor pow(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
// Elementwise max/min; NaN propagates (NumPy's maximum/minimum).
CHANFLOW_API Tensor maximum(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor minimum(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});

// ---- comparisons and logic (result dtype: bool) ----
CHANFLOW_API Tensor equal(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor not_equal(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor less(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor less_equal(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor greater(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor greater_equal(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
// Nonzero elements are true.
CHANFLOW_API Tensor logical_and(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor logical_or(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});
CHANFLOW_API Tensor logical_not(const Tensor& a, const KernelOptions& opts = {});

// ---- unary ----
// Same dtype as the input. neg of bool throws TypeError; neg/abs of integers wrap (abs(INT_MIN)).
CHANFLOW_API Tensor neg(const Tensor& a, const KernelOptions& opts = {});
CHANFLOW_API Tensor abs(const Tensor& a, const KernelOptions& opts = {});
// -1, 0 or 1 by the sign of each element, same dtype (Paddle's sign op; NumPy's np.sign): bool is
// returned as is, unsigned integers give 0 or 1, -0.0 gives 0, and NaN gives NaN.
CHANFLOW_API Tensor sign(const Tensor& a, const KernelOptions& opts = {});
// max(a, 0), same dtype, NaN propagates.
CHANFLOW_API Tensor relu(const Tensor& a, const KernelOptions& opts = {});
// Float-valued: the result dtype is float_result_type(a.dtype()) (int8 -> float16 ...).
CHANFLOW_API Tensor exp(const Tensor& a, const KernelOptions& opts = {});
CHANFLOW_API Tensor log(const Tensor& a, const KernelOptions& opts = {});
CHANFLOW_API Tensor sqrt(const Tensor& a, const KernelOptions& opts = {});
CHANFLOW_API Tensor tanh(const Tensor& a, const KernelOptions& opts = {});
// 1 / (1 + exp(-a)), computed without overflow for large |a|.
CHANFLOW_API Tensor sigmoid(const Tensor& a, const KernelOptions& opts = {});
// log(1 + exp(a)), computed without overflow for large a and to full relative precision for very
// negative a (where it is about exp(a)).
CHANFLOW_API Tensor softplus(const Tensor& a, const KernelOptions& opts = {});

// ---- reductions over `axes` (empty: all) ----
// sum: bool/integers give int64 (NumPy gives uint64 for uint8; chanflow has no uint64), floats
// keep their dtype (float16/float32 accumulate in float32 with 16 partial sums, float64 in double).
CHANFLOW_API Tensor sum(const Tensor& a, const Axes& axes = {}, bool keepdims = false,
                        const KernelOptions& opts = {});
// mean: bool/integers give float64, floats keep their dtype. Empty reductions give NaN.
CHANFLOW_API Tensor mean(const Tensor& a, const Axes& axes = {}, bool keepdims = false,
                         const KernelOptions& opts = {});
// max/min keep the dtype; NaN propagates; reducing a zero-size axis throws ShapeError.
CHANFLOW_API Tensor max(const Tensor& a, const Axes& axes = {}, bool keepdims = false,
                        const KernelOptions& opts = {});
CHANFLOW_API Tensor min(const Tensor& a, const Axes& axes = {}, bool keepdims = false,
                        const KernelOptions& opts = {});
// Index (int64) of the first maximum along `axis`, or in the flattened tensor when axis is
// nullopt; the first NaN counts as the maximum. Zero-size: ShapeError.
CHANFLOW_API Tensor argmax(const Tensor& a, std::optional<int64_t> axis = std::nullopt,
                           bool keepdims = false, const KernelOptions& opts = {});

// ---- softmax family (float_result_type dtype; numerically stable: the max is subtracted) ----
CHANFLOW_API Tensor softmax(const Tensor& a, int64_t axis = -1, const KernelOptions& opts = {});
CHANFLOW_API Tensor log_softmax(const Tensor& a, int64_t axis = -1, const KernelOptions& opts = {});

// ---- matmul (NumPy's rules: 1-d operands are promoted and the added axis removed; leading axes
// broadcast as a batch). float32/float64 run OpenBLAS sgemm/dgemm in the calling thread, float16
// runs sgemm on float32 copies, integers use an exact (wrapping) loop, bools give bool (or of
// ands). Throws ShapeError naming both shapes when the inner extents differ or 0-d is given. ----
CHANFLOW_API Tensor matmul(const Tensor& a, const Tensor& b, const KernelOptions& opts = {});

// Cast as a free function, with chunking: same as a.cast(dtype).
CHANFLOW_API Tensor cast(const Tensor& a, DType dtype, const KernelOptions& opts = {});

// Operators for convenience: the kernels above with default options.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace chanflow
