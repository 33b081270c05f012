// graph_optimizer_trajectory — the C++ half of graph_optimizer_torch: runs one configuration of
// the graph optimiser classes (cf::SGD, Momentum, Adam, AdamW of graph/optimizer.h) on the data
// check_optim_torch.py wrote and saves the parameters after the last step. Same protocol as
// tests/tensor/optim_trajectory.cc (kinds sgd and adam only): the loss of parameter K is
// sum(0.5 * a * (p - t)^2 + 0.1 * cos(p) + p * noise(step)); keys name, kind, steps, lr, decay,
// momentum, dampening, nesterov, wd, beta1, beta2, eps, decoupled, clip. float64 data.
//
//   graph_optimizer_trajectory DIR key=value...
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "chanflow/graph/optimizer.h"
#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

cf::Tensor gradient(const cf::Tensor& p, const cf::Tensor& a, const cf::Tensor& t, int step) {
  cf::Tensor g = cf::Tensor::empty(p.shape(), cf::DType::kFloat64);
  const double* pp = p.data<double>();
  const double* ap = a.data<double>();
  const double* tp = t.data<double>();
  double* gp = g.data<double>();
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double noise = 0.05 * std::sin(0.7 * step + 0.37 * static_cast<double>(i));
    gp[i] = ap[i] * (pp[i] - tp[i]) - 0.1 * std::sin(pp[i]) + noise;
  }
  return g;
}

std::unique_ptr<cf::Optimizer> make(std::map<std::string, std::string>& kv) {
  auto num = [&](const char* k, double d) { return kv.count(k) ? std::stod(kv[k]) : d; };
  std::optional<double> clip;
  if (num("clip", 0) > 0) clip = num("clip", 0);
  const double lr = num("lr", 0.01), wd = num("wd", 0);
  if (kv["kind"] == "sgd") {
    if (num("momentum", 0) == 0) {
      return std::make_unique<cf::SGD>(
          cf::SGDConfig{.lr = lr, .weight_decay = wd, .max_grad_norm = clip});
    }
    return std::make_unique<cf::Momentum>(cf::MomentumConfig{.lr = lr,
                                                             .momentum = num("momentum", 0),
                                                             .dampening = num("dampening", 0),
                                                             .nesterov = num("nesterov", 0) != 0,
                                                             .weight_decay = wd,
                                                             .max_grad_norm = clip});
  }
  if (kv["kind"] != "adam") throw std::runtime_error("unknown kind " + kv["kind"]);
  const double b1 = num("beta1", 0.9), b2 = num("beta2", 0.999), eps = num("eps", 1e-8);
  if (num("decoupled", 0) != 0) {
    return std::make_unique<cf::AdamW>(cf::AdamWConfig{
        .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .max_grad_norm = clip});
  }
  return std::make_unique<cf::Adam>(cf::AdamConfig{
      .lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd, .max_grad_norm = clip});
}

void run(const std::string& dir, std::map<std::string, std::string>& kv) {
  auto num = [&](const char* k, double d) { return kv.count(k) ? std::stod(kv[k]) : d; };
  const int steps = static_cast<int>(num("steps", 100));
  const double lr0 = num("lr", 0.01), decay = num("decay", 1.0);
  std::unique_ptr<cf::Optimizer> opt = make(kv);
  std::vector<cf::Tensor> p, a, t;
  for (int k = 0; k < 2; ++k) {
    const std::string K = std::to_string(k);
    p.push_back(cf::load_npy(dir + "/p0_" + K + ".npy"));
    a.push_back(cf::load_npy(dir + "/a_" + K + ".npy"));
    t.push_back(cf::load_npy(dir + "/t_" + K + ".npy"));
  }
  for (int step = 1; step <= steps; ++step) {
    opt->set_lr(lr0 * std::pow(decay, step - 1));
    std::vector<cf::Tensor> g;
    for (int k = 0; k < 2; ++k) g.push_back(gradient(p[k], a[k], t[k], step));
    opt->step(p, g);
  }
  for (int k = 0; k < 2; ++k) {
    cf::save_npy(p[k], dir + "/out_" + kv["name"] + "_" + std::to_string(k) + ".npy");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: graph_optimizer_trajectory DIR key=value...\n");
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
    run(argv[1], kv);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_optimizer_trajectory: %s\n", e.what());
    return 1;
  }
}
