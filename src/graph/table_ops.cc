// table_ops.cc — graph nodes of the op table's rows: building (slots, attributes, the row's
// inference), evaluation (the row's kernel asked for one output) and the gradient (the row's
// rule, emitting table op nodes).
#include "chanflow/graph/table_ops.h"

#include "chanflow/core/error.h"
#include "chanflow/graph/ops.h"
#include "graph_impl.h"
#include "op_table.h"

namespace chanflow {
namespace detail {
namespace {

const OpDef& def_for(const std::string& type) {
  const OpDef* d = find_op_def(type);
  if (d == nullptr) CHANFLOW_THROW(Error) << "op '" << type << "': the op table has no such op";
  if (!d->has_kernel()) {
    CHANFLOW_THROW(Error) << "op '" << type
                          << "': only the executor runs it (a built-in program op); use the "
                             "graph's own op functions";
  }
  return *d;
}

// Checks the attributes against the schema and makes the op's desc.
OpDesc make_desc(const OpDef& d, const OpDesc::Attrs& attrs) {
  const OpSchema& s = d.schema();
  for (const auto& [name, value] : attrs) {
    const AttrSpec* spec = s.attr(name);
    if (spec == nullptr) {
      std::string known;
      for (const AttrSpec& a : s.attrs()) known += (known.empty() ? "" : ", ") + a.name;
      CHANFLOW_THROW(Error) << "op '" << d.type() << "': no attribute '" << name
                            << "' (it has: " << (known.empty() ? "none" : known) << ")";
    }
    const bool int_like = (spec->type == AttrType::kInt || spec->type == AttrType::kLong) &&
                          (value.type() == AttrType::kInt || value.type() == AttrType::kLong);
    if (value.type() != spec->type && !int_like) {
      CHANFLOW_THROW(TypeError) << "op '" << d.type() << "': attribute '" << name << "' must be "
                                << attr_type_name(spec->type) << ", got "
                                << attr_type_name(value.type());
    }
    if (spec->check) {
      const std::string problem = spec->check(value);
      if (!problem.empty()) {
        CHANFLOW_THROW(Error) << "op '" << d.type() << "': attribute '" << name << "' " << problem;
      }
    }
  }
  OpDesc desc = OpDesc::make(d.type(), {}, {}, attrs);
  if (d.draws_seed() && !AttrReader(s, desc).b("fix_seed")) {
    CHANFLOW_THROW(Error) << "op '" << d.type()
                          << "': in a graph it needs fix_seed true (and a seed): each output node "
                             "runs the kernel on its own, so a fresh draw per run would give them "
                             "different random values";
  }
  return desc;
}

class BuildInfer final : public InferCall {
 public:
  BuildInfer(const GraphImpl& g, const NodeData& n) : n_(n) {
    for (size_t k = 0; k + 1 < n.in_start.size(); ++k) {
      for (uint32_t i = n.in_start[k]; i < n.in_start[k + 1]; ++i) {
        const NodeData& o = g.nodes[static_cast<size_t>(n.operands[i])];
        infos_.push_back(TensorInfo{o.dtype, o.shape});
      }
    }
  }
  size_t num_inputs(int slot) const override {
    const auto s = static_cast<size_t>(slot);
    return slot >= 0 && s + 1 < n_.in_start.size() ? n_.in_start[s + 1] - n_.in_start[s] : 0;
  }
  const TensorInfo& input(int slot, size_t i) const override {
    if (i >= num_inputs(slot)) {
      CHANFLOW_THROW(Error) << "op '" << n_.def->type() << "': input slot '"
                            << n_.def->schema().inputs().at(static_cast<size_t>(slot)).name
                            << "' is missing";
    }
    return infos_[n_.in_start[static_cast<size_t>(slot)] + i];
  }
  size_t num_outputs(int slot) const override { return slot == n_.out_slot ? n_.out_count : 0; }
  void set_output(int slot, TensorInfo info, size_t i) override {
    if (slot == n_.out_slot && i == n_.out_index) out = std::move(info);
  }
  std::optional<TensorInfo> out;

