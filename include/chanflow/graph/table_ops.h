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

}  // namespace chanflow
