// model.h — the MLP (64 -> hidden -> 10, relu, log-softmax cross-entropy) as a chanflow Graph
// with its gradients, run on a GoMachine; the parameters and their optimiser (chanflow's Adam).
//
//   Params p = init_params({.hidden = 128}, /*seed=*/1);      // version 0
//   TrainStep step({.hidden = 128}, /*rows=*/64);             // one per worker green thread
//   StepOutput out = step.run(ctx, p, x, y);                  // forward + backward on a GoMachine
//   Updater u(p, {.lr = 3e-3});  u.apply(sum_of_gradients, rows);  ParamsPtr next = u.params(1);
//
// Thread-safety: Params are immutable once made (share them freely between green threads). A
// TrainStep belongs to one green thread at a time. The Updater is used by the coordinator only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "chanflow/graph/go_machine.h"
#include "chanflow/graph/graph.h"
#include "chanflow/graph/optimizer.h"
#include "chanflow/runtime/context.h"
#include "chanflow/tensor/tensor.h"

namespace train_digits {

struct ModelShape {
  int64_t inputs = 64;
  int64_t hidden = 256;
  int64_t classes = 10;
};

inline constexpr int kNumParams = 4;  // w1, b1, w2, b2

// One version of the weights: w1 (inputs, hidden), b1 (hidden), w2 (hidden, classes), b2
// (classes), float32. Never written after it is published.
struct Params {
  int64_t version = 0;
  std::array<chanflow::Tensor, kNumParams> t;
};
using ParamsPtr = std::shared_ptr<const Params>;

// He-initialised weights (normal, std sqrt(2 / fan_in)), zero biases; deterministic for a seed.
Params init_params(const ModelShape& shape, uint64_t seed);

// What one forward + backward pass over a shard gives.
struct StepOutput {
  std::array<chanflow::Tensor, kNumParams> grads;  // d(loss_sum)/d(param), same shapes
  double loss_sum = 0;  // summed cross-entropy over the shard's real rows
  double correct = 0;   // real rows whose argmax prediction is the label
};

// A worker's graph: inputs x (rows, inputs), y (rows, classes) one-hot (all-zero rows are
// padding: they add nothing to the loss, the gradients or the counts) and the four parameters;
// loss_sum = -sum(log_softmax(relu(x w1 + b1) w2 + b2) * y) and its gradients by cf::grad; a
// GoMachine runs it (independent backward nodes run in parallel on the scheduler's workers).
class TrainStep {
 public:
  TrainStep(const ModelShape& shape, int64_t rows);
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  // Runs forward and backward; blocks the calling green thread until the machine finishes.
  // Throws MachineError, or the context's error when it is canceled.
  StepOutput run(const chanflow::Context& ctx, const Params& p, const chanflow::Tensor& x,
                 const chanflow::Tensor& y);

  int64_t nodes() const { return graph_.size(); }

 private:
  chanflow::Graph graph_;
  chanflow::Node x_, y_;
  std::array<chanflow::Node, kNumParams> params_;
  std::array<chanflow::Node, kNumParams> grads_;
  chanflow::Node loss_sum_, correct_;
  std::unique_ptr<chanflow::GoMachine> machine_;
};

// The coordinator's weights and their optimiser: cf::Adam (chanflow/graph/optimizer.h,
// torch.optim.Adam's formula) updating the four float32 tensors in place. Deterministic: the
// same gradients in the same order give the same weights bit for bit.
class Updater {
 public:
  Updater(const Params& initial, const chanflow::AdamConfig& config);
  // One step with the mean gradient sum_grads / rows.
  void apply(const std::array<std::vector<float>, kNumParams>& sum_grads, int64_t rows);
  // The current weights, tagged `version`: they share the updater's tensors, and the next
  // apply() copies on write, so a published version never changes.
  ParamsPtr params(int64_t version) const;
  const std::vector<chanflow::Tensor>& values() const { return w_; }

 private:
  chanflow::Adam adam_;
  std::vector<chanflow::Tensor> w_;
};

}  // namespace train_digits
