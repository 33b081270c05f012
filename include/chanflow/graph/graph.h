// graph.h — an expression graph of tensor operations: Graph owns the nodes, Node is a handle.
//
// Nodes are inputs (a value bound with Graph::set or given when a machine runs), constants, or
// operations over other nodes. Every node's shape and dtype are inferred when it is built, so a
// mismatch throws ShapeError/TypeError at the line that builds the bad node, naming the node and
// both shapes. Nodes get ids in creation order (an operation's inputs always have smaller ids, so
// id order is a topological order) and names (given, or "<op><id>").
//
//   cf::Graph g;
//   cf::Node x = g.input("x", cf::DType::kFloat32, {2, 3});
//   cf::Node w = g.constant(cf::Tensor::ones({3, 4}, cf::DType::kFloat32), "w");
//   cf::Node y = cf::relu(cf::matmul(x, w) + g.scalar(1.0f));   // shape (2, 4), float32
//   g.set(x, cf::Tensor::zeros({2, 3}, cf::DType::kFloat32));
//
// Thread-safety: building a graph (input/constant/ops/set) is not thread-safe; build from one
// thread. Once built, any number of machines may read it concurrently. A Node handle refers to
// its Graph's storage and must not be used after every Graph copy and machine over it is gone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

class Context;

namespace detail {
struct GraphImpl;
struct NodeData;
}  // namespace detail

// What a node computes. Inputs and constants have no operands.
enum class OpKind : uint8_t {
  kInput,
  kConstant,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMaximum,
  kMinimum,
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kSigmoid,
  kRelu,
  kSoftplus,
  kSum,
  kMean,
  kMax,
  kMin,
  kArgmax,
  kSoftmax,
  kLogSoftmax,
  kMatmul,
  kReshape,
  kTranspose,
  kCast,
  kBroadcastTo,  // broadcast the operand to a shape (gradient of reductions)
  kSumTo,        // sum the operand down to a shape it was broadcast from (gradient of broadcasting)
  kTable,        // an op of the op table (cf::op, graph/table_ops.h): conv2d, pool2d, ...
  kCustom,       // a user function (Graph::apply)
};

// The op's name as it appears in node names, errors, traces and dot output ("add", "matmul").
CHANFLOW_API const char* op_kind_name(OpKind op) noexcept;

// What a custom op's function sees besides its operands: the run's context. A long custom op
// should call check() between pieces of work (or select on ctx().done()) so that a cancelled or
// timed-out run returns promptly.
class CHANFLOW_API OpContext {
 public:
  explicit OpContext(const Context* ctx) : ctx_(ctx) {}
  // The run's context (background() for an unbounded run). Never null.
  const Context& ctx() const;
  // Throws the context's CanceledError/DeadlineExceededError once it is done. Never blocks.
  void check() const;

 private:
  const Context* ctx_;
};

// A custom op: operands in order -> result. It must return a tensor of the shape and dtype
// declared in Graph::apply (else the run fails with ShapeError/TypeError naming the node). May
// throw: the machine reports the exception as that node's failure. Called from one green thread
// at a time per node, but different nodes' functions run concurrently on a GoMachine.
using CustomFn = std::function<Tensor(std::span<const Tensor> operands, const OpContext& ctx)>;

class Graph;

// A handle to one node of a Graph. Cheap to copy (a pointer and an id). A default-constructed
// Node is invalid: using it in an op throws Error.
class CHANFLOW_API Node {
 public:
  Node() = default;

  bool valid() const noexcept { return graph_ != nullptr; }
  int64_t id() const noexcept { return id_; }
  const std::string& name() const;
  OpKind op() const;
  const Shape& shape() const;
  DType dtype() const;
  // The operand nodes, in operand order (empty for inputs and constants).
  std::vector<Node> inputs() const;
  // The graph this node belongs to (a new handle sharing its storage).
  Graph graph() const;

  friend bool operator==(const Node& a, const Node& b) noexcept {
    return a.graph_ == b.graph_ && a.id_ == b.id_;
  }
  friend bool operator!=(const Node& a, const Node& b) noexcept { return !(a == b); }

  // Internal: the node's storage (used by ops and machines).
  detail::GraphImpl* impl() const noexcept { return graph_; }
  const detail::NodeData& data() const;
  Node(detail::GraphImpl* g, int64_t id) : graph_(g), id_(id) {}

 private:
  detail::GraphImpl* graph_ = nullptr;
  int64_t id_ = -1;
};

// An expression graph. Copies share the same nodes (a handle). Machines keep the graph's storage
// alive while they exist.
class CHANFLOW_API Graph {
 public:
  Graph();

  // A placeholder of a fixed shape and dtype. Its value comes from set() or from a machine's
  // run bindings; running without one throws Error naming the input.
  Node input(const std::string& name, DType dtype, const Shape& shape);
  // A node always holding `value` (the tensor is shared, never written).
  Node constant(const Tensor& value, const std::string& name = {});
  // A 0-d constant. float gives float32, double float64, int64_t int64, int int32.
  Node scalar(float value, const std::string& name = {});
  Node scalar(double value, const std::string& name = {});
  Node scalar(int64_t value, const std::string& name = {});
  Node scalar(int value, const std::string& name = {});
  // A node computed by `fn` from `operands`, declared to give `shape` and `dtype`. It has no
  // gradient: cf::grad through it throws Error.
  Node apply(const std::string& name, const std::vector<Node>& operands, const Shape& shape,
             DType dtype, CustomFn fn);

  // Binds an input's default value; throws ShapeError/TypeError when the tensor does not match
  // the declared shape/dtype, Error when `input` is not an input of this graph.
  void set(const Node& input, const Tensor& value);
  // The value bound with set(), or an invalid Tensor.
  Tensor bound_value(const Node& input) const;

  // The node with id `id` (0 <= id < size()), else Error.
  Node node(int64_t id) const;
  // Number of nodes.
  int64_t size() const;
  // Every node in id (= topological) order.
  std::vector<Node> nodes() const;

  // Graphviz text: one box per node (name, op, shape, dtype), edges labelled by operand position.
  std::string to_dot() const;

  const std::shared_ptr<detail::GraphImpl>& impl() const noexcept { return impl_; }
  explicit Graph(std::shared_ptr<detail::GraphImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::GraphImpl> impl_;
};

// Values for inputs, given to a machine's run: {{x, tensor}, {y, tensor}}. Each tensor must match
// its input's declared shape and dtype (else ShapeError/TypeError); it overrides Graph::set for
// that run only.
using Bindings = std::vector<std::pair<Node, Tensor>>;

}  // namespace chanflow
