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

namespace {

// Checks one binding against its input node; returns the node.
const NodeData& check_binding(GraphImpl* g, int64_t size, const Node& node, const Tensor& value) {
  check_node(g, size, node, "run binding");
  const NodeData& n = g->nodes[static_cast<std::size_t>(node.id())];
  if (n.op != OpKind::kInput) CHANFLOW_THROW(Error) << "run: " << describe(n) << " is not an input";
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
  return n;
}

// An unbound input takes its Graph::set default; a used input with neither is an error.
void default_input(const NodeData& n, bool used, Tensor& value) {
  if (value.defined()) return;
  if (!n.value.defined() && used) {
    CHANFLOW_THROW(Error) << "run: input " << describe(n)
                          << " has no value (bind it with Graph::set or in run's bindings)";
  }
  value = n.value;
}

}  // namespace

std::vector<Tensor> resolve_inputs(GraphImpl* g, int64_t size, const Bindings& bindings,
                                   const std::vector<bool>& used) {
  std::vector<Tensor> values(static_cast<std::size_t>(size));
  for (const auto& [node, value] : bindings) {
    check_binding(g, size, node, value);
    values[static_cast<std::size_t>(node.id())] = value;
  }
  for (int64_t i = 0; i < size; ++i) {
    const NodeData& n = g->nodes[static_cast<std::size_t>(i)];
    if (n.op == OpKind::kInput) {
      default_input(n, used[static_cast<std::size_t>(i)], values[static_cast<std::size_t>(i)]);
    }
  }
  return values;
}

std::vector<Tensor> resolve_input_values(GraphImpl* g, int64_t size, const Bindings& bindings,
                                         const std::vector<bool>& used,
                                         const std::vector<int64_t>& inputs,
                                         const std::vector<uint32_t>& slot_of) {
  std::vector<Tensor> values(inputs.size());
  for (const auto& [node, value] : bindings) {
    check_binding(g, size, node, value);
    values[slot_of[static_cast<std::size_t>(node.id())]] = value;
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto id = static_cast<std::size_t>(inputs[k]);
    default_input(g->nodes[id], used[id], values[k]);
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