 private:
  const NodeData& n_;
  std::vector<TensorInfo> infos_;
};

Node build_table_node(const OpDef& d, const OpDesc& desc, const OpInputs& inputs, int out_slot,
                      uint32_t out_index = 0, uint32_t out_count = 1) {
  const OpSchema& s = d.schema();
  if (out_count > 1 && !s.outputs().at(static_cast<size_t>(out_slot)).duplicable) {
    CHANFLOW_THROW(Error) << "op '" << d.type() << "': output slot '"
                          << s.outputs().at(static_cast<size_t>(out_slot)).name
                          << "' holds one value, not " << out_count;
  }
  GraphImpl* g = nullptr;
  for (const auto& [slot, nodes] : inputs) {
    const ArgSpec* spec = s.input(slot);
    if (spec == nullptr) {
      std::string known;
      for (const ArgSpec& a : s.inputs()) known += (known.empty() ? "" : ", ") + a.name;
      CHANFLOW_THROW(Error) << "op '" << d.type() << "': no input slot '" << slot
                            << "' (it has: " << known << ")";
    }
    if (nodes.size() > 1 && !spec->duplicable) {
      CHANFLOW_THROW(Error) << "op '" << d.type() << "': input slot '" << slot
                            << "' takes one node, got " << nodes.size();
    }
    for (const Node& n : nodes) {
      if (!n.valid()) {
        CHANFLOW_THROW(Error) << "op '" << d.type() << "': input slot '" << slot
                              << "' has an invalid (default) Node";
      }
      if (g == nullptr) g = n.impl();
      if (g != n.impl()) {
        CHANFLOW_THROW(Error) << "op '" << d.type() << "': its inputs belong to different graphs";
      }
    }
  }
  if (g == nullptr) CHANFLOW_THROW(Error) << "op '" << d.type() << "': no input nodes";
  std::vector<int64_t> operands;
  std::vector<uint32_t> start{0};
  for (const ArgSpec& a : s.inputs()) {
    size_t count = 0;
    for (const auto& [slot, nodes] : inputs) {
      if (slot != a.name) continue;
      for (const Node& n : nodes) operands.push_back(n.id());
      count += nodes.size();
    }
    if (count == 0 && a.required) {
      CHANFLOW_THROW(Error) << "op '" << d.type() << "': input slot '" << a.name << "' is required";
    }
    start.push_back(start.back() + static_cast<uint32_t>(count));
  }
  NodeData& n = g->nodes.emplace_back();
  try {
    n.id = static_cast<int64_t>(g->nodes.size()) - 1;
    n.op = OpKind::kTable;
    n.def = &d;
    n.desc = desc;
    n.operands = std::move(operands);
    n.in_start = std::move(start);
    n.out_slot = out_slot;
    n.out_index = out_index;
    n.out_count = out_count;
    const std::string& slot_name = s.outputs().at(static_cast<size_t>(out_slot)).name;
    n.name = d.type() + std::to_string(n.id) + (out_slot == 0 ? "" : "." + slot_name) +
             (out_count > 1 ? "[" + std::to_string(out_index) + "]" : "");
    BuildInfer infer(*g, n);
    d.infer(AttrReader(s, desc), infer);
    if (!infer.out) {
      CHANFLOW_THROW(Error) << "op '" << d.type() << "': output slot '" << slot_name
                            << "' is not computed from these inputs";
    }
    for (int64_t e : infer.out->shape) {
      if (e < 0) {
        CHANFLOW_THROW(ShapeError)
            << "op '" << d.type() << "': output '" << slot_name << "' has an unknown extent";
      }
    }
    n.shape = infer.out->shape;
    n.dtype = infer.out->dtype;
    check_node_shape(n);
  } catch (...) {
    g->nodes.pop_back();
    throw;
  }
  return {g, n.id};
}

int output_slot_of(const OpDef& d, const std::string& output) {
  if (output.empty()) return 0;
  const int k = d.output_slot(output);
  if (k < 0) {
    std::string known;
    for (const ArgSpec& a : d.schema().outputs()) known += (known.empty() ? "" : ", ") + a.name;
    CHANFLOW_THROW(Error) << "op '" << d.type() << "': no output slot '" << output
                          << "' (it has: " << known << ")";
  }
  return k;
}

class EvalCall final : public KernelCall {
 public:
  EvalCall(const NodeData& n, const Tensor* in, const Context* ctx) : n_(n), in_(in), ctx_(ctx) {}
  size_t num_inputs(int slot) const override {
    const auto s = static_cast<size_t>(slot);
    return slot >= 0 && s + 1 < n_.in_start.size() ? n_.in_start[s + 1] - n_.in_start[s] : 0;
  }
  Tensor input(int slot, size_t i) const override {
    if (i >= num_inputs(slot)) {
      CHANFLOW_THROW(Error) << describe(n_) << ": input slot #" << slot << " has no value #" << i;
    }
    return in_[n_.in_start[static_cast<size_t>(slot)] + i];
  }
  size_t num_outputs(int slot) const override { return slot == n_.out_slot ? n_.out_count : 0; }
  bool wants_value(int slot, size_t i) const override {
    return slot == n_.out_slot && i == n_.out_index;
  }
  Tensor take_output(int, size_t) override { return {}; }
  void set_output(int slot, Tensor value, size_t i) override {
    if (slot == n_.out_slot && i == n_.out_index) out = std::move(value);
  }
  KernelOptions options(int64_t work, WorkKind kind) const override {
    KernelOptions o;
    if (ctx_ != nullptr && chunk_by_policy(o, work, kind, [c = ctx_] { check_context(*c); })) {
      check_context(*ctx_);
    }
    return o;
  }
  Tensor out;

