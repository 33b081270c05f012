// pipeline.h — data-parallel training of a model (model.h), written as a Go programmer would:
//
//   loader ──shards──▶ worker 0..K-1 ──gradients──▶ coordinator ──weights v+1──▶ workers
//    (decode,   (buffered   (GoMachine:          (select: gradients,     │
//     shuffle,   chan)       forward+backward)     evaluations, ticker,   └──snapshots──▶ evaluator
//     batch)                                      deadline)                (the model's .pbtxt
//                                                                           on the executor)
//
// * The loader green thread shuffles the training rows (seeded) every epoch, cuts each batch
//   into `shards_per_step` equal shards (zero-padded: padding rows add nothing), decodes their
//   samples into tensors and sends them on a bounded channel, tagged with their optimiser step.
// * K worker green threads take shards as they come (a fast worker takes more: the load
//   balances itself), get the weights version the shard's step uses — step s uses version
//   s - delay; delay 0 is synchronous data-parallel SGD; delay 1 (the default) lets workers
//   compute step s + 1 while the coordinator sums and applies step s, instead of meeting at a
//   barrier every step (one-step-stale gradients, as pipelined data-parallel training does) —
//   from the versioned WeightStore (waiting for it if it is not out yet),
//   run forward + backward on their own GoMachine and send the gradients.
// * The coordinator selects over gradients, evaluation results, a progress ticker (cf::after)
//   and the run's deadline (a Context). Once it has all of a step's gradients it sums them in
//   shard order, applies Adam and publishes the next version. After each epoch it hands a
//   snapshot to the evaluator. Which worker computed a shard does not change a bit of the
//   result: a seed gives the same run with any number of workers.
// * The evaluator green thread runs the model's evaluation program on the executor for each
//   snapshot; the test batches reach the program over channels bound to the run.
// A deadline stops training where it is (the last weights are evaluated); any error cancels
// every stage (a cf::Group) and train() rethrows it.
//
//   TrainResult r = train(mlp, data, split, {.workers = 2, .epochs = 40, .eval_program = path});
//
// Before the clock starts, every worker's GoMachine runs once on an all-padding shard (warm-up:
// OpenBLAS's first call allocates its buffers, the tensor buffer cache fills; ~6 ms otherwise
// charged to the first step). The warm-up changes no weights and no result bit.
//
// Thread-safety: train() blocks the calling OS thread until the run ends; it creates its own
// scheduler of `workers` OS threads and must not be called from a green thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataset.h"
#include "model.h"
#include "progress.h"

namespace training {

struct TrainConfig {
  int workers = 2;  // worker green threads, and the scheduler's OS threads
  int epochs = 40;
  int64_t batch_size = 512;     // rows per optimiser step
  int64_t shards_per_step = 4;  // a batch is cut into this many GoMachine runs (any worker's)
  int64_t delay = 1;            // step s's gradients use weights version s - delay (0: sync)
  // Pin the scheduler's worker threads to separate CPUs (SchedulerOptions::pin_workers).
  bool pin_workers = true;
  uint64_t seed = 1;
  chanflow::AdamConfig adam{.lr = 5e-3};  // cf::Adam (graph/optimizer.h)
  std::chrono::milliseconds deadline{0};  // 0: none
  std::string eval_program;               // path of the model's evaluation program (.pbtxt)
  int64_t eval_batch = 128;
  // Stream the trace (cf::trace: green threads, channels, ops, GoMachine nodes, the stages) to
  // this file, for the first trace_steps optimiser steps; empty: no trace.
  std::string trace_path;
  int64_t trace_steps = 16;
  std::size_t trace_max_events = 1'000'000;  // cf::trace::Options::max_events
  std::chrono::milliseconds tick{200};
  std::function<void(const ProgressSnapshot&)> on_tick;        // from the coordinator
  std::function<void(const ProgressSnapshot&)> on_epoch_done;  // after each epoch's eval
};

struct EpochMetrics {
  int epoch = 0;
  double time_s = 0;      // since the start, when the epoch's last step was applied
  double train_loss = 0;  // mean cross-entropy over the epoch's rows
  double train_accuracy = 0;
  double test_accuracy = 0;  // the evaluation program on the weights after this epoch
  double samples_per_s = 0;  // this epoch's training throughput
};

struct TrainResult {
  std::vector<EpochMetrics> epochs;  // completed epochs
  double test_accuracy = 0;          // of the final weights
  int64_t test_rows = 0;
  double final_train_loss = 0;  // the last epoch's mean loss (the cut-short one's after a deadline)
  int64_t steps = 0;            // optimiser steps applied
  int64_t samples = 0;          // training rows processed
  double train_seconds = 0;     // first shard sent -> last step applied
  double wall_seconds = 0;      // including the final evaluation
  double samples_per_s = 0;     // samples / train_seconds
  bool deadline_reached = false;
  uint64_t weights_hash = 0;  // FNV-1a of the final weights' bytes (reproducibility)
  std::string trace_path;     // the trace file written (config.trace_path), or empty
  int64_t graph_nodes = 0;    // nodes per worker GoMachine (forward + backward)
};

// Throws chanflow::Error for a bad configuration (naming the option), the evaluation program's
// ProgramError, or the first error of any stage.
TrainResult train(const Model& model, const Dataset& data, const Split& split,
                  const TrainConfig& config);

}  // namespace training
