// grad.cc — reverse-mode differentiation: walks the graph backwards from the loss, applying each
// node's vector-Jacobian product (its row's vjp, op_table.cc) and summing gradients per node.
#include "chanflow/graph/grad.h"

#include <map>

#include "chanflow/core/error.h"
#include "chanflow/graph/ops.h"
#include "graph_impl.h"
#include "op_table.h"

namespace chanflow {
namespace {

using detail::GraphImpl;
using detail::NodeData;

Node constant_in(GraphImpl* g, const Tensor& t) { return Graph(g->shared_from_this()).constant(t); }

// Gradient of node `y` with upstream gradient `g`: one entry per operand (invalid Node = none),
// by the node's row.
std::vector<Node> vjp(const Node& y, const Node& g, const std::vector<bool>& want) {
  const NodeData& n = y.data();
  detail::Vjp v{n, y, g, y.inputs(), {}, want};
  v.out.resize(v.x.size());
  if (const auto rule = detail::op_row(n.op).vjp; rule != nullptr) rule(v);
  return std::move(v.out);
}

}  // namespace

std::vector<Node> grad(const Node& loss, const std::vector<Node>& wrt) {
  if (!loss.valid()) CHANFLOW_THROW(Error) << "grad: invalid loss node";
  GraphImpl* g = loss.impl();
  const NodeData& ld = loss.data();
  if (shape_numel(ld.shape) != 1) {
    CHANFLOW_THROW(ShapeError) << "grad: the loss " << detail::describe(ld)
                               << " must have one element, its shape is "
                               << shape_to_string(ld.shape);
  }
  if (!is_floating(ld.dtype)) {
    CHANFLOW_THROW(TypeError) << "grad: the loss " << detail::describe(ld)
                              << " must be floating point, it is " << ld.dtype;
  }
  for (const Node& w : wrt) {
    if (w.impl() != g) {
      CHANFLOW_THROW(Error) << "grad: a node of wrt is not in the loss's graph";
    }
  }
  const int64_t top = loss.id();
  // needs[i]: node i is in wrt or depends on a node of wrt (so gradients must reach it).
  std::vector<bool> needs(static_cast<std::size_t>(top + 1), false);
  for (const Node& w : wrt) {
    if (w.id() <= top) needs[static_cast<std::size_t>(w.id())] = true;
  }
  for (int64_t i = 0; i <= top; ++i) {
    for (int64_t o : g->nodes[static_cast<std::size_t>(i)].operands) {
      if (needs[static_cast<std::size_t>(o)]) needs[static_cast<std::size_t>(i)] = true;
    }
  }
  std::map<int64_t, Node> acc;
  if (needs[static_cast<std::size_t>(top)]) {
    acc[top] = constant_in(g, Tensor::ones(ld.shape, ld.dtype));
  }
  for (int64_t i = top; i >= 0; --i) {
    auto it = acc.find(i);
    if (it == acc.end()) continue;
    Node y(g, i);
    const std::vector<int64_t> ops = g->nodes[static_cast<std::size_t>(i)].operands;
    std::vector<bool> want(ops.size());
    bool any = false;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      want[k] = needs[static_cast<std::size_t>(ops[k])];
      any = any || want[k];
    }
    if (!any) continue;
    std::vector<Node> gs = vjp(y, it->second, want);
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (!gs[k].valid()) continue;
      auto [pos, inserted] = acc.emplace(ops[k], gs[k]);
      if (!inserted) pos->second = add(pos->second, gs[k]);
    }
  }
  std::vector<Node> result;
  for (const Node& w : wrt) {
    auto it = acc.find(w.id());
    if (it != acc.end() && w.id() <= top) {
      result.push_back(it->second);
    } else {
      result.push_back(constant_in(g, Tensor::zeros(w.shape(), w.dtype())));
    }
  }
  return result;
}

}  // namespace chanflow
