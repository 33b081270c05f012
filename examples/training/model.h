// model.h — what the training pipeline needs of a model, and the two pieces every model shares:
// the per-worker training step (the model's forward pass, a softmax cross-entropy loss and its
// gradients by cf::grad, run on a GoMachine) and the coordinator's optimiser.
//
// A Model is a description: its parameters (names and shapes: the names are also the feeds of
// its evaluation program), how to initialise them for a seed, and its forward pass as graph
// nodes. models.h has the MLP and the LeNet-style CNN.
//
//   Mlp mlp({.inputs = 784, .hidden = 256});
//   Params p{0, mlp.init(/*seed=*/1)};                        // version 0
//   TrainStep step(mlp, /*rows=*/64);                          // one per worker green thread
//   StepOutput out = step.run(ctx, p, x, y);                   // forward + backward on a GoMachine
//   Updater u(p, {.lr = 1e-3});  u.apply(sum_of_gradients, rows);  ParamsPtr next = u.params(1);
//
// Thread-safety: a Model is immutable. Params are immutable once made (share them freely between
// green threads). A TrainStep belongs to one green thread at a time. The Updater is used by the
// coordinator only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/graph/go_machine.h"
#include "chanflow/graph/graph.h"
#include "chanflow/graph/optimizer.h"
#include "chanflow/runtime/context.h"
#include "chanflow/tensor/tensor.h"

namespace training {

// A parameter: its name (a graph input, and a feed of the evaluation program), its shape and the
// fan-in its He initialisation uses (0: a bias, initialised to zero).
struct ParamSpec {
  std::string name;
  chanflow::Shape shape;
  int64_t fan_in = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // One line for logs, e.g. "MLP 784-256-10".
  virtual std::string describe() const = 0;
  // The shape of one sample (a batch is (rows, sample_shape...)), e.g. {784} or {1, 28, 28}.
  virtual chanflow::Shape sample_shape() const = 0;
  virtual int64_t classes() const = 0;
  virtual const std::vector<ParamSpec>& params() const = 0;
  // The logits (rows, classes) of input x (rows, sample_shape...) with parameters `p` (graph
  // inputs in params() order).
  virtual chanflow::Node logits(const chanflow::Node& x,
                                const std::vector<chanflow::Node>& p) const = 0;

  // He initialisation (normal, std sqrt(2 / fan_in)) of every weight, zero biases, drawn in
  // params() order from one seeded generator: the same seed gives the same tensors everywhere.
  std::vector<chanflow::Tensor> init(uint64_t seed) const;
  int64_t features() const;  // elements of one sample
};

// One version of the weights (float32, in the model's params() order). Never written after it
// is published.
struct Params {
  int64_t version = 0;
  std::vector<chanflow::Tensor> t;
};
using ParamsPtr = std::shared_ptr<const Params>;

// What one forward + backward pass over a shard gives.
struct StepOutput {
  std::vector<chanflow::Tensor> grads;  // d(loss_sum)/d(param), in params() order
  double loss_sum = 0;                  // summed cross-entropy over the shard's real rows
  double correct = 0;                   // real rows whose argmax prediction is the label
};

// A worker's graph: inputs x (rows, sample_shape...), y (rows, classes) one-hot (all-zero rows are
// padding: they add nothing to the loss, the gradients or the counts) and the parameters;
// loss_sum = -sum(log_softmax(logits) * y) and its gradients by cf::grad; a GoMachine runs it
// (independent nodes run in parallel on the scheduler's workers).
class TrainStep {
 public:
  TrainStep(const Model& model, int64_t rows);
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
  std::vector<chanflow::Node> params_;
  std::vector<chanflow::Node> grads_;
  chanflow::Node loss_sum_, correct_;
  std::unique_ptr<chanflow::GoMachine> machine_;
};

// The coordinator's weights and their optimiser: cf::Adam (chanflow/graph/optimizer.h,
// torch.optim.Adam's formula). Each step sums the shards' gradients in shard order, scales them by
// 1 / rows and applies Adam; the work is cut into `parts` pieces (contiguous element ranges of the
// parameters laid end to end, each piece with its own cf::Adam over its ranges) run on as many
// green threads, so the step uses every scheduler worker instead of the coordinator's alone.
// Every operation is elementwise, so the cut changes no bit: the same gradients in the same order
// give the same weights whatever `parts` is.
//
// Thread-safety: one caller (the coordinator) at a time; step() runs on a green thread.
class Updater {
 public:
  Updater(const Params& initial, const chanflow::AdamConfig& config, int parts);
  Updater(const Updater&) = delete;
  Updater& operator=(const Updater&) = delete;

  // One optimiser step with the mean gradient sum(shards[i]->grads) / rows (the sum in the order
  // given), publishing the result as new tensors tagged `version` (published versions are never
  // written again). Blocks the calling green thread until every piece is done; rethrows the first
  // piece's error.
  ParamsPtr step(const std::vector<const StepOutput*>& shards, int64_t rows, int64_t version);
  // The latest weights (those of the last step, or the initial ones).
  const ParamsPtr& latest() const { return latest_; }

 private:
  // A piece of the work: `segs` (param, begin, end) ranges, the Adam updating them (its state
  // is the ranges' m and v) and the ranges' weights and gradients as tensors of their own.
  struct Segment {
    std::size_t param;
    int64_t begin, end;
  };
  struct Part {
    std::vector<Segment> segs;
    std::unique_ptr<chanflow::Adam> adam;
    std::vector<chanflow::Tensor> w, g;
  };
  void run_part(Part& part, const std::vector<const StepOutput*>& shards, float scale,
                const std::vector<float*>& out);

  std::vector<Part> parts_;
  ParamsPtr latest_;
};

}  // namespace training
