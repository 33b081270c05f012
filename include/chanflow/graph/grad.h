// grad.h — reverse-mode automatic differentiation on an expression graph.
//
// grad(loss, wrt) appends the backward nodes to loss's graph and returns, for each node of `wrt`,
// a node holding d loss / d node (same shape and dtype as that node). Any machine runs them like
// other nodes; the GoMachine runs independent backward nodes concurrently.
//
//   cf::Node loss = cf::mean(cf::square(cf::matmul(x, w) + b - y));
//   std::vector<cf::Node> g = cf::grad(loss, {w, b});     // g[0]: shape of w, g[1]: shape of b
//
// Thread-safety: builds nodes, so like Graph building. Never blocks.
#pragma once

#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/graph/graph.h"

namespace chanflow {

// loss must have exactly one element and a floating dtype (else ShapeError/TypeError). Nodes in
// `wrt` that loss does not depend on get a zero constant. Gradients do not flow through
// comparisons, argmax or casts to non-float dtypes; through a custom op (Graph::apply) they throw
// Error naming it. Each call builds fresh backward nodes (no sharing between calls).
CHANFLOW_API std::vector<Node> grad(const Node& loss, const std::vector<Node>& wrt);

}  // namespace chanflow
