// op_table.h — the graph ops as one table: a row per OpKind gives the op's name, the form of its
// operands and attributes, its shape and dtype inference, its kernel and its gradient.
//
// Everything that depends on what a node computes reads its row, found by indexing the table with
// the node's OpKind: the builders (ops.cc) call row.infer, eval_node (eval.cc) calls row.eval,
// grad (grad.cc) calls row.vjp and op_kind_name returns row.name. The rows live in op_table.cc,
// where the public op functions of op_list.h are also defined (each builds a node of the row named
// like it). Adding an op: its OpKind (graph.h), its entry in op_list.h and its row.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "graph_impl.h"

namespace chanflow::detail {

// The operands and attributes of an op's nodes. For an op with a public function it is the kind
// token of the op's op_list.h entry (the function's signature); the attributes it sets in
// NodeData are noted.
enum class Form : uint8_t {
  kSource,     // no operands: inputs and constants, built by Graph
  kBinary,     // (a, b)
  kUnary,      // (a)
  kReduce,     // (a), axes + keepdims
  kArgReduce,  // (a), axis (nullopt: flattened) + keepdims
  kAxis,       // (a), axis
  kShape,      // (a), target
  kPerm,       // (a), perm
  kDType,      // (a), to
  kTable,      // an op of the op table, operands by slot (eval_node calls the table's kernel)
  kCustom,     // any operands: Graph::apply's user function (eval_node calls it, not a row)
};

// How eval_node sizes a node's work when deciding to split its kernel into chunks.
enum class Work : uint8_t {
  kElements,      // the operands' element count
  kMultiplyAdds,  // result elements times the first operand's last extent (matmul)
};

// A node being built, handed to its row's inference. `out` holds the name the node will get and
// the attributes its function was given; inference normalises those attributes and sets
// out.shape and out.dtype, or throws ShapeError/TypeError starting with prefix().
struct Inference {
  std::array<const NodeData*, 2> in{};  // the operands (in[1] null for one-operand ops)
  NodeData& out;

  // "node 'add3' (add of 'a' and 'b')": how errors name the node being built.
  std::string prefix() const;
};

// A node's kernel: its value from its operand values. `o` carries the chunking policy and the
// buffer an elementwise kernel may write into; eval_node casts the result to the node's dtype and
// checks its shape.
using EvalFn = Tensor (*)(const NodeData& n, const Tensor* in, const KernelOptions& o);

// A vector-Jacobian product: given y = op(x...) and the upstream gradient g of a scalar loss with
// respect to y, sets out[i] to the gradient with respect to x[i] for each i with need(i) (leaving
// the others invalid), as nodes built in y's graph.
struct Vjp {
  const NodeData& n;  // y's storage (attributes)
  Node y;
  Node g;
  std::vector<Node> x;
  std::vector<Node> out;
  const std::vector<bool>& want;  // which operands lead to a node gradients are asked for

  // Whether operand i needs a gradient: wanted and floating point.
  bool need(std::size_t i) const { return want[i] && is_floating(x[i].dtype()); }
};

struct OpRow {
  OpKind kind;
  const char* name;  // op_kind_name(kind); the function of op_list.h with this name builds it
  Form form;
  void (*infer)(Inference&) = nullptr;  // null for sources and custom ops (Graph builds those)
  EvalFn eval = nullptr;                // null for custom ops
  void (*vjp)(Vjp&) = nullptr;          // null when no gradient flows through the op
  Work work = Work::kElements;
};

inline constexpr std::size_t kOpKinds = static_cast<std::size_t>(OpKind::kCustom) + 1;

// Row k is OpKind k's (op_table.cc checks this at compile time).
extern const std::array<OpRow, kOpKinds> kOpTable;

inline const OpRow& op_row(OpKind k) noexcept { return kOpTable[static_cast<std::size_t>(k)]; }

// The gradient of a table op node by its row's rule (table_ops.cc).
void table_vjp(Vjp& v);
// The gradient of a graph op node that computes what the op table's op `forward` computes (one
// input X, one output Out: relu, tanh, log, softmax ...) by that row's rule, so the op has one
// gradient definition whichever front end differentiates it (table_ops.cc).
void vjp_by_rule(Vjp& v, const OpDesc& forward);

// Build a node of kind `k` from the operands and attributes of its form (ops.cc): check the
// operands belong to one graph, run the row's inference, append the node. `min_rank` > 0 requires
// both operands of a binary op to have at least that many axes (batched_matmul), with `entry` the
// function named in the error.
Node build_binary(OpKind k, const Node& a, const Node& b, int min_rank = 0,
                  const char* entry = nullptr);
Node build_unary(OpKind k, const Node& a);
Node build_reduce(OpKind k, const Node& a, const Axes& axes, bool keepdims);
Node build_argreduce(OpKind k, const Node& a, std::optional<int64_t> axis, bool keepdims);
Node build_axis(OpKind k, const Node& a, int64_t axis);
Node build_shape(OpKind k, const Node& a, const Shape& shape);
Node build_perm(OpKind k, const Node& a, const std::vector<int64_t>& perm);
Node build_dtype(OpKind k, const Node& a, DType dtype);

}  // namespace chanflow::detail
