// grad.cc — reverse-mode differentiation: one vector-Jacobian product rule per op.
#include "chanflow/graph/grad.h"

#include <map>
#include <numeric>

#include "chanflow/core/error.h"
#include "chanflow/graph/ops.h"
#include "graph_impl.h"

namespace chanflow {
namespace {

using detail::GraphImpl;
using detail::NodeData;

Node constant_in(GraphImpl* g, const Tensor& t) { return Graph(g->shared_from_this()).constant(t); }

// Shapes a gradient to its operand: sums broadcast axes away and casts to the operand's dtype.
Node fit(const Node& grad, const Node& operand) {
  Node r = grad;
  if (r.shape() != operand.shape()) r = sum_to(r, operand.shape());
  if (r.dtype() != operand.dtype()) r = cast(r, operand.dtype());
  return r;
}

Node as_float(const Node& mask, DType dt) { return cast(mask, dt); }

Node swap_last2(const Node& a) {
  const auto nd = static_cast<int64_t>(a.shape().size());
  std::vector<int64_t> perm(static_cast<std::size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(nd - 1)], perm[static_cast<std::size_t>(nd - 2)]);
  return transpose(a, perm);
}

// Shape of a reduction's result with keepdims=true.
Shape keep_shape(const Shape& in, const Axes& axes) {
  Shape s = in;
  for (int64_t ax : axes) s[static_cast<std::size_t>(ax)] = 1;
  return s;
}

// Gradient of node `y` with upstream gradient `g`: one entry per operand (invalid Node = none).
std::vector<Node> vjp(const Node& y, const Node& g, const std::vector<bool>& want) {
  const NodeData& n = y.data();
  std::vector<Node> x = y.inputs();
  std::vector<Node> out(x.size());
  const DType dt = n.dtype;
  auto need = [&](std::size_t i) { return want[i] && is_floating(x[i].dtype()); };
  switch (n.op) {
    case OpKind::kInput:
    case OpKind::kConstant:
    case OpKind::kEqual:
    case OpKind::kNotEqual:
    case OpKind::kLess:
    case OpKind::kLessEqual:
    case OpKind::kGreater:
    case OpKind::kGreaterEqual:
    case OpKind::kArgmax:
      break;
    case OpKind::kAdd:
      if (need(0)) out[0] = fit(g, x[0]);
      if (need(1)) out[1] = fit(g, x[1]);
      break;
    case OpKind::kSub:
      if (need(0)) out[0] = fit(g, x[0]);
      if (need(1)) out[1] = fit(neg(g), x[1]);
      break;
    case OpKind::kMul:
      if (need(0)) out[0] = fit(g * x[1], x[0]);
      if (need(1)) out[1] = fit(g * x[0], x[1]);
      break;
    case OpKind::kDiv:
      if (need(0)) out[0] = fit(g / x[1], x[0]);
      if (need(1)) out[1] = fit(neg(g * y / x[1]), x[1]);
      break;
    case OpKind::kPow:
      if (need(0)) out[0] = fit(g * x[1] * pow(x[0], x[1] - 1.0), x[0]);
      if (need(1)) out[1] = fit(g * y * log(x[0]), x[1]);
      break;
    case OpKind::kMaximum:
    case OpKind::kMinimum: {
      Node mask = as_float(
          n.op == OpKind::kMaximum ? greater_equal(x[0], x[1]) : less_equal(x[0], x[1]), dt);
      if (need(0)) out[0] = fit(g * mask, x[0]);
      if (need(1)) out[1] = fit(g * (1.0 - mask), x[1]);
      break;
    }
    case OpKind::kNeg:
      if (need(0)) out[0] = neg(g);
      break;
    case OpKind::kAbs:
      if (need(0)) {
        Node zero = constant_in(y.impl(), Tensor::scalar(0, dt));
        out[0] = g * (as_float(greater(x[0], zero), dt) - as_float(less(x[0], zero), dt));
      }
      break;
    case OpKind::kExp:
      if (need(0)) out[0] = fit(g * y, x[0]);
      break;
    case OpKind::kLog:
      if (need(0)) out[0] = fit(g / x[0], x[0]);
      break;
    case OpKind::kSqrt:
      if (need(0)) out[0] = fit(g * 0.5 / y, x[0]);
      break;
    case OpKind::kTanh:
      if (need(0)) out[0] = fit(g * (1.0 - y * y), x[0]);
      break;
    case OpKind::kSigmoid:
      if (need(0)) out[0] = fit(g * y * (1.0 - y), x[0]);
      break;
    case OpKind::kRelu:
      if (need(0)) {
        Node zero = constant_in(y.impl(), Tensor::scalar(0, dt));
        out[0] = g * as_float(greater(x[0], zero), dt);
      }
      break;
    case OpKind::kSum:
    case OpKind::kMean:
      if (need(0)) {
        const Shape ks = keep_shape(x[0].shape(), n.axes);
        Node gk = g.shape() == ks ? g : reshape(g, ks);
        Node b = broadcast_to(gk, x[0].shape());
        if (n.op == OpKind::kMean) {
          int64_t count = 1;
          for (int64_t ax : n.axes) count *= x[0].shape()[static_cast<std::size_t>(ax)];
          b = b * (1.0 / static_cast<double>(count == 0 ? 1 : count));
        }
        out[0] = fit(b, x[0]);
      }
      break;
    case OpKind::kMax:
    case OpKind::kMin:
      if (need(0)) {
        const Shape ks = keep_shape(x[0].shape(), n.axes);
        Node yk = y.shape() == ks ? y : reshape(y, ks);
        Node gk = g.shape() == ks ? g : reshape(g, ks);
        Node mask = as_float(equal(x[0], yk), dt);
        Node count = sum(mask, n.axes, /*keepdims=*/true);
        out[0] = fit(mask * gk / count, x[0]);
      }
      break;
    case OpKind::kSoftmax:
      if (need(0)) out[0] = fit(y * (g - sum(g * y, {*n.axis}, true)), x[0]);
      break;
    case OpKind::kLogSoftmax:
      if (need(0)) out[0] = fit(g - exp(y) * sum(g, {*n.axis}, true), x[0]);
      break;
    case OpKind::kMatmul: {
      const bool va = x[0].shape().size() == 1;
      const bool vb = x[1].shape().size() == 1;
      Node a = va ? reshape(x[0], {1, x[0].shape()[0]}) : x[0];
      Node b = vb ? reshape(x[1], {x[1].shape()[0], 1}) : x[1];
      Shape gs = g.shape();
      if (vb) gs.push_back(1);
      if (va) gs.insert(gs.end() - 1, 1);
      Node gg = gs == g.shape() ? g : reshape(g, gs);
      if (need(0)) {
        Node da = matmul(gg, swap_last2(b));
        if (da.shape() != a.shape()) da = sum_to(da, a.shape());
        if (va) da = reshape(da, x[0].shape());
        out[0] = fit(da, x[0]);
      }
      if (need(1)) {
        Node db = matmul(swap_last2(a), gg);
        if (db.shape() != b.shape()) db = sum_to(db, b.shape());
        if (vb) db = reshape(db, x[1].shape());
        out[1] = fit(db, x[1]);
      }
      break;
    }
    case OpKind::kReshape:
      if (need(0)) out[0] = reshape(g, x[0].shape());
      break;
    case OpKind::kTranspose:
      if (need(0)) {
        std::vector<int64_t> inv(n.perm.size());
        for (std::size_t i = 0; i < n.perm.size(); ++i) {
          inv[static_cast<std::size_t>(n.perm[i])] = static_cast<int64_t>(i);
        }
        out[0] = transpose(g, inv);
      }
      break;
    case OpKind::kCast:
      if (need(0) && is_floating(n.dtype)) out[0] = cast(g, x[0].dtype());
      break;
    case OpKind::kBroadcastTo:
      if (need(0)) out[0] = sum_to(g, x[0].shape());
      break;
    case OpKind::kSumTo:
      if (need(0)) out[0] = broadcast_to(g, x[0].shape());
      break;
    case OpKind::kCustom:
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (need(i)) {
          CHANFLOW_THROW(Error) << "grad: " << detail::describe(n)
                                << " is a custom op and has no gradient";
        }
      }
      break;
  }
  return out;
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
