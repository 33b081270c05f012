// backward.cc — append_backward: the program side of the gradient rules (a GradCall whose values
// are variables of block 0).
#include "chanflow/ops/backward.h"

#include <map>
#include <optional>

#include "chanflow/core/error.h"
#include "chanflow/ir/var_type.h"
#include "chanflow/ops/op_table.h"
#include "rows.h"

namespace chanflow {
namespace {

// Paddle's OpRole numbers (framework/op_proto_maker.h): Backward and Backward | Loss.
constexpr int64_t kRoleBackward = 0x0001;
constexpr int64_t kRoleBackwardLoss = 0x0101;

bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

std::string op_where(size_t index, const OpDesc& op) {
  return "block 0, op " + std::to_string(index) + " ('" + op.type() + "')";
}

// An op being emitted: built with mutable names (contributions are renamed when their variable's
// gradient is finalised) and turned into an OpDesc at the end.
struct PendingOp {
  std::string type;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs, outputs;  // value ids
  OpDesc::Attrs attrs;
};

class Backward {
 public:
  Backward(const Program& program, const std::string& loss, const std::vector<std::string>& params,
           const std::set<std::string>& no_grad)
      : program_(program), block_(program.block(0)), no_grad_(no_grad) {
    for (const VarDesc& v : block_->vars) decls_.emplace(v->name, v);
    tensor_var(loss, "the loss");
    for (size_t i = 0; i < block_->ops.size(); ++i) {
      for (const auto& [slot, names] : block_->ops[i]->outputs) {
        for (const String& n : names) {
          if (std::string(n) == loss) last_ = static_cast<int64_t>(i);
        }
      }
    }
    if (last_ < 0) {
      CHANFLOW_THROW(Error) << "append_backward: no op of block 0 writes the loss '" << loss << "'";
    }
    if (params.empty()) {
      for (const VarDesc& v : block_->vars) {
        if (v->persistable && v->var_type() == VarType::kLoDTensor && v->data_type >= 0 &&
            is_element_type(static_cast<VarType>(v->data_type)) &&
            is_float(dtype_from_var_type(static_cast<VarType>(v->data_type))) &&
            no_grad_.count(v->name) == 0) {
          params_.push_back(v->name);
        }
      }
    } else {
      for (const std::string& p : params) {
        tensor_var(p, "the parameter");
        params_.push_back(p);
      }
    }
    loss_ = loss;
  }

  BackwardResult run() {
    analyse();
    // The loss's gradient: ones of its shape.
    const VarDesc lv = decls_.at(loss_);
    std::vector<int64_t> dims;
    for (const Int& d : lv->dims) dims.push_back(d->value < 0 ? 1 : d->value);
    if (dims.empty()) dims = {1};
    const std::string lg = loss_ + "@GRAD";
    declare(lg, TensorInfo{dtype_from_var_type(static_cast<VarType>(lv->data_type)), dims});
    extra_ops_.push_back({OpDesc::make("fill_constant", {}, {{"Out", {lg}}},
                                       {{"shape", Attr::ints(dims)},
                                        {"dtype", Attr::i(lv->data_type)},
                                        {"value", Attr::f(1.0)},
                                        {"op_role", Attr::i(kRoleBackwardLoss)}})});
    grads_[loss_].push_back(value(lg));
    finalised_.insert(loss_);

    for (int64_t i = last_; i >= 0; --i) differentiate(static_cast<size_t>(i));

    BackwardResult r;
    for (const std::string& p : params_) {
      if (grads_.count(p) == 0) continue;
      finalise(p);
      r.params_and_grads.emplace_back(p, p + "@GRAD");
    }
    r.program = assemble();
    return r;
  }

 private:
  class Call;