 private:
  const NodeData& n_;
  const Tensor* in_;
  const Context* ctx_;
};

// A gradient rule's emitted op as table nodes of graph `g`: one node per wanted output value.
std::vector<std::vector<GradValue>> emit_table_nodes(GraphImpl* g, const std::string& type,
                                                     const GradCall::Inputs& inputs,
                                                     const OpDesc::Attrs& attrs,
                                                     const GradCall::Outputs& outputs) {
  OpInputs ins;
  for (const auto& [slot, values] : inputs) {
    std::vector<Node> nodes;
    for (const GradValue& gv : values) {
      if (gv.valid()) nodes.emplace_back(g, gv.id);
    }
    if (!nodes.empty()) ins.emplace_back(slot, std::move(nodes));
  }
  const OpDef& d = def_for(type);
  const OpDesc desc = make_desc(d, attrs);
  std::vector<std::vector<GradValue>> r;
  for (const auto& [o, count] : outputs) {
    const int slot = output_slot_of(d, o);
    std::vector<GradValue> values;
    for (size_t i = 0; i < count; ++i) {
      values.push_back(GradValue{build_table_node(d, desc, ins, slot, static_cast<uint32_t>(i),
                                                  static_cast<uint32_t>(count))
                                     .id()});
    }
    r.push_back(std::move(values));
  }
  return r;
}

// The gradient rule's view of a table op node: values are node ids of its graph.
class GraphGradCall final : public GradCall {
 public:
  explicit GraphGradCall(Vjp& v) : v_(v) {}
  GradValue input(int slot, size_t i) override {
    const int64_t k = operand_index(slot, i);
    return k < 0 ? GradValue{} : GradValue{v_.x[static_cast<size_t>(k)].id()};
  }
  GradValue output(int slot, size_t i) override {
    if (slot < 0 || static_cast<size_t>(slot) >= v_.n.def->schema().outputs().size()) return {};
    // The node's own slot has out_count values; another slot is taken to hold one.
    const uint32_t count = slot == v_.n.out_slot ? v_.n.out_count : 1;
    if (i >= count) return {};
    if (slot == v_.n.out_slot && i == v_.n.out_index) return GradValue{v_.y.id()};
    // A sibling node computing that output of the same op.
    OpInputs ins;
    const OpSchema& s = v_.n.def->schema();
    for (size_t k = 0; k + 1 < v_.n.in_start.size(); ++k) {
      std::vector<Node> nodes;
      for (uint32_t j = v_.n.in_start[k]; j < v_.n.in_start[k + 1]; ++j) nodes.push_back(v_.x[j]);
      if (!nodes.empty()) ins.emplace_back(s.inputs()[k].name, std::move(nodes));
    }
    return GradValue{
        build_table_node(*v_.n.def, v_.n.desc, ins, slot, static_cast<uint32_t>(i), count).id()};
  }
  GradValue output_grad(int slot, size_t i) override {
    return slot == v_.n.out_slot && i == v_.n.out_index ? GradValue{v_.g.id()} : GradValue{};
  }
  bool needs_grad(int slot, size_t i) const override {
    const int64_t k = operand_index(slot, i);
    return k >= 0 && v_.need(static_cast<size_t>(k));
  }
  void set_input_grad(int slot, GradValue g, size_t i) override {
    const int64_t k = operand_index(slot, i);
    if (k < 0 || !g.valid() || !v_.need(static_cast<size_t>(k))) return;
    Node gn(v_.y.impl(), g.id);
    Node& out = v_.out[static_cast<size_t>(k)];
    out = out.valid() ? add(out, gn) : gn;
  }
  std::vector<std::vector<GradValue>> emit_outputs(const std::string& type, const Inputs& inputs,
                                                   const OpDesc::Attrs& attrs,
                                                   const Outputs& outputs) override {
    return emit_table_nodes(v_.y.impl(), type, inputs, attrs, outputs);
  }
  const OpDesc& forward() const override { return v_.n.desc; }

