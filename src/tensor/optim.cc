// optim.cc — fused optimiser updates, gradient clipping and L2 decay (formulas in optim.h).
#include "chanflow/tensor/optim.h"

#include <cmath>
#include <string>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "internal.h"

namespace chanflow {

namespace {

// The parameter of an update: defined and float32/float64.
void check_param(const Tensor& param, const char* op, const char* name = "param") {
  detail::require_defined(param, op);
  if (param.dtype() != DType::kFloat32 && param.dtype() != DType::kFloat64) {
    CHANFLOW_THROW(TypeError) << op << ": " << name << " must be float32 or float64, got "
                              << param.dtype();
  }
}

// A tensor that must match the parameter's shape and dtype.
void check_like(const Tensor& t, const Tensor& param, const char* op, const char* name,
                const char* param_name = "param") {
  if (!t.defined()) CHANFLOW_THROW(Error) << op << ": " << name << " is null";
  if (t.dtype() != param.dtype()) {
    CHANFLOW_THROW(TypeError) << op << ": " << name << " has dtype " << t.dtype() << ", "
                              << param_name << " " << param.dtype();
  }
  if (t.shape() != param.shape()) {
    CHANFLOW_THROW(ShapeError) << op << ": " << name << " has shape " << shape_to_string(t.shape())
                               << ", " << param_name << " " << shape_to_string(param.shape());
  }
}

// The value of a one-element float tensor (the learning rate, Paddle's beta pows).
double read_scalar(const Tensor& t, const char* op, const char* name) {
  if (!t.defined()) CHANFLOW_THROW(Error) << op << ": " << name << " is null";
  if (!is_floating(t.dtype())) {
    CHANFLOW_THROW(TypeError) << op << ": " << name << " must be a float tensor, got " << t.dtype();
  }
  if (t.numel() != 1) {
    CHANFLOW_THROW(ShapeError) << op << ": " << name << " must have one element, got shape "
                               << shape_to_string(t.shape());
  }
  return t.item<double>();
}

void check_nonneg(double v, const char* op, const char* name) {
  if (!std::isfinite(v) || v < 0) {
    CHANFLOW_THROW(Error) << op << ": " << name << " must be finite and >= 0, got " << v;
  }
}

void check_beta(double v, const char* op, const char* name) {
  if (!(v >= 0 && v < 1)) {
    CHANFLOW_THROW(Error) << op << ": " << name << " must be in [0, 1), got " << v;
  }
}

// Mutated arguments must be distinct Tensor objects: copy on write makes distinct handles
// unique, so equal pointers mean one object was passed twice.
void check_distinct(const void* a, const void* b, int64_t n, const char* op, const char* an,
                    const char* bn) {
  if (n > 0 && a == b) {
    CHANFLOW_THROW(Error) << op << ": " << an << " and " << bn << " must be distinct tensors";
  }
}

// f(TypeTag<T>) for float32 / float64.
template <class F>
void dispatch_float(DType dt, F&& f) {
  if (dt == DType::kFloat32) {
    f(detail::TypeTag<float>{});
  } else {
    f(detail::TypeTag<double>{});
  }
}

// Read-only pointer to a row-major copy of t's elements (t itself when contiguous); `hold` keeps
// the copy alive. Taken from a const handle, so t is never made unique.
template <class T>
const T* read_ptr(const Tensor& t, Tensor& hold) {
  hold = t.contiguous();
  const Tensor& c = hold;
  return c.data<T>();
}

}  // namespace

void sgd_step(Tensor& param, const Tensor& grad, Tensor* momentum_buf, const Tensor& lr,
              const SgdOptions& o, const KernelOptions& opts) {
  const char* const op = "sgd_step";
  check_param(param, op);
  check_like(grad, param, op, "grad");
  const double lr_v = read_scalar(lr, op, "lr");
  check_nonneg(o.momentum, op, "momentum");
  check_nonneg(o.dampening, op, "dampening");
  check_nonneg(o.weight_decay, op, "weight_decay");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
    CHANFLOW_THROW(Error) << op << ": nesterov needs momentum > 0 and dampening 0, got momentum "
                          << o.momentum << ", dampening " << o.dampening;
  }
  const bool use_momentum = o.momentum != 0;
  if (use_momentum && momentum_buf == nullptr) {
    CHANFLOW_THROW(Error) << op << ": momentum " << o.momentum
                          << " needs a momentum buffer (momentum_buf is nullptr)";
  }
  if (use_momentum && momentum_buf == &param) {
    CHANFLOW_THROW(Error) << op << ": param and momentum_buf must be distinct tensors";
  }
  const bool first = use_momentum && !momentum_buf->defined();
  if (use_momentum && !first) check_like(*momentum_buf, param, op, "momentum_buf");

  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    const int64_t n = param.numel();
    T* buf = nullptr;
    if (first) {
      *momentum_buf = Tensor::empty(param.shape(), param.dtype());
    }
    if (use_momentum) buf = momentum_buf->data<T>();
    T* p = param.data<T>();
    if (use_momentum) check_distinct(p, buf, n, op, "param", "momentum_buf");
    const T wd = static_cast<T>(o.weight_decay), mom = static_cast<T>(o.momentum);
    const T keep = static_cast<T>(1.0 - o.dampening), neg_lr = static_cast<T>(-lr_v);
    const bool decay = o.weight_decay != 0, nesterov = o.nesterov;
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T d = g[i];
        if (decay) d = d + wd * p[i];
        if (use_momentum) {
          const T nb = first ? d : mom * buf[i] + keep * d;
          buf[i] = nb;
          d = nesterov ? d + mom * nb : nb;
        }
        p[i] = p[i] + neg_lr * d;
      }
    });
  });
}

