// optimizer.cc — SGD, Momentum, Adam and AdamW over parameter lists, on tensor/optim.h.
#include "chanflow/graph/optimizer.h"

#include <cmath>
#include <limits>
#include <utility>

#include "chanflow/core/error.h"
#include "chanflow/tensor/optim.h"

namespace chanflow {
namespace {

void check_nonneg(const std::string& who, const char* what, double v) {
  if (!(std::isfinite(v) && v >= 0)) {
    CHANFLOW_THROW(Error) << who << ": " << what << " must be finite and >= 0, got " << v;
  }
}
void check_beta(const std::string& who, const char* what, double v) {
  if (!(v >= 0 && v < 1))
    CHANFLOW_THROW(Error) << who << ": " << what << " must be in [0, 1), got " << v;
}
void check_clip(const std::string& who, const std::optional<double>& c) {
  if (c && !(*c >= 0)) {
    CHANFLOW_THROW(Error) << who << ": max_grad_norm must be >= 0, got " << *c;
  }
}
bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

}  // namespace

// ---- Optimizer ----------------------------------------------------------------------------
Optimizer::Optimizer(std::string name, double lr, std::optional<double> max_grad_norm,
                     int state_per_param)
    : name_(std::move(name)), max_grad_norm_(max_grad_norm), state_per_param_(state_per_param) {
  check_clip(name_, max_grad_norm_);
  if (!max_grad_norm_) last_norm_ = std::numeric_limits<double>::quiet_NaN();
  set_lr(lr);
}

Optimizer::~Optimizer() = default;

void Optimizer::set_lr(double lr) {
  check_nonneg(name_, "lr", lr);
  // A fresh tensor: a handle the caller took with lr_tensor() keeps the rate it saw.
  lr_ = Tensor::scalar(lr, DType::kFloat64);
}

double Optimizer::lr() const { return lr_.data<double>()[0]; }

void Optimizer::reset() {
  steps_ = 0;
  last_norm_ = max_grad_norm_ ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  shapes_.clear();
  dtypes_.clear();
  state_.clear();
}

std::vector<Tensor> Optimizer::state(size_t i) const {
  return i < state_.size() ? state_[i] : std::vector<Tensor>{};
}

void Optimizer::step(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const KernelOptions& opts) {
  const std::string who = name_ + ".step";
  if (params.size() != grads.size()) {
    CHANFLOW_THROW(Error) << who << ": " << params.size() << " parameters but " << grads.size()
                          << " gradients";
  }
  if (!state_.empty() && params.size() != state_.size()) {
    CHANFLOW_THROW(Error) << who << ": " << params.size() << " parameters, but the state holds "
                          << state_.size()
                          << " (positions are fixed by the first step; reset() to start over)";
  }
  // Every check before any update, so an error leaves parameters and state unchanged.
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    const Tensor& g = grads[i];
    if (!p.defined() || !g.defined()) {
      CHANFLOW_THROW(Error) << who << ": " << (p.defined() ? "grads[" : "params[") << i
                            << "] is null";
    }
    if (!is_float(p.dtype())) {
      CHANFLOW_THROW(TypeError) << who << ": params[" << i << "] must be float32 or float64, got "
                                << p.dtype();
    }
    if (g.dtype() != p.dtype()) {
      CHANFLOW_THROW(TypeError) << who << ": grads[" << i << "] is " << g.dtype() << " but params["
                                << i << "] is " << p.dtype();
    }
    if (g.shape() != p.shape()) {
      CHANFLOW_THROW(ShapeError) << who << ": grads[" << i << "] has shape "
                                 << shape_to_string(g.shape()) << " but params[" << i << "] has "
                                 << shape_to_string(p.shape());
    }
    if (!state_.empty() && (p.shape() != shapes_[i] || p.dtype() != dtypes_[i])) {
      CHANFLOW_THROW(ShapeError) << who << ": params[" << i << "] is " << p.dtype() << " "
                                 << shape_to_string(p.shape()) << " but its state is " << dtypes_[i]
                                 << " " << shape_to_string(shapes_[i])
                                 << " (reset() to start over)";
    }
  }
  if (state_.empty()) {
    for (const Tensor& p : params) {
      shapes_.push_back(p.shape());
      dtypes_.push_back(p.dtype());
      std::vector<Tensor> s;
      for (int k = 0; k < state_per_param_; ++k) {
        s.push_back(zero_state() ? Tensor::zeros(p.shape(), p.dtype()) : Tensor());
      }
      state_.push_back(std::move(s));
    }
  }
  std::vector<Tensor> g = grads;  // handles: clipping copies on write, the caller's are unchanged
  if (max_grad_norm_) last_norm_ = clip_by_global_norm(g, *max_grad_norm_, opts);
  ++steps_;
  for (size_t i = 0; i < params.size(); ++i) update(params[i], g[i], state_[i], steps_, opts);
}

