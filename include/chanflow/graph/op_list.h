// op_list.h — every public graph op function, named once: ops.h declares the functions from these
// lists, and bindings (the Python module's cf.add, cf.sum, ...) generate theirs from them, so an
// op added here appears in ops.h and in Python without another edit.
//
// Each entry is X(kind, name, doc):
//   kind  the signature, one of the tokens below (ops.h declares `name` with it);
//   name  the function, chanflow::name(Node ...); the node it builds has op_kind_name() == name,
//         except the two sugar ops square (a mul node) and batched_matmul (a matmul node);
//   doc   one sentence for generated documentation (Python docstrings).
//
//   kind        signature (ops.h)
//   binary      Node name(const Node& a, const Node& b)
//   unary       Node name(const Node& a)
//   reduce      Node name(const Node& a, const Axes& axes = {}, bool keepdims = false)
//   argreduce   Node name(const Node& a, std::optional<int64_t> axis = std::nullopt,
//                         bool keepdims = false)
//   axis        Node name(const Node& a, int64_t axis = -1)
//   shape       Node name(const Node& a, const Shape& shape)
//   perm        Node name(const Node& a, const std::vector<int64_t>& perm = {})
//   dtype       Node name(const Node& a, DType dtype)
//
// Adding an op: an entry in the list of its group and, when it builds a node of a new OpKind, that
// OpKind (graph.h) and its row in src/graph/op_table.cc (name, form, shape/dtype inference, kernel,
// gradient). The function is defined from this entry (op_table.cc: a missing row fails to
// compile). tests/graph/op_list_test.cc checks that every entry builds the node its name says and
// that every OpKind has an entry. docs/graph.md, "How to add an op", walks through an example.
//
// CHANFLOW_GRAPH_OPS(X) expands every group, in the order below.
#pragma once

// Binary elementwise arithmetic (NumPy broadcasting; dtype as the tensor kernel).
#define CHANFLOW_GRAPH_ARITHMETIC_OPS(X)                                              \
  X(binary, add, "Elementwise a + b.")                                                \
  X(binary, sub, "Elementwise a - b.")                                                \
  X(binary, mul, "Elementwise a * b.")                                                \
  X(binary, div, "Elementwise a / b, true division (integer operands give float64).") \
  X(binary, pow, "Elementwise a ** b.")                                               \
  X(binary, maximum, "Elementwise maximum (on ties the gradient goes to a).")         \
  X(binary, minimum, "Elementwise minimum (on ties the gradient goes to a).")

// Comparisons: bool nodes, no gradient.
#define CHANFLOW_GRAPH_COMPARISON_OPS(X)              \
  X(binary, equal, "Elementwise a == b (bool).")      \
  X(binary, not_equal, "Elementwise a != b (bool).")  \
  X(binary, less, "Elementwise a < b (bool).")        \
  X(binary, less_equal, "Elementwise a <= b (bool).") \
  X(binary, greater, "Elementwise a > b (bool).")     \
  X(binary, greater_equal, "Elementwise a >= b (bool).")

// Unary elementwise. exp, log, sqrt, tanh, sigmoid, softplus give a float node (float_result_type).
#define CHANFLOW_GRAPH_UNARY_OPS(X)                   \
  X(unary, neg, "Elementwise -a.")                    \
  X(unary, abs, "Elementwise |a|.")                   \
  X(unary, relu, "Elementwise max(a, 0).")            \
  X(unary, exp, "Elementwise e ** a.")                \
  X(unary, log, "Elementwise natural logarithm.")     \
  X(unary, sqrt, "Elementwise square root.")          \
  X(unary, tanh, "Elementwise hyperbolic tangent.")   \
  X(unary, sigmoid, "Elementwise 1 / (1 + e ** -a).") \
  X(unary, softplus, "Elementwise log(1 + e ** a).")  \
  X(unary, square, "Elementwise a * a (a mul node).")

// Reductions over `axes` (empty: all; negative axes count from the end; sum of an integer node
// gives int64, mean float64), argmax along one axis, the softmax family along one axis.
#define CHANFLOW_GRAPH_REDUCTION_OPS(X)                                                 \
  X(reduce, sum, "Sum over axes (all when none are given).")                            \
  X(reduce, mean, "Mean over axes (all when none are given).")                          \
  X(reduce, max, "Maximum over axes (the gradient is split among ties).")               \
  X(reduce, min, "Minimum over axes (the gradient is split among ties).")               \
  X(argreduce, argmax, "Index of the maximum along axis (flattened when none); int64.") \
  X(axis, softmax, "Softmax along axis.")                                               \
  X(axis, log_softmax, "Log of the softmax along axis, computed stably.")

// Linear algebra.
#define CHANFLOW_GRAPH_LINALG_OPS(X)                                              \
  X(binary, matmul, "NumPy matmul: 1-d operands promoted, batch axes broadcast.") \
  X(binary, batched_matmul, "matmul of two stacks of matrices, both at least 3-d.")

// Layout and dtype.
#define CHANFLOW_GRAPH_LAYOUT_OPS(X)                                                     \
  X(shape, reshape, "The elements in a new shape; one extent may be -1.")                \
  X(perm, transpose, "Axes reversed (no perm) or permuted: axis i is a's axis perm[i].") \
  X(dtype, cast, "The elements converted to dtype.")                                     \
  X(shape, broadcast_to, "a broadcast to shape (NumPy rules).")                          \
  X(shape, sum_to, "a summed down to shape, which broadcasts to a's (broadcast_to's adjoint).")

// Every group.
#define CHANFLOW_GRAPH_OPS(X)      \
  CHANFLOW_GRAPH_ARITHMETIC_OPS(X) \
  CHANFLOW_GRAPH_COMPARISON_OPS(X) \
  CHANFLOW_GRAPH_UNARY_OPS(X)      \
  CHANFLOW_GRAPH_REDUCTION_OPS(X)  \
  CHANFLOW_GRAPH_LINALG_OPS(X)     \
  CHANFLOW_GRAPH_LAYOUT_OPS(X)
