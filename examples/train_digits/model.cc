// model.cc — the MLP graph, its GoMachine, initialisation and the weights' updater.
#include "model.h"

#include <cmath>

#include "chanflow/graph/grad.h"
#include "chanflow/graph/ops.h"
#include "rng.h"

namespace cf = chanflow;

namespace train_digits {

Params init_params(const ModelShape& s, uint64_t seed) {
  Rng rng(seed);
  auto he = [&](int64_t fan_in, int64_t fan_out) {
    std::vector<float> v(static_cast<std::size_t>(fan_in * fan_out));
    const double std = std::sqrt(2.0 / static_cast<double>(fan_in));
    for (float& x : v) x = static_cast<float>(rng.normal() * std);
    return cf::Tensor::from_vector(v, {fan_in, fan_out});
  };
  Params p;
  p.version = 0;
  p.t[0] = he(s.inputs, s.hidden);
  p.t[1] = cf::Tensor::zeros({s.hidden}, cf::DType::kFloat32);
  p.t[2] = he(s.hidden, s.classes);
  p.t[3] = cf::Tensor::zeros({s.classes}, cf::DType::kFloat32);
  return p;
}

TrainStep::TrainStep(const ModelShape& s, int64_t rows) {
  using cf::DType;
  x_ = graph_.input("x", DType::kFloat32, {rows, s.inputs});
  y_ = graph_.input("y", DType::kFloat32, {rows, s.classes});
  params_[0] = graph_.input("w1", DType::kFloat32, {s.inputs, s.hidden});
  params_[1] = graph_.input("b1", DType::kFloat32, {s.hidden});
  params_[2] = graph_.input("w2", DType::kFloat32, {s.hidden, s.classes});
  params_[3] = graph_.input("b2", DType::kFloat32, {s.classes});
  const cf::Node h = cf::relu(cf::matmul(x_, params_[0]) + params_[1]);
  const cf::Node logits = cf::matmul(h, params_[2]) + params_[3];
  const cf::Node log_p = cf::log_softmax(logits, 1);
  loss_sum_ = cf::neg(cf::sum(log_p * y_));
  // A real row (sum of its one-hot = 1) counts when its argmax is its label's.
  const cf::Node real = cf::sum(y_, {1});
  const cf::Node hit =
      cf::cast(cf::equal(cf::argmax(logits, 1), cf::argmax(y_, 1)), DType::kFloat32);
  correct_ = cf::sum(hit * real);
  const std::vector<cf::Node> g =
      cf::grad(loss_sum_, {params_[0], params_[1], params_[2], params_[3]});
  for (int i = 0; i < kNumParams; ++i)
    grads_[static_cast<std::size_t>(i)] = g[static_cast<std::size_t>(i)];
  machine_ = std::make_unique<cf::GoMachine>(graph_);
}

StepOutput TrainStep::run(const cf::Context& ctx, const Params& p, const cf::Tensor& x,
                          const cf::Tensor& y) {
  cf::Bindings b{{x_, x}, {y_, y}};
  for (std::size_t i = 0; i < kNumParams; ++i) b.emplace_back(params_[i], p.t[i]);
  machine_->run(ctx, b);
  StepOutput out;
  for (std::size_t i = 0; i < kNumParams; ++i) out.grads[i] = machine_->result(grads_[i]);
  out.loss_sum = machine_->result(loss_sum_).item<float>();
  out.correct = machine_->result(correct_).item<float>();
  return out;
}

Updater::Updater(const Params& initial, const cf::AdamConfig& config) : adam_(config) {
  for (const cf::Tensor& t : initial.t) w_.push_back(t.clone());
}

void Updater::apply(const std::array<std::vector<float>, kNumParams>& sum_grads, int64_t rows) {
  const float scale = 1.0f / static_cast<float>(rows);
  std::vector<cf::Tensor> grads;
  for (std::size_t i = 0; i < kNumParams; ++i) {
    cf::Tensor g = cf::Tensor::empty(w_[i].shape(), cf::DType::kFloat32);
    float* d = g.data<float>();
    const std::vector<float>& s = sum_grads[i];
    for (std::size_t k = 0; k < s.size(); ++k) d[k] = s[k] * scale;
    grads.push_back(std::move(g));
  }
  adam_.step(w_, grads);
}

ParamsPtr Updater::params(int64_t version) const {
  auto p = std::make_shared<Params>();
  p->version = version;
  for (std::size_t i = 0; i < kNumParams; ++i) p->t[i] = w_[i];
  return p;
}

}  // namespace train_digits
