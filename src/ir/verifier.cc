// The program verifier. It walks blocks in index order and ops in program order, and stops at the
// first violation with a message a user can act on. Nothing here trusts the program: nodes rebuilt
// from JSON may be null or ill-typed, so every access is checked.
#include "chanflow/ir/verifier.h"

#include <exception>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chanflow/ir/scope_resolver.h"
#include "chanflow/ir/select_case.h"
#include "chanflow/ir/var_type.h"

namespace chanflow {
namespace {

std::string type_text(const VarDescObj& v) {
  std::string s(var_type_name(v.var_type()));
  if (v.type == static_cast<int64_t>(VarType::kChannel)) {
    s += is_valid_var_type(v.data_type)
             ? " of " + std::string(var_type_name(static_cast<VarType>(v.data_type)))
             : " (element type set by its channel_create)";
  } else if (is_valid_var_type(v.data_type)) {
    s += " ";
    s += var_type_name(static_cast<VarType>(v.data_type));
  }
  return s;
}

// The data_type of a CHANNEL variable declared without a channel description.
constexpr int64_t kUntyped = -1;

class Verifier {
 public:
  Verifier(const Program& program, const OpSchemaRegistry& registry)
      : program_(program), registry_(registry) {}

  // Checks the program; with `fill_defaults`, returns it with every missing default filled (else
  // returns the program itself: the op with its defaults is made for the checks and dropped).
  Program run(bool fill_defaults) {
    check_structure();
    resolve_names();
    infer_channel_elements();
    bool changed = false;
    Array<Block> blocks;
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const BlockObj& block = *blocks_[b];
      Array<OpDesc> ops;
      bool block_changed = false;
      for (size_t o = 0; o < block.ops.size(); ++o) {
        const ObjectRef& ref = block.ops->data[o];
        const auto* op = ref.as<OpDescObj>();
        if (op == nullptr) fail_block(static_cast<int>(b), "op " + std::to_string(o) + " is null");
        OpDesc filled = check_op(static_cast<int>(b), static_cast<int>(o),
                                 OpDesc(detail::ObjectUnsafe::ptr(ref)));
        if (!fill_defaults) continue;
        block_changed |= !filled.same_as(ref);
        ops.push_back(filled);
      }
      if (block_changed) {
        changed = true;
        blocks.push_back(
            Block::make(block.idx, block.parent_idx, block.vars, ops, block.forward_block_idx));
      } else {
        blocks.push_back(Block(detail::ObjectUnsafe::ptr(program_->blocks->data[b])));
      }
    }
    return changed ? Program::make(blocks) : program_;
  }

 private:
  // ---- errors --------------------------------------------------------------------------------
  [[noreturn]] static void fail_block(int b, const std::string& problem) {
    throw ProgramError("block " + std::to_string(b) + ": " + problem, b);
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw ProgramError("block " + std::to_string(cur_block_) + ", op " + std::to_string(cur_op_) +
                           " ('" + cur_type_ + "'): " + problem,
                       cur_block_, cur_op_, cur_type_);
  }
  // fail() for values of the wrong type or dtype ("(type mismatch)"): the ProgramError carries a
  // nested TypeError (throw_type_mismatch), as an op that failed so at run time does.
  [[noreturn]] void fail_type(const std::string& problem) const {
    try {
      fail(problem);
    } catch (const ProgramError& e) {
      throw_type_mismatch(e);
    }
  }

