// op_table.cc — the table: rows assembled once, looked up by type, their schemas registered into
// the ir layer's registries; OpDef, AttrReader and the row builder.
#include "chanflow/ops/op_table.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>

#include "rows.h"

namespace chanflow {
namespace {

struct Table {
  std::vector<OpDef> rows;
  std::map<std::string, const OpDef*, std::less<>> by_type;
};

const Table& table() {
  static const Table* t = [] {
    auto* tab = new Table();  // never destroyed: rows may be used during exit
    for (auto family : {math_rows, conv_rows, nn_rows, optimizer_rows}) {
      std::vector<OpDef> f = family();
      for (OpDef& d : f) tab->rows.push_back(std::move(d));
    }
    for (const OpDef& d : tab->rows) {
      CHANFLOW_CHECK(tab->by_type.emplace(d.type(), &d).second)
          << "op table: two rows for '" << d.type() << "'";
    }
    return tab;
  }();
  return *t;
}

// The provider of the rows' own schemas (add_builtin_op_provider).
void register_table_schemas(OpSchemaRegistry& r) {
  for (const OpDef& d : table().rows) {
    if (d.has_kernel()) r.add(d.schema());
  }
}

// Registered as the layer loads: any program linking it can name its ops.
[[maybe_unused]] const bool kProviderAdded = [] {
  add_builtin_op_provider(&register_table_schemas);
  return true;
}();

int slot_of(const std::vector<ArgSpec>& specs, std::string_view name) {
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

// ---- AttrReader ---------------------------------------------------------------------------
Attr AttrReader::get(std::string_view name) const {
  const AttrSpec* spec = schema_.attr(name);
  if (spec == nullptr) {
    CHANFLOW_THROW(TypeError) << schema_.type() << ": reads attribute '" << name
                              << "', which its schema does not declare";
  }
  std::optional<Attr> a = desc_.defined() ? desc_.attr(name) : std::nullopt;
  if (a) return *a;
  if (spec->required()) {
    CHANFLOW_THROW(Error) << schema_.type() << ": attribute '" << name << "' is required";
  }
  return spec->make_default();
}

// ---- OpDef --------------------------------------------------------------------------------
const OpSchema& OpDef::schema() const {
  if (own_schema_) return *own_schema_;
  const OpSchema* s = OpSchemaRegistry::global().find(type_);
  CHANFLOW_CHECK(s != nullptr) << "op table: '" << type_ << "' has a gradient rule but no schema";
  return *s;
}

int OpDef::input_slot(std::string_view name) const noexcept {
  return slot_of(schema().inputs(), name);
}
int OpDef::output_slot(std::string_view name) const noexcept {
  return slot_of(schema().outputs(), name);
}

void OpDef::run(const AttrReader& attrs, KernelCall& call) const {
  if (kernel_ == nullptr) {
    CHANFLOW_THROW(Error) << type_ << ": the op table has no kernel for it (the executor runs it)";
  }
  kernel_(attrs, call);
}

void OpDef::infer(const AttrReader& attrs, InferCall& call) const {
  if (infer_ == nullptr) CHANFLOW_THROW(Error) << type_ << ": the op table has no inference";
  infer_(attrs, call);
}

void OpDef::grad(const AttrReader& attrs, GradCall& call) const {
  if (grad_ == nullptr) {
    CHANFLOW_THROW(Error) << type_ << " has no gradient"
                          << (no_grad_reason_.empty() ? "" : ": " + no_grad_reason_);
  }
  grad_(attrs, call);
}

const OpDef* find_op_def(std::string_view type) {
  const Table& t = table();
  auto it = t.by_type.find(type);
  return it == t.by_type.end() ? nullptr : it->second;
}

std::vector<std::string> op_def_types() {
  std::vector<std::string> out;
  for (const auto& [type, def] : table().by_type) out.push_back(type);
  return out;
}

// ---- OpDefBuilder -------------------------------------------------------------------------
OpDefBuilder::OpDefBuilder(std::string type) : schema_(std::make_shared<OpSchema>(type)) {
  def_.type_ = std::move(type);
}

OpDefBuilder OpDefBuilder::grad_rule_of(std::string type) {
  OpDefBuilder b("");
  b.schema_.reset();
  b.def_.type_ = std::move(type);
  return b;
}

OpDefBuilder& OpDefBuilder::doc(std::string text) {
  schema_->doc(std::move(text));
  return *this;
}
OpDefBuilder& OpDefBuilder::input(std::string name, bool required, bool duplicable,
                                  std::string doc) {
  schema_->input(std::move(name), required, duplicable, std::move(doc));
  return *this;
}
OpDefBuilder& OpDefBuilder::output(std::string name, bool required, bool duplicable,
                                   std::string doc) {
  schema_->output(std::move(name), required, duplicable, std::move(doc));
  return *this;
}
OpDefBuilder& OpDefBuilder::attr(std::string name, AttrType type,
                                 std::function<Attr()> make_default, std::string doc,
                                 std::function<std::string(const Attr&)> check) {
  schema_->attr(std::move(name), type, std::move(make_default), std::move(doc), std::move(check));
  return *this;
}
OpDefBuilder& OpDefBuilder::kernel(KernelFn f) {
  def_.kernel_ = f;
  return *this;
}
OpDefBuilder& OpDefBuilder::infer(InferFn f) {
  def_.infer_ = f;
  return *this;
}
OpDefBuilder& OpDefBuilder::grad(GradFn f) {
  def_.grad_ = f;
  return *this;
}
OpDefBuilder& OpDefBuilder::no_grad(std::string reason) {
  def_.no_grad_reason_ = std::move(reason);
  return *this;
}
OpDefBuilder& OpDefBuilder::draws_seed() {
  def_.draws_seed_ = true;
  return *this;
}

OpDefBuilder OpDefBuilder::grad_op(std::string grad_type, const std::vector<std::string>& ins,
                                   const std::vector<std::string>& outs,
                                   const std::vector<std::string>& out_grads,
                                   const std::vector<std::string>& in_grads) const {
  CHANFLOW_CHECK(schema_ != nullptr) << "grad_op of a gradient-only row";
  OpDefBuilder g(std::move(grad_type));
  g.doc("The gradient of " + schema_->type() + ".");
  auto find = [](const std::vector<ArgSpec>& specs, const std::string& n) -> const ArgSpec& {
    for (const ArgSpec& a : specs) {
      if (a.name == n) return a;
    }
    CHANFLOW_CHECK(false) << "grad_op: no slot " << n;
    return specs.front();
  };
  for (const std::string& n : ins) {
    g.input(n, false, find(schema_->inputs(), n).duplicable, "the forward input");
  }
  for (const std::string& n : outs) {
    g.input(n, false, find(schema_->outputs(), n).duplicable, "the forward output");
  }
  for (const std::string& n : out_grads) {
    g.input(grad_slot(n), false, find(schema_->outputs(), n).duplicable,
            "the loss's gradient with respect to " + n);
  }
  for (const std::string& n : in_grads) {
    g.output(grad_slot(n), false, find(schema_->inputs(), n).duplicable,
             "the loss's gradient with respect to " + n);
  }
  for (const AttrSpec& a : schema_->attrs())
    g.schema_->attr(a.name, a.type, a.make_default, a.doc, a.check);
  g.def_.no_grad_reason_ = "a gradient op is not differentiated again";
  return g;
}

OpDef OpDefBuilder::build() const {
  OpDef d = def_;
  if (schema_) {
    if (d.kernel_ != nullptr) {
      CHANFLOW_CHECK(d.infer_ != nullptr) << "op table: '" << d.type_ << "' has no inference";
    }
    d.own_schema_ = std::make_shared<const OpSchema>(*schema_);
  }
  return d;
}

// ---- helpers ------------------------------------------------------------------------------
OpDesc::Attrs forward_attrs(const GradCall& c) {
  OpDesc::Attrs out;
  for (const auto& [name, value] : c.forward().get()->attrs) out.emplace_back(name, value);
  return out;
}

void emit_grad_op(GradCall& c, const std::string& grad_type, const std::vector<std::string>& ins,
                  const std::vector<std::string>& outs, const std::vector<std::string>& out_grads,
                  const std::vector<std::string>& in_grads) {
  const OpDef* fwd = find_op_def(c.forward().type());
  CHANFLOW_CHECK(fwd != nullptr) << "emit_grad_op: no row for " << c.forward().type();
  const OpSchema& s = fwd->schema();
  // Duplicable slots pass all their values; others their one value.
  auto values = [&](const std::vector<ArgSpec>& specs, int slot, bool grads, bool outputs) {
    std::vector<GradValue> v;
    const size_t n = specs[static_cast<size_t>(slot)].duplicable ? 1024 : 1;
    for (size_t i = 0; i < n; ++i) {
      GradValue g = grads ? c.output_grad(slot, i) : outputs ? c.output(slot, i) : c.input(slot, i);
      if (!g.valid() && i > 0) break;
      v.push_back(g);
    }
    while (!v.empty() && !v.back().valid()) v.pop_back();
    return v;
  };
  GradCall::Inputs inputs;
  for (const std::string& n : ins) {
    auto v = values(s.inputs(), fwd->input_slot(n), false, false);
    if (!v.empty()) inputs.emplace_back(n, std::move(v));
  }
  for (const std::string& n : outs) {
    auto v = values(s.outputs(), fwd->output_slot(n), false, true);
    if (!v.empty()) inputs.emplace_back(n, std::move(v));
  }
  bool any_grad = false;
  for (const std::string& n : out_grads) {
    auto v = values(s.outputs(), fwd->output_slot(n), true, false);
    if (!v.empty()) {
      any_grad = true;
      inputs.emplace_back(grad_slot(n), std::move(v));
    }
  }
  if (!any_grad) return;  // no gradient reaches the op
  GradCall::Outputs wanted;
  std::vector<int> slots;
  for (const std::string& n : in_grads) {
    const int slot = fwd->input_slot(n);
    size_t count = 1;
    if (s.inputs()[static_cast<size_t>(slot)].duplicable) {
      count = 0;
      while (c.input(slot, count).valid()) ++count;
    }
    bool any = false;
    for (size_t i = 0; i < count; ++i) any = any || c.needs_grad(slot, i);
    if (any) {
      wanted.emplace_back(grad_slot(n), count);
      slots.push_back(slot);
    }
  }
  if (wanted.empty()) return;
  std::vector<std::vector<GradValue>> got =
      c.emit_outputs(grad_type, inputs, forward_attrs(c), wanted);
  for (size_t k = 0; k < slots.size(); ++k) {
    for (size_t i = 0; i < got[k].size(); ++i) {
      if (got[k][i].valid() && c.needs_grad(slots[k], i)) c.set_input_grad(slots[k], got[k][i], i);
    }
  }
}

std::vector<GradValue> GradCall::emit(const std::string& type, const Inputs& inputs,
                                      const OpDesc::Attrs& attrs,
                                      const std::vector<std::string>& outputs) {
  Outputs outs;
  for (const std::string& o : outputs) outs.emplace_back(o, 1);
  std::vector<std::vector<GradValue>> got = emit_outputs(type, inputs, attrs, outs);
  std::vector<GradValue> r;
  for (auto& v : got) r.push_back(v.empty() ? GradValue{} : v.front());
  return r;
}

void infer_like_first_input(const AttrReader&, InferCall& c) {
  const TensorInfo& x = c.input(0);
  c.set_output(0, x);
}

}  // namespace chanflow
