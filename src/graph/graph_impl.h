// graph_impl.h — private storage of a Graph and the shared forward evaluation of one node.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/graph/graph.h"
#include "chanflow/ops/op_table.h"
#include "chanflow/tensor/ops.h"

namespace chanflow {
namespace detail {

struct NodeData {
  int64_t id = 0;
  std::string name;
  OpKind op = OpKind::kInput;
  std::vector<int64_t> operands;
  Shape shape;
  DType dtype = DType::kFloat32;
  Tensor value;  // constant's value, or an input's bound default
  // Attributes (meaning depends on op).
  Axes axes;                     // reductions
  bool keepdims = false;         // reductions, argmax
  std::optional<int64_t> axis;   // argmax, softmax family
  Shape target;                  // reshape (as given), broadcast_to, sum_to
  std::vector<int64_t> perm;     // transpose (normalised, never empty)
  DType to = DType::kFloat32;    // cast
  std::shared_ptr<CustomFn> fn;  // custom
  // A table op (kTable): its row, its type and attributes, where each input slot's operands
  // start in `operands` (slot k: [in_start[k], in_start[k + 1])), and the output the node is
  // (one node per output of the op): value out_index of out_count values of slot out_slot
  // (out_count > 1 only for a duplicable output slot, e.g. split's Out).
  const OpDef* def = nullptr;
  OpDesc desc;
  std::vector<uint32_t> in_start;
  int32_t out_slot = -1;
  uint32_t out_index = 0;
  uint32_t out_count = 1;
};

struct GraphImpl : std::enable_shared_from_this<GraphImpl> {
  std::deque<NodeData> nodes;  // deque: references stay valid as nodes are added
};

// The operands of node `n` as handles.
inline Node node_of(GraphImpl* g, int64_t id) { return Node(g, id); }

// Runs node `n`'s op on `operands` (in operand order). `ctx` may be null (no cancellation);
// otherwise long kernels check it between chunks. `reuse` (may be empty) is a buffer of the
// result's shape that elementwise kernels may write into. Checks the result's shape and dtype
// against the inferred ones.
Tensor eval_node(const NodeData& n, const Tensor* operands, const Context* ctx, Tensor reuse);

// Throws the context's error, or DeadlineExceededError once its deadline has passed on the clock.
void check_context(const Context& ctx);

// A table op node's value (table_ops.cc): its row's kernel asked for the node's output only.
Tensor eval_table(const NodeData& n, const Tensor* operands, const Context* ctx);

// The op a node computes as errors, traces and dot output name it: the table op's type
// ("conv2d") or op_kind_name ("add").
inline const char* node_op_name(const NodeData& n) noexcept {
  return n.def != nullptr ? n.def->type().c_str() : op_kind_name(n.op);
}

// "node 'name' (op #id)" for error messages.
std::string describe(const NodeData& n);

// Every node's shape must be one a tensor may hold (shape_nbytes): checked as the node is built,
// so a graph never declares a value no run could make. Throws ShapeError naming the node.
void check_node_shape(const NodeData& n);

}  // namespace detail
}  // namespace chanflow