  // ---- structure -----------------------------------------------------------------------------
  void check_structure() {
    if (!program_.defined() || !program_->blocks.defined()) {
      throw ProgramError("the program is null");
    }
    for (const ObjectRef& ref : program_->blocks->data) {
      const auto* b = ref.as<BlockObj>();
      if (b == nullptr) fail_block(static_cast<int>(blocks_.size()), "the block is null");
      if (!b->vars.defined() || !b->ops.defined()) {
        fail_block(static_cast<int>(blocks_.size()), "the block's vars or ops are null");
      }
      blocks_.push_back(b);
    }
    const auto n = static_cast<int64_t>(blocks_.size());
    if (n == 0) throw ProgramError("the program has no blocks (block 0 is required)");
    for (int64_t i = 0; i < n; ++i) {
      const BlockObj& b = *blocks_[static_cast<size_t>(i)];
      const int bi = static_cast<int>(i);
      if (b.idx != i) {
        fail_block(bi, "the block at position " + std::to_string(i) + " has idx " +
                           std::to_string(b.idx) +
                           " (blocks must be listed in idx order 0, 1, 2 ...)");
      }
      if (i == 0 && b.parent_idx != -1) {
        fail_block(bi, "block 0 is the main block: its parent_idx must be -1, got " +
                           std::to_string(b.parent_idx));
      }
      if (i > 0 && (b.parent_idx < 0 || b.parent_idx >= n)) {
        fail_block(bi, "parent_idx " + std::to_string(b.parent_idx) + " names no block (the " +
                           "program has blocks 0.." + std::to_string(n - 1) + ")");
      }
      if (i > 0 && b.parent_idx == i)
        fail_block(bi, "the block is its own parent (parent_idx " + std::to_string(i) + ")");
    }
    // Cycles: following parents from any block must reach block 0. One pass over the blocks
    // (each is walked once: 0 unvisited, 1 on the current path, 2 known to reach block 0).
    std::vector<char> state(static_cast<size_t>(n), 0);
    state[0] = 2;
    for (int64_t i = 1; i < n; ++i) {
      std::vector<int64_t> path;
      int64_t cur = i;
      while (state[static_cast<size_t>(cur)] == 0) {
        state[static_cast<size_t>(cur)] = 1;
        path.push_back(cur);
        cur = blocks_[static_cast<size_t>(cur)]->parent_idx;
      }
      if (state[static_cast<size_t>(cur)] == 1) {
        // `cur` is on the path: the cycle is path[k..] where path[k] == cur.
        size_t k = 0;
        while (path[k] != cur) ++k;
        std::string chain = std::to_string(cur);
        for (size_t j = k + 1; j < path.size() && j < k + 16; ++j) {
          chain += " -> " + std::to_string(path[j]);
        }
        if (path.size() - k > 16) chain += " -> ...";
        chain += " -> " + std::to_string(cur);
        fail_block(static_cast<int>(cur),
                   "the block is its own ancestor (parent chain " + chain + ")");
      }
      for (int64_t b : path) state[static_cast<size_t>(b)] = 2;
    }
    // Variables.
    std::unordered_set<std::string_view> declared;  // in the current block
    for (size_t bi = 0; bi < blocks_.size(); ++bi) {
      const int b = static_cast<int>(bi);
      declared.clear();
      for (size_t vi = 0; vi < blocks_[bi]->vars.size(); ++vi) {
        const auto* v = blocks_[bi]->vars->data[vi].as<VarDescObj>();
        const std::string where = "variable " + std::to_string(vi);
        if (v == nullptr) fail_block(b, where + " is null");
        if (v->name.empty()) fail_block(b, where + " has an empty name");
        const std::string who = "variable '" + v->name + "'";
        if (!declared.insert(v->name).second) {
          fail_block(b, who + " is declared twice in the block");
        }
        if (!is_valid_var_type(v->type)) {
          fail_block(b, who + " has type " + std::to_string(v->type) + ", not a VarType");
        }
        if (v->type == static_cast<int64_t>(VarType::kLoDTensor)) {
          if (!is_valid_var_type(v->data_type) ||
              !is_element_type(static_cast<VarType>(v->data_type))) {
            fail_block(b, who +
                              " is a LOD_TENSOR without an element type (declare "
                              "lod_tensor { tensor { data_type: FP32 } } or another element "
                              "type)");
          }
        } else if (v->type == static_cast<int64_t>(VarType::kChannel)) {
          // No `channel { ... }` description: Paddle's make_channel declared its variables so,
          // and the element type comes from the channel_create op that makes the channel.
          const bool untyped = v->data_type == kUntyped && v->capacity == 0;
          const bool ok = untyped || can_carry(v->data_type);
          if (!ok) {
            fail_block(b, who +
                              " is a CHANNEL without a valid element type (channel { "
                              "data_type: FP64 capacity: 0 }; data_type is an element type, "
                              "LOD_TENSOR or CHANNEL)");
          }
          if (v->capacity < 0) {
            fail_block(b, who + " has a negative capacity " + std::to_string(v->capacity));
          }
        }
      }
    }
  }