 private:
  int64_t operand_index(int slot, size_t i) const {
    const auto s = static_cast<size_t>(slot);
    if (slot < 0 || s + 1 >= v_.n.in_start.size()) return -1;
    const size_t k = v_.n.in_start[s] + i;
    return k < v_.n.in_start[s + 1] ? static_cast<int64_t>(k) : -1;
  }
  Vjp& v_;
};

// The rule's view of a graph op node (not a table node) computing the unary op `forward`:
// input X is the node's operand, output Out the node, Out@GRAD the upstream gradient.
class NativeGradCall final : public GradCall {
 public:
  NativeGradCall(Vjp& v, const OpDesc& forward) : v_(v), forward_(forward) {}
  GradValue input(int slot, size_t i) override {
    return slot == 0 && i == 0 ? GradValue{v_.x[0].id()} : GradValue{};
  }
  GradValue output(int slot, size_t i) override {
    return slot == 0 && i == 0 ? GradValue{v_.y.id()} : GradValue{};
  }
  GradValue output_grad(int slot, size_t i) override {
    return slot == 0 && i == 0 ? GradValue{v_.g.id()} : GradValue{};
  }
  bool needs_grad(int slot, size_t i) const override { return slot == 0 && i == 0 && v_.need(0); }
  void set_input_grad(int slot, GradValue g, size_t i) override {
    if (slot != 0 || i != 0 || !g.valid() || !v_.need(0)) return;
    v_.out[0] = Node(v_.y.impl(), g.id);
  }
  std::vector<std::vector<GradValue>> emit_outputs(const std::string& type, const Inputs& inputs,
                                                   const OpDesc::Attrs& attrs,
                                                   const Outputs& outputs) override {
    return emit_table_nodes(v_.y.impl(), type, inputs, attrs, outputs);
  }
  const OpDesc& forward() const override { return forward_; }