  VarDesc tensor_var(const std::string& name, const char* role) const {
    auto it = decls_.find(name);
    if (it == decls_.end()) {
      CHANFLOW_THROW(Error) << "append_backward: " << role << " '" << name
                            << "' is not a variable of block 0";
    }
    const VarDesc& v = it->second;
    if (v->var_type() != VarType::kLoDTensor || v->data_type < 0 ||
        !is_element_type(static_cast<VarType>(v->data_type)) ||
        !is_float(dtype_from_var_type(static_cast<VarType>(v->data_type)))) {
      CHANFLOW_THROW(Error) << "append_backward: " << role << " '" << name
                            << "' must be a FP32 or FP64 tensor variable";
    }
    return v;
  }

  // requires_: a variable a gradient must reach (a parameter, or written by an op reading one).
  // reaches_: a variable the loss depends on. writer_: the op writing each variable.
  void analyse() {
    for (const std::string& p : params_) requires_.insert(p);
    for (int64_t i = 0; i <= last_; ++i) {
      const OpDesc& op = block_->ops[static_cast<size_t>(i)];
      bool any = false;
      for (const auto& [slot, names] : op->inputs) {
        for (const String& n : names) any = any || requires_.count(std::string(n)) != 0;
      }
      for (const auto& [slot, names] : op->outputs) {
        for (const String& n : names) {
          const std::string s(n);
          auto [it, fresh] = writer_.emplace(s, i);
          if (!fresh && it->second != i) multi_writer_.insert(s);
          it->second = i;
          if (any && no_grad_.count(s) == 0) requires_.insert(s);
        }
      }
    }
    reaches_.insert(loss_);
    for (int64_t i = last_; i >= 0; --i) {
      const OpDesc& op = block_->ops[static_cast<size_t>(i)];
      bool out_reached = false;
      for (const auto& [slot, names] : op->outputs) {
        for (const String& n : names) out_reached = out_reached || reaches_.count(std::string(n));
      }
      if (!out_reached) continue;
      for (const auto& [slot, names] : op->inputs) {
        for (const String& n : names) reaches_.insert(std::string(n));
      }
    }
  }

  bool needs(const std::string& var) const {
    return requires_.count(var) != 0 && reaches_.count(var) != 0 && no_grad_.count(var) == 0;
  }

  void differentiate(size_t index);

  int64_t value(const std::string& name) {
    names_.push_back(name);
    return static_cast<int64_t>(names_.size() - 1);
  }

  // Declares a new variable of block 0 (its declaration is made when the program is assembled,
  // under the name it has then).
  void declare(const std::string& name, const TensorInfo& info) {
    new_order_.push_back(name);
    new_infos_[name] = info;
  }

  TensorInfo info_of(const std::string& name) const {
    if (auto it = new_infos_.find(name); it != new_infos_.end()) return it->second;
    const VarDesc& v = decls_.at(name);
    TensorInfo t;
    t.dtype = v->data_type >= 0 && is_element_type(static_cast<VarType>(v->data_type))
                  ? dtype_from_var_type(static_cast<VarType>(v->data_type))
                  : DType::kFloat32;
    for (const Int& d : v->dims) t.shape.push_back(d->value);
    return t;
  }

  // A fresh temporary name for an output of an emitted `type` op.
  std::string temp_name(const std::string& type) {
    std::string n;
    do {
      n = type + "_" + std::to_string(temp_++) + ".tmp@GRAD";
    } while (decls_.count(n) != 0 || new_infos_.count(n) != 0);
    return n;
  }

  // Whether value `id` may be renamed into a contribution: a temporary an emitted op wrote that
  // is no other variable's contribution yet.
  bool renamable(int64_t id) const { return temps_.count(id) != 0 && claimed_.count(id) == 0; }

  // The gradient of `var` complete: one contribution is renamed `var@GRAD`; several are named
  // `var@GRAD@RENAME@k` and summed into it.
  void finalise(const std::string& var) {
    if (!finalised_.insert(var).second) return;
    std::vector<int64_t>& contribs = grads_.at(var);
    const std::string g = var + "@GRAD";
    if (contribs.size() == 1) {
      rename(contribs[0], g);
      return;
    }
    for (size_t k = 0; k < contribs.size(); ++k) {
      rename(contribs[k], g + "@RENAME@" + std::to_string(k));
    }
    declare(g, info_of(names_[static_cast<size_t>(contribs[0])]));
    const int64_t out = value(g);
    pending_.push_back(PendingOp{
        "sum", {{"X", contribs}}, {{"Out", {out}}}, {{"op_role", Attr::i(kRoleBackward)}}});
    contribs = {out};
  }