  // Resolves every name every op uses, once for the whole program (check_structure has made sure
  // the parent chains end at block 0, so every block is reached).
  void resolve_names() {
    std::vector<int64_t> parents;
    parents.reserve(blocks_.size());
    for (const BlockObj* b : blocks_) parents.push_back(b->parent_idx);
    names_.emplace(std::move(parents));
    for (size_t b = 0; b < blocks_.size(); ++b) {
      const auto bi = static_cast<int64_t>(b);
      const Array<VarDesc>& vars = blocks_[b]->vars;
      for (size_t v = 0; v < vars.size(); ++v) {
        names_->declare(bi, vars->data[v].as<VarDescObj>()->name, static_cast<int64_t>(v));
      }
      for (const ObjectRef& ref : blocks_[b]->ops->data) {
        if (const auto* op = ref.as<OpDescObj>()) names_->use_names_of(bi, *op);
      }
    }
    names_->resolve();
  }

  // A channel variable declared without an element type takes the `data_type` of the
  // channel_create ops that write it. Found before the ops are checked, so a send that comes
  // before the create in block order (a go block started earlier) is checked too. Ill-formed ops
  // are skipped here: check_op reports them.
  void infer_channel_elements() {
    for (size_t b = 0; b < blocks_.size(); ++b) {
      for (const ObjectRef& ref : blocks_[b]->ops->data) {
        const auto* op = ref.as<OpDescObj>();
        if (op == nullptr || op->type != "channel_create" || !op->outputs.defined() ||
            !op->attrs.defined()) {
          continue;
        }
        // Every entry is type-checked here: nodes rebuilt from JSON may be null or ill-typed.
        const std::string* out = nullptr;
        for (const MapObj::Entry& e : op->outputs->entries) {
          const auto* param = e.key.as<StringObj>();
          const auto* names = e.value.as<ArrayObj>();
          if (param == nullptr || param->data != "Out" || names == nullptr) continue;
          if (names->data.size() != 1) break;
          if (const auto* name = names->data[0].as<StringObj>()) out = &name->data;
        }
        std::optional<int64_t> dt;
        for (const MapObj::Entry& e : op->attrs->entries) {
          const auto* name = e.key.as<StringObj>();
          if (name == nullptr || name->data != "data_type" || e.value.as<AttrObj>() == nullptr) {
            continue;
          }
          Attr a(detail::ObjectUnsafe::ptr(e.value));
          // Only an element type check_op would accept: a bad one is reported at its op.
          if (is_valid_attr_type(a->type) && a.type() == AttrType::kInt && a.well_formed() &&
              can_carry(a.as_int())) {
            dt = a.as_int();
          }
        }
        if (out == nullptr || !dt) continue;
        const VarDescObj* v = lookup(static_cast<int>(b), *out);
        if (v == nullptr || !is_channel(*v) || v->data_type != kUntyped) continue;
        auto [it, inserted] = inferred_.emplace(v, *dt);
        // Creators that disagree leave the element type to the channel itself (checked when a
        // value is sent, as Paddle did for every channel).
        if (!inserted && it->second != *dt) it->second = kUntyped;
      }
    }
  }
  // Whether a channel element type (a declaration's or a channel_create's data_type) names
  // something a channel can carry: a tensor element type, LOD_TENSOR or CHANNEL.
  static bool can_carry(int64_t v) {
    return v == static_cast<int64_t>(VarType::kLoDTensor) ||
           v == static_cast<int64_t>(VarType::kChannel) ||
           (is_valid_var_type(v) && is_element_type(static_cast<VarType>(v)));
  }
  // The element type a channel variable carries: declared, inferred from its channel_create, or
  // kUntyped when neither says.
  int64_t element_of(const VarDescObj& ch) const {
    if (ch.data_type != kUntyped) return ch.data_type;
    auto it = inferred_.find(&ch);
    return it == inferred_.end() ? kUntyped : it->second;
  }

