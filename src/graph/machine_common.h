// machine_common.h — what both machines share: input resolution and error classification.
#pragma once

#include <exception>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/graph/graph.h"
#include "graph_impl.h"

namespace chanflow::detail {

// For each node id < size: the input's value for this run (bindings, else Graph::set), or an
// undefined tensor for non-inputs. Throws Error/ShapeError/TypeError for a binding to a foreign
// node, a non-input, a mismatched tensor, or a used input with no value (`used[i]`: some node of
// the machine reads node i; an unused input may stay unbound).
std::vector<Tensor> resolve_inputs(GraphImpl* g, int64_t size, const Bindings& bindings,
                                   const std::vector<bool>& used);

// The same checks as resolve_inputs, but only the values of the nodes listed in `inputs` (the ids
// of the machine's input nodes), in that order: O(bindings + inputs), not O(size), per run.
// `slot_of[id]` is the index of input `id` in `inputs` (any value for non-inputs).
std::vector<Tensor> resolve_input_values(GraphImpl* g, int64_t size, const Bindings& bindings,
                                         const std::vector<bool>& used,
                                         const std::vector<int64_t>& inputs,
                                         const std::vector<uint32_t>& slot_of);

// used[i]: node i is an operand of some node among the first `size`.
std::vector<bool> used_nodes(const GraphImpl* g, int64_t size);

// Throws Error when `node` is not one of the first `size` nodes of `g`.
void check_node(const GraphImpl* g, int64_t size, const Node& node, const char* what);

// A MachineError::Failure for node `n` failing with `e`.
MachineError::Failure failure_of(const NodeData& n, std::exception_ptr e);

}  // namespace chanflow::detail