 private:
  Vjp& v_;
  const OpDesc& forward_;
};

}  // namespace

void vjp_by_rule(Vjp& v, const OpDesc& forward) {
  if (!v.need(0)) return;
  const OpDef* d = find_op_def(forward.type());
  CHANFLOW_CHECK(d != nullptr && d->has_grad())
      << "graph: no gradient rule for " << forward.type() << " in the op table";
  NativeGradCall call(v, forward);
  d->grad(AttrReader(d->schema(), forward), call);
}

Tensor eval_table(const NodeData& n, const Tensor* operands, const Context* ctx) {
  EvalCall call(n, operands, ctx);
  try {
    n.def->run(AttrReader(n.def->schema(), n.desc), call);
  } catch (const ShapeError& e) {
    CHANFLOW_THROW(ShapeError) << describe(n) << ": " << e.what();
  } catch (const TypeError& e) {
    CHANFLOW_THROW(TypeError) << describe(n) << ": " << e.what();
  }
  if (!call.out.defined()) {
    CHANFLOW_THROW(Error) << describe(n) << ": the kernel did not compute the output";
  }
  if (call.out.dtype() != n.dtype) {
    CHANFLOW_THROW(TypeError) << describe(n) << ": inferred dtype " << n.dtype
                              << " but the kernel gave " << call.out.dtype();
  }
  return call.out;
}

void table_vjp(Vjp& v) {
  bool any = false;
  for (size_t k = 0; k < v.x.size(); ++k) any = any || v.need(k);
  if (!any) return;
  if (!v.n.def->has_grad()) {
    CHANFLOW_THROW(Error) << "grad: " << describe(v.n) << " has no gradient"
                          << (v.n.def->no_grad_reason().empty() ? ""
                                                                : ": " + v.n.def->no_grad_reason());
  }
  GraphGradCall call(v);
  v.n.def->grad(AttrReader(v.n.def->schema(), v.n.desc), call);
}

}  // namespace detail

Node op(const std::string& type, const OpInputs& inputs, const OpDesc::Attrs& attrs,
        const std::string& output) {
  const OpDef& d = detail::def_for(type);
  return detail::build_table_node(d, detail::make_desc(d, attrs), inputs,
                                  detail::output_slot_of(d, output));
}

std::vector<Node> op_values(const std::string& type, const OpInputs& inputs,
                            const OpDesc::Attrs& attrs, const std::string& output, size_t count) {
  const OpDef& d = detail::def_for(type);
  const OpDesc desc = detail::make_desc(d, attrs);
  const int slot = detail::output_slot_of(d, output);
  if (count == 0) CHANFLOW_THROW(Error) << "op '" << type << "': asked for 0 values of " << output;
  std::vector<Node> r;
  for (size_t i = 0; i < count; ++i) {
    r.push_back(detail::build_table_node(d, desc, inputs, slot, static_cast<uint32_t>(i),
                                         static_cast<uint32_t>(count)));
  }
  return r;
}

std::map<std::string, Node> op_outputs(const std::string& type, const OpInputs& inputs,
                                       const OpDesc::Attrs& attrs,
                                       const std::vector<std::string>& outputs) {
  const OpDef& d = detail::def_for(type);
  const OpDesc desc = detail::make_desc(d, attrs);
  std::vector<std::string> names = outputs;
  if (names.empty()) {
    for (const ArgSpec& a : d.schema().outputs()) names.push_back(a.name);
  }
  std::map<std::string, Node> r;
  for (const std::string& o : names) {
    r.emplace(o, detail::build_table_node(d, desc, inputs, detail::output_slot_of(d, o)));
  }
  return r;
}

namespace {
Attr pair_attr(const std::array<int64_t, 2>& v) { return Attr::ints({v[0], v[1]}); }
}  // namespace

Node conv2d(const Node& input, const Node& filter, const Conv2dParams& p) {
  return op("conv2d", {{"Input", {input}}, {"Filter", {filter}}},
            {{"strides", pair_attr(p.strides)},
             {"paddings", pair_attr(p.paddings)},
             {"dilations", pair_attr(p.dilations)},
             {"groups", Attr::i(p.groups)}});
}

Node pool2d(const Node& x, const Pool2dParams& p) {
  return op("pool2d", {{"X", {x}}},
            {{"pooling_type", Attr::s(p.type == PoolType::kMax ? "max" : "avg")},
             {"ksize", pair_attr(p.ksize)},
             {"strides", pair_attr(p.strides)},
             {"paddings", pair_attr(p.paddings)},
             {"global_pooling", Attr::b(p.global_pooling)},
             {"ceil_mode", Attr::b(p.ceil_mode)},
             {"exclusive", Attr::b(p.exclusive)}});
}

Node batch_norm(const Node& x, const Node& scale, const Node& bias, const Node& mean,
                const Node& variance, double momentum, double epsilon, bool is_test,
                DataLayout layout) {
  return op("batch_norm",
            {{"X", {x}},
             {"Scale", {scale}},
             {"Bias", {bias}},
             {"Mean", {mean}},
             {"Variance", {variance}}},
            {{"momentum", Attr::f(momentum)},
             {"epsilon", Attr::f(epsilon)},
             {"is_test", Attr::b(is_test)},
             {"data_layout", Attr::s(layout == DataLayout::kNHWC ? "NHWC" : "NCHW")}},
            "Y");
}

Node dropout(const Node& x, double prob, int64_t seed, bool is_test) {
  return op("dropout", {{"X", {x}}},
            {{"dropout_prob", Attr::f(prob)},
             {"is_test", Attr::b(is_test)},
             {"fix_seed", Attr::b(true)},
             {"seed", Attr::i(seed)}},
            "Out");
}

Node softmax_with_cross_entropy(const Node& logits, const Node& label, bool soft_label,
                                int64_t ignore_index) {
  return op("softmax_with_cross_entropy", {{"Logits", {logits}}, {"Label", {label}}},
            {{"soft_label", Attr::b(soft_label)}, {"ignore_index", Attr::i(ignore_index)}}, "Loss");
}

Node cross_entropy(const Node& x, const Node& label, bool soft_label, int64_t ignore_index) {
  return op("cross_entropy", {{"X", {x}}, {"Label", {label}}},
            {{"soft_label", Attr::b(soft_label)}, {"ignore_index", Attr::i(ignore_index)}});
}

Node leaky_relu(const Node& x, double alpha) {
  return op("leaky_relu", {{"X", {x}}}, {{"alpha", Attr::f(alpha)}});
}

Node concat(const std::vector<Node>& xs, int64_t axis) {
  return op("concat", {{"X", xs}}, {{"axis", Attr::i(axis)}});
}

Node flatten(const Node& x, int64_t axis) {
  return op("flatten", {{"X", {x}}}, {{"axis", Attr::i(axis)}});
}

}  // namespace chanflow
