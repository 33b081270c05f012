// nn.h — neural-network kernels with Paddle Fluid 1.x operator semantics: batch norm, dropout,
// cross-entropy losses, accuracy, top_k, leaky_relu, activation gradients, concat and split.
//
// Each kernel computes what the Paddle 1.x CPU operator of the same name computes (formulas,
// shapes, dtypes of Paddle's outputs, its clipping constants); docs/tensor.md ("Neural-network
// kernels") lists where Paddle is followed and the few places it is deliberately not.
//
//   cf::Tensor x = cf::uniform({8, 3, 4, 4}, -1, 1, /*seed=*/1);
//   cf::Tensor c = cf::Tensor::ones({3}, cf::DType::kFloat32);
//   cf::Tensor z = cf::Tensor::zeros({3}, cf::DType::kFloat32);
//   auto bn = cf::batch_norm_train(x, c, z, z, c, 0.9f, 1e-5f, cf::DataLayout::kNCHW);
//   auto d = cf::dropout(bn.y, 0.5f, /*is_test=*/false, /*seed=*/7);
//   cf::Tensor logits = cf::uniform({8, 10}, -1, 1, 2);
//   cf::Tensor label = cf::Tensor::zeros({8, 1}, cf::DType::kInt64);
//   auto sce = cf::softmax_with_cross_entropy(logits, label);   // sce.loss: (8, 1)
//   auto top = cf::top_k(sce.softmax, 1);
//   auto acc = cf::accuracy(top.indices, label);                 // acc.accuracy: float32 [1]
//
// Common contract: every kernel returns fresh tensors (never a view of an input) and never changes
// its inputs; inputs may have any strides. Floating kernels take float32 or float64 (TypeError
// otherwise; all float operands of one call must share that dtype). Shapes that do not fit throw
// ShapeError, bad attribute values throw Error; every message names the op and the argument.
// NaN and infinities propagate as the IEEE operations in each formula make them. Every kernel
// honours KernelOptions::between_chunks (called about every opts.chunk_elements elements of work;
// an exception thrown there propagates, the partial results are freed, the inputs are untouched);
// KernelOptions::out is ignored.
//
// Thread-safety: as ops.h: no shared mutable state, any number of threads may run these kernels at
// once on shared inputs; they never block.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Where the channel axis of a batch-norm input is: axis 1 (NCHW) or the last axis (NHWC). For a
// 2-d input (N, C) both mean axis 1.
enum class DataLayout : uint8_t { kNCHW, kNHWC };

// "NCHW" or "NHWC" (Paddle's data_layout attribute); "AnyLayout" is taken as NCHW, as Paddle does.
// Throws Error naming data_layout for anything else.
CHANFLOW_API DataLayout parse_data_layout(std::string_view name);

// ---- batch norm (Paddle's batch_norm op) ----
// x has rank 2 to 5, N = x.shape[0], C the channel extent; statistics are per channel over the
// other M = numel / C elements. scale, bias, running_mean, running_var: 1-d of extent C, the dtype
// of x. epsilon must be finite and >= 0 (Paddle's attribute checker also caps it at 1e-3; the op
// table checks that), momentum finite (Error naming the attribute otherwise).

struct BatchNormTrainResult {
  Tensor y;               // x's shape
  Tensor mean_out;        // running_mean * momentum + batch_mean * (1 - momentum)
  Tensor variance_out;    // running_var * momentum + batch_var * (1 - momentum), batch_var biased
  Tensor saved_mean;      // batch_mean (C)
  Tensor saved_variance;  // 1 / sqrt(batch_var + epsilon) (C): Paddle stores the inverse std here
};

// Training: normalises with the batch statistics (biased variance: divided by M, as Paddle's CPU
// kernel, which also feeds the biased value into the running variance). When M == 1 Paddle skips
// the normalisation: y is a copy of x, saved_mean and saved_variance are zeros and the running
// statistics are returned unchanged; this does the same. M == 0 throws ShapeError.
CHANFLOW_API BatchNormTrainResult batch_norm_train(const Tensor& x, const Tensor& scale,
                                                   const Tensor& bias, const Tensor& running_mean,
                                                   const Tensor& running_var, float momentum,
                                                   float epsilon, DataLayout layout,
                                                   const KernelOptions& opts = {});

// Inference (is_test): y = (x - mean) / sqrt(var + epsilon) * scale + bias with the given
// statistics, computed as x * a + b with a = scale / sqrt(var + epsilon), b = bias - mean * a.
CHANFLOW_API Tensor batch_norm_infer(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                     const Tensor& mean, const Tensor& var, float epsilon,
                                     DataLayout layout, const KernelOptions& opts = {});

