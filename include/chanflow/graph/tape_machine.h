// tape_machine.h — runs a Graph sequentially, node by node in id (topological) order.
//
// The baseline the GoMachine is measured against, and the reference it must agree with.
//
//   cf::TapeMachine t(g);
//   t.run({{x, tensor}});
//   cf::Tensor y_value = t.result(y);
//
// Thread-safety: one thread at a time per machine (run and result are not synchronised).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/graph/graph.h"
#include "chanflow/runtime/context.h"

namespace chanflow {

class CHANFLOW_API TapeMachine {
 public:
  // Runs the nodes the graph has now; nodes added later are not part of this machine.
  explicit TapeMachine(const Graph& g);

  // Computes every node in the calling thread; blocks until done. Inputs take `inputs`, else
  // their Graph::set value (else Error naming the input, unless no node reads it). An op that
  // throws makes run throw MachineError with that one node (later nodes are not computed); a
  // context that is done (checked between nodes and between chunks of large kernels) throws its
  // CanceledError or DeadlineExceededError.
  void run(const Bindings& inputs = {});
  void run(const Context& ctx, const Bindings& inputs = {});

  // The value `node` had in the last successful run. Throws Error before a successful run or for
  // a node outside the machine.
  Tensor result(const Node& node) const;

 private:
  std::shared_ptr<detail::GraphImpl> graph_;
  int64_t size_;
  std::vector<bool> used_;
  std::vector<Tensor> values_;
  bool valid_ = false;
};

}  // namespace chanflow
