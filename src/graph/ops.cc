// ops.cc — building op nodes: the operands' graph, the row's inference, the new node; and the
// arithmetic operators. The op functions themselves are defined from op_list.h in op_table.cc.
#include "chanflow/graph/ops.h"

#include "chanflow/core/error.h"
#include "graph_impl.h"
#include "op_table.h"

namespace chanflow {
namespace detail {
namespace {

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

// Appends a node of kind `k` over `operands` with the attributes set in `draft`, after its row's
// inference; nothing is appended when inference throws.
Node build(OpKind k, std::initializer_list<const Node*> operands, NodeData draft) {
  const OpRow& row = op_row(k);
  GraphImpl* g = graph_of(k, operands);
  draft.id = static_cast<int64_t>(g->nodes.size());
  draft.op = k;
  draft.name = std::string(row.name) + std::to_string(draft.id);
  Inference c{{}, draft};
  std::size_t i = 0;
  for (const Node* n : operands) {
    c.in[i++] = &n->data();
    draft.operands.push_back(n->id());
  }
  row.infer(c);
  // A deque: references to the operands' storage stay valid.
  const NodeData& n = g->nodes.emplace_back(std::move(draft));
  return {g, n.id};
}

}  // namespace

std::string Inference::prefix() const {
  std::string s = "node '" + out.name + "' (" + op_kind_name(out.op) + " of '" + in[0]->name + "'";
  if (in[1] != nullptr) s += " and '" + in[1]->name + "'";
  return s + ")";
}

Node build_binary(OpKind k, const Node& a, const Node& b, int min_rank, const char* entry) {
  if (min_rank > 0) {
    graph_of(k, {&a, &b});
    if (std::ssize(a.shape()) < min_rank || std::ssize(b.shape()) < min_rank) {
      CHANFLOW_THROW(ShapeError) << entry << " of '" << a.name() << "' and '" << b.name()
                                 << "': both operands must be at least " << min_rank << "-d, got "
                                 << shape_to_string(a.shape()) << " and "
                                 << shape_to_string(b.shape());
    }
  }
  return build(k, {&a, &b}, {});
}

Node build_unary(OpKind k, const Node& a) { return build(k, {&a}, {}); }

Node build_reduce(OpKind k, const Node& a, const Axes& axes, bool keepdims) {
  NodeData d;
  d.axes = axes;
  d.keepdims = keepdims;
  return build(k, {&a}, std::move(d));
}

Node build_argreduce(OpKind k, const Node& a, std::optional<int64_t> axis, bool keepdims) {
  NodeData d;
  d.axis = axis;
  d.keepdims = keepdims;
  return build(k, {&a}, std::move(d));
}

Node build_axis(OpKind k, const Node& a, int64_t axis) {
  NodeData d;
  d.axis = axis;
  return build(k, {&a}, std::move(d));
}

Node build_shape(OpKind k, const Node& a, const Shape& shape) {
  NodeData d;
  d.target = shape;
  return build(k, {&a}, std::move(d));
}

Node build_perm(OpKind k, const Node& a, const std::vector<int64_t>& perm) {
  NodeData d;
  d.perm = perm;
  return build(k, {&a}, std::move(d));
}

Node build_dtype(OpKind k, const Node& a, DType dtype) {
  NodeData d;
  d.to = dtype;
  return build(k, {&a}, std::move(d));
}

}  // namespace detail

namespace {

// A 0-d constant of a's dtype: the operand a double becomes in the operators.
Node scalar_like(const Node& a, double v) {
  if (!a.valid()) CHANFLOW_THROW(Error) << "constant: operand is an invalid (default) Node";
  return a.graph().constant(Tensor::scalar(v, a.dtype()));
}

}  // namespace

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

}  // namespace chanflow
