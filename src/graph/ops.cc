// ops.cc — graph op builders with build-time shape and dtype inference.
#include "chanflow/graph/ops.h"

#include <algorithm>
#include <sstream>

#include "chanflow/core/error.h"
#include "graph_impl.h"

namespace chanflow {
namespace {

using detail::GraphImpl;
using detail::NodeData;

// The name the node being built will get (for errors raised before it exists).
std::string pending_name(GraphImpl* g, OpKind op) {
  return std::string(op_kind_name(op)) + std::to_string(g->nodes.size());
}

GraphImpl* graph_of(OpKind op, std::initializer_list<const Node*> operands) {
  GraphImpl* g = nullptr;
  for (const Node* n : operands) {
    if (!n->valid()) {
      CHANFLOW_THROW(Error) << op_kind_name(op) << ": operand is an invalid (default) Node";
    }
    if (g == nullptr) {
      g = n->impl();
    } else if (g != n->impl()) {
      CHANFLOW_THROW(Error) << op_kind_name(op) << ": operands '" << (*operands.begin())->name()
                            << "' and '" << n->name() << "' belong to different graphs";
    }
  }
  return g;
}

NodeData& make(GraphImpl* g, OpKind op, std::vector<int64_t> operands, Shape shape, DType dtype) {
  NodeData& n = g->nodes.emplace_back();
  n.id = static_cast<int64_t>(g->nodes.size()) - 1;
  n.op = op;
  n.name = std::string(op_kind_name(op)) + std::to_string(n.id);
  n.operands = std::move(operands);
  n.shape = std::move(shape);
  n.dtype = dtype;
  return n;
}

// NumPy broadcasting; nullopt when the shapes do not broadcast.
std::optional<Shape> try_broadcast(const Shape& a, const Shape& b) {
  const std::size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  for (std::size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

Node binary(OpKind op, const Node& a, const Node& b) {
  GraphImpl* g = graph_of(op, {&a, &b});
  const NodeData& da = a.data();
  const NodeData& db = b.data();
  std::optional<Shape> shape = try_broadcast(da.shape, db.shape);
  if (!shape) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, op) << "' (" << op_kind_name(op)
                               << " of '" << da.name << "' and '" << db.name << "'): shapes "
                               << shape_to_string(da.shape) << " and " << shape_to_string(db.shape)
                               << " do not broadcast";
  }
  const DType p = promote_types(da.dtype, db.dtype);
  DType dt = p;
  switch (op) {
    case OpKind::kSub:
      if (p == DType::kBool) {
        CHANFLOW_THROW(TypeError) << "node '" << pending_name(g, op) << "' (sub of '" << da.name
                                  << "' and '" << db.name << "'): sub of bool tensors";
      }
      break;
    case OpKind::kDiv:
      dt = is_floating(p) ? p : DType::kFloat64;
      break;
    case OpKind::kPow:
      dt = p == DType::kBool ? DType::kInt8 : p;
      break;
    case OpKind::kEqual:
    case OpKind::kNotEqual:
    case OpKind::kLess:
    case OpKind::kLessEqual:
    case OpKind::kGreater:
    case OpKind::kGreaterEqual:
      dt = DType::kBool;
      break;
    default:
      break;
  }
  NodeData& n = make(g, op, {a.id(), b.id()}, std::move(*shape), dt);
  return {g, n.id};
}

Node unary(OpKind op, const Node& a) {
  GraphImpl* g = graph_of(op, {&a});
  const NodeData& da = a.data();
  DType dt = da.dtype;
  switch (op) {
    case OpKind::kNeg:
      if (dt == DType::kBool) {
        CHANFLOW_THROW(TypeError) << "node '" << pending_name(g, op) << "' (neg of '" << da.name
                                  << "'): neg of a bool tensor";
      }
      break;
    case OpKind::kAbs:
    case OpKind::kRelu:
      break;
    default:
      dt = float_result_type(dt);
      break;
  }
  NodeData& n = make(g, op, {a.id()}, da.shape, dt);
  return {g, n.id};
}

int64_t normalize_axis(GraphImpl* g, OpKind op, const NodeData& a, int64_t axis) {
  const auto nd = static_cast<int64_t>(a.shape.size());
  const int64_t ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, op) << "' (" << op_kind_name(op)
                               << " of '" << a.name << "'): axis " << axis
                               << " out of range for shape " << shape_to_string(a.shape);
  }
  return ax;
}

