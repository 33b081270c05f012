// tensor_optim_trajectory — the C++ half of tensor_optim_torch (check_optim_torch.py) and
// tensor_optim_paddle (check_optim_paddle.py): runs one optimiser configuration on the data the
// script wrote and saves the parameters after the last step.
//
//   tensor_optim_trajectory DIR key=value...
//
// DIR holds p0_K.npy (initial parameters), a_K.npy and t_K.npy (K = 0, 1) of one float dtype.
// The loss of parameter K is sum(0.5 * a * (p - t)^2 + 0.1 * cos(p) + p * noise(step)), with
// noise(step)[i] = 0.05 * sin(0.7 * step + 0.37 * i) over the flat index i, so its gradient is
// a * (p - t) - 0.1 * sin(p) + noise(step). Keys: name (output prefix), kind (sgd, adam,
// paddle_sgd, paddle_momentum, paddle_adam, paddle_adamax, paddle_rmsprop), steps, lr, decay (lr
// of step s is lr * decay^(s - 1)), momentum, dampening, nesterov, wd, beta1, beta2, eps, rho
// (rmsprop's decay), decoupled, clip (global-norm max; 0: none), l2 (l2_decay coefficient applied
// to the gradient first).
// Writes DIR/out_<name>_K.npy.
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

template <class T>
cf::Tensor gradient(const cf::Tensor& p, const cf::Tensor& a, const cf::Tensor& t, int step) {
  cf::Tensor g = cf::Tensor::empty(p.shape(), p.dtype());
  const T* pp = p.data<T>();
  const T* ap = a.data<T>();
  const T* tp = t.data<T>();
  T* gp = g.data<T>();
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double noise = 0.05 * std::sin(0.7 * step + 0.37 * static_cast<double>(i));
    gp[i] = static_cast<T>(static_cast<double>(ap[i]) * (static_cast<double>(pp[i]) - tp[i]) -
                           0.1 * std::sin(static_cast<double>(pp[i])) + noise);
  }
  return g;
}

template <class T>
void run(const std::string& dir, std::map<std::string, std::string>& kv) {
  auto num = [&](const char* k, double d) { return kv.count(k) ? std::stod(kv[k]) : d; };
  const std::string kind = kv["kind"], name = kv["name"];
  const int steps = static_cast<int>(num("steps", 100));
  const double lr0 = num("lr", 0.01), decay = num("decay", 1.0), clip = num("clip", 0);
  const double l2 = num("l2", 0);
  std::vector<cf::Tensor> p, a, t, s1, s2;
  std::vector<cf::Tensor> buf(2);
  for (int k = 0; k < 2; ++k) {
    const std::string K = std::to_string(k);
    p.push_back(cf::load_npy(dir + "/p0_" + K + ".npy"));
    a.push_back(cf::load_npy(dir + "/a_" + K + ".npy"));
    t.push_back(cf::load_npy(dir + "/t_" + K + ".npy"));
    s1.push_back(cf::Tensor::zeros(p[k].shape(), p[k].dtype()));
    s2.push_back(cf::Tensor::zeros(p[k].shape(), p[k].dtype()));
  }
  const cf::DType dt = p[0].dtype();
  cf::Tensor lr = cf::Tensor::scalar(lr0, dt);
  const double beta1 = num("beta1", 0.9), beta2 = num("beta2", 0.999), eps = num("eps", 1e-8);
  cf::Tensor b1p = cf::Tensor::scalar(beta1, dt), b2p = cf::Tensor::scalar(beta2, dt);
  const cf::SgdOptions sgd{.momentum = num("momentum", 0),
                           .dampening = num("dampening", 0),
                           .nesterov = num("nesterov", 0) != 0,
                           .weight_decay = num("wd", 0)};
  const cf::AdamOptions adam{.beta1 = beta1,
                             .beta2 = beta2,
                             .eps = eps,
                             .weight_decay = num("wd", 0),
                             .decoupled = num("decoupled", 0) != 0};
  for (int step = 1; step <= steps; ++step) {
    lr.fill(lr0 * std::pow(decay, step - 1));
    std::vector<cf::Tensor> g;
    for (int k = 0; k < 2; ++k) g.push_back(gradient<T>(p[k], a[k], t[k], step));
    if (l2 != 0) {
      for (int k = 0; k < 2; ++k) cf::l2_decay(g[k], p[k], l2);
    }
    if (clip > 0) cf::clip_by_global_norm(g, clip);
    for (int k = 0; k < 2; ++k) {
      if (kind == "sgd") {
        cf::sgd_step(p[k], g[k], sgd.momentum != 0 ? &buf[k] : nullptr, lr, sgd);
      } else if (kind == "adam") {
        cf::adam_step(p[k], g[k], s1[k], s2[k], step, lr, adam);
      } else if (kind == "paddle_sgd") {
        cf::paddle_sgd(p[k], g[k], lr);
      } else if (kind == "paddle_momentum") {
        cf::paddle_momentum(p[k], g[k], s1[k], lr, num("momentum", 0), num("nesterov", 0) != 0);
      } else if (kind == "paddle_adam") {
        cf::paddle_adam(p[k], g[k], s1[k], s2[k], lr, b1p, b2p, beta1, beta2, eps);
      } else if (kind == "paddle_adamax") {
        cf::paddle_adamax(p[k], g[k], s1[k], s2[k], lr, b1p, beta1, beta2, eps);
      } else if (kind == "paddle_rmsprop") {
        cf::paddle_rmsprop(p[k], g[k], s1[k], s2[k], lr, num("rho", 0.9), num("momentum", 0), eps);
      } else {
        throw std::runtime_error("unknown kind " + kind);
      }
    }
    // Paddle's optimizer advances the pows after its adam / adamax ops (scale ops).
    b1p = cf::mul(b1p, cf::Tensor::scalar(beta1, dt));
    b2p = cf::mul(b2p, cf::Tensor::scalar(beta2, dt));
  }
  for (int k = 0; k < 2; ++k) {
    cf::save_npy(p[k], dir + "/out_" + name + "_" + std::to_string(k) + ".npy");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tensor_optim_trajectory DIR key=value...\n");
    return 2;
  }
  try {
    std::map<std::string, std::string> kv;
    for (int i = 2; i < argc; ++i) {
      const std::string s = argv[i];
      const size_t eq = s.find('=');
      if (eq == std::string::npos) throw std::runtime_error("not key=value: " + s);
      kv[s.substr(0, eq)] = s.substr(eq + 1);
    }
    const std::string dir = argv[1];
    if (cf::load_npy(dir + "/p0_0.npy").dtype() == cf::DType::kFloat32) {
      run<float>(dir, kv);
    } else {
      run<double>(dir, kv);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensor_optim_trajectory: %s\n", e.what());
    return 1;
  }
}
