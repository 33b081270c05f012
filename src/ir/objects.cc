// The IR data nodes: constructors, lookups, structural equality and reflection.
#include <utility>

#include "chanflow/core/json.h"
#include "chanflow/core/reflection.h"
#include "chanflow/ir/program.h"
#include "ir_internal.h"

namespace chanflow {

// ---- reflection ----------------------------------------------------------------------------

void VarDescObj::visit_fields(FieldVisitor& v) {
  v("name", &name);
  v("type", &type);
  v("data_type", &data_type);
  v("dims", &dims);
  v("lod_level", &lod_level);
  v("capacity", &capacity);
  v("persistable", &persistable);
}

void OpDescObj::visit_fields(FieldVisitor& v) {
  v("type", &type);
  v("inputs", &inputs);
  v("outputs", &outputs);
  v("attrs", &attrs);
  v("is_target", &is_target);
}

void BlockObj::visit_fields(FieldVisitor& v) {
  v("idx", &idx);
  v("parent_idx", &parent_idx);
  v("vars", &vars);
  v("ops", &ops);
  v("forward_block_idx", &forward_block_idx);
}

void ProgramObj::visit_fields(FieldVisitor& v) { v("blocks", &blocks); }

CHANFLOW_REGISTER_REFLECTION(AttrObj);
CHANFLOW_REGISTER_REFLECTION(VarDescObj);
CHANFLOW_REGISTER_REFLECTION(OpDescObj);
CHANFLOW_REGISTER_REFLECTION(BlockObj);
CHANFLOW_REGISTER_REFLECTION(ProgramObj);

namespace ir_detail {
void ensure_reflection() {
  static const bool done = [] {
    register_reflection<AttrObj>();
    register_reflection<VarDescObj>();
    register_reflection<OpDescObj>();
    register_reflection<BlockObj>();
    register_reflection<ProgramObj>();
    return true;
  }();
  (void)done;
}
}  // namespace ir_detail

// ---- VarDesc -------------------------------------------------------------------------------

VarDesc VarDesc::make(std::string name, int64_t type, int64_t data_type,
                      const std::vector<int64_t>& dims, int64_t lod_level, int64_t capacity,
                      bool persistable) {
  auto n = make_object<VarDescObj>();
  n->name = std::move(name);
  n->type = type;
  n->data_type = data_type;
  Array<Int> d;
  for (int64_t x : dims) d.push_back(Int(x));
  n->dims = d;
  n->lod_level = lod_level;
  n->capacity = capacity;
  n->persistable = persistable;
  return VarDesc(ObjectPtr<Object>(std::move(n)));
}

VarDesc VarDesc::tensor(std::string name, VarType element, const std::vector<int64_t>& dims,
                        bool persistable) {
  return make(std::move(name), static_cast<int64_t>(VarType::kLoDTensor),
              static_cast<int64_t>(element), dims, 0, 0, persistable);
}

VarDesc VarDesc::channel(std::string name, VarType element, int64_t capacity) {
  return make(std::move(name), static_cast<int64_t>(VarType::kChannel),
              static_cast<int64_t>(element), {}, 0, capacity, false);
}

VarDesc VarDesc::other(std::string name, VarType kind) {
  return make(std::move(name), static_cast<int64_t>(kind), -1, {}, 0, 0, false);
}

bool VarDesc::equals(const VarDesc& o) const noexcept {
  const VarDescObj& a = *get();
  const VarDescObj& b = *o.get();
  if (a.name != b.name || a.type != b.type || a.data_type != b.data_type ||
      a.lod_level != b.lod_level || a.capacity != b.capacity || a.persistable != b.persistable ||
      a.dims.size() != b.dims.size()) {
    return false;
  }
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if (a.dims[i].value() != b.dims[i].value()) return false;
  }
  return true;
}

// ---- OpDesc --------------------------------------------------------------------------------

namespace {
ArgumentMap to_argument_map(const OpDesc::Args& args) {
  ArgumentMap m;
  for (const auto& [param, names] : args) {
    Array<String> a;
    for (const auto& n : names) a.push_back(String(n));
    m.set(String(param), a);
  }
  return m;
}

std::vector<std::string> lookup(const ArgumentMap& m, std::string_view parameter) {
  std::vector<std::string> out;
  if (auto a = m.get(parameter)) {
    for (String s : *a) out.push_back(s.str());
  }
  return out;
}

bool same_arguments(const ArgumentMap& a, const ArgumentMap& b) {
  if (a.size() != b.size()) return false;
  auto ia = a.begin();
  auto ib = b.begin();
  for (; ia != a.end(); ++ia, ++ib) {
    auto [ka, va] = *ia;
    auto [kb, vb] = *ib;
    if (!(ka == kb) || va.size() != vb.size()) return false;
    for (size_t i = 0; i < va.size(); ++i) {
      if (!(va[i] == vb[i])) return false;
    }
  }
  return true;
}
}  // namespace