Node reduce(OpKind op, const Node& a, const Axes& axes, bool keepdims) {
  GraphImpl* g = graph_of(op, {&a});
  const NodeData& da = a.data();
  Axes norm;
  if (axes.empty()) {
    for (int64_t i = 0; i < static_cast<int64_t>(da.shape.size()); ++i) norm.push_back(i);
  } else {
    for (int64_t ax : axes) norm.push_back(normalize_axis(g, op, da, ax));
    std::sort(norm.begin(), norm.end());
    if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) {
      CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, op) << "' (" << op_kind_name(op)
                                 << " of '" << da.name << "'): repeated axis";
    }
  }
  Shape shape;
  for (int64_t i = 0; i < static_cast<int64_t>(da.shape.size()); ++i) {
    const bool reduced = std::binary_search(norm.begin(), norm.end(), i);
    if (reduced && (op == OpKind::kMax || op == OpKind::kMin) && da.shape[i] == 0) {
      CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, op) << "' (" << op_kind_name(op)
                                 << " of '" << da.name << "'): zero-size axis " << i << " of shape "
                                 << shape_to_string(da.shape);
    }
    if (!reduced) {
      shape.push_back(da.shape[i]);
    } else if (keepdims) {
      shape.push_back(1);
    }
  }
  DType dt = da.dtype;
  if (op == OpKind::kSum && !is_floating(dt)) dt = DType::kInt64;
  if (op == OpKind::kMean && !is_floating(dt)) dt = DType::kFloat64;
  NodeData& n = make(g, op, {a.id()}, std::move(shape), dt);
  n.axes = std::move(norm);
  n.keepdims = keepdims;
  return {g, n.id};
}

Node scalar_like(const Node& a, double v) {
  GraphImpl* g = graph_of(OpKind::kConstant, {&a});
  NodeData& n = make(g, OpKind::kConstant, {}, Shape{}, a.dtype());
  n.value = Tensor::scalar(v, a.dtype());
  return {g, n.id};
}

}  // namespace

Node add(const Node& a, const Node& b) { return binary(OpKind::kAdd, a, b); }
Node sub(const Node& a, const Node& b) { return binary(OpKind::kSub, a, b); }
Node mul(const Node& a, const Node& b) { return binary(OpKind::kMul, a, b); }
Node div(const Node& a, const Node& b) { return binary(OpKind::kDiv, a, b); }
Node pow(const Node& a, const Node& b) { return binary(OpKind::kPow, a, b); }
Node maximum(const Node& a, const Node& b) { return binary(OpKind::kMaximum, a, b); }
Node minimum(const Node& a, const Node& b) { return binary(OpKind::kMinimum, a, b); }
Node equal(const Node& a, const Node& b) { return binary(OpKind::kEqual, a, b); }
Node not_equal(const Node& a, const Node& b) { return binary(OpKind::kNotEqual, a, b); }
Node less(const Node& a, const Node& b) { return binary(OpKind::kLess, a, b); }
Node less_equal(const Node& a, const Node& b) { return binary(OpKind::kLessEqual, a, b); }
Node greater(const Node& a, const Node& b) { return binary(OpKind::kGreater, a, b); }
Node greater_equal(const Node& a, const Node& b) { return binary(OpKind::kGreaterEqual, a, b); }

Node operator+(const Node& a, const Node& b) { return add(a, b); }
Node operator-(const Node& a, const Node& b) { return sub(a, b); }
Node operator*(const Node& a, const Node& b) { return mul(a, b); }
Node operator/(const Node& a, const Node& b) { return div(a, b); }
Node operator-(const Node& a) { return neg(a); }
Node operator+(const Node& a, double b) { return add(a, scalar_like(a, b)); }
Node operator-(const Node& a, double b) { return sub(a, scalar_like(a, b)); }
Node operator*(const Node& a, double b) { return mul(a, scalar_like(a, b)); }
Node operator/(const Node& a, double b) { return div(a, scalar_like(a, b)); }
Node operator+(double a, const Node& b) { return add(scalar_like(b, a), b); }
Node operator-(double a, const Node& b) { return sub(scalar_like(b, a), b); }
Node operator*(double a, const Node& b) { return mul(scalar_like(b, a), b); }
Node operator/(double a, const Node& b) { return div(scalar_like(b, a), b); }