  // ---- variables -----------------------------------------------------------------------------
  const VarDescObj* lookup(int block, const std::string& name) const {
    const ScopeResolver::Decl d = names_->find(block, name);
    if (!d.found()) return nullptr;
    return blocks_[static_cast<size_t>(d.block)]
        ->vars->data[static_cast<size_t>(d.value)]
        .as<VarDescObj>();
  }
  const VarDescObj& resolve(const std::string& name, const std::string& role) const {
    const VarDescObj* v = lookup(cur_block_, name);
    if (v == nullptr) {
      fail(role + " names variable '" + name + "', which is not declared in block " +
           std::to_string(cur_block_) + " or its ancestors (" + ancestors(cur_block_) + ")");
    }
    return *v;
  }
  // The enclosing blocks, innermost first; the first 16 of a longer chain.
  std::string ancestors(int block) const {
    std::string s;
    int listed = 0;
    for (int64_t b = blocks_[static_cast<size_t>(block)]->parent_idx; b >= 0;
         b = blocks_[static_cast<size_t>(b)]->parent_idx) {
      if (listed++ == 16) {
        s += ", ... 0";
        break;
      }
      s += (s.empty() ? "" : ", ") + std::to_string(b);
    }
    return s.empty() ? "none" : "blocks " + s;
  }

  static bool is_channel(const VarDescObj& v) {
    return v.type == static_cast<int64_t>(VarType::kChannel);
  }
  static bool is_tensor_of(const VarDescObj& v, VarType t) {
    return v.type == static_cast<int64_t>(VarType::kLoDTensor) &&
           v.data_type == static_cast<int64_t>(t);
  }

  const VarDescObj& channel_var(const std::string& name, const std::string& role) const {
    const VarDescObj& v = resolve(name, role);
    if (!is_channel(v)) {
      fail(role + " is variable '" + name + "' of type " + type_text(v) +
           ", but it must be a CHANNEL variable");
    }
    return v;
  }

  // Whether `v` can travel on channel `ch`; fails with a type-mismatch message otherwise.
  void check_element(const VarDescObj& ch, const VarDescObj& v, const std::string& role) const {
    const int64_t e = element_of(ch);
    bool ok = false;
    std::string carries;
    if (e == kUntyped) {
      // Nothing declares what it carries: any tensor or channel, checked by the channel at run
      // time.
      ok = v.type == static_cast<int64_t>(VarType::kLoDTensor) || is_channel(v);
      carries = "tensors or channels";
    } else if (e == static_cast<int64_t>(VarType::kLoDTensor)) {
      ok = v.type == static_cast<int64_t>(VarType::kLoDTensor);
      carries = "tensors";
    } else if (e == static_cast<int64_t>(VarType::kChannel)) {
      ok = is_channel(v);
      carries = "channels";
    } else {
      ok = is_tensor_of(v, static_cast<VarType>(e));
      carries = std::string(var_type_name(static_cast<VarType>(e))) + " tensors";
    }
    if (!ok) {
      fail_type(role + " is variable '" + v.name + "' (" + type_text(v) + "), but channel '" +
                ch.name + "' carries " + carries + " (type mismatch)");
    }
  }

  // ---- ops -----------------------------------------------------------------------------------
  OpDesc check_op(int b, int o, const OpDesc& op) {
    cur_block_ = b;
    cur_op_ = o;
    cur_type_ = op->type;
    if (op->type.empty()) fail("the op has no type");
    const OpSchema* schema = registry_.find(op->type);
    if (schema == nullptr) {
      fail("unknown op type '" + op->type + "' (no op schema is registered under this name)");
    }
    check_arguments(op->inputs, schema->inputs(), "input");
    check_arguments(op->outputs, schema->outputs(), "output");
    OpDesc filled = check_attrs(op, *schema);
    check_semantics(filled);
    return filled;
  }

