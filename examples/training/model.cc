// model.cc — initialisation, the generic training step on a GoMachine, the weights' updater.
#include "model.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "chanflow/core/error.h"
#include "chanflow/graph/grad.h"
#include "chanflow/graph/ops.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/wait_group.h"
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

Updater::Updater(const Params& initial, const cf::AdamConfig& config, int parts) {
  CHANFLOW_CHECK(parts >= 1) << "Updater: parts must be >= 1, got " << parts;
  int64_t total = 0;
  for (const cf::Tensor& t : initial.t) total += t.numel();
  // Piece k covers elements [total * k / parts, total * (k + 1) / parts) of the parameters laid
  // end to end; a parameter crossing a boundary is split between pieces.
  int64_t offset = 0;  // where parameter p starts
  std::vector<std::vector<Segment>> segs(static_cast<std::size_t>(parts));
  for (std::size_t p = 0; p < initial.t.size(); ++p) {
    const int64_t n = initial.t[p].numel();
    for (int k = 0; k < parts; ++k) {
      const int64_t lo = total * k / parts, hi = total * (k + 1) / parts;
      const int64_t b = std::max(lo, offset) - offset, e = std::min(hi, offset + n) - offset;
      if (b < e) segs[static_cast<std::size_t>(k)].push_back({p, b, e});
    }
    offset += n;
  }
  for (std::vector<Segment>& s : segs) {
    if (s.empty()) continue;
    Part part;
    part.segs = std::move(s);
    part.adam = std::make_unique<cf::Adam>(config);
    for (const Segment& seg : part.segs) {
      cf::Tensor w = cf::Tensor::empty({seg.end - seg.begin}, cf::DType::kFloat32);
      const cf::Tensor src = initial.t[seg.param].contiguous();
      std::copy(src.data<float>() + seg.begin, src.data<float>() + seg.end, w.data<float>());
      part.w.push_back(std::move(w));
      part.g.push_back(cf::Tensor::empty({seg.end - seg.begin}, cf::DType::kFloat32));
    }
    parts_.push_back(std::move(part));
  }
  auto first = std::make_shared<Params>();
  first->version = initial.version;
  for (const cf::Tensor& t : initial.t) first->t.push_back(t.clone());
  latest_ = std::move(first);
}

void Updater::run_part(Part& part, const std::vector<const StepOutput*>& shards, float scale,
                       const std::vector<float*>& out) {
  for (std::size_t s = 0; s < part.segs.size(); ++s) {
    const Segment& seg = part.segs[s];
    float* g = part.g[s].data<float>();
    const int64_t n = seg.end - seg.begin;
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const float* d = shards[i]->grads[seg.param].data<float>() + seg.begin;
      if (i == 0) {
        std::copy(d, d + n, g);
      } else {
        for (int64_t k = 0; k < n; ++k) g[k] += d[k];
      }
    }
    for (int64_t k = 0; k < n; ++k) g[k] *= scale;
  }
  part.adam->step(part.w, part.g);
  for (std::size_t s = 0; s < part.segs.size(); ++s) {
    const Segment& seg = part.segs[s];
    const float* w = part.w[s].data<float>();
    // Disjoint ranges of the new tensors: the pieces write them concurrently without a race.
    std::copy(w, w + (seg.end - seg.begin), out[seg.param] + seg.begin);
  }
}

ParamsPtr Updater::step(const std::vector<const StepOutput*>& shards, int64_t rows,
                        int64_t version) {
  CHANFLOW_CHECK(!shards.empty() && rows > 0) << "Updater: a step needs gradients and rows";
  for (const StepOutput* s : shards) {
    CHANFLOW_CHECK(s->grads.size() == latest_->t.size())
        << "Updater: " << s->grads.size() << " gradients for " << latest_->t.size()
        << " parameters";
    for (std::size_t p = 0; p < s->grads.size(); ++p) {
      CHANFLOW_CHECK(s->grads[p].shape() == latest_->t[p].shape() && s->grads[p].is_contiguous())
          << "Updater: gradient " << p << " has another shape than its parameter, or strides";
    }
  }
  const float scale = 1.0f / static_cast<float>(rows);
  auto next = std::make_shared<Params>();
  next->version = version;
  std::vector<float*> out;  // taken here: data() is not thread-safe on one handle
  for (const cf::Tensor& t : latest_->t) {
    next->t.push_back(cf::Tensor::empty(t.shape(), cf::DType::kFloat32));
    out.push_back(next->t.back().data<float>());
  }
  // Pieces 1.. on green threads placed for idle workers to take at once; piece 0 here.
  std::vector<std::exception_ptr> errors(parts_.size());
  cf::WaitGroup done("optimiser pieces");
  cf::Scheduler* sched = cf::current_scheduler();
  for (std::size_t k = 1; k < parts_.size(); ++k) {
    done.add(1);
    auto piece = [&, k] {
      try {
        run_part(parts_[k], shards, scale, out);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      done.done();
    };
    if (sched != nullptr) {
      sched->go_for_others("optimiser piece", std::move(piece));
    } else {
      piece();
    }
  }
  try {
    run_part(parts_[0], shards, scale, out);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  done.wait();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  latest_ = next;
  return next;
}

}  // namespace training
