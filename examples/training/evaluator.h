// evaluator.h — the evaluation stage: the model's evaluation program (a chanflow .pbtxt) run by
// the executor.
//
// The program receives test batches on two channels the C++ side binds to it (`images`:
// (n, sample_shape...) float32, `labels`: (n, classes) one-hot), computes the model's logits with
// the current weights (fed as tensors named as the model's parameters) and counts the rows whose
// true-class logit is the largest, until the `images` channel is closed; it returns `correct` and
// `seen`. A feeder green thread sends the batches while the program runs.
//
//   Evaluator ev("examples/training/mlp_eval.pbtxt", executor, mlp, data, split.test, 128);
//   EvalCounts c = ev.evaluate(ctx, params);    // c.correct / c.seen = test accuracy
//
// Thread-safety: evaluate may be called from any green thread or OS thread, one call at a time
// per Evaluator. Blocks until the program finished.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chanflow/exec/executor.h"
#include "chanflow/ir/program.h"
#include "chanflow/runtime/context.h"
#include "dataset.h"
#include "model.h"

namespace training {

struct EvalCounts {
  int64_t correct = 0;
  int64_t seen = 0;
  double accuracy() const {
    return seen > 0 ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
  }
};

class Evaluator {
 public:
  // Loads and verifies the program (ProgramError naming the file and position) and prepares the
  // test batches (rows of `d`, `batch` at a time).
  Evaluator(const std::string& program_path, chanflow::Executor& executor, const Model& model,
            const Dataset& d, const std::vector<int64_t>& rows, int64_t batch);

  // Runs the program over every test batch with weights `p`. Throws the program's error
  // (ProgramError positioned at the op) or the context's when it is canceled.
  EvalCounts evaluate(const chanflow::Context& ctx, const Params& p);

 private:
  chanflow::Program program_;
  chanflow::Executor& executor_;
  std::vector<std::string> feeds_;  // the model's parameter names, in params() order
  std::vector<std::pair<chanflow::Tensor, chanflow::Tensor>> batches_;  // images, one-hot labels
};

}  // namespace training
