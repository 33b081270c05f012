// optimizer.h — optimisers for graph training loops (Gorgonia's solvers, torch.optim's
// formulas): SGD, Momentum (optionally Nesterov), Adam and AdamW over a list of parameter
// tensors, on the fused in-place kernels of tensor/optim.h.
//
//   cf::Adam adam({.lr = 1e-3, .max_grad_norm = 1.0});
//   std::vector<cf::Tensor> params = {w1, b1, w2, b2};
//   for (...) {
//     machine.run(ctx, bindings(params));                      // forward + backward
//     adam.step(params, {machine.result(gw1), machine.result(gb1), ...});
//     adam.set_lr(schedule(epoch));                            // read by the next step
//   }
//
// Each optimiser holds its state (momentum buffers, moments) as tensors keyed by parameter
// position: the first step fixes the number of parameters and their shapes and dtypes; later
// steps must pass the same (reset() forgets the state). The learning rate is a one-element
// float64 tensor the kernels read at each step. Options: L2 weight decay (weight_decay *
// param added to the gradient, torch's weight_decay; AdamW decays the parameter instead) and
// global-norm gradient clipping (max_grad_norm: torch.nn.utils.clip_grad_norm_ before the
// update; the caller's gradient tensors are not changed).
//
// Formulas are PyTorch 1.13's (torch.optim.SGD, Adam, AdamW, tensor/optim.h): Adam adds eps to
// the bias-corrected root sqrt(v) / sqrt(1 - beta2^t). Paddle's adam op (the program op, see
// docs/exec.md) adds its epsilon to sqrt(v) itself; the two agree when epsilon is negligible.
//
// Parameters are updated in place on the handles in `params`: copy on write applies, so a
// handle the caller keeps elsewhere (or a tensor a machine still holds) keeps its old values
// and the step pays one copy for it. NaN/Inf in gradients propagate as IEEE arithmetic does.
// Errors (before anything is updated): params and grads of different lengths, or a count other
// than the state's: Error; a gradient or parameter whose shape differs from its parameter's or
// the state's: ShapeError naming the position; a dtype other than float32/float64 or differing
// from the parameter's: TypeError naming the position; bad hyperparameters: Error at
// construction (negative learning rate, momentum, weight decay; betas outside [0, 1) ...).
// Thread-safety: an optimiser is used by one thread at a time; distinct optimisers are
// independent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// The state and step loop the four optimisers share.
class CHANFLOW_API Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter with its gradient (same position, shape and dtype). Clips the
  // gradients first when max_grad_norm is set (on copies: `grads` are unchanged). `opts` carries
  // the caller's chunking and cancellation (tensor/optim.h: a canceled step is partially
  // applied). Errors: see the top of this file.
  void step(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
            const KernelOptions& opts = {});

  // The learning rate the next step uses. set_lr: Error unless finite and >= 0.
  void set_lr(double lr);
  double lr() const;
  // The learning-rate tensor the kernels read (one float64 element).
  const Tensor& lr_tensor() const noexcept { return lr_; }

  // Steps taken since construction or reset().
  int64_t steps() const noexcept { return steps_; }
  // The gradients' global norm before clipping at the last step (0 before the first; computed
  // only when max_grad_norm is set, else NaN).
  double last_grad_norm() const noexcept { return last_norm_; }
  // Forgets the state and the step count (the next step starts afresh, as a new optimiser).
  void reset();
  // The state tensors of parameter `i` (e.g. {m, v} for Adam; empty before the first step).
  std::vector<Tensor> state(size_t i) const;
  const std::string& name() const noexcept { return name_; }

 protected:
  Optimizer(std::string name, double lr, std::optional<double> max_grad_norm, int state_per_param);
  // Updates one parameter; `state` holds state_per_param tensors (zeros of the parameter's
  // shape on the first step unless the subclass leaves them null, see Momentum).
  virtual void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
                      const KernelOptions& opts) = 0;
  // Whether the state starts as zeros (true) or as null tensors the kernel creates (false).
  virtual bool zero_state() const { return true; }

 private:
  std::string name_;
  Tensor lr_;
  std::optional<double> max_grad_norm_;
  int state_per_param_;
  int64_t steps_ = 0;
  double last_norm_ = 0;
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
  std::vector<std::vector<Tensor>> state_;
};

// Plain SGD: param -= lr * (grad + weight_decay * param). torch.optim.SGD with momentum 0.
struct SGDConfig {
  double lr = 0.01;
  double weight_decay = 0.0;
  std::optional<double> max_grad_norm = std::nullopt;
};
class CHANFLOW_API SGD final : public Optimizer {
 public:
  explicit SGD(const SGDConfig& config = {});

 private:
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
              const KernelOptions& opts) override;
  SGDConfig config_;
};

// SGD with momentum, torch.optim.SGD's: d = grad + weight_decay * param; buf = d on the first
// step, then momentum * buf + (1 - dampening) * d; param -= lr * (nesterov ? d + momentum * buf
// : buf). Errors: momentum not > 0, dampening < 0, nesterov with dampening != 0.
struct MomentumConfig {
  double lr = 0.01;
  double momentum = 0.9;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
  std::optional<double> max_grad_norm = std::nullopt;
};
class CHANFLOW_API Momentum final : public Optimizer {
 public:
  explicit Momentum(const MomentumConfig& config = {});

 private:
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
              const KernelOptions& opts) override;
  bool zero_state() const override { return false; }
  MomentumConfig config_;
};

// torch.optim.Adam: g = grad + weight_decay * param; m = beta1 m + (1 - beta1) g;
// v = beta2 v + (1 - beta2) g^2; param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t)
// + eps).
struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2, added to the gradient
  std::optional<double> max_grad_norm = std::nullopt;
};
class CHANFLOW_API Adam final : public Optimizer {
 public:
  explicit Adam(const AdamConfig& config = {});

 private:
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
              const KernelOptions& opts) override;
  AdamConfig config_;
};

// torch.optim.AdamW: Adam with decoupled weight decay, param *= 1 - lr * weight_decay before
// the update (the gradient is not changed). torch's default weight_decay 1e-2.
struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  std::optional<double> max_grad_norm = std::nullopt;
};
class CHANFLOW_API AdamW final : public Optimizer {
 public:
  explicit AdamW(const AdamWConfig& config = {});

 private:
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
              const KernelOptions& opts) override;
  AdamWConfig config_;
};

}  // namespace chanflow