OpDesc OpDesc::make(std::string type, const Args& inputs, const Args& outputs, const Attrs& attrs) {
  AttrMap am;
  for (const auto& [name, value] : attrs) am.set(String(name), value);
  return from_maps(std::move(type), to_argument_map(inputs), to_argument_map(outputs), am);
}

OpDesc OpDesc::from_maps(std::string type, ArgumentMap inputs, ArgumentMap outputs, AttrMap attrs,
                         bool is_target) {
  auto n = make_object<OpDescObj>();
  n->type = std::move(type);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->attrs = std::move(attrs);
  n->is_target = is_target;
  return OpDesc(ObjectPtr<Object>(std::move(n)));
}

std::vector<std::string> OpDesc::input(std::string_view parameter) const {
  return lookup(get()->inputs, parameter);
}
std::vector<std::string> OpDesc::output(std::string_view parameter) const {
  return lookup(get()->outputs, parameter);
}

std::optional<Attr> OpDesc::attr(std::string_view name) const { return get()->attrs.get(name); }

OpDesc OpDesc::with_attr(std::string_view name, Attr value) const {
  AttrMap attrs = get()->attrs;
  attrs.set(String(name), std::move(value));
  return from_maps(get()->type, get()->inputs, get()->outputs, attrs, get()->is_target);
}

bool OpDesc::equals(const OpDesc& o) const noexcept {
  const OpDescObj& a = *get();
  const OpDescObj& b = *o.get();
  if (a.type != b.type || a.is_target != b.is_target || a.attrs.size() != b.attrs.size() ||
      !same_arguments(a.inputs, b.inputs) || !same_arguments(a.outputs, b.outputs)) {
    return false;
  }
  for (auto [name, value] : a.attrs) {
    auto other = b.attrs.get(name);
    if (!other || !value.equals(*other)) return false;
  }
  return true;
}

// ---- Block ---------------------------------------------------------------------------------

Block Block::make(int64_t idx, int64_t parent_idx, Array<VarDesc> vars, Array<OpDesc> ops,
                  int64_t forward_block_idx) {
  auto n = make_object<BlockObj>();
  n->idx = idx;
  n->parent_idx = parent_idx;
  n->vars = std::move(vars);
  n->ops = std::move(ops);
  n->forward_block_idx = forward_block_idx;
  return Block(ObjectPtr<Object>(std::move(n)));
}

std::optional<VarDesc> Block::find_var(std::string_view name) const {
  for (VarDesc v : get()->vars) {
    if (v->name == name) return v;
  }
  return std::nullopt;
}

bool Block::equals(const Block& o) const noexcept {
  const BlockObj& a = *get();
  const BlockObj& b = *o.get();
  if (a.idx != b.idx || a.parent_idx != b.parent_idx ||
      a.forward_block_idx != b.forward_block_idx || a.vars.size() != b.vars.size() ||
      a.ops.size() != b.ops.size()) {
    return false;
  }
  for (size_t i = 0; i < a.vars.size(); ++i) {
    if (!a.vars[i].equals(b.vars[i])) return false;
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    if (!a.ops[i].equals(b.ops[i])) return false;
  }
  return true;
}

// ---- Program -------------------------------------------------------------------------------

Program Program::make(Array<Block> blocks) {
  auto n = make_object<ProgramObj>();
  n->blocks = std::move(blocks);
  return Program(ObjectPtr<Object>(std::move(n)));
}

Block Program::block(int64_t i) const {
  if (i < 0 || static_cast<size_t>(i) >= num_blocks()) {
    throw ProgramError("program has no block " + std::to_string(i) + " (it has " +
                           std::to_string(num_blocks()) + " block(s))",
                       static_cast<int>(i));
  }
  return get()->blocks[static_cast<size_t>(i)];
}

bool Program::equals(const Program& o) const noexcept {
  if (num_blocks() != o.num_blocks()) return false;
  for (size_t i = 0; i < num_blocks(); ++i) {
    if (!get()->blocks[i].equals(o->blocks[i])) return false;
  }
  return true;
}

std::string Program::to_json() const {
  ir_detail::ensure_reflection();
  return ::chanflow::to_json(*this);
}

Program Program::from_json(std::string_view json) {
  ir_detail::ensure_reflection();
  ObjectRef root = ::chanflow::from_json(json);
  if (!root.defined() || root.as<ProgramObj>() == nullptr) {
    throw ProgramError("from_json: the JSON's root is not an ir.Program");
  }
  return downcast<Program>(root);
}

}  // namespace chanflow
