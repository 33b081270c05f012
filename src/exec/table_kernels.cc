// table_kernels.cc — the executor's row for every op of the op table (chanflow/ops/op_table.h)
// that has a kernel there: parameters bound slot by slot, the row's kernel run on the frame's
// tensors, the row's inference used for the declared-dtype checks. One adapter for all of them.
#include <utility>

#include "chanflow/ops/op_table.h"
#include "kernel.h"

namespace chanflow::exec_detail {
namespace {

// What a prepared table op keeps: its row, its desc (attributes), and where each slot's
// variables start in PreparedOp::in / out (slot k holds [start[k], start[k + 1])).
struct TableAttrs {
  const OpDef* def = nullptr;
  OpDesc desc;
  std::vector<uint32_t> in_start, out_start;
};

std::vector<uint32_t> layout(const std::vector<ArgSpec>& specs, const OpDesc& desc, bool inputs) {
  std::vector<uint32_t> start{0};
  for (const ArgSpec& a : specs) {
    const size_t n = (inputs ? desc.input(a.name) : desc.output(a.name)).size();
    start.push_back(start.back() + static_cast<uint32_t>(n));
  }
  return start;
}

class ExecCall final : public KernelCall {
 public:
  ExecCall(const PreparedOp& op, const TableAttrs& a, Frame& f) : op_(op), a_(a), f_(f) {}
  size_t num_inputs(int slot) const override { return count(a_.in_start, slot); }
  Tensor input(int slot, size_t i) const override {
    check_index(a_.in_start, slot, i, "input");
    return read_tensor(op_, f_, a_.in_start[static_cast<size_t>(slot)] + i);
  }
  size_t num_outputs(int slot) const override { return count(a_.out_start, slot); }
  Tensor take_output(int slot, size_t i) override {
    check_index(a_.out_start, slot, i, "output");
    return take_output_buffer(op_, f_, a_.out_start[static_cast<size_t>(slot)] + i);
  }
  void set_output(int slot, Tensor value, size_t i) override {
    if (i >= num_outputs(slot)) return;
    write_out(op_, f_, a_.out_start[static_cast<size_t>(slot)] + i, std::move(value));
  }
  KernelOptions options(int64_t work, WorkKind kind) const override {
    return kernel_options(f_, work, kind);
  }

 private:
  static size_t count(const std::vector<uint32_t>& start, int slot) {
    const auto s = static_cast<size_t>(slot);
    return slot >= 0 && s + 1 < start.size() ? start[s + 1] - start[s] : 0;
  }
  void check_index(const std::vector<uint32_t>& start, int slot, size_t i, const char* what) const {
    if (i >= count(start, slot)) {
      CHANFLOW_THROW(Error) << op_.type << ": " << what << " slot #" << slot << " has no value #"
                            << i;
    }
  }
  const PreparedOp& op_;
  const TableAttrs& a_;
  Frame& f_;
};

class FlatInfer final : public InferCall {
 public:
  FlatInfer(const TableAttrs& a, const std::vector<TensorInfo>& in) : a_(a), in_(in) {
    out_.resize(a.out_start.back());
    set_.assign(out_.size(), false);
  }
  size_t num_inputs(int slot) const override { return count(a_.in_start, slot); }
  const TensorInfo& input(int slot, size_t i) const override {
    if (i >= num_inputs(slot)) {
      CHANFLOW_THROW(Error) << a_.def->type() << ": input slot #" << slot << " has no value #" << i;
    }
    return in_[a_.in_start[static_cast<size_t>(slot)] + i];
  }
  size_t num_outputs(int slot) const override { return count(a_.out_start, slot); }
  void set_output(int slot, TensorInfo info, size_t i) override {
    if (i >= num_outputs(slot)) return;
    const size_t k = a_.out_start[static_cast<size_t>(slot)] + i;
    out_[k] = std::move(info);
    set_[k] = true;
  }
  // The outputs in PreparedOp::out order, up to the first the row did not infer.
  std::vector<TensorInfo> result() && {
    size_t n = 0;
    while (n < set_.size() && set_[n]) ++n;
    out_.resize(n);
    return std::move(out_);
  }

 private:
  static size_t count(const std::vector<uint32_t>& start, int slot) {
    const auto s = static_cast<size_t>(slot);
    return slot >= 0 && s + 1 < start.size() ? start[s + 1] - start[s] : 0;
  }
  const TableAttrs& a_;
  const std::vector<TensorInfo>& in_;
  std::vector<TensorInfo> out_;
  std::vector<bool> set_;
};

const OpDef& def_of(const std::string& type) {
  const OpDef* d = find_op_def(type);
  CHANFLOW_CHECK(d != nullptr && d->has_kernel()) << "table kernel row for unknown op " << type;
  return *d;
}

void run_table(const PreparedOp& op, Frame& f) {
  const auto& a = op.attrs.get<TableAttrs>();
  ExecCall call(op, a, f);
  a.def->run(AttrReader(a.def->schema(), a.desc), call);
}

void prepare_table(PrepareCtx& c) {
  TableAttrs a;
  a.def = &def_of(c.schema().type());
  a.desc = c.desc();
  PreparedOp& op = c.op();
  for (const ArgSpec& s : c.schema().inputs()) {
    for (const std::string& n : c.desc().input(s.name)) {
      op.in.push_back(c.resolve(n));
      op.in_names.push_back(n);
    }
  }
  for (const ArgSpec& s : c.schema().outputs()) {
    for (const std::string& n : c.desc().output(s.name)) {
      op.out.push_back(c.resolve(n));
      op.out_names.push_back(n);
    }
  }
  a.in_start = layout(c.schema().inputs(), c.desc(), true);
  a.out_start = layout(c.schema().outputs(), c.desc(), false);
  op.attrs.set(std::move(a));
}

std::vector<TensorInfo> infer_table(const OpDesc& desc, const OpSchema* schema,
                                    const std::vector<TensorInfo>& in) {
  TableAttrs a;
  a.def = &def_of(desc.type());
  const OpSchema& s = schema != nullptr ? *schema : a.def->schema();
  a.in_start = layout(s.inputs(), desc, true);
  a.out_start = layout(s.outputs(), desc, false);
  if (in.size() != a.in_start.back()) {
    CHANFLOW_THROW(Error) << desc.type() << ": " << in.size() << " input types for "
                          << a.in_start.back() << " input variables";
  }
  FlatInfer call(a, in);
  a.def->infer(AttrReader(s, desc), call);
  return std::move(call).result();
}

void check_nothing(const OpSchema&) {}

}  // namespace

std::vector<KernelRow> table_kernels() {
  std::vector<KernelRow> rows;
  for (const std::string& type : op_def_types()) {
    const OpDef* d = find_op_def(type);
    if (!d->has_kernel()) continue;
    rows.push_back(
        KernelRow{d->type().c_str(), &run_table, &prepare_table, &infer_table, &check_nothing});
  }
  return rows;
}

}  // namespace chanflow::exec_detail
