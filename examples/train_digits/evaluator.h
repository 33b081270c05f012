// evaluator.h — the evaluation stage: eval.pbtxt (a chanflow program) run by the executor.
//
// The program receives test batches on two channels the C++ side binds to it (`images`: (n, 64)
// float32, `labels`: (n, 10) one-hot), computes the MLP's logits with the current weights (fed as
// tensors w1, b1, w2, b2) and counts the rows whose true-class logit is the largest, until the
// `images` channel is closed; it returns `correct` and `seen`. A feeder green thread sends the
// batches while the program runs.
//
//   Evaluator ev("examples/train_digits/eval.pbtxt", executor, digits, split.test, 128);
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

namespace train_digits {

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
  Evaluator(const std::string& program_path, chanflow::Executor& executor, const Digits& d,
            const std::vector<int64_t>& rows, int64_t batch);

  // Runs the program over every test batch with weights `p`. Throws the program's error
  // (ProgramError positioned at the op) or the context's when it is canceled.
  EvalCounts evaluate(const chanflow::Context& ctx, const Params& p);

 private:
  chanflow::Program program_;
  chanflow::Executor& executor_;
  std::vector<std::pair<chanflow::Tensor, chanflow::Tensor>> batches_;  // images, one-hot labels
};

// (n, 64) images and (n, 10) one-hot labels of `rows[begin, begin + n)`, zero-padded to
// `pad_to` rows when pad_to > n (padding rows have all-zero labels).
std::pair<chanflow::Tensor, chanflow::Tensor> make_batch(const Digits& d,
                                                         const std::vector<int64_t>& rows,
                                                         std::size_t begin, std::size_t n,
                                                         int64_t pad_to = 0);

}  // namespace train_digits
