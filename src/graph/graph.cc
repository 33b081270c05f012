// graph.cc — Graph and Node handles, node creation, bindings, dot output.
#include "chanflow/graph/graph.h"

#include <sstream>

#include "chanflow/core/error.h"
#include "chanflow/runtime/context.h"
#include "graph_impl.h"
#include "op_table.h"

namespace chanflow {

const char* op_kind_name(OpKind op) noexcept {
  const auto k = static_cast<std::size_t>(op);
  return k < detail::kOpKinds ? detail::kOpTable[k].name : "?";
}

const Context& OpContext::ctx() const { return *ctx_; }
void OpContext::check() const { detail::check_context(*ctx_); }

namespace detail {
std::string describe(const NodeData& n) {
  std::ostringstream os;
  os << "node '" << n.name << "' (" << node_op_name(n) << " #" << n.id << ")";
  return os.str();
}
void check_node_shape(const NodeData& n) {
  try {
    shape_nbytes(n.shape, n.dtype);
  } catch (const ShapeError& e) {
    CHANFLOW_THROW(ShapeError) << describe(n) << ": " << e.what();
  }
}
}  // namespace detail

// ---- Node ----

const detail::NodeData& Node::data() const {
  if (graph_ == nullptr) CHANFLOW_THROW(Error) << "use of an invalid (default-constructed) Node";
  return graph_->nodes[static_cast<std::size_t>(id_)];
}
const std::string& Node::name() const { return data().name; }
OpKind Node::op() const { return data().op; }
const Shape& Node::shape() const { return data().shape; }
DType Node::dtype() const { return data().dtype; }
std::vector<Node> Node::inputs() const {
  std::vector<Node> out;
  for (int64_t o : data().operands) out.emplace_back(graph_, o);
  return out;
}

// ---- Graph ----

Graph::Graph() : impl_(std::make_shared<detail::GraphImpl>()) {}

namespace {
detail::NodeData& new_node(detail::GraphImpl& g, OpKind op, const std::string& name) {
  detail::NodeData& n = g.nodes.emplace_back();
  n.id = static_cast<int64_t>(g.nodes.size()) - 1;
  n.op = op;
  n.name = name.empty() ? std::string(op_kind_name(op)) + std::to_string(n.id) : name;
  return n;
}
}  // namespace

Node Graph::input(const std::string& name, DType dtype, const Shape& shape) {
  detail::NodeData& n = new_node(*impl_, OpKind::kInput, name);
  n.shape = shape;
  n.dtype = dtype;
  try {
    detail::check_node_shape(n);
  } catch (...) {
    impl_->nodes.pop_back();
    throw;
  }
  return {impl_.get(), n.id};
}

Node Graph::constant(const Tensor& value, const std::string& name) {
  if (!value.defined()) CHANFLOW_THROW(Error) << "constant '" << name << "': undefined tensor";
  detail::NodeData& n = new_node(*impl_, OpKind::kConstant, name);
  n.shape = value.shape();
  n.dtype = value.dtype();
  n.value = value;
  return {impl_.get(), n.id};
}

Node Graph::scalar(float value, const std::string& name) {
  return constant(Tensor::scalar(value, DType::kFloat32), name);
}
Node Graph::scalar(double value, const std::string& name) {
  return constant(Tensor::scalar(value, DType::kFloat64), name);
}
Node Graph::scalar(int64_t value, const std::string& name) {
  return constant(Tensor::scalar(static_cast<double>(value), DType::kInt64), name);
}
Node Graph::scalar(int value, const std::string& name) {
  return constant(Tensor::scalar(value, DType::kInt32), name);
}

Node Graph::apply(const std::string& name, const std::vector<Node>& operands, const Shape& shape,
                  DType dtype, CustomFn fn) {
  if (!fn) CHANFLOW_THROW(Error) << "apply '" << name << "': empty function";
  for (const Node& o : operands) {
    if (o.impl() != impl_.get()) {
      CHANFLOW_THROW(Error) << "apply '" << name << "': operand "
                            << (o.valid() ? "'" + o.name() + "'" : std::string("(invalid)"))
                            << " belongs to another graph";
    }
  }
  detail::NodeData& n = new_node(*impl_, OpKind::kCustom, name);
  for (const Node& o : operands) n.operands.push_back(o.id());
  n.shape = shape;
  n.dtype = dtype;
  try {
    detail::check_node_shape(n);
  } catch (...) {
    impl_->nodes.pop_back();
    throw;
  }
  n.fn = std::make_shared<CustomFn>(std::move(fn));
  return {impl_.get(), n.id};
}

void Graph::set(const Node& input, const Tensor& value) {
  if (input.impl() != impl_.get()) CHANFLOW_THROW(Error) << "set: the node is not in this graph";
  detail::NodeData& n = impl_->nodes[static_cast<std::size_t>(input.id())];
  if (n.op != OpKind::kInput) {
    CHANFLOW_THROW(Error) << "set: " << detail::describe(n) << " is not an input";
  }
  if (!value.defined())
    CHANFLOW_THROW(Error) << "set: undefined tensor for " << detail::describe(n);
  if (value.shape() != n.shape) {
    CHANFLOW_THROW(ShapeError) << "set: " << detail::describe(n) << " has shape "
                               << shape_to_string(n.shape) << ", the value has shape "
                               << shape_to_string(value.shape());
  }
  if (value.dtype() != n.dtype) {
    CHANFLOW_THROW(TypeError) << "set: " << detail::describe(n) << " has dtype " << n.dtype
                              << ", the value has dtype " << value.dtype();
  }
  n.value = value;
}

Tensor Graph::bound_value(const Node& input) const {
  if (input.impl() != impl_.get()) CHANFLOW_THROW(Error) << "bound_value: node not in this graph";
  return impl_->nodes[static_cast<std::size_t>(input.id())].value;
}

Node Graph::node(int64_t id) const {
  if (id < 0 || id >= size()) {
    CHANFLOW_THROW(Error) << "graph has no node with id " << id << " (size " << size() << ")";
  }
  return {impl_.get(), id};
}

int64_t Graph::size() const { return static_cast<int64_t>(impl_->nodes.size()); }

std::vector<Node> Graph::nodes() const {
  std::vector<Node> out;
  out.reserve(impl_->nodes.size());
  for (const auto& n : impl_->nodes) out.emplace_back(impl_.get(), n.id);
  return out;
}

Graph Node::graph() const {
  if (graph_ == nullptr) CHANFLOW_THROW(Error) << "graph() of an invalid Node";
  return Graph(graph_->shared_from_this());
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}
}  // namespace

std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph chanflow {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const auto& n : impl_->nodes) {
    os << "  n" << n.id << " [label=\"" << dot_escape(n.name) << "\\n"
       << detail::node_op_name(n) << " " << shape_to_string(n.shape) << " " << dtype_name(n.dtype)
       << "\"";
    if (n.op == OpKind::kInput) os << ", style=rounded";
    if (n.op == OpKind::kConstant) os << ", style=dashed";
    os << "];\n";
  }
  for (const auto& n : impl_->nodes) {
    for (std::size_t i = 0; i < n.operands.size(); ++i) {
      os << "  n" << n.operands[i] << " -> n" << n.id << " [label=\"" << i << "\"];\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace chanflow
