// model.cc — initialisation, the generic training step on a GoMachine, the weights' updater.
#include "model.h"

#include <cmath>

#include "chanflow/core/error.h"
#include "chanflow/graph/grad.h"
#include "chanflow/graph/ops.h"
#include "rng.h"

namespace cf = chanflow;

namespace training {

int64_t Model::features() const {
  int64_t n = 1;
  for (int64_t d : sample_shape()) n *= d;
  return n;
}

std::vector<cf::Tensor> Model::init(uint64_t seed) const {
  Rng rng(seed);
  std::vector<cf::Tensor> out;
  for (const ParamSpec& s : params()) {
    if (s.fan_in == 0) {
      out.push_back(cf::Tensor::zeros(s.shape, cf::DType::kFloat32));
      continue;
    }
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    std::vector<float> v(static_cast<std::size_t>(n));
    const double std = std::sqrt(2.0 / static_cast<double>(s.fan_in));
    for (float& x : v) x = static_cast<float>(rng.normal() * std);
    out.push_back(cf::Tensor::from_vector(v, s.shape));
  }
  return out;
}

TrainStep::TrainStep(const Model& model, int64_t rows) {
  using cf::DType;
  cf::Shape xs{rows};
  for (int64_t d : model.sample_shape()) xs.push_back(d);
  x_ = graph_.input("x", DType::kFloat32, xs);
  y_ = graph_.input("y", DType::kFloat32, {rows, model.classes()});
  for (const ParamSpec& s : model.params())
    params_.push_back(graph_.input(s.name, DType::kFloat32, s.shape));
  const cf::Node logits = model.logits(x_, params_);
  const cf::Node log_p = cf::log_softmax(logits, 1);
  loss_sum_ = cf::neg(cf::sum(log_p * y_));
  // A real row (sum of its one-hot = 1) counts when its argmax is its label's.
  const cf::Node real = cf::sum(y_, {1});
  const cf::Node hit =
      cf::cast(cf::equal(cf::argmax(logits, 1), cf::argmax(y_, 1)), DType::kFloat32);
  correct_ = cf::sum(hit * real);
  grads_ = cf::grad(loss_sum_, params_);
  machine_ = std::make_unique<cf::GoMachine>(graph_);
}

StepOutput TrainStep::run(const cf::Context& ctx, const Params& p, const cf::Tensor& x,
                          const cf::Tensor& y) {
  CHANFLOW_CHECK(p.t.size() == params_.size())
      << "TrainStep: " << p.t.size() << " parameter tensors for " << params_.size() << " inputs";
  cf::Bindings b{{x_, x}, {y_, y}};
  for (std::size_t i = 0; i < params_.size(); ++i) b.emplace_back(params_[i], p.t[i]);
  machine_->run(ctx, b);
  StepOutput out;
  for (const cf::Node& g : grads_) out.grads.push_back(machine_->result(g));
  out.loss_sum = machine_->result(loss_sum_).item<float>();
  out.correct = machine_->result(correct_).item<float>();
  return out;
}

Updater::Updater(const Params& initial, const cf::AdamConfig& config) : adam_(config) {
  for (const cf::Tensor& t : initial.t) w_.push_back(t.clone());
}

void Updater::apply(std::vector<cf::Tensor>& sum_grads, int64_t rows) {
  CHANFLOW_CHECK(sum_grads.size() == w_.size())
      << "Updater: " << sum_grads.size() << " gradients for " << w_.size() << " parameters";
  const float scale = 1.0f / static_cast<float>(rows);
  for (cf::Tensor& g : sum_grads) {
    float* d = g.data<float>();
    const int64_t n = g.numel();
    for (int64_t k = 0; k < n; ++k) d[k] *= scale;
  }
  adam_.step(w_, sum_grads);
}

ParamsPtr Updater::params(int64_t version) const {
  auto p = std::make_shared<Params>();
  p->version = version;
  p->t = w_;
  return p;
}

}  // namespace training