struct BatchNormGradResult {
  Tensor grad_x;      // x's shape
  Tensor grad_scale;  // sum(grad_y * (x - saved_mean)) * saved_variance (C)
  Tensor grad_bias;   // sum(grad_y) (C)
};

// Gradient of batch_norm_train. saved_mean and saved_variance are batch_norm_train's (the latter
// the inverse std). grad_x = scale * inv_std / M * (M * grad_y - sum(grad_y)
// - (x - mean) * inv_std^2 * sum(grad_y * (x - mean))). When M == 1: grad_x = grad_y and
// grad_scale, grad_bias are zeros (as Paddle). epsilon is accepted for the op's signature and
// checked, but not used: saved_variance already holds the inverse std.
CHANFLOW_API BatchNormGradResult batch_norm_grad(const Tensor& x, const Tensor& scale,
                                                 const Tensor& saved_mean,
                                                 const Tensor& saved_variance, const Tensor& grad_y,
                                                 float epsilon, DataLayout layout,
                                                 const KernelOptions& opts = {});

// ---- dropout (Paddle's dropout op, dropout_implementation "downgrade_in_infer") ----

struct DropoutResult {
  Tensor out;   // x's shape and dtype
  Tensor mask;  // x's shape and dtype, elements 0 or 1; null (undefined) when is_test
};

// Training (is_test false): each mask element is 1 with probability 1 - prob and 0 otherwise; out
// is x where the mask is 1 and 0 where it is 0 (a dropped NaN gives 0, as Paddle's select does);
// no rescaling. Inference: out = x * (1 - prob), (1 - prob) computed in float as
// Paddle does, and no mask. prob outside [0, 1] (or NaN) throws Error naming dropout_prob.
//
// The mask is a pure function of (seed, element index in row-major order), identical on every
// platform and for every chunking: each output of SplitMix64 seeded with `seed` (Steele, Lea,
// Flood 2014: state += 0x9E3779B97F4A7C15, then the mix function) decides two elements. Element i
// takes the (i/2 + 1)-th output's low 32 bits when i is even, its high 32 bits when i is odd, and
// is dropped when those bits, read as k * 2^-32, are < prob. So the drop probability is prob
// rounded up to a multiple of 2^-32 (exact for every float prob >= 2^-9); prob 0 keeps everything
// and prob 1 drops everything, as Paddle's special case does.
CHANFLOW_API DropoutResult dropout(const Tensor& x, float prob, bool is_test, uint64_t seed,
                                   const KernelOptions& opts = {});

// grad_x = grad_out * mask (same shapes; Paddle's dropout_grad).
CHANFLOW_API Tensor dropout_grad(const Tensor& grad_out, const Tensor& mask,
                                 const KernelOptions& opts = {});

// ---- losses ----
// The class axis is the last axis of x / logits; "rows" are all leading positions (a (N, D) input
// has N rows; (A, B, D) has A * B). Hard labels are int64 with shape x.shape[:-1] + [1] and values
// in [0, D) or equal to ignore_index (that row's loss and gradient are 0); any other value throws
// Error naming the value and the row. Soft labels have x's shape and dtype. Losses have shape
// x.shape[:-1] + [1].

// -log(x[label]) per row (hard) or -sum(label * log(x)) (soft), where, as Paddle's TolerableValue,
// log's -inf (a zero probability) counts as -1e20 and +inf as 1e20 (so a soft label of 0 next to
// a zero probability contributes 0, not NaN).
CHANFLOW_API Tensor cross_entropy(const Tensor& x, const Tensor& label, bool soft_label = false,
                                  int64_t ignore_index = -100, const KernelOptions& opts = {});
// grad_x = -grad_y / x at the label (hard, 0 elsewhere and on ignored rows) or
// -label * grad_y / x (soft). grad_y has the loss's shape.
CHANFLOW_API Tensor cross_entropy_grad(const Tensor& x, const Tensor& label, const Tensor& grad_y,
                                       bool soft_label = false, int64_t ignore_index = -100,
                                       const KernelOptions& opts = {});

struct SoftmaxWithCrossEntropyResult {
  Tensor softmax;  // logits' shape
  Tensor loss;     // logits.shape[:-1] + [1]
};

