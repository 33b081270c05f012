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

namespace chanflow {

// ---- binary elementwise (NumPy broadcasting; dtype as the tensor kernel) ----
CHANFLOW_API Node add(const Node& a, const Node& b);
CHANFLOW_API Node sub(const Node& a, const Node& b);
CHANFLOW_API Node mul(const Node& a, const Node& b);
CHANFLOW_API Node div(const Node& a, const Node& b);
CHANFLOW_API Node pow(const Node& a, const Node& b);
CHANFLOW_API Node maximum(const Node& a, const Node& b);
CHANFLOW_API Node minimum(const Node& a, const Node& b);
// Comparisons give bool nodes; they have no gradient (gradients do not flow through them).
CHANFLOW_API Node equal(const Node& a, const Node& b);
CHANFLOW_API Node not_equal(const Node& a, const Node& b);
CHANFLOW_API Node less(const Node& a, const Node& b);
CHANFLOW_API Node less_equal(const Node& a, const Node& b);
CHANFLOW_API Node greater(const Node& a, const Node& b);
CHANFLOW_API Node greater_equal(const Node& a, const Node& b);

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
CHANFLOW_API Node neg(const Node& a);
CHANFLOW_API Node abs(const Node& a);
CHANFLOW_API Node relu(const Node& a);
CHANFLOW_API Node exp(const Node& a);
CHANFLOW_API Node log(const Node& a);
CHANFLOW_API Node sqrt(const Node& a);
CHANFLOW_API Node tanh(const Node& a);
CHANFLOW_API Node sigmoid(const Node& a);
// a * a (a mul node).
CHANFLOW_API Node square(const Node& a);

// ---- reductions (axes empty: all; negative axes count from the end) ----
CHANFLOW_API Node sum(const Node& a, const Axes& axes = {}, bool keepdims = false);
CHANFLOW_API Node mean(const Node& a, const Axes& axes = {}, bool keepdims = false);
CHANFLOW_API Node max(const Node& a, const Axes& axes = {}, bool keepdims = false);
CHANFLOW_API Node min(const Node& a, const Axes& axes = {}, bool keepdims = false);
// int64 indices; no gradient.
CHANFLOW_API Node argmax(const Node& a, std::optional<int64_t> axis = std::nullopt,
                         bool keepdims = false);
CHANFLOW_API Node softmax(const Node& a, int64_t axis = -1);
CHANFLOW_API Node log_softmax(const Node& a, int64_t axis = -1);

// ---- linear algebra and layout ----
// NumPy matmul: 1-d operands promoted, leading axes broadcast as a batch.
CHANFLOW_API Node matmul(const Node& a, const Node& b);
// matmul of two stacks of matrices (both at least 3-d), Gorgonia's BatchedMatMul.
CHANFLOW_API Node batched_matmul(const Node& a, const Node& b);
CHANFLOW_API Node reshape(const Node& a, const Shape& shape);  // one extent may be -1
// Reverses the axes (perm empty) or permutes them.
CHANFLOW_API Node transpose(const Node& a, const std::vector<int64_t>& perm = {});
CHANFLOW_API Node cast(const Node& a, DType dtype);
// a broadcast to `shape` (NumPy rules). Used by gradients; usable directly.
CHANFLOW_API Node broadcast_to(const Node& a, const Shape& shape);
// a summed down to `shape`, which must broadcast to a's shape (the adjoint of broadcast_to).
CHANFLOW_API Node sum_to(const Node& a, const Shape& shape);

}  // namespace chanflow
