// ops.h — the tensor layer's operations as graph operations on Node.
//
// Each function builds one node in the operands' graph and infers its shape and dtype with the
// tensor kernels' rules (NumPy broadcasting, promote_types, ...). A mismatch throws ShapeError or
// TypeError naming the new node and both shapes; operands from different graphs throw Error.
// They overload the tensor functions of the same name (cf::add(Tensor, Tensor) computes now,
// cf::add(Node, Node) builds a node), so both read the same in user code:
//
//   cf::Node h = cf::relu(cf::matmul(x, w1) + b1);
//   cf::Node loss = cf::mean(cf::square(h - y));
//
// Thread-safety: like Graph building — one thread at a time per graph. Never blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/graph/graph.h"
#include "chanflow/graph/op_list.h"

namespace chanflow {

// The op functions are declared from the lists in op_list.h, where each op is named once with its
// contract; an entry's kind token selects its signature below.
#define CHANFLOW_GRAPH_DECLARE_binary(name) CHANFLOW_API Node name(const Node& a, const Node& b);
#define CHANFLOW_GRAPH_DECLARE_unary(name) CHANFLOW_API Node name(const Node& a);
#define CHANFLOW_GRAPH_DECLARE_reduce(name) \
  CHANFLOW_API Node name(const Node& a, const Axes& axes = {}, bool keepdims = false);
#define CHANFLOW_GRAPH_DECLARE_argreduce(name)                                      \
  CHANFLOW_API Node name(const Node& a, std::optional<int64_t> axis = std::nullopt, \
                         bool keepdims = false);
#define CHANFLOW_GRAPH_DECLARE_axis(name) CHANFLOW_API Node name(const Node& a, int64_t axis = -1);
#define CHANFLOW_GRAPH_DECLARE_shape(name) \
  CHANFLOW_API Node name(const Node& a, const Shape& shape);
#define CHANFLOW_GRAPH_DECLARE_perm(name) \
  CHANFLOW_API Node name(const Node& a, const std::vector<int64_t>& perm = {});
#define CHANFLOW_GRAPH_DECLARE_dtype(name) CHANFLOW_API Node name(const Node& a, DType dtype);
#define CHANFLOW_GRAPH_DECLARE_OP(kind, name, doc) CHANFLOW_GRAPH_DECLARE_##kind(name)

// ---- binary elementwise (NumPy broadcasting; dtype as the tensor kernel) ----
CHANFLOW_GRAPH_ARITHMETIC_OPS(CHANFLOW_GRAPH_DECLARE_OP)
// Comparisons give bool nodes; they have no gradient (gradients do not flow through them).
CHANFLOW_GRAPH_COMPARISON_OPS(CHANFLOW_GRAPH_DECLARE_OP)

// Operators; a double operand becomes a 0-d constant of the node's dtype.
CHANFLOW_API Node operator+(const Node& a, const Node& b);
CHANFLOW_API Node operator-(const Node& a, const Node& b);
CHANFLOW_API Node operator*(const Node& a, const Node& b);
CHANFLOW_API Node operator/(const Node& a, const Node& b);
CHANFLOW_API Node operator-(const Node& a);
CHANFLOW_API Node operator+(const Node& a, double b);
CHANFLOW_API Node operator-(const Node& a, double b);
CHANFLOW_API Node operator*(const Node& a, double b);
CHANFLOW_API Node operator/(const Node& a, double b);
CHANFLOW_API Node operator+(double a, const Node& b);
CHANFLOW_API Node operator-(double a, const Node& b);
CHANFLOW_API Node operator*(double a, const Node& b);
CHANFLOW_API Node operator/(double a, const Node& b);

// ---- unary ----
CHANFLOW_GRAPH_UNARY_OPS(CHANFLOW_GRAPH_DECLARE_OP)

// ---- reductions (axes empty: all; negative axes count from the end) ----
// Then argmax (int64 indices, no gradient; over the flattened node when axis is nullopt), and
// the softmax family along one axis.
CHANFLOW_GRAPH_REDUCTION_OPS(CHANFLOW_GRAPH_DECLARE_OP)

// ---- linear algebra and layout ----
CHANFLOW_GRAPH_LINALG_OPS(CHANFLOW_GRAPH_DECLARE_OP)
CHANFLOW_GRAPH_LAYOUT_OPS(CHANFLOW_GRAPH_DECLARE_OP)

#undef CHANFLOW_GRAPH_DECLARE_OP
#undef CHANFLOW_GRAPH_DECLARE_binary
#undef CHANFLOW_GRAPH_DECLARE_unary
#undef CHANFLOW_GRAPH_DECLARE_reduce
#undef CHANFLOW_GRAPH_DECLARE_argreduce
#undef CHANFLOW_GRAPH_DECLARE_axis
#undef CHANFLOW_GRAPH_DECLARE_shape
#undef CHANFLOW_GRAPH_DECLARE_perm
#undef CHANFLOW_GRAPH_DECLARE_dtype

}  // namespace chanflow