  // Renames a temporary value and its declaration.
  void rename(int64_t id, const std::string& to) {
    std::string& from = names_[static_cast<size_t>(id)];
    if (from == to) return;
    auto node = new_infos_.extract(from);
    CHANFLOW_CHECK(!node.empty()) << "append_backward: renaming " << from << ", not a temporary";
    node.key() = to;
    new_infos_.insert(std::move(node));
    for (std::string& n : new_order_) {
      if (n == from) n = to;
    }
    from = to;
  }

  Program assemble() const {
    std::vector<OpDesc> ops;
    for (const OpDesc& op : block_->ops) ops.push_back(op);
    for (const auto& e : extra_ops_) ops.push_back(e);
    for (const PendingOp& p : pending_) {
      OpDesc::Args ins, outs;
      for (const auto& [slot, ids] : p.inputs) {
        std::vector<std::string> n;
        for (int64_t id : ids) n.push_back(names_[static_cast<size_t>(id)]);
        ins.emplace_back(slot, n);
      }
      for (const auto& [slot, ids] : p.outputs) {
        std::vector<std::string> n;
        for (int64_t id : ids) n.push_back(names_[static_cast<size_t>(id)]);
        outs.emplace_back(slot, n);
      }
      ops.push_back(OpDesc::make(p.type, ins, outs, p.attrs));
    }
    Array<VarDesc> vars;
    for (const VarDesc& v : block_->vars) vars.push_back(v);
    for (const std::string& n : new_order_) {
      const TensorInfo& t = new_infos_.at(n);
      vars.push_back(VarDesc::tensor(n, var_type_from_dtype(t.dtype), t.shape));
    }
    Array<OpDesc> op_array;
    for (const OpDesc& o : ops) op_array.push_back(o);
    Array<Block> blocks;
    blocks.push_back(
        Block::make(block_->idx, block_->parent_idx, vars, op_array, block_->forward_block_idx));
    for (size_t b = 1; b < program_.num_blocks(); ++b) {
      blocks.push_back(program_.block(static_cast<int64_t>(b)));
    }
    return Program::make(blocks);
  }

  const Program& program_;
  Block block_;
  std::set<std::string> no_grad_;
  std::string loss_;
  std::vector<std::string> params_;
  std::map<std::string, VarDesc> decls_;
  int64_t last_ = -1;
  std::set<std::string> requires_, reaches_, multi_writer_, finalised_;
  std::map<std::string, int64_t> writer_;
  std::map<std::string, std::vector<int64_t>> grads_;  // contributions (value ids)
  std::vector<std::string> names_;                     // value id -> variable name
  std::vector<std::string> new_order_;                 // new variables, in declaration order
  std::map<std::string, TensorInfo> new_infos_;        // their types
  std::set<int64_t> temps_, claimed_;
  std::vector<OpDesc> extra_ops_;  // the loss's fill_constant
  std::vector<PendingOp> pending_;
  int64_t temp_ = 0;

  friend class Call;
};

// The GradCall of one forward op.
class Backward::Call final : public GradCall {
 public:
  Call(Backward& b, const OpDesc& op, const OpDef& def) : b_(b), op_(op), def_(def) {}