void adam_step(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, int64_t step,
               const Tensor& lr, const AdamOptions& o, const KernelOptions& opts) {
  const char* const op = "adam_step";
  check_param(param, op);
  check_like(grad, param, op, "grad");
  check_like(m, param, op, "m");
  check_like(v, param, op, "v");
  const double lr_v = read_scalar(lr, op, "lr");
  check_beta(o.beta1, op, "beta1");
  check_beta(o.beta2, op, "beta2");
  check_nonneg(o.eps, op, "eps");
  check_nonneg(o.weight_decay, op, "weight_decay");
  if (step < 1) CHANFLOW_THROW(Error) << op << ": step counts from 1, got " << step;

  // As torch.optim: the step-dependent factors in double, then applied in param's dtype.
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const double step_size = lr_v / bc1;
  const double bc2_sqrt = std::sqrt(bc2);
  const double shrink = 1.0 - lr_v * o.weight_decay;

  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* mp = m.data<T>();
    T* vp = v.data<T>();
    T* p = param.data<T>();
    const int64_t n = param.numel();
    check_distinct(mp, vp, n, op, "m", "v");
    check_distinct(p, mp, n, op, "param", "m");
    check_distinct(p, vp, n, op, "param", "v");
    const T b1 = static_cast<T>(o.beta1), b2 = static_cast<T>(o.beta2);
    const T one_b1 = static_cast<T>(1.0 - o.beta1), one_b2 = static_cast<T>(1.0 - o.beta2);
    const T eps = static_cast<T>(o.eps), wd = static_cast<T>(o.weight_decay);
    const T neg_step = static_cast<T>(-step_size), bc2s = static_cast<T>(bc2_sqrt);
    const T shrink_t = static_cast<T>(shrink);
    const bool decoupled = o.decoupled, l2 = !o.decoupled && o.weight_decay != 0;
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T gi = g[i];
        T pi = p[i];
        if (l2) gi = gi + wd * pi;
        if (decoupled) pi = pi * shrink_t;
        const T mi = b1 * mp[i] + one_b1 * gi;
        const T vi = b2 * vp[i] + one_b2 * gi * gi;
        mp[i] = mi;
        vp[i] = vi;
        const T denom = std::sqrt(vi) / bc2s + eps;
        p[i] = pi + neg_step * (mi / denom);
      }
    });
  });
}

void paddle_sgd(Tensor& param, const Tensor& grad, const Tensor& lr, const KernelOptions& opts) {
  const char* const op = "paddle_sgd";
  check_param(param, op, "Param");
  check_like(grad, param, op, "Grad", "Param");
  const double lr_v = read_scalar(lr, op, "LearningRate");
  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* p = param.data<T>();
    const T lr_t = static_cast<T>(lr_v);
    detail::run_chunked(param.numel(), opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = p[i] - lr_t * g[i];
    });
  });
}