  void check_arguments(const ArgumentMap& args, const std::vector<ArgSpec>& specs,
                       const char* kind) {
    if (!args.defined()) fail(std::string(kind) + " map is null");
    for (const MapObj::Entry& e : args->entries) {
      const auto* param = e.key.as<StringObj>();
      const auto* names = e.value.as<ArrayObj>();
      if (param == nullptr || names == nullptr) fail(std::string(kind) + " map entry is ill-typed");
      const ArgSpec* spec = nullptr;
      for (const ArgSpec& s : specs) {
        if (s.name == param->data) spec = &s;
      }
      if (spec == nullptr) {
        std::string known;
        for (const ArgSpec& s : specs) known += (known.empty() ? "" : ", ") + s.name;
        fail("unknown " + std::string(kind) + " parameter '" + param->data + "' (the op takes " +
             (known.empty() ? std::string("none") : known) + ")");
      }
      if (!spec->duplicable && names->data.size() > 1) {
        fail(std::string(kind) + " '" + spec->name + "' binds " +
             std::to_string(names->data.size()) + " variables, but takes one");
      }
      for (const ObjectRef& n : names->data) {
        const auto* name = n.as<StringObj>();
        if (name == nullptr || name->data.empty()) {
          fail(std::string(kind) + " '" + spec->name + "' has an empty variable name");
        }
        resolve(name->data, std::string(kind) + " '" + spec->name + "'");
      }
    }
    for (const ArgSpec& s : specs) {
      if (!s.required) continue;
      auto names = args.get(std::string_view(s.name));
      if (!names || names->empty()) {
        fail("missing required " + std::string(kind) + " '" + s.name + "'");
      }
    }
  }

  OpDesc check_attrs(const OpDesc& op, const OpSchema& schema) {
    if (!op->attrs.defined()) fail("attribute map is null");
    for (const MapObj::Entry& e : op->attrs->entries) {
      const auto* name = e.key.as<StringObj>();
      const auto* value = e.value.as<AttrObj>();
      if (name == nullptr || value == nullptr) fail("attribute map entry is ill-typed");
      const AttrSpec* spec = schema.attr(name->data);
      if (spec == nullptr) {
        spec = framework_attr(name->data, is_valid_attr_type(value->type)
                                              ? static_cast<AttrType>(value->type)
                                              : AttrType::kInt);
      }
      if (spec == nullptr) {
        std::string known;
        for (const AttrSpec& s : schema.attrs()) known += (known.empty() ? "" : ", ") + s.name;
        fail("unknown attribute '" + name->data + "' (the op has " +
             (known.empty() ? std::string("no attributes") : known) + ")");
      }
      Attr attr(detail::ObjectUnsafe::ptr(e.value));
      if (!is_valid_attr_type(value->type) || static_cast<AttrType>(value->type) != spec->type) {
        fail("attribute '" + name->data + "' must be " + std::string(attr_type_name(spec->type)) +
             ", got " +
             (is_valid_attr_type(value->type) ? std::string(attr_type_name(attr.type()))
                                              : "type " + std::to_string(value->type)));
      }
      if (!attr.well_formed()) fail("attribute '" + name->data + "' has an ill-formed value");
      if (spec->check) {
        std::string problem = spec->check(attr);
        if (!problem.empty()) fail("attribute '" + name->data + "' " + problem);
      }
      if (spec->type == AttrType::kBlock) check_sub_block(name->data, attr.as_block());
    }
    // One copy of the op with every missing default, made once; the default values (and their
    // names) are made once per run and shared by every op that takes them (they are immutable).
    AttrMap filled;
    bool any_missing = false;
    for (const AttrSpec& s : schema.attrs()) {
      if (op->attrs.get(std::string_view(s.name))) continue;
      if (s.required()) {
        fail("missing required attribute '" + s.name + "' (" + std::string(attr_type_name(s.type)) +
             ")");
      }
      if (!any_missing) {
        filled = op->attrs;
        any_missing = true;
      }
      auto it = defaults_.find(&s);
      if (it == defaults_.end())
        it = defaults_.emplace(&s, std::make_pair(String(s.name), s.make_default())).first;
      filled.set(it->second.first, it->second.second);
    }
    if (!any_missing) return op;
    return OpDesc::from_maps(op->type, op->inputs, op->outputs, filled, op->is_target);
  }