Node neg(const Node& a) { return unary(OpKind::kNeg, a); }
Node abs(const Node& a) { return unary(OpKind::kAbs, a); }
Node relu(const Node& a) { return unary(OpKind::kRelu, a); }
Node exp(const Node& a) { return unary(OpKind::kExp, a); }
Node log(const Node& a) { return unary(OpKind::kLog, a); }
Node sqrt(const Node& a) { return unary(OpKind::kSqrt, a); }
Node tanh(const Node& a) { return unary(OpKind::kTanh, a); }
Node sigmoid(const Node& a) { return unary(OpKind::kSigmoid, a); }
Node square(const Node& a) { return mul(a, a); }

Node sum(const Node& a, const Axes& axes, bool keepdims) {
  return reduce(OpKind::kSum, a, axes, keepdims);
}
Node mean(const Node& a, const Axes& axes, bool keepdims) {
  return reduce(OpKind::kMean, a, axes, keepdims);
}
Node max(const Node& a, const Axes& axes, bool keepdims) {
  return reduce(OpKind::kMax, a, axes, keepdims);
}
Node min(const Node& a, const Axes& axes, bool keepdims) {
  return reduce(OpKind::kMin, a, axes, keepdims);
}

Node argmax(const Node& a, std::optional<int64_t> axis, bool keepdims) {
  GraphImpl* g = graph_of(OpKind::kArgmax, {&a});
  const NodeData& da = a.data();
  if (shape_numel(da.shape) == 0) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kArgmax) << "' (argmax of '"
                               << da.name << "'): zero-size shape " << shape_to_string(da.shape);
  }
  Shape shape;
  std::optional<int64_t> ax;
  if (axis) {
    ax = normalize_axis(g, OpKind::kArgmax, da, *axis);
    for (int64_t i = 0; i < static_cast<int64_t>(da.shape.size()); ++i) {
      if (i != *ax) {
        shape.push_back(da.shape[i]);
      } else if (keepdims) {
        shape.push_back(1);
      }
    }
  } else if (keepdims) {
    shape.assign(da.shape.size(), 1);
  }
  NodeData& n = make(g, OpKind::kArgmax, {a.id()}, std::move(shape), DType::kInt64);
  n.axis = ax;
  n.keepdims = keepdims;
  return {g, n.id};
}

namespace {
Node softmax_like(OpKind op, const Node& a, int64_t axis) {
  GraphImpl* g = graph_of(op, {&a});
  const NodeData& da = a.data();
  const int64_t ax = normalize_axis(g, op, da, axis);
  NodeData& n = make(g, op, {a.id()}, da.shape, float_result_type(da.dtype));
  n.axis = ax;
  return {g, n.id};
}
}  // namespace

Node softmax(const Node& a, int64_t axis) { return softmax_like(OpKind::kSoftmax, a, axis); }
Node log_softmax(const Node& a, int64_t axis) { return softmax_like(OpKind::kLogSoftmax, a, axis); }

Node matmul(const Node& a, const Node& b) {
  GraphImpl* g = graph_of(OpKind::kMatmul, {&a, &b});
  const NodeData& da = a.data();
  const NodeData& db = b.data();
  auto fail = [&](const char* why) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kMatmul) << "' (matmul of '"
                               << da.name << "' and '" << db.name << "'): " << why << ": "
                               << shape_to_string(da.shape) << " and " << shape_to_string(db.shape);
  };
  if (da.shape.empty() || db.shape.empty()) fail("0-d operand");
  Shape sa = da.shape;
  Shape sb = db.shape;
  const bool va = sa.size() == 1;
  const bool vb = sb.size() == 1;
  if (va) sa.insert(sa.begin(), 1);
  if (vb) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2]) fail("inner extents differ");
  Shape ba(sa.begin(), sa.end() - 2);
  Shape bb(sb.begin(), sb.end() - 2);
  std::optional<Shape> batch = try_broadcast(ba, bb);
  if (!batch) fail("batch axes do not broadcast");
  Shape out = *batch;
  if (!va) out.push_back(sa[sa.size() - 2]);
  if (!vb) out.push_back(sb.back());
  NodeData& n =
      make(g, OpKind::kMatmul, {a.id(), b.id()}, std::move(out), promote_types(da.dtype, db.dtype));
  return {g, n.id};
}