void paddle_momentum(Tensor& param, const Tensor& grad, Tensor& velocity, const Tensor& lr,
                     double mu, bool use_nesterov, const KernelOptions& opts) {
  const char* const op = "paddle_momentum";
  check_param(param, op, "Param");
  check_like(grad, param, op, "Grad", "Param");
  check_like(velocity, param, op, "Velocity", "Param");
  const double lr_v = read_scalar(lr, op, "LearningRate");
  check_nonneg(mu, op, "mu");
  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* vel = velocity.data<T>();
    T* p = param.data<T>();
    const int64_t n = param.numel();
    check_distinct(p, vel, n, op, "Param", "Velocity");
    const T lr_t = static_cast<T>(lr_v), mu_t = static_cast<T>(mu);
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T vi = vel[i] * mu_t + g[i];
        vel[i] = vi;
        p[i] = use_nesterov ? p[i] - (g[i] + vi * mu_t) * lr_t : p[i] - lr_t * vi;
      }
    });
  });
}

void paddle_adam(Tensor& param, const Tensor& grad, Tensor& moment1, Tensor& moment2,
                 const Tensor& lr, const Tensor& beta1_pow, const Tensor& beta2_pow, double beta1,
                 double beta2, double epsilon, const KernelOptions& opts) {
  const char* const op = "paddle_adam";
  check_param(param, op, "Param");
  check_like(grad, param, op, "Grad", "Param");
  check_like(moment1, param, op, "Moment1", "Param");
  check_like(moment2, param, op, "Moment2", "Param");
  const double lr_v = read_scalar(lr, op, "LearningRate");
  const double b1p = read_scalar(beta1_pow, op, "Beta1Pow");
  const double b2p = read_scalar(beta2_pow, op, "Beta2Pow");
  check_beta(beta1, op, "beta1");
  check_beta(beta2, op, "beta2");
  check_nonneg(epsilon, op, "epsilon");
  if (b1p == 1.0 || b2p == 1.0) {
    CHANFLOW_THROW(Error) << op << ": Beta1Pow and Beta2Pow must not be 1, got " << b1p << ", "
                          << b2p;
  }
  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* m1 = moment1.data<T>();
    T* m2 = moment2.data<T>();
    T* p = param.data<T>();
    const int64_t n = param.numel();
    check_distinct(m1, m2, n, op, "Moment1", "Moment2");
    check_distinct(p, m1, n, op, "Param", "Moment1");
    check_distinct(p, m2, n, op, "Param", "Moment2");
    // Paddle computes the corrected rate in the parameter's type.
    const T b1p_t = static_cast<T>(b1p), b2p_t = static_cast<T>(b2p);
    const T lr_t = static_cast<T>(lr_v) * (std::sqrt(T(1) - b2p_t) / (T(1) - b1p_t));
    const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    const T one_b1 = T(1) - b1, one_b2 = T(1) - b2, eps = static_cast<T>(epsilon);
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = g[i];
        const T mi = b1 * m1[i] + one_b1 * gi;
        const T vi = b2 * m2[i] + one_b2 * gi * gi;
        m1[i] = mi;
        m2[i] = vi;
        p[i] = p[i] - lr_t * (mi / (std::sqrt(vi) + eps));
      }
    });
  });
}

void paddle_adamax(Tensor& param, const Tensor& grad, Tensor& moment, Tensor& inf_norm,
                   const Tensor& lr, const Tensor& beta1_pow, double beta1, double beta2,
                   double epsilon, const KernelOptions& opts) {
  const char* const op = "paddle_adamax";
  check_param(param, op, "Param");
  check_like(grad, param, op, "Grad", "Param");
  check_like(moment, param, op, "Moment", "Param");
  check_like(inf_norm, param, op, "InfNorm", "Param");
  const double lr_v = read_scalar(lr, op, "LearningRate");
  const double b1p = read_scalar(beta1_pow, op, "Beta1Pow");
  check_beta(beta1, op, "beta1");
  check_beta(beta2, op, "beta2");
  check_nonneg(epsilon, op, "epsilon");
  if (b1p == 1.0) CHANFLOW_THROW(Error) << op << ": Beta1Pow must not be 1";
  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* m = moment.data<T>();
    T* u = inf_norm.data<T>();
    T* p = param.data<T>();
    const int64_t n = param.numel();
    check_distinct(m, u, n, op, "Moment", "InfNorm");
    check_distinct(p, m, n, op, "Param", "Moment");
    check_distinct(p, u, n, op, "Param", "InfNorm");
    // The corrected rate in the parameter's type, as Paddle computes it.
    const T lr_t = static_cast<T>(lr_v) / (T(1) - static_cast<T>(b1p));
    const T b1 = static_cast<T>(beta1), b2 = static_cast<T>(beta2);
    const T one_b1 = T(1) - b1, eps = static_cast<T>(epsilon);
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = g[i];
        const T mi = b1 * m[i] + one_b1 * gi;
        const T decayed = b2 * u[i] + eps, mag = std::abs(gi);
        // max, with NaN in either operand giving NaN (a + b is then NaN).
        const T ui =
            (decayed != decayed || mag != mag) ? decayed + mag : (mag < decayed ? decayed : mag);
        m[i] = mi;
        u[i] = ui;
        p[i] = p[i] - lr_t * (mi / ui);
      }
    });
  });
}

