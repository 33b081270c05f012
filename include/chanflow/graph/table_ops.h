// table_ops.h — graph nodes of the op table's ops (conv2d, pool2d, batch_norm, losses, ...):
// the same rows, kernels and gradient rules as the program ops of those names.
//
//   cf::Graph g;
//   cf::Node x = g.input("x", cf::DType::kFloat32, {64, 1, 28, 28});
//   cf::Node w = g.input("w", cf::DType::kFloat32, {20, 1, 5, 5});
//   cf::Node y = cf::op("conv2d", {{"Input", {x}}, {"Filter", {w}}},
//                       {{"strides", cf::Attr::ints({1, 1})}});       // Output, (64, 20, 24, 24)
//   std::vector<cf::Node> gw = cf::grad(cf::mean(y), {w});            // by conv2d's rule
//
// A node is one output of an op: op() builds the node of `output` (the op's first output slot
// when empty); op_outputs() builds one node for each output slot asked for; op_values() the
// nodes of a duplicable output slot (split's Out), one per value. Every node of one op
// computes its own output with the row's kernel (asked for that output only), so two outputs of
// one op compute the shared part twice.
//
// Errors (at build time): an unknown op or one without a kernel in the table, a slot the op does
// not have, a required slot missing or a non-duplicable slot given several nodes, an attribute
// the op does not declare, of another type or failing its check (Error/TypeError naming the op
// and the slot or attribute), a random op (dropout) without fix_seed true (Error: its output
// nodes would draw different values), nodes of another graph (Error); shapes and dtypes the op
// cannot take (ShapeError/TypeError from the row's inference, naming the op). Not thread-safe: one
// builder thread per graph, as every graph op.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/graph/graph.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/tensor/conv.h"
#include "chanflow/tensor/nn.h"

namespace chanflow {

// An op's inputs by slot name ("Input", "Filter", "X" ...), in any order.
using OpInputs = std::vector<std::pair<std::string, std::vector<Node>>>;

// The node of output slot `output` (empty: the first) of op `type` of the op table.
CHANFLOW_API Node op(const std::string& type, const OpInputs& inputs,
                     const OpDesc::Attrs& attrs = {}, const std::string& output = {});

// The `count` nodes of the duplicable output slot `output` (split's "Out"): node i is value i.
// The kernel runs once per node, asked for that value only.
CHANFLOW_API std::vector<Node> op_values(const std::string& type, const OpInputs& inputs,
                                         const OpDesc::Attrs& attrs, const std::string& output,
                                         size_t count);

// One node per output slot of `outputs` (empty: every output slot the op has), by slot name.
CHANFLOW_API std::map<std::string, Node> op_outputs(const std::string& type, const OpInputs& inputs,
                                                    const OpDesc::Attrs& attrs = {},
                                                    const std::vector<std::string>& outputs = {});

// ---- typed front doors to the layers people train with (each is op() of the row named like it,
// with the same attributes; errors as op()'s) ------------------------------------------------

// conv2d (NCHW): input (N, C, H, W), filter (M, C / groups, KH, KW).
CHANFLOW_API Node conv2d(const Node& input, const Node& filter, const Conv2dParams& p = {});
// pool2d (NCHW), max or average.
CHANFLOW_API Node pool2d(const Node& x, const Pool2dParams& p);
// batch_norm's Y in training mode (the batch's statistics; the running ones are its other
// outputs, op_outputs("batch_norm", ...)); `is_test` normalises by `mean` and `variance`.
CHANFLOW_API Node batch_norm(const Node& x, const Node& scale, const Node& bias, const Node& mean,
                             const Node& variance, double momentum = 0.9, double epsilon = 1e-5,
                             bool is_test = false, DataLayout layout = DataLayout::kNCHW);
// dropout's Out with Paddle's downgrade_in_infer semantics, its mask fixed by `seed` (a graph
// node computes its output on every run: the same mask each run).
CHANFLOW_API Node dropout(const Node& x, double prob, int64_t seed, bool is_test = false);
// softmax_with_cross_entropy's Loss, (N, 1): hard int64 labels (N, 1) or soft labels.
CHANFLOW_API Node softmax_with_cross_entropy(const Node& logits, const Node& label,
                                             bool soft_label = false, int64_t ignore_index = -100);
// cross_entropy of probabilities x with labels, (N, 1).
CHANFLOW_API Node cross_entropy(const Node& x, const Node& label, bool soft_label = false,
                                int64_t ignore_index = -100);
CHANFLOW_API Node leaky_relu(const Node& x, double alpha = 0.02);
CHANFLOW_API Node concat(const std::vector<Node>& xs, int64_t axis = 0);
// Paddle's flatten: (prod(dims[:axis]), prod(dims[axis:])).
CHANFLOW_API Node flatten(const Node& x, int64_t axis = 1);

}  // namespace chanflow
