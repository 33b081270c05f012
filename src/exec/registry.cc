// registry.cc — attaches every kernel row to its op schema; inference by op type.
#include <algorithm>
#include <mutex>

#include "chanflow/core/error.h"
#include "kernel.h"

namespace chanflow {

using exec_detail::KernelDef;
using exec_detail::KernelRow;

namespace {

const std::vector<KernelRow>& all_rows() {
  static const std::vector<KernelRow> rows = [] {
    std::vector<KernelRow> all;
    for (auto family :
         {exec_detail::math_kernels, exec_detail::tensor_kernels, exec_detail::control_flow_kernels,
          exec_detail::csp_kernels, exec_detail::table_kernels}) {
      std::vector<KernelRow> k = family();
      all.insert(all.end(), k.begin(), k.end());
    }
    return all;
  }();
  return rows;
}

const KernelDef* kernel_of(const OpSchema* s) {
  return s != nullptr ? dynamic_cast<const KernelDef*>(s->extension().get()) : nullptr;
}

}  // namespace

void register_exec_kernels(OpSchemaRegistry& registry) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const std::vector<KernelRow>& rows = all_rows();
  // Every row is checked before any is attached: a registry either gets all kernels or none.
  for (const KernelRow& r : rows) {
    const OpSchema* s = registry.find(r.type);
    if (s == nullptr) {
      CHANFLOW_THROW(Error) << "register_exec_kernels: the exec layer has a kernel for op '"
                            << r.type << "', which the registry has no schema for";
    }
    if (kernel_of(s) == nullptr) r.check(*s);
  }
  for (const KernelRow& r : rows) {
    const OpSchema* s = registry.find(r.type);
    if (kernel_of(s) == nullptr) s->set_extension(std::make_shared<KernelDef>(r));
  }
}

bool has_kernel(std::string_view type, const OpSchemaRegistry& registry) {
  return kernel_of(registry.find(type)) != nullptr;
}

std::vector<std::string> exec_kernel_types() {
  std::vector<std::string> out;
  for (const KernelRow& r : all_rows()) out.emplace_back(r.type);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<TensorInfo> infer_op(const OpDesc& op, const std::vector<TensorInfo>& inputs) {
  register_exec_kernels();
  const OpSchema* s = OpSchemaRegistry::global().find(op.type());
  const KernelDef* k = kernel_of(s);
  if (k == nullptr) CHANFLOW_THROW(Error) << "infer_op: unknown op type '" << op.type() << "'";
  if (k->infer == nullptr) {
    CHANFLOW_THROW(Error) << "infer_op: '" << op.type()
                          << "' is a control-flow or channel op, with no tensor inference";
  }
  return k->infer(op, s, inputs);
}

}  // namespace chanflow