Node batched_matmul(const Node& a, const Node& b) {
  graph_of(OpKind::kMatmul, {&a, &b});
  if (a.shape().size() < 3 || b.shape().size() < 3) {
    CHANFLOW_THROW(ShapeError) << "batched_matmul of '" << a.name() << "' and '" << b.name()
                               << "': both operands must be at least 3-d, got "
                               << shape_to_string(a.shape()) << " and "
                               << shape_to_string(b.shape());
  }
  return matmul(a, b);
}

Node reshape(const Node& a, const Shape& shape) {
  GraphImpl* g = graph_of(OpKind::kReshape, {&a});
  const NodeData& da = a.data();
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kReshape)
                                 << "' (reshape of '" << da.name << "'): bad target shape "
                                 << shape_to_string(shape);
    } else {
      known *= out[i];
    }
  }
  const int64_t total = shape_numel(da.shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kReshape)
                                 << "' (reshape of '" << da.name << "'): cannot reshape "
                                 << shape_to_string(da.shape) << " to " << shape_to_string(shape);
    }
    out[static_cast<std::size_t>(infer)] = total / known;
  } else if (known != total) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kReshape) << "' (reshape of '"
                               << da.name << "'): cannot reshape " << shape_to_string(da.shape)
                               << " to " << shape_to_string(shape);
  }
  NodeData& n = make(g, OpKind::kReshape, {a.id()}, out, da.dtype);
  n.target = std::move(out);
  return {g, n.id};
}

Node transpose(const Node& a, const std::vector<int64_t>& perm) {
  GraphImpl* g = graph_of(OpKind::kTranspose, {&a});
  const NodeData& da = a.data();
  const auto nd = static_cast<int64_t>(da.shape.size());
  std::vector<int64_t> p = perm;
  if (p.empty()) {
    for (int64_t i = nd - 1; i >= 0; --i) p.push_back(i);
  }
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int64_t>(p.size()) == nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = sorted[static_cast<std::size_t>(i)] == i;
  if (!ok) {
    std::ostringstream os;
    for (int64_t v : perm) os << v << " ";
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kTranspose)
                               << "' (transpose of '" << da.name << "'): [" << os.str()
                               << "] is not a permutation of the axes of shape "
                               << shape_to_string(da.shape);
  }
  Shape out;
  for (int64_t ax : p) out.push_back(da.shape[static_cast<std::size_t>(ax)]);
  NodeData& n = make(g, OpKind::kTranspose, {a.id()}, std::move(out), da.dtype);
  n.perm = std::move(p);
  return {g, n.id};
}

Node cast(const Node& a, DType dtype) {
  GraphImpl* g = graph_of(OpKind::kCast, {&a});
  NodeData& n = make(g, OpKind::kCast, {a.id()}, a.shape(), dtype);
  n.to = dtype;
  return {g, n.id};
}

Node broadcast_to(const Node& a, const Shape& shape) {
  GraphImpl* g = graph_of(OpKind::kBroadcastTo, {&a});
  const NodeData& da = a.data();
  std::optional<Shape> b = try_broadcast(da.shape, shape);
  if (!b || *b != shape) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kBroadcastTo)
                               << "' (broadcast_to of '" << da.name
                               << "'): " << shape_to_string(da.shape) << " does not broadcast to "
                               << shape_to_string(shape);
  }
  NodeData& n = make(g, OpKind::kBroadcastTo, {a.id()}, shape, da.dtype);
  n.target = shape;
  return {g, n.id};
}

Node sum_to(const Node& a, const Shape& shape) {
  GraphImpl* g = graph_of(OpKind::kSumTo, {&a});
  const NodeData& da = a.data();
  std::optional<Shape> b = try_broadcast(shape, da.shape);
  if (!b || *b != da.shape) {
    CHANFLOW_THROW(ShapeError) << "node '" << pending_name(g, OpKind::kSumTo) << "' (sum_to of '"
                               << da.name << "'): " << shape_to_string(shape)
                               << " does not broadcast to " << shape_to_string(da.shape);
  }
  NodeData& n = make(g, OpKind::kSumTo, {a.id()}, shape, da.dtype);
  n.target = shape;
  return {g, n.id};
}

}  // namespace chanflow