void paddle_rmsprop(Tensor& param, const Tensor& grad, Tensor& mean_square, Tensor& moment,
                    const Tensor& lr, double decay, double momentum, double epsilon,
                    const KernelOptions& opts) {
  const char* const op = "paddle_rmsprop";
  check_param(param, op, "Param");
  check_like(grad, param, op, "Grad", "Param");
  check_like(mean_square, param, op, "MeanSquare", "Param");
  check_like(moment, param, op, "Moment", "Param");
  const double lr_v = read_scalar(lr, op, "LearningRate");
  if (!(decay >= 0 && decay <= 1)) {
    CHANFLOW_THROW(Error) << op << ": decay must be in [0, 1], got " << decay;
  }
  check_nonneg(momentum, op, "momentum");
  check_nonneg(epsilon, op, "epsilon");
  dispatch_float(param.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor g_hold;
    const T* g = read_ptr<T>(grad, g_hold);
    T* ms = mean_square.data<T>();
    T* mom = moment.data<T>();
    T* p = param.data<T>();
    const int64_t n = param.numel();
    check_distinct(ms, mom, n, op, "MeanSquare", "Moment");
    check_distinct(p, ms, n, op, "Param", "MeanSquare");
    check_distinct(p, mom, n, op, "Param", "Moment");
    const T rho = static_cast<T>(decay), one_rho = T(1) - rho;
    const T mu = static_cast<T>(momentum), eps = static_cast<T>(epsilon);
    const T lr_t = static_cast<T>(lr_v);
    detail::run_chunked(n, opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T gi = g[i];
        const T msi = rho * ms[i] + one_rho * gi * gi;
        const T vi = mu * mom[i] + lr_t * gi / std::sqrt(msi + eps);
        ms[i] = msi;
        mom[i] = vi;
        p[i] = p[i] - vi;
      }
    });
  });
}

double global_norm(const std::vector<Tensor>& grads) {
  double sum = 0.0;
  for (size_t k = 0; k < grads.size(); ++k) {
    const std::string name = "grads[" + std::to_string(k) + "]";
    check_param(grads[k], "global_norm", name.c_str());
    dispatch_float(grads[k].dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Tensor hold;
      const T* g = read_ptr<T>(grads[k], hold);
      const int64_t n = grads[k].numel();
      // Four partial sums: independent additions the CPU can overlap.
      double s[4] = {0, 0, 0, 0};
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < 4; ++j) {
          const auto x = static_cast<double>(g[i + j]);
          s[j] += x * x;
        }
      }
      for (; i < n; ++i) {
        const auto x = static_cast<double>(g[i]);
        s[0] += x * x;
      }
      sum += (s[0] + s[1]) + (s[2] + s[3]);
    });
  }
  return std::sqrt(sum);
}

double clip_by_global_norm(std::vector<Tensor>& grads, double max_norm, const KernelOptions& opts) {
  if (!(max_norm >= 0)) {
    CHANFLOW_THROW(Error) << "clip_by_global_norm: max_norm must be >= 0, got " << max_norm;
  }
  const double norm = global_norm(grads);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0 || std::isnan(coef)) {
    for (Tensor& g : grads) {
      dispatch_float(g.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = g.data<T>();
        const T c = static_cast<T>(coef);
        detail::run_chunked(g.numel(), opts, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) p[i] = p[i] * c;
        });
      });
    }
  }
  return norm;
}

void l2_decay(Tensor& grad, const Tensor& param, double coeff, const KernelOptions& opts) {
  const char* const op = "l2_decay";
  check_param(grad, op, "grad");
  check_like(param, grad, op, "param", "grad");
  if (!std::isfinite(coeff)) {
    CHANFLOW_THROW(Error) << op << ": coeff must be finite, got " << coeff;
  }
  dispatch_float(grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor p_hold;
    const T* p = read_ptr<T>(param, p_hold);
    T* g = grad.data<T>();
    const T c = static_cast<T>(coeff);
    detail::run_chunked(grad.numel(), opts, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) g[i] = g[i] + c * p[i];
    });
  });
}

}  // namespace chanflow
