// optim.h — fused in-place optimiser updates: PyTorch's SGD/Adam/AdamW, Paddle 1.x's sgd,
// momentum, adam, adamax and rmsprop ops, global-norm gradient clipping and L2 weight decay.
//
// Each update reads the gradient and writes the parameter and its optimiser state in one pass
// over memory. The learning rate is a one-element tensor read when the kernel is called, so a
// schedule may change it between steps:
//
//   cf::Tensor w = cf::xavier_init({784, 256}, /*uniform=*/true, /*seed=*/1);
//   cf::Tensor m = cf::Tensor::zeros(w.shape(), w.dtype()), v = m.clone();
//   cf::Tensor lr = cf::Tensor::scalar(1e-3, cf::DType::kFloat32);
//   for (int64_t t = 1; t <= steps; ++t) {
//     cf::Tensor g = ...;                                   // dloss/dw, same shape and dtype
//     cf::clip_by_global_norm(grads, 1.0);
//     cf::adam_step(w, g, m, v, t, lr, {.weight_decay = 1e-2, .decoupled = true});   // AdamW
//   }
//
// Two families with the formulas of their origin:
//  * sgd_step / adam_step follow torch.optim (PyTorch 1.13) exactly: SGD with momentum,
//    dampening, Nesterov and L2 weight decay added to the gradient; Adam with L2 weight decay or
//    AdamW's decoupled decay, and bias correction.
//  * paddle_sgd / paddle_momentum / paddle_adam / paddle_adamax / paddle_rmsprop follow Paddle
//    Fluid 1.x's sgd, momentum, adam, adamax and rmsprop operators (ParamOut, VelocityOut,
//    Moment1Out ... are written into the inputs).
// The two Adams differ in where epsilon goes (see paddle_adam) and in who keeps the step count
// (adam_step takes it; paddle_adam reads Beta1Pow/Beta2Pow tensors that its caller advances).
//
// Common contract of every update kernel:
//  * param must be float32 or float64; grad and each state tensor must have param's shape
//    (else ShapeError naming the argument and both shapes) and dtype (else TypeError naming the
//    argument). lr (and Paddle's beta pows) must be one-element float tensors of any shape (else
//    ShapeError / TypeError naming them); their value is read once, at the call. A null tensor is
//    an Error. Bad hyperparameters (negative momentum, betas outside [0, 1) ...) are Errors.
//  * Arithmetic runs in param's dtype with the hyperparameters converted to it (as both origins
//    do); bias corrections and step sizes are computed in double first, as PyTorch does.
//  * Updates are in place on the handles passed: copy on write applies, so another handle to the
//    same tensor keeps its old values (and the kernel then pays one copy). Pass handles that are
//    not shared for a true in-place update. grad may have any strides (a view is read through a
//    contiguous copy). The same Tensor object may not be passed for two mutated arguments (Error).
//  * NaN and infinity in the gradient propagate as IEEE arithmetic does; nothing is checked.
//  * opts.between_chunks is called between chunks of opts.chunk_elements elements. If it throws,
//    the exception propagates and the step is partially applied: elements before the chunk
//    boundary are updated (parameter and state together), the rest are not. A canceled run must
//    not resume from such a state as though the step had happened or not.
// Thread-safety: kernels keep no shared state; distinct parameters may be updated from different
// threads at once. One handle must not be used by another thread while it is updated.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// ---- PyTorch (torch.optim of 1.13) ----

// torch.optim.SGD's hyperparameters (lr is passed as a tensor). Errors: momentum, dampening or
// weight_decay negative or not finite; nesterov without momentum > 0 and dampening == 0.
struct SgdOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  // L2: weight_decay * param is added to the gradient
};

// One torch.optim.SGD step for one parameter:
//   d = grad + weight_decay * param
//   if momentum != 0:  buf = d on the first step (buf null), else buf = momentum*buf +
//                      (1 - dampening)*d;  d = nesterov ? d + momentum*buf : buf
//   param -= lr * d
// momentum_buf: nullptr for plain SGD (then momentum must be 0). Otherwise it points to the
// parameter's momentum buffer: a null Tensor before the first step (the kernel then creates it,
// as PyTorch does, as a copy of d), afterwards the buffer this kernel left there. With momentum
// == 0 the buffer is neither read nor written.
CHANFLOW_API void sgd_step(Tensor& param, const Tensor& grad, Tensor* momentum_buf,
                           const Tensor& lr, const SgdOptions& options,
                           const KernelOptions& opts = {});

// torch.optim.Adam / AdamW hyperparameters. Errors: betas outside [0, 1), eps or weight_decay
// negative or not finite.
struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // false: Adam's L2 decay (weight_decay * param added to the gradient); true: AdamW's decoupled
  // decay (param *= 1 - lr * weight_decay before the update).
  bool decoupled = false;
};

// One torch.optim.Adam (or AdamW, options.decoupled) step; `step` is the step number counting
// from 1 (PyTorch's state['step'] after its increment; Error when < 1):
//   g = grad (+ weight_decay * param unless decoupled);  param *= 1 - lr*wd if decoupled
//   m = beta1*m + (1 - beta1)*g;   v = beta2*v + (1 - beta2)*g*g
//   param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// m and v are the first and second moments (zeros before step 1), updated in place.
CHANFLOW_API void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, int64_t step,
                            const Tensor& lr, const AdamOptions& options,
                            const KernelOptions& opts = {});

// ---- Paddle Fluid 1.x operators ----

// Paddle's sgd op: ParamOut = Param - LearningRate * Grad (param is ParamOut).
CHANFLOW_API void paddle_sgd(Tensor& param, const Tensor& grad, const Tensor& lr,
                             const KernelOptions& opts = {});