  void check_sub_block(const std::string& attr, int64_t s) {
    const auto n = static_cast<int64_t>(blocks_.size());
    if (s <= 0 || s >= n) {
      fail("attribute '" + attr + "' names block " + std::to_string(s) +
           ", but sub-blocks are 1.." + std::to_string(n - 1));
    }
    const int64_t parent = blocks_[static_cast<size_t>(s)]->parent_idx;
    if (parent != cur_block_) {
      fail("attribute '" + attr + "' names block " + std::to_string(s) + ", whose parent_idx is " +
           std::to_string(parent) + ", not this op's block " + std::to_string(cur_block_));
    }
    auto [it, inserted] = sub_block_owner_.emplace(s, std::make_pair(cur_block_, cur_op_));
    if (!inserted) {
      fail("block " + std::to_string(s) + " is already the sub-block of block " +
           std::to_string(it->second.first) + ", op " + std::to_string(it->second.second));
    }
  }

  std::string first(const OpDesc& op, bool input, const char* param) const {
    const ArgumentMap& m = input ? op->inputs : op->outputs;
    auto names = m.get(param);
    if (!names || names->empty()) return {};
    return (*names)[0].str();
  }

  // Op-specific rules, after the schema checks (so required parameters exist).
  void check_semantics(const OpDesc& op) {
    const std::string& t = op->type;
    if (t == "channel_create") {
      const VarDescObj& ch = channel_var(first(op, false, "Out"), "output 'Out'");
      const int64_t dt = op.attr("data_type")->as_int();
      const int64_t cap = op.attr("capacity")->as_int();
      if (ch.data_type == kUntyped) return;  // the op decides (Paddle's make_channel)
      if (dt != ch.data_type) {
        fail("attribute 'data_type' is " + std::string(var_type_name(static_cast<VarType>(dt))) +
             ", but channel variable '" + ch.name + "' is declared " + type_text(ch));
      }
      if (cap != ch.capacity) {
        fail("attribute 'capacity' is " + std::to_string(cap) + ", but channel variable '" +
             ch.name + "' is declared with capacity " + std::to_string(ch.capacity));
      }
    } else if (t == "channel_send") {
      const VarDescObj& ch = channel_var(first(op, true, "Channel"), "input 'Channel'");
      check_element(ch, resolve(first(op, true, "X"), "input 'X'"), "input 'X'");
      check_status(op);
    } else if (t == "channel_recv") {
      const VarDescObj& ch = channel_var(first(op, true, "Channel"), "input 'Channel'");
      check_element(ch, resolve(first(op, false, "Out"), "output 'Out'"), "output 'Out'");
      check_status(op);
    } else if (t == "channel_close") {
      channel_var(first(op, true, "Channel"), "input 'Channel'");
    } else if (t == "select") {
      check_select(op);
    } else if (t == "while") {
      const VarDescObj& c = resolve(first(op, true, "Condition"), "input 'Condition'");
      if (!is_tensor_of(c, VarType::kBool)) {
        fail("input 'Condition' is variable '" + c.name + "' (" + type_text(c) +
             "), but it must be a BOOL tensor");
      }
    } else if (t == "conditional_block") {
      if (op.attr("is_scalar_condition")->as_bool()) {
        auto conds = op.input("X");
        if (conds.size() != 1) fail("a scalar condition takes exactly one 'X'");
        const VarDescObj& c = resolve(conds[0], "input 'X'");
        if (!is_tensor_of(c, VarType::kBool)) {
          fail("input 'X' is variable '" + c.name + "' (" + type_text(c) +
               "), but a scalar condition must be a BOOL tensor");
        }
      }
    } else if (t == "fill_constant") {
      const VarDescObj& out = resolve(first(op, false, "Out"), "output 'Out'");
      const int64_t dt = op.attr("dtype")->as_int();
      if (!is_tensor_of(out, static_cast<VarType>(dt))) {
        fail("output 'Out' is variable '" + out.name + "' (" + type_text(out) +
             "), but the op fills " + std::string(var_type_name(static_cast<VarType>(dt))) +
             " (attribute 'dtype' " + std::to_string(dt) + ")");
      }
    } else if (t == "assign") {
      const VarDescObj& x = resolve(first(op, true, "X"), "input 'X'");
      const VarDescObj& out = resolve(first(op, false, "Out"), "output 'Out'");
      if (is_channel(x) != is_channel(out)) {
        fail_type("assigns variable '" + x.name + "' (" + type_text(x) + ") to variable '" +
                  out.name + "' (" + type_text(out) +
                  "): channels and tensors do not mix (type mismatch)");
      }
    }
  }