  GradValue input(int slot, size_t i) override {
    return var(def_.schema().inputs(), slot, i, true);
  }
  GradValue output(int slot, size_t i) override {
    return var(def_.schema().outputs(), slot, i, false);
  }
  GradValue output_grad(int slot, size_t i) override {
    const std::string n = name(def_.schema().outputs(), slot, i, false);
    if (n.empty() || b_.grads_.count(n) == 0) return {};
    b_.finalise(n);
    return GradValue{b_.grads_.at(n).front()};
  }
  bool needs_grad(int slot, size_t i) const override {
    const std::string n = name(def_.schema().inputs(), slot, i, true);
    return !n.empty() && b_.needs(n);
  }
  void set_input_grad(int slot, GradValue g, size_t i) override {
    const std::string n = name(def_.schema().inputs(), slot, i, true);
    if (n.empty() || !g.valid() || !b_.needs(n)) return;
    // A value that is not a fresh temporary (sum's rule passes its output's gradient on to every
    // addend) is copied, so that naming one contribution leaves the others alone.
    const int64_t id = b_.renamable(g.id) ? g.id : copy(g.id);
    b_.claimed_.insert(id);
    b_.grads_[n].push_back(id);
  }

  std::vector<std::vector<GradValue>> emit_outputs(const std::string& type, const Inputs& inputs,
                                                   const OpDesc::Attrs& attrs,
                                                   const Outputs& outputs) override {
    PendingOp p{type, {}, {}, attrs};
    p.attrs.emplace_back("op_role", Attr::i(kRoleBackward));
    for (const auto& [slot, values] : inputs) {
      std::vector<int64_t> ids;
      for (const GradValue& v : values) ids.push_back(v.id);
      p.inputs.emplace_back(slot, ids);
    }
    const OpDef* def = find_op_def(type);
    // Output types: the row's inference on the inputs' declared types, or (a built-in op
    // without a row) the first input's type; when the declarations are too vague for the
    // inference (variables declared without their shapes), the first input's dtype and no
    // shape, as those variables: the kernel checks the values at run time.
    std::map<std::string, std::vector<std::optional<TensorInfo>>> out_info;
    bool vague = false;
    if (def != nullptr && def->has_kernel()) {
      InferFromNames inf(b_, def->schema(), p.inputs, outputs);
      OpDesc probe = OpDesc::make(type, {}, {}, attrs);
      try {
        def->infer(AttrReader(def->schema(), probe), inf);
        out_info = inf.out;
      } catch (const ShapeError&) {
        vague = true;
      }
    }
    std::vector<std::vector<GradValue>> result;
    for (const auto& [o, count] : outputs) {
      std::vector<int64_t> ids;
      std::vector<GradValue> values;
      for (size_t i = 0; i < count; ++i) {
        const std::string tmp = b_.temp_name(type);
        auto it = out_info.find(o);
        TensorInfo info =
            it != out_info.end() && i < it->second.size() && it->second[i]
                ? *it->second[i]
                : b_.info_of(b_.names_[static_cast<size_t>(p.inputs.at(0).second.at(0))]);
        if (vague) info.shape.clear();
        b_.declare(tmp, info);
        const int64_t id = b_.value(tmp);
        b_.temps_.insert(id);
        ids.push_back(id);
        values.push_back(GradValue{id});
      }
      p.outputs.emplace_back(o, ids);
      result.push_back(std::move(values));
    }
    b_.pending_.push_back(std::move(p));
    return result;
  }

  const OpDesc& forward() const override { return op_; }

 private:
  // Inference over variable ids (their declared types).
  struct InferFromNames final : InferCall {
    InferFromNames(Backward& b, const OpSchema& s,
                   const std::vector<std::pair<std::string, std::vector<int64_t>>>& ins,
                   const Outputs& outs)
        : s_(s), outs_(outs) {
      for (const ArgSpec& a : s.inputs()) {
        std::vector<TensorInfo> v;
        for (const auto& [slot, ids] : ins) {
          if (slot != a.name) continue;
          for (int64_t id : ids) v.push_back(b.info_of(b.names_[static_cast<size_t>(id)]));
        }
        in_.push_back(std::move(v));
      }
    }
    size_t num_inputs(int slot) const override { return in_.at(static_cast<size_t>(slot)).size(); }
    const TensorInfo& input(int slot, size_t i) const override {
      return in_.at(static_cast<size_t>(slot)).at(i);
    }
    size_t num_outputs(int slot) const override {
      const std::string& n = s_.outputs().at(static_cast<size_t>(slot)).name;
      for (const auto& [o, count] : outs_) {
        if (o == n) return count;
      }
      return 0;
    }
    void set_output(int slot, TensorInfo info, size_t i) override {
      if (i >= num_outputs(slot)) return;
      auto& v = out[s_.outputs().at(static_cast<size_t>(slot)).name];
      if (v.size() <= i) v.resize(i + 1);
      v[i] = std::move(info);
    }
    const OpSchema& s_;
    const Outputs& outs_;
    std::vector<std::vector<TensorInfo>> in_;
    std::map<std::string, std::vector<std::optional<TensorInfo>>> out;
  };

