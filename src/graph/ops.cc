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

// Appends a node of kind `k` over `operands`, `set_attrs` filling in the attributes its function
// was given, and runs its row's inference on it; the node is removed again when that throws. (It
// is built in place: the deque keeps the operands' storage where it is.)
template <class SetAttrs>
Node build(OpKind k, std::initializer_list<const Node*> operands, SetAttrs set_attrs) {
  const OpRow& row = op_row(k);
  GraphImpl* g = graph_of(k, operands);
  NodeData& n = g->nodes.emplace_back();
  try {
    n.id = static_cast<int64_t>(g->nodes.size()) - 1;
    n.op = k;
    n.name = std::string(row.name) + std::to_string(n.id);
    set_attrs(n);
    Inference c{{}, n};
    n.operands.reserve(operands.size());
    std::size_t i = 0;
    for (const Node* o : operands) {
      c.in[i++] = &o->data();
      n.operands.push_back(o->id());
    }
    row.infer(c);
    check_node_shape(n);
  } catch (...) {
    g->nodes.pop_back();
    throw;
  }
  return {g, n.id};
}

void no_attrs(NodeData&) {}

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
  return build(k, {&a, &b}, no_attrs);
}

Node build_unary(OpKind k, const Node& a) { return build(k, {&a}, no_attrs); }

Node build_reduce(OpKind k, const Node& a, const Axes& axes, bool keepdims) {
  return build(k, {&a}, [&](NodeData& n) {
    n.axes = axes;
    n.keepdims = keepdims;
  });
}

Node build_argreduce(OpKind k, const Node& a, std::optional<int64_t> axis, bool keepdims) {
  return build(k, {&a}, [&](NodeData& n) {
    n.axis = axis;
    n.keepdims = keepdims;
  });
}

Node build_axis(OpKind k, const Node& a, int64_t axis) {
  return build(k, {&a}, [&](NodeData& n) { n.axis = axis; });
}

Node build_shape(OpKind k, const Node& a, const Shape& shape) {
  return build(k, {&a}, [&](NodeData& n) { n.target = shape; });
}

Node build_perm(OpKind k, const Node& a, const std::vector<int64_t>& perm) {
  return build(k, {&a}, [&](NodeData& n) { n.perm = perm; });
}

Node build_dtype(OpKind k, const Node& a, DType dtype) {
  return build(k, {&a}, [&](NodeData& n) { n.to = dtype; });
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