  void check_status(const OpDesc& op) {
    const std::string status = first(op, false, "Status");
    if (status.empty()) return;
    const VarDescObj& s = resolve(status, "output 'Status'");
    if (!is_tensor_of(s, VarType::kBool)) {
      fail("output 'Status' is variable '" + s.name + "' (" + type_text(s) +
           "), but it must be a BOOL tensor");
    }
  }

  void check_select(const OpDesc& op) {
    const VarDescObj& c = resolve(first(op, true, "case_to_execute"), "input 'case_to_execute'");
    if (!is_tensor_of(c, VarType::kInt32) && !is_tensor_of(c, VarType::kInt64)) {
      fail("input 'case_to_execute' is variable '" + c.name + "' (" + type_text(c) +
           "), but it must be an INT32 or INT64 tensor");
    }
    const std::vector<std::string> cases = op.attr("cases")->as_strings();
    if (cases.empty()) fail("attribute 'cases' is empty (a select needs at least one case)");
    int defaults = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string role = "case " + std::to_string(i);
      SelectCaseAttr sc;
      try {
        sc = parse_select_case(cases[i]);
      } catch (const ProgramError& e) {
        fail(role + ": " + e.what());
      }
      if (sc.index != static_cast<int64_t>(i)) {
        fail(role + " (\"" + cases[i] + "\") has index " + std::to_string(sc.index) +
             "; case indices must be 0, 1, 2 ... in order");
      }
      if (sc.kind == SelectCaseKind::kDefault) {
        if (++defaults > 1) fail(role + ": a select has at most one default case");
        continue;
      }
      const VarDescObj& ch = channel_var(sc.channel, role + " channel");
      const VarDescObj& v = resolve(sc.var, role + " variable");
      check_element(
          ch, v, role + (sc.kind == SelectCaseKind::kSend ? " (send) value" : " (receive) target"));
    }
  }

  const Program& program_;
  const OpSchemaRegistry& registry_;
  std::vector<const BlockObj*> blocks_;
  std::optional<ScopeResolver> names_;  // every name every op uses, resolved (resolve_names)
  std::unordered_map<int64_t, std::pair<int, int>> sub_block_owner_;
  std::unordered_map<const VarDescObj*, int64_t> inferred_;  // see infer_channel_elements
  std::unordered_map<const AttrSpec*, std::pair<String, Attr>> defaults_;  // see check_attrs
  int cur_block_ = -1;
  int cur_op_ = -1;
  std::string cur_type_;
};

}  // namespace

Program verify(const Program& program, const OpSchemaRegistry& registry) {
  return Verifier(program, registry).run(/*fill_defaults=*/true);
}

void throw_type_mismatch(const ProgramError& e) {
  try {
    throw TypeError(e.what());
  } catch (const TypeError&) {
    std::throw_with_nested(e);
  }
}

void check_program(const Program& program, const OpSchemaRegistry& registry) {
  Verifier(program, registry).run(/*fill_defaults=*/false);
}

}  // namespace chanflow