  // A copy of value `id` (a scale by 1) under a fresh temporary name.
  int64_t copy(int64_t id) {
    std::vector<GradValue> r =
        emit("scale", {{"X", {GradValue{id}}}}, {{"scale", Attr::f(1.0)}}, {"Out"});
    return r[0].id;
  }

  std::string name(const std::vector<ArgSpec>& specs, int slot, size_t i, bool in) const {
    if (slot < 0 || static_cast<size_t>(slot) >= specs.size()) return {};
    const std::vector<std::string> names = in ? op_.input(specs[static_cast<size_t>(slot)].name)
                                              : op_.output(specs[static_cast<size_t>(slot)].name);
    return i < names.size() ? names[i] : std::string();
  }
  GradValue var(const std::vector<ArgSpec>& specs, int slot, size_t i, bool in) {
    const std::string n = name(specs, slot, i, in);
    if (n.empty()) return {};
    return GradValue{b_.value(n)};
  }

  Backward& b_;
  const OpDesc& op_;
  const OpDef& def_;
};

void Backward::differentiate(size_t index) {
  const OpDesc& op = block_->ops[index];
  bool has_out_grad = false;
  for (const auto& [slot, names] : op->outputs) {
    for (const String& n : names) has_out_grad = has_out_grad || grads_.count(std::string(n));
  }
  bool needs_in = false;
  std::string through;
  for (const auto& [slot, names] : op->inputs) {
    for (const String& n : names) {
      if (needs(std::string(n))) {
        needs_in = true;
        through = n;
      }
    }
  }
  if (!has_out_grad || !needs_in) return;
  for (const auto& [slot, names] : op->outputs) {
    for (const String& n : names) {
      if (multi_writer_.count(std::string(n)) && grads_.count(std::string(n))) {
        CHANFLOW_THROW(Error) << "append_backward: '" << std::string(n)
                              << "' is written by more than one op of block 0 (the last is "
                              << op_where(index, op)
                              << "); backward needs each variable on the way to the loss "
                                 "written once";
      }
    }
  }
  const OpDef* def = find_op_def(op.type());
  if (def == nullptr || !def->has_grad()) {
    std::string why = def != nullptr && !def->no_grad_reason().empty() ? def->no_grad_reason()
                                                                       : "it has no gradient rule";
    if (op.type() == "while" || op.type() == "conditional_block" || op.type() == "go" ||
        op.type() == "select" || op.type().rfind("channel_", 0) == 0) {
      why = "backward through control flow and channels is not supported";
    }
    CHANFLOW_THROW(Error) << "append_backward: the loss '" << loss_ << "' depends on "
                          << op_where(index, op) << " through '" << through << "', and " << why;
  }
  Call call(*this, op, *def);
  try {
    def->grad(AttrReader(def->schema(), op), call);
  } catch (const Error& e) {
    CHANFLOW_THROW(Error) << "append_backward: the gradient of " << op_where(index, op) << ": "
                          << e.what();
  }
}

}  // namespace

BackwardResult append_backward(const Program& program, const std::string& loss,
                               const std::vector<std::string>& parameter_list,
                               const std::set<std::string>& no_grad_set) {
  if (!program.defined() || program.num_blocks() == 0) {
    CHANFLOW_THROW(Error) << "append_backward: the program has no block";
  }
  return Backward(program, loss, parameter_list, no_grad_set).run();
}

}  // namespace chanflow