// ---- SGD ----------------------------------------------------------------------------------
SGD::SGD(const SGDConfig& config)
    : Optimizer("SGD", config.lr, config.max_grad_norm, 0), config_(config) {
  check_nonneg(name(), "weight_decay", config.weight_decay);
}
void SGD::update(Tensor& param, const Tensor& grad, std::vector<Tensor>&, int64_t,
                 const KernelOptions& opts) {
  sgd_step(param, grad, nullptr, lr_tensor(), {.weight_decay = config_.weight_decay}, opts);
}

// ---- Momentum -----------------------------------------------------------------------------
Momentum::Momentum(const MomentumConfig& config)
    : Optimizer("Momentum", config.lr, config.max_grad_norm, 1), config_(config) {
  if (!(std::isfinite(config.momentum) && config.momentum > 0)) {
    CHANFLOW_THROW(Error) << "Momentum: momentum must be finite and > 0, got " << config.momentum;
  }
  check_nonneg(name(), "dampening", config.dampening);
  check_nonneg(name(), "weight_decay", config.weight_decay);
  if (config.nesterov && config.dampening != 0) {
    CHANFLOW_THROW(Error) << "Momentum: nesterov needs dampening 0, got " << config.dampening;
  }
}
void Momentum::update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t,
                      const KernelOptions& opts) {
  sgd_step(param, grad, &state[0], lr_tensor(),
           {.momentum = config_.momentum,
            .dampening = config_.dampening,
            .nesterov = config_.nesterov,
            .weight_decay = config_.weight_decay},
           opts);
}

// ---- Adam / AdamW -------------------------------------------------------------------------
namespace {
template <class C>
void check_adam(const std::string& who, const C& c) {
  check_beta(who, "beta1", c.beta1);
  check_beta(who, "beta2", c.beta2);
  check_nonneg(who, "eps", c.eps);
  check_nonneg(who, "weight_decay", c.weight_decay);
}
}  // namespace

Adam::Adam(const AdamConfig& config)
    : Optimizer("Adam", config.lr, config.max_grad_norm, 2), config_(config) {
  check_adam(name(), config);
}
void Adam::update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
                  const KernelOptions& opts) {
  adam_step(param, grad, state[0], state[1], t, lr_tensor(),
            {.beta1 = config_.beta1,
             .beta2 = config_.beta2,
             .eps = config_.eps,
             .weight_decay = config_.weight_decay,
             .decoupled = false},
            opts);
}

AdamW::AdamW(const AdamWConfig& config)
    : Optimizer("AdamW", config.lr, config.max_grad_norm, 2), config_(config) {
  check_adam(name(), config);
}
void AdamW::update(Tensor& param, const Tensor& grad, std::vector<Tensor>& state, int64_t t,
                   const KernelOptions& opts) {
  adam_step(param, grad, state[0], state[1], t, lr_tensor(),
            {.beta1 = config_.beta1,
             .beta2 = config_.beta2,
             .eps = config_.eps,
             .weight_decay = config_.weight_decay,
             .decoupled = true},
            opts);
}

}  // namespace chanflow
