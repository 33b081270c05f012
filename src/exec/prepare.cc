// prepare.cc — verifies a program once and turns it into PreparedBlocks: kernels resolved,
// attributes parsed, variable names resolved to (depth, slot), go captures laid out.
#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "chanflow/core/error.h"
#include "chanflow/ir/capture.h"
#include "chanflow/ir/scope_resolver.h"
#include "chanflow/ir/verifier.h"
#include "kernel.h"

namespace chanflow::exec_detail {

// Every name an op names (and, from a go op's sub-block, its X) resolved once for the whole
// program, so preparing costs the program's size however deeply its blocks nest.
struct NameTables {
  explicit NameTables(const std::vector<int64_t>& parents) : slots(parents) {}
  ScopeResolver slots;  // declared variables (the first slots) and go arguments -> slot
  // find_decl's answers for go argument slots (block, name) -> the declaration behind them, so a
  // chain of nested go blocks passing a name on is followed once.
  struct Key {
    int64_t block;
    std::string_view name;
    bool operator==(const Key& o) const noexcept { return block == o.block && name == o.name; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      return std::hash<std::string_view>()(k.name) ^ static_cast<size_t>(k.block);
    }
  };
  mutable std::unordered_map<Key, ScopeResolver::Decl, KeyHash> argument_decls;
};

VarRef PrepareCtx::resolve(const std::string& name, int32_t from) const {
  const int32_t b = from < 0 ? op_.block : from;
  const ScopeResolver::Decl d = names_.slots.find(b, name);
  if (!d.found()) {
    // The verifier guarantees declarations; reaching here is a bug in the program or verifier.
    throw ProgramError("block " + std::to_string(b) + ": variable '" + name +
                           "' is not declared in the block or an enclosing one",
                       b);
  }
  return VarRef{static_cast<int32_t>(names_.slots.depth(b) - names_.slots.depth(d.block)),
                static_cast<int32_t>(d.value)};
}

namespace {

// Every VarRef an op uses, relative to its block.
std::vector<VarRef> refs_of(const PreparedOp& op) {
  std::vector<VarRef> r(op.in.begin(), op.in.end());
  r.insert(r.end(), op.out.begin(), op.out.end());
  for (const PreparedCase& c : op.cases) {
    r.push_back(c.channel);
    r.push_back(c.var);
  }
  for (const auto& b : op.binds) r.push_back(b.first);
  return r;
}

// The declaration of the variable `r` names from block `from`: the block's own declaration by
// slot, or for a go block's argument slot (past its declarations) the enclosing declaration of
// that name. Null when there is none.
const VarDescObj* decl_of(const PreparedProgram& prog, int32_t from, VarRef r,
                          const std::string& name) {
  if (!r.valid()) return nullptr;
  int32_t b = from;
  for (int32_t d = 0; d < r.depth; ++d) b = prog.blocks[static_cast<size_t>(b)].parent;
  const Block blk = prog.program.block(b);
  if (static_cast<size_t>(r.slot) < blk->vars.size()) {
    return blk->vars[static_cast<size_t>(r.slot)].get();
  }
  for (b = blk->parent_idx; b >= 0; b = prog.program.block(b)->parent_idx) {
    if (std::optional<VarDesc> v = prog.program.block(b).find_var(name)) return v->get();
  }
  return nullptr;
}

// The dtype a LOD_TENSOR declaration names; nullopt for other declarations.
std::optional<DType> declared_dtype(const VarDescObj* v) {
  if (v == nullptr || v->type != static_cast<int64_t>(VarType::kLoDTensor) ||
      !is_valid_var_type(v->data_type) || !is_element_type(static_cast<VarType>(v->data_type))) {
    return std::nullopt;
  }
  return dtype_from_var_type(static_cast<VarType>(v->data_type));
}

// Whether a CHANNEL declaration names the element dtype of what it carries.
bool carries_one_dtype(const VarDescObj* ch) {
  return ch != nullptr && is_valid_var_type(ch->data_type) &&
         is_element_type(static_cast<VarType>(ch->data_type));
}

// Fills op.out_dtypes: every tensor output must have its variable's declared dtype, except where
// Fluid let the value decide: assign (Out takes whatever X holds) and channel_recv from a channel
// declared without an element dtype (LOD_TENSOR, or set by channel_create). Control-flow ops
// write through the ops of their blocks, which are checked themselves.
void declare_out_dtypes(const PreparedProgram& prog, PreparedOp& op) {
  if (op.type == "assign") return;
  op.out_dtypes.assign(op.out.size(), std::nullopt);
  for (size_t k = 0; k < op.out.size(); ++k) {
    if (op.type == "channel_recv" && k == 0 &&
        !carries_one_dtype(decl_of(prog, op.block, op.in[0], op.in_names[0]))) {
      continue;
    }
    op.out_dtypes[k] = declared_dtype(decl_of(prog, op.block, op.out[k], op.out_names[k]));
  }
}

// The static half of the declared-dtype rule: where every input's declared dtype is certain (its
// variable is only ever written by checked ops or feeds), the dtype the op computes from them
// is known before the run, and an output declared otherwise is reported now instead of when the
// op first runs. `loose` holds the declarations the value decides (see declare_out_dtypes, and
// select's receive targets). Shapes play no part: an inference that fails on the declared shapes
// (unknown extents) leaves the op to the run-time check.
void check_out_dtypes(const PreparedProgram& prog, const PreparedOp& op, const OpDesc& desc,
                      const KernelDef& k, const std::unordered_set<const VarDescObj*>& loose) {
  if (k.infer == nullptr || op.out_dtypes.empty()) return;
  std::vector<TensorInfo> in;
  for (size_t i = 0; i < op.in.size(); ++i) {
    const VarDescObj* v = decl_of(prog, op.block, op.in[i], op.in_names[i]);
    const std::optional<DType> dt = declared_dtype(v);
    if (!dt || loose.count(v) != 0) return;
    TensorInfo t;
    t.dtype = *dt;
    for (const Int& d : v->dims) t.shape.push_back(d->value);
    in.push_back(std::move(t));
  }
  std::vector<TensorInfo> out;
  try {
    out = k.infer(desc, OpSchemaRegistry::global().find(op.type), in);
  } catch (const Error&) {
    return;
  }
  for (size_t i = 0; i < out.size() && i < op.out_dtypes.size(); ++i) {
    if (!op.out_dtypes[i] || *op.out_dtypes[i] == out[i].dtype) continue;
    std::string inputs;
    for (size_t j = 0; j < in.size(); ++j) {
      inputs += (j == 0 ? "" : ", ") + ("'" + op.in_names[j] + "' ") +
                std::string(var_type_name(var_type_from_dtype(in[j].dtype)));
    }
    const std::string problem = "output variable '" + op.out_names[i] + "' is declared " +
                                std::string(var_type_name(var_type_from_dtype(*op.out_dtypes[i]))) +
                                ", but the op computes " +
                                std::string(var_type_name(var_type_from_dtype(out[i].dtype))) +
                                " from its inputs as declared (" + inputs + ") (type mismatch)";
    try {
      fail_prepare(op, problem);
    } catch (const ProgramError& e) {
      throw_type_mismatch(e);  // its kind: a TypeError, as the verifier's type mismatches
    }
  }
}

}  // namespace

Attr attr_or_default(const OpDesc& desc, const OpSchema* schema, std::string_view name) {
  std::optional<Attr> a = desc.attr(name);
  if (a) return *a;
  // The program is checked (check_program), not copied with its defaults filled: an attribute
  // the op omits is an optional one, and its default is the schema's.
  const AttrSpec* spec = schema != nullptr ? schema->attr(name) : nullptr;
  if (spec == nullptr || spec->required()) {
    CHANFLOW_THROW(Error) << "attribute '" << name << "' is missing";
  }
  return spec->make_default();
}

Attr PrepareCtx::attr(const char* name) const {
  try {
    return attr_or_default(desc_, &schema_, name);
  } catch (const Error& e) {
    fail_prepare(op_, e.what());
  }
}

void bind_x_out(PrepareCtx& c) {
  c.in("X");
  c.out("Out");
}

void bind_xy_out(PrepareCtx& c) {
  c.in("X");
  c.in("Y");
  c.out("Out");
}

void fail_prepare(const PreparedOp& op, const std::string& msg) {
  throw ProgramError("block " + std::to_string(op.block) + ", op " + std::to_string(op.index) +
                         " ('" + op.type + "'): " + msg,
                     op.block, op.index, op.type);
}

DType dtype_of_var_type_number(int64_t v) {
  if (!is_valid_var_type(v)) CHANFLOW_THROW(TypeError) << "not a VarType number: " << v;
  return dtype_from_var_type(static_cast<VarType>(v));
}

VarDecl find_decl(const PrepareCtx& c, const std::string& name) {
  VarDecl d;
  const Program& p = c.program().program;
  const NameTables& names = c.names();
  auto is_argument = [&](const ScopeResolver::Decl& at) {
    return at.found() && static_cast<size_t>(at.value) >= p.block(at.block)->vars.size();
  };
  ScopeResolver::Decl at = names.slots.find(c.op().block, name);
  // A go block's argument slot: the declaration is what the go op (in the parent block) names.
  std::vector<NameTables::Key> chain;
  while (is_argument(at)) {
    const NameTables::Key key{at.block, name};
    auto it = names.argument_decls.find(key);
    if (it != names.argument_decls.end()) {
      at = it->second;
      break;
    }
    chain.push_back(key);
    at = names.slots.find(p.block(at.block)->parent_idx, name);
  }
  for (const NameTables::Key& key : chain) names.argument_decls.emplace(key, at);
  if (!at.found()) return d;
  const VarDesc v = c.program().program.block(at.block)->vars[static_cast<size_t>(at.value)];
  d.type = v->type;
  d.data_type = v->data_type;
  for (const Int& dim : v->dims) d.dims.push_back(dim->value);
  return d;
}

std::shared_ptr<const PreparedProgram> prepare_program(const Program& program) {
  register_exec_kernels();
  const OpSchemaRegistry& registry = OpSchemaRegistry::global();
  auto prog = std::make_shared<PreparedProgram>();
  check_program(program, registry);
  prog->program = program;
  const Program& p = prog->program;
  const size_t n = p.num_blocks();
  prog->blocks.resize(n);
  std::vector<std::vector<std::string>> names(n);
  std::vector<int64_t> parents(n);

  for (size_t b = 0; b < n; ++b) {
    Block blk = p.block(static_cast<int64_t>(b));
    PreparedBlock& pb = prog->blocks[b];
    pb.idx = static_cast<int32_t>(b);
    pb.parent = static_cast<int32_t>(blk->parent_idx);
    parents[b] = blk->parent_idx;
    names[b].reserve(blk->vars.size());
    for (const VarDesc& v : blk->vars) {
      names[b].push_back(v->name);
      if (b == 0) prog->block0_vars.push_back(v);
    }
  }
  // go blocks: their arguments get slots of their own, bound when the go op starts. An argument
  // is a variable of X that the block reads before it writes it. X may list more: Fluid's Go
  // computed X from its ops' inputs, including the lists a select or while keeps of what its body
  // reads, so a variable a select case receives into and then reads is in X. Binding such a
  // variable would only make the block's writes to it invisible outside (the bound value is never
  // read), where Fluid shared it; so it is shared, like every variable not in X.
  std::vector<std::pair<int64_t, std::vector<std::string>>> go_args;  // (sub-block, X)
  for (size_t b = 0; b < n; ++b) {
    for (const OpDesc& op : p.block(static_cast<int64_t>(b))->ops) {
      if (op.type() != "go") continue;
      go_args.emplace_back(op.attr("sub_block")->as_block(), op.input("X"));
    }
  }
  const std::vector<std::vector<bool>> read_first = read_first_contains(p, go_args);
  for (size_t k = 0; k < go_args.size(); ++k) {
    const auto& [sub, xs] = go_args[k];
    std::vector<std::string>& slots = names[static_cast<size_t>(sub)];
    prog->blocks[static_cast<size_t>(sub)].is_go = true;
    std::unordered_set<std::string> has(slots.begin(), slots.end());
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!read_first[k][i] || !has.insert(xs[i]).second) continue;
      slots.push_back(xs[i]);
    }
  }
  for (size_t b = 0; b < n; ++b) {
    prog->blocks[b].names = std::make_shared<const std::vector<std::string>>(std::move(names[b]));
  }
  // The slot names are in place (their characters stay put): resolve every name once.
  NameTables tables(parents);
  for (size_t b = 0; b < n; ++b) {
    const auto bi = static_cast<int64_t>(b);
    const std::vector<std::string>& slots = *prog->blocks[b].names;
    for (size_t s = 0; s < slots.size(); ++s) {
      tables.slots.declare(bi, slots[s], static_cast<int64_t>(s));
    }
    for (const OpDesc& op : p.block(bi)->ops) tables.slots.use_names_of(bi, *op.get());
  }
  // prep_go resolves each X from the go block itself (a slot there is an argument).
  for (const auto& [sub, xs] : go_args) {
    for (const std::string& x : xs) tables.slots.use(sub, x);
  }
  tables.slots.resolve();

  // Ops.
  for (size_t b = 0; b < n; ++b) {
    Block blk = p.block(static_cast<int64_t>(b));
    PreparedBlock& pb = prog->blocks[b];
    pb.ops.reserve(blk->ops.size());
    int32_t i = 0;
    for (const OpDesc& desc : blk->ops) {
      pb.ops.emplace_back();
      PreparedOp& op = pb.ops.back();
      op.block = static_cast<int32_t>(b);
      op.index = i++;
      op.type = desc.type();
      const OpSchema* schema = registry.find(op.type);
      std::shared_ptr<const OpExtension> ext = schema ? schema->extension() : nullptr;
      const auto* k = dynamic_cast<const KernelDef*>(ext.get());
      if (k == nullptr) fail_prepare(op, "the op type has no kernel in the executor");
      op.run = k->run;
      PrepareCtx ctx(*prog, desc, *schema, op, tables);
      try {
        k->prepare(ctx);
      } catch (const ProgramError& e) {
        if (e.block_index() >= 0) throw;
        fail_prepare(op, e.what());
      } catch (const Error& e) {
        fail_prepare(op, e.what());
      }
      declare_out_dtypes(*prog, op);
    }
  }
  {
    std::unordered_set<const VarDescObj*> loose;
    for (const PreparedBlock& pb : prog->blocks) {
      for (const PreparedOp& op : pb.ops) {
        for (size_t k = 0; k < op.out.size(); ++k) {
          if (op.out_dtypes.empty() || !op.out_dtypes[k]) {
            loose.insert(decl_of(*prog, op.block, op.out[k], op.out_names[k]));
          }
        }
        for (const PreparedCase& c : op.cases) {
          loose.insert(decl_of(*prog, op.block, c.var, c.var_name));
        }
      }
    }
    for (size_t b = 0; b < n; ++b) {
      Block blk = p.block(static_cast<int64_t>(b));
      for (size_t i = 0; i < prog->blocks[b].ops.size(); ++i) {
        const PreparedOp& op = prog->blocks[b].ops[i];
        const auto* k = dynamic_cast<const KernelDef*>(
            OpSchemaRegistry::global().find(op.type)->extension().get());
        check_out_dtypes(*prog, op, blk->ops[i], *k, loose);
      }
    }
  }

  // The channel_create ops that write a block 0 variable (from any block: a go block's Out that
  // is not one of its arguments resolves to the enclosing declaration).
  prog->block0_channel_create.assign(prog->block0_vars.size(), {-1, -1});
  for (const PreparedBlock& pb : prog->blocks) {
    for (const PreparedOp& op : pb.ops) {
      if (op.type != "channel_create" || op.out.empty() || !op.out[0].valid()) continue;
      int32_t b = op.block;
      for (int32_t d = 0; d < op.out[0].depth; ++d) b = prog->blocks[static_cast<size_t>(b)].parent;
      const auto slot = static_cast<size_t>(op.out[0].slot);
      if (b != 0 || slot >= prog->block0_vars.size()) continue;
      if (prog->block0_channel_create[slot].first < 0) {
        prog->block0_channel_create[slot] = {op.block, op.index};
      }
    }
  }

  // Which go blocks may touch enclosing scopes (then those scopes are shared when they start):
  // those whose subtree uses a variable of a scope above them. reach[b]: the depth of the
  // outermost scope block b's ops use, then (children before parents) of its whole subtree.
  const ScopeResolver& tree = tables.slots;
  std::vector<int64_t> reach(n, std::numeric_limits<int64_t>::max());
  for (size_t b = 0; b < n; ++b) {
    for (const PreparedOp& op : prog->blocks[b].ops) {
      for (VarRef r : refs_of(op)) {
        if (r.valid()) reach[b] = std::min(reach[b], tree.depth(static_cast<int64_t>(b)) - r.depth);
      }
    }
  }
  const std::vector<int64_t>& order = tree.preorder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int64_t parent = parents[static_cast<size_t>(*it)];
    if (parent >= 0) {
      reach[static_cast<size_t>(parent)] =
          std::min(reach[static_cast<size_t>(parent)], reach[static_cast<size_t>(*it)]);
    }
  }
  for (PreparedBlock& pb : prog->blocks) {
    for (PreparedOp& op : pb.ops) {
      if (op.type != "go") continue;
      const auto g = static_cast<size_t>(op.sub_block);
      op.escapes = reach[g] < tree.depth(op.sub_block);
    }
  }
  return prog;
}

}  // namespace chanflow::exec_detail
