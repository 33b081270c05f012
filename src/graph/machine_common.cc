// machine_common.cc — input resolution and failure records shared by both machines.
#include "machine_common.h"

namespace chanflow::detail {

void check_node(const GraphImpl* g, int64_t size, const Node& node, const char* what) {
  if (!node.valid() || node.impl() != g) {
    CHANFLOW_THROW(Error) << what << ": the node does not belong to this machine's graph";
  }
  if (node.id() >= size) {
    CHANFLOW_THROW(Error) << what << ": node '" << node.name() << "' (#" << node.id()
                          << ") was added to the graph after the machine was built";
  }
}

std::vector<bool> used_nodes(const GraphImpl* g, int64_t size) {
  std::vector<bool> used(static_cast<std::size_t>(size), false);
  for (int64_t i = 0; i < size; ++i) {
    for (int64_t o : g->nodes[static_cast<std::size_t>(i)].operands) {
      used[static_cast<std::size_t>(o)] = true;
    }
  }
  return used;
}

std::vector<Tensor> resolve_inputs(GraphImpl* g, int64_t size, const Bindings& bindings,
                                   const std::vector<bool>& used) {
  std::vector<Tensor> values(static_cast<std::size_t>(size));
  for (const auto& [node, value] : bindings) {
    check_node(g, size, node, "run binding");
    const NodeData& n = g->nodes[static_cast<std::size_t>(node.id())];
    if (n.op != OpKind::kInput)
      CHANFLOW_THROW(Error) << "run: " << describe(n) << " is not an input";
    if (!value.defined()) CHANFLOW_THROW(Error) << "run: undefined tensor for " << describe(n);
    if (value.shape() != n.shape) {
      CHANFLOW_THROW(ShapeError) << "run: " << describe(n) << " has shape "
                                 << shape_to_string(n.shape) << ", the value has shape "
                                 << shape_to_string(value.shape());
    }
    if (value.dtype() != n.dtype) {
      CHANFLOW_THROW(TypeError) << "run: " << describe(n) << " has dtype " << n.dtype
                                << ", the value has dtype " << value.dtype();
    }
    values[static_cast<std::size_t>(node.id())] = value;
  }
  for (int64_t i = 0; i < size; ++i) {
    const NodeData& n = g->nodes[static_cast<std::size_t>(i)];
    if (n.op == OpKind::kInput && !values[static_cast<std::size_t>(i)].defined()) {
      if (!n.value.defined() && used[static_cast<std::size_t>(i)]) {
        CHANFLOW_THROW(Error) << "run: input " << describe(n)
                              << " has no value (bind it with Graph::set or in run's bindings)";
      }
      values[static_cast<std::size_t>(i)] = n.value;
    }
  }
  return values;
}

MachineError::Failure failure_of(const NodeData& n, std::exception_ptr e) {
  std::string msg;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    msg = ex.what();
  } catch (...) {
    msg = "unknown exception";
  }
  return MachineError::Failure{n.id, n.name, std::move(msg), std::move(e)};
}

}  // namespace chanflow::detail