// Paddle's momentum op (without LARS): VelocityOut = mu * Velocity + Grad, then
// ParamOut = Param - (Grad + mu * VelocityOut) * lr with use_nesterov, else
// Param - lr * VelocityOut. velocity is zeros before the first step (Paddle's accumulator), so
// the first step equals PyTorch's with dampening 0; with dampening PyTorch's differs. Error when
// mu is negative or not finite.
CHANFLOW_API void paddle_momentum(Tensor& param, const Tensor& grad, Tensor& velocity,
                                  const Tensor& lr, double mu, bool use_nesterov,
                                  const KernelOptions& opts = {});

// Paddle's adam op (dense gradient):
//   lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
//   Moment1Out = beta1*m1 + (1 - beta1)*g;   Moment2Out = beta2*m2 + (1 - beta2)*g*g
//   ParamOut = Param - lr_t * Moment1Out / (sqrt(Moment2Out) + epsilon)
// beta1_pow and beta2_pow are one-element tensors holding beta1^t and beta2^t for this step t;
// the op reads them and does not advance them: Paddle's optimizer multiplies them by beta1 and
// beta2 after each step (scale ops) and starts them at beta1 and beta2. Errors: betas outside
// [0, 1), epsilon negative, a pow equal to 1 (1 - beta1_pow would divide by zero).
//
// Difference from adam_step: PyTorch adds eps to sqrt(v) / sqrt(1 - beta2^t) (the bias-corrected
// root), Paddle adds epsilon to sqrt(v) itself, so Paddle's epsilon acts as PyTorch's
// eps / sqrt(1 - beta2^t): larger in the first steps (about 31.6 x eps at t = 1 with beta2 =
// 0.999), converging to it as t grows. The two agree when epsilon is negligible next to sqrt(v).
// Paddle's adam has no weight decay; its regularisers add to the gradient first (l2_decay).
CHANFLOW_API void paddle_adam(Tensor& param, const Tensor& grad, Tensor& moment1, Tensor& moment2,
                              const Tensor& lr, const Tensor& beta1_pow, const Tensor& beta2_pow,
                              double beta1, double beta2, double epsilon,
                              const KernelOptions& opts = {});

// Paddle's adamax op (Adam with the infinity norm, section 7 of Kingma & Ba):
//   MomentOut  = beta1 * Moment + (1 - beta1) * Grad
//   InfNormOut = max(beta2 * InfNorm + epsilon, |Grad|)
//   ParamOut   = Param - LearningRate / (1 - Beta1Pow) * MomentOut / InfNormOut
// moment and inf_norm are zeros before the first step. beta1_pow is a one-element tensor holding
// beta1^t for this step t; as for paddle_adam, the op reads it and does not advance it (Paddle's
// AdamaxOptimizer appends a scale op by beta1 after the update and starts it at beta1). epsilon
// sits inside the max, so InfNormOut >= epsilon > 0 keeps the division finite. A NaN in either
// operand of the max gives NaN. Errors: betas outside [0, 1), epsilon negative or not finite,
// Beta1Pow equal to 1.
CHANFLOW_API void paddle_adamax(Tensor& param, const Tensor& grad, Tensor& moment, Tensor& inf_norm,
                                const Tensor& lr, const Tensor& beta1_pow, double beta1,
                                double beta2, double epsilon, const KernelOptions& opts = {});

// Paddle's rmsprop op (mid-2018: no `centered` variant):
//   MeanSquareOut = decay * MeanSquare + (1 - decay) * Grad * Grad
//   MomentOut     = momentum * Moment + LearningRate * Grad / sqrt(MeanSquareOut + epsilon)
//   ParamOut      = Param - MomentOut
// mean_square and moment are zeros before the first step. epsilon is added under the root (not
// to it, as Adam does). Errors: decay outside [0, 1], momentum or epsilon negative or not finite.
CHANFLOW_API void paddle_rmsprop(Tensor& param, const Tensor& grad, Tensor& mean_square,
                                 Tensor& moment, const Tensor& lr, double decay, double momentum,
                                 double epsilon, const KernelOptions& opts = {});

// ---- gradient helpers ----

// The L2 norm of all gradients together, as if concatenated: sqrt(sum of squares), accumulated
// in double. float32 and float64 (else TypeError naming the position); any strides. Empty list:
// 0. NaN/inf propagate (a NaN anywhere gives NaN; an inf, inf).
CHANFLOW_API double global_norm(const std::vector<Tensor>& grads);

// torch.nn.utils.clip_grad_norm_ (norm type 2): with n = global_norm(grads) and
// c = max_norm / (n + 1e-6), every gradient is multiplied in place by c when c < 1 (or c is NaN,
// which then makes every gradient NaN, as PyTorch does); returns n. An infinite norm makes c 0:
// finite elements become 0 and infinite ones NaN (inf * 0), as in PyTorch. Error when max_norm is
// negative or NaN. Copy on write applies to each gradient handle.
CHANFLOW_API double clip_by_global_norm(std::vector<Tensor>& grads, double max_norm,
                                        const KernelOptions& opts = {});

// L2 weight decay as a gradient regulariser (Paddle's L2DecayRegularizer; PyTorch's
// weight_decay): grad += coeff * param, in place, in one pass. Same shape/dtype rules as the
// update kernels (grad is the mutated argument, param may have any strides). Error when coeff is
// not finite.
CHANFLOW_API void l2_decay(Tensor& grad, const Tensor& param, double coeff,
                           const KernelOptions& opts = {});

}  // namespace chanflow