// softmax over the last axis and its cross-entropy against label, as Paddle: the shifted logits
// z = logits - max are clipped below at -64 (Paddle's ValueClip), softmax = exp(z) / sum(exp(z)),
// and the loss is computed stably in log-sum-exp form, log(sum(exp(z))) - z[label] (hard) or
// sum(label * (log(sum(exp(z))) - z)) (soft), which is -log(softmax[label]) without the rounding
// of taking the log of a tiny probability.
CHANFLOW_API SoftmaxWithCrossEntropyResult
softmax_with_cross_entropy(const Tensor& logits, const Tensor& label, bool soft_label = false,
                           int64_t ignore_index = -100, const KernelOptions& opts = {});
// grad_logits = (softmax - onehot(label)) * grad_loss (hard; ignored rows get 0) or
// (softmax - label) * grad_loss (soft); grad_loss has the loss's shape.
CHANFLOW_API Tensor softmax_with_cross_entropy_grad(const Tensor& softmax, const Tensor& label,
                                                    const Tensor& grad_loss,
                                                    bool soft_label = false,
                                                    int64_t ignore_index = -100,
                                                    const KernelOptions& opts = {});

// ---- top_k and accuracy ----

struct TopKResult {
  Tensor values;   // x.shape[:-1] + [k], x's dtype
  Tensor indices;  // same shape, int64: positions along the last axis
};

// The k largest elements of each row along the last axis, in descending order. Order among equal
// values: the lower index first (Paddle's partial_sort leaves it unspecified). NaN counts as larger
// than every number (NaNs first, by index). x: float32, float64, int32 or int64, rank >= 1.
// k < 1 or k > x.shape[-1] throws ShapeError naming k.
CHANFLOW_API TopKResult top_k(const Tensor& x, int64_t k, const KernelOptions& opts = {});

struct AccuracyResult {
  Tensor accuracy;  // float32 [1]: correct / total (0 when total is 0)
  Tensor correct;   // int32 [1]: rows whose label is among their indices
  Tensor total;     // int32 [1]: rows (N)
};

// Paddle's accuracy op: indices (N, k) int64 (top_k's), label (N, 1) int64.
CHANFLOW_API AccuracyResult accuracy(const Tensor& indices, const Tensor& label,
                                     const KernelOptions& opts = {});

// ---- activations and their gradients ----

// max(x, alpha * x) as Paddle computes it (x < alpha * x ? alpha * x : x; for 0 <= alpha <= 1 this
// is x for x >= 0 and alpha * x below).
CHANFLOW_API Tensor leaky_relu(const Tensor& x, float alpha = 0.02f,
                               const KernelOptions& opts = {});
// grad_out * (x < 0 ? alpha : x >= 0 ? 1 : 0) (Paddle's formula: a NaN x gives 0 * grad_out).
CHANFLOW_API Tensor leaky_relu_grad(const Tensor& x, const Tensor& grad_out, float alpha = 0.02f,
                                    const KernelOptions& opts = {});
// grad * (out > 0), out = relu(x).
CHANFLOW_API Tensor relu_grad(const Tensor& out, const Tensor& grad,
                              const KernelOptions& opts = {});
// grad * out * (1 - out), out = sigmoid(x).
CHANFLOW_API Tensor sigmoid_grad(const Tensor& out, const Tensor& grad,
                                 const KernelOptions& opts = {});
// grad * (1 - out * out), out = tanh(x).
CHANFLOW_API Tensor tanh_grad(const Tensor& out, const Tensor& grad,
                              const KernelOptions& opts = {});
// (grad - sum(grad * out, axis)) * out, out = softmax(x, axis).
CHANFLOW_API Tensor softmax_grad(const Tensor& out, const Tensor& grad, int64_t axis = -1,
                                 const KernelOptions& opts = {});
// Each takes out (or x) and grad of the same shape and dtype (float32/float64).

// ---- concat and split (any dtype) ----

// Joins xs along `axis` (negative counts from the end). All xs share dtype and rank and agree on
// every other axis (ShapeError naming the input's position otherwise); xs must not be empty.
CHANFLOW_API Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0,
                           const KernelOptions& opts = {});
// Paddle's split with `num`: num equal parts along axis; the extent must be divisible by num
// (num >= 1), else ShapeError.
CHANFLOW_API std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis = 0,
                                       const KernelOptions& opts = {});
// Paddle's split with `sections`: parts of the given extents along axis, which must sum to the
// axis extent; one entry may be -1 (the rest of the extent, as later Paddle 1.x accepts).
// A separate name, because split(x, {2}, 0) would silently pick the `num` overload.
CHANFLOW_API std::vector<Tensor> split_sections(const Tensor& x,
                                                const std::vector<int64_t>& sections,
                                                int64_t axis = 0, const KernelOptions& opts = {});

}  // namespace chanflow
