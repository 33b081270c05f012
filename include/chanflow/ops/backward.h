// backward.h — program backward: append_backward adds to a program the ops that compute the
// gradients of a loss, as Paddle Fluid's append_backward did, from the op table's gradient rules
// (the same rules cf::grad applies to graphs).
//
//   cf::BackwardResult r = cf::append_backward(program, "mean_0.tmp_0");
//   for (const auto& [param, grad] : r.params_and_grads) { ... }   // ("fc_0.w_0", "fc_0.w_0@GRAD")
//   executor.run(r.program, feed, {"fc_0.w_0@GRAD"});
//
// Naming is Paddle's: the gradient of variable `x` is `x@GRAD`; when several ops contribute to
// it, each contribution is `x@GRAD@RENAME@<k>` and a `sum` op adds them into `x@GRAD`. The
// loss's own gradient is a `fill_constant` of ones. Gradient ops carry Paddle's `op_role`
// attribute (1: backward; 257 on the loss's fill_constant), which Program clones for testing use
// to drop them.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/ir/program.h"

namespace chanflow {

struct BackwardResult {
  Program program;  // the given program with the gradient ops and variables appended to block 0
  // (parameter, its gradient variable) for each parameter a gradient reaches, in parameter order.
  std::vector<std::pair<std::string, std::string>> params_and_grads;
};

// Appends the backward pass of `loss` (a floating-point variable of block 0 with one element) to
// block 0. `parameter_list` names the variables to differentiate with respect to; empty means
// every persistable floating-point tensor variable of block 0 (Paddle's trainable parameters).
// No gradient flows into or through a variable of `no_grad_set` (Paddle's stop_gradient).
// Only the ops of block 0 up to the last one writing `loss` take part.
//
// Throws Error naming the variable or the op (block 0, its index and type) when: the loss or a
// parameter is not a floating-point tensor variable of block 0; the loss depends, through a
// variable that needs a gradient, on an op without a gradient rule (`while`,
// `conditional_block`, `go`, `select`, channel ops, or a table op saying why, e.g. accuracy);
// or a variable on the way is written by more than one op (backward needs one writer each).
// Thread-safe (a pure function of its arguments).
CHANFLOW_API BackwardResult append_backward(const Program& program, const std::string& loss,
                                            const std::vector<std::string>& parameter_list = {},
                                            const std::set<std::string>& no_grad_set = {});

}  // namespace chanflow
