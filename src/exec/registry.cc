// registry.cc — attaches every kernel family to the op schemas; inference by op type.
#include <mutex>

#include "chanflow/core/error.h"
#include "kernel.h"

namespace chanflow {

using exec_detail::KernelDef;
using exec_detail::KernelEntry;

namespace {
std::vector<KernelEntry> all_kernels() {
  std::vector<KernelEntry> all;
  for (auto family : {exec_detail::math_kernels, exec_detail::tensor_kernels,
                      exec_detail::control_flow_kernels, exec_detail::csp_kernels}) {
    std::vector<KernelEntry> k = family();
    all.insert(all.end(), k.begin(), k.end());
  }
  return all;
}
}  // namespace

void register_exec_kernels(OpSchemaRegistry& registry) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  for (const KernelEntry& e : all_kernels()) {
    const OpSchema* s = registry.find(e.type);
    if (s == nullptr) continue;  // a registry without this op
    if (dynamic_cast<const KernelDef*>(s->extension().get()) != nullptr) continue;
    s->set_extension(std::make_shared<KernelDef>(e.run, e.prepare, e.infer));
  }
}

bool has_kernel(std::string_view type, const OpSchemaRegistry& registry) {
  const OpSchema* s = registry.find(type);
  return s != nullptr && dynamic_cast<const KernelDef*>(s->extension().get()) != nullptr;
}

std::vector<TensorInfo> infer_op(const OpDesc& op, const std::vector<TensorInfo>& inputs) {
  register_exec_kernels();
  const OpSchema* s = OpSchemaRegistry::global().find(op.type());
  const auto* k = s ? dynamic_cast<const KernelDef*>(s->extension().get()) : nullptr;
  if (k == nullptr) CHANFLOW_THROW(Error) << "infer_op: unknown op type '" << op.type() << "'";
  if (k->infer == nullptr) {
    CHANFLOW_THROW(Error) << "infer_op: '" << op.type()
                          << "' is a control-flow or channel op, with no tensor inference";
  }
  return k->infer(op, inputs);
}

}  // namespace chanflow
