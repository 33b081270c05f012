// Conversion between the protobuf file format and the in-memory IR objects. Loading checks the
// structure of the file; the semantic rules (registered ops, scoping, types) are the verifier's.
#include <google/protobuf/descriptor.h>

#include <bit>
#include <limits>
#include <memory>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir_internal.h"

namespace chanflow::ir_detail {
namespace {

namespace pb = ::chanflow::ir::pb;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

// Where we are in the file: a path like "blocks[1].ops[2]" and, for text input, a line number.
class Cursor {
 public:
  Cursor(std::string_view source, const TextFormat::ParseInfoTree* tree)
      : source_(source), tree_(tree) {}

  // The cursor of element `index` of repeated message field `field` of the current message.
  Cursor nested(const Descriptor* d, const char* field, int index, const std::string& label) const {
    Cursor c(source_, nullptr);
    c.path_ = path_.empty() ? label : path_ + "." + label;
    c.line_ = line_;
    c.block_ = block_;
    c.op_ = op_;
    c.op_type_ = op_type_;
    if (tree_ != nullptr) {
      const FieldDescriptor* f = d->FindFieldByName(field);
      if (f != nullptr) {
        auto loc = tree_->GetLocation(f, index);
        if (loc.line >= 0) c.line_ = loc.line + 1;
        c.tree_ = tree_->GetTreeForNested(f, index);
      }
    }
    return c;
  }

  [[noreturn]] void fail(const std::string& problem) const {
    std::ostringstream os;
    os << source_;
    if (line_ > 0) os << ':' << line_;
    os << ": ";
    if (!path_.empty()) os << path_;
    if (!op_type_.empty()) os << " (op '" << op_type_ << "')";
    if (!path_.empty()) os << ": ";
    os << problem;
    throw ProgramError(os.str(), block_, op_, op_type_);
  }

  int block_ = -1;
  int op_ = -1;
  std::string op_type_;

 private:
  std::string source_;
  const TextFormat::ParseInfoTree* tree_;
  std::string path_;
  int line_ = 0;
};

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// One object per distinct name, per distinct argument list and per distinct scalar attribute
// value: parameter, argument and attribute names repeat throughout a program (a variable is named
// by every op that uses it), so do argument lists (the `Out` of one op is the `X` of the next) and
// attribute values (`scale: 0.5` on many ops), and Strings, Arrays and Attrs are immutable once
// shared, so the program's nodes share them. Ops without attributes (or without inputs or
// outputs) share one empty map. Together these take a loaded program from about 2.1x its text
// to 1.5x.
class Interner {
 public:
  // The list of these names (each already interned).
  Array<String> list(const std::vector<String>& names) {
    key_.clear();
    for (const String& n : names) {
      const std::string_view v = n.view();
      const auto size = static_cast<uint32_t>(v.size());
      key_.append(reinterpret_cast<const char*>(&size), sizeof size);  // no separator is ambiguous
      key_.append(v);
    }
    auto it = lists_.find(key_);
    if (it != lists_.end()) return it->second;
    Array<String> list;
    list.reserve(names.size());
    for (const String& n : names) list.push_back(n);
    lists_.emplace(key_, list);
    return list;
  }
  const ArgumentMap& no_arguments() const { return no_arguments_; }
  const AttrMap& no_attrs() const { return no_attrs_; }

  String get(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    String str(s);
    strings_.emplace(str.view(), str);  // the key views the String's own characters
    return str;
  }
  // The attribute of scalar type `type` whose value has the bits `bits`, made by make() once.
  template <typename Make>
  Attr scalar(AttrType type, int64_t bits, Make&& make) {
    auto [it, inserted] = scalars_.try_emplace(Scalar{type, bits});
    if (inserted) it->second = make();
    return it->second;
  }

 private:
  struct Scalar {
    AttrType type;
    int64_t bits;
    bool operator==(const Scalar& o) const noexcept { return type == o.type && bits == o.bits; }
  };
  struct ScalarHash {
    size_t operator()(const Scalar& k) const noexcept {
      return std::hash<int64_t>()(k.bits) ^ static_cast<size_t>(k.type);
    }
  };
  std::unordered_map<std::string_view, String> strings_;
  std::unordered_map<Scalar, Attr, ScalarHash> scalars_;
  std::unordered_map<std::string, Array<String>> lists_;
  std::string key_;  // list()'s scratch
  ArgumentMap no_arguments_;
  AttrMap no_attrs_;
};

ArgumentMap convert_arguments(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& vars,
                              const Cursor& op, const char* field, Interner& names_of) {
  ArgumentMap out;
  for (int i = 0; i < vars.size(); ++i) {
    const pb::OpDesc::Var& v = vars.Get(i);
    Cursor c = op.nested(pb::OpDesc::descriptor(), field, i,
                         std::string(field) + "[" + std::to_string(i) + "]");
    if (!v.has_parameter() || v.parameter().empty()) c.fail("missing 'parameter'");
    const String parameter = names_of.get(v.parameter());
    if (out.contains(parameter)) {
      c.fail("parameter " + quoted(v.parameter()) + " appears twice in " + field);
    }
    std::vector<String> names;
    names.reserve(static_cast<size_t>(v.arguments_size()));
    for (const std::string& a : v.arguments()) {
      if (a.empty()) c.fail("parameter " + quoted(v.parameter()) + " has an empty argument name");
      names.push_back(names_of.get(a));
    }
    out.set(parameter, names_of.list(names));
  }
  if (out.empty()) return names_of.no_arguments();
  return out;
}

Attr convert_attr(const pb::OpDesc::Attr& a, const Cursor& c, Interner& values) {
  if (!a.has_name() || a.name().empty()) c.fail("attribute without a 'name'");
  const std::string who = "attribute " + quoted(a.name());
  if (!a.has_type()) c.fail(who + " has no 'type'");
  const auto t = static_cast<AttrType>(a.type());
  // Exactly the value field of the declared type may be set (lists may be empty).
  struct Field {
    const char* name;
    bool set;
    AttrType type;
  };
  const Field fields[] = {
      {"i", a.has_i(), AttrType::kInt},
      {"f", a.has_f(), AttrType::kFloat},
      {"s", a.has_s(), AttrType::kString},
      {"ints", a.ints_size() > 0, AttrType::kInts},
      {"floats", a.floats_size() > 0, AttrType::kFloats},
      {"strings", a.strings_size() > 0, AttrType::kStrings},
      {"b", a.has_b(), AttrType::kBoolean},
      {"bools", a.bools_size() > 0, AttrType::kBooleans},
      {"block_idx", a.has_block_idx(), AttrType::kBlock},
      {"l", a.has_l(), AttrType::kLong},
  };
  const char* expected = nullptr;
  for (const Field& f : fields) {
    if (f.type == t) expected = f.name;
    if (f.set && f.type != t) {
      c.fail(who + " is declared " + std::string(attr_type_name(t)) + " but has a '" + f.name +
             "' value (the field of type " + std::string(attr_type_name(f.type)) + ")");
    }
  }
  auto require = [&](bool present) {
    if (!present) {
      c.fail(who + " of type " + std::string(attr_type_name(t)) + " has no '" + expected +
             "' value");
    }
  };
  switch (t) {
    case AttrType::kInt:
      require(a.has_i());
      return values.scalar(t, a.i(), [&] { return Attr::i(a.i()); });
    case AttrType::kFloat:
      require(a.has_f());
      return values.scalar(t, std::bit_cast<int32_t>(a.f()), [&] { return Attr::f(a.f()); });
    case AttrType::kString:
      require(a.has_s());
      return Attr::s(a.s());
    case AttrType::kInts:
      return Attr::ints(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case AttrType::kFloats:
      return Attr::floats(std::vector<double>(a.floats().begin(), a.floats().end()));
    case AttrType::kStrings:
      return Attr::strings(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case AttrType::kBoolean:
      require(a.has_b());
      return values.scalar(t, a.b() ? 1 : 0, [&] { return Attr::b(a.b()); });
    case AttrType::kBooleans:
      return Attr::bools(std::vector<bool>(a.bools().begin(), a.bools().end()));
    case AttrType::kBlock:
      require(a.has_block_idx());
      return values.scalar(t, a.block_idx(), [&] { return Attr::block(a.block_idx()); });
    case AttrType::kLong:
      require(a.has_l());
      return values.scalar(t, a.l(), [&] { return Attr::l(a.l()); });
  }
  c.fail(who + " has an unknown type");
}

OpDesc convert_op(const pb::OpDesc& op, const Cursor& c, Interner& names_of) {
  if (!op.has_type() || op.type().empty()) c.fail("op without a 'type'");
  Cursor oc = c;
  oc.op_type_ = op.type();
  ArgumentMap inputs = convert_arguments(op.inputs(), oc, "inputs", names_of);
  ArgumentMap outputs = convert_arguments(op.outputs(), oc, "outputs", names_of);
  AttrMap attrs;
  for (int i = 0; i < op.attrs_size(); ++i) {
    Cursor ac = oc.nested(pb::OpDesc::descriptor(), "attrs", i, "attrs[" + std::to_string(i) + "]");
    const pb::OpDesc::Attr& a = op.attrs(i);
    Attr value = convert_attr(a, ac, names_of);
    const String name = names_of.get(a.name());
    if (attrs.contains(name)) {
      ac.fail("attribute " + quoted(a.name()) + " appears twice");
    }
    attrs.set(name, value);
  }
  if (attrs.empty()) attrs = names_of.no_attrs();
  return OpDesc::from_maps(op.type(), inputs, outputs, attrs, op.is_target());
}

VarDesc convert_var(const pb::VarDesc& v, const Cursor& c) {
  if (!v.has_name() || v.name().empty()) c.fail("variable without a 'name'");
  const std::string who = "variable " + quoted(v.name());
  if (!v.has_type() || !v.type().has_type()) c.fail(who + " has no 'type { type: ... }'");
  const pb::VarType& t = v.type();
  int64_t data_type = -1;
  std::vector<int64_t> dims;
  int64_t lod_level = 0;
  int64_t capacity = 0;
  // A description must belong to the variable's kind (the saver writes only that one).
  if (t.has_lod_tensor() && t.type() != pb::VarType::LOD_TENSOR) {
    c.fail(who + " has a 'lod_tensor' description but its type is " +
           pb::VarType::Type_Name(t.type()));
  }
  if (t.has_selected_rows() && t.type() != pb::VarType::SELECTED_ROWS) {
    c.fail(who + " has a 'selected_rows' description but its type is " +
           pb::VarType::Type_Name(t.type()));
  }
  if (t.has_lod_tensor()) {
    const auto& lt = t.lod_tensor();
    if (lt.has_tensor() && lt.tensor().has_data_type()) data_type = lt.tensor().data_type();
    if (lt.has_tensor()) dims.assign(lt.tensor().dims().begin(), lt.tensor().dims().end());
    lod_level = lt.lod_level();
  } else if (t.has_selected_rows()) {
    if (t.selected_rows().has_data_type()) data_type = t.selected_rows().data_type();
    dims.assign(t.selected_rows().dims().begin(), t.selected_rows().dims().end());
  }
  if (t.has_channel()) {
    if (t.type() != pb::VarType::CHANNEL) {
      c.fail(who + " has a 'channel' description but its type is " +
             pb::VarType::Type_Name(t.type()));
    }
    if (!t.channel().has_data_type()) c.fail(who + ": channel description without 'data_type'");
    data_type = t.channel().data_type();
    capacity = t.channel().capacity();
  }
  return VarDesc::make(v.name(), t.type(), data_type, dims, lod_level, capacity, v.persistable());
}

}  // namespace

struct ProgramAssembler::State {
  State(std::string_view source, const TextFormat::ParseInfoTree* info) : root(source, info) {}
  Cursor root;
  Interner names_of;
  Array<Block> blocks;
  // The block being assembled.
  Cursor block{std::string_view{}, nullptr};
  Array<VarDesc> vars;
  Array<OpDesc> ops;
};

ProgramAssembler::ProgramAssembler(std::string_view source, const TextFormat::ParseInfoTree* info)
    : state_(std::make_unique<State>(source, info)) {}

ProgramAssembler::~ProgramAssembler() = default;

void ProgramAssembler::begin_block() {
  const int bi = static_cast<int>(state_->blocks.size());
  state_->block = state_->root.nested(pb::ProgramDesc::descriptor(), "blocks", bi,
                                      "blocks[" + std::to_string(bi) + "]");
  state_->block.block_ = bi;
  state_->vars = Array<VarDesc>();
  state_->ops = Array<OpDesc>();
}

void ProgramAssembler::check_header(const pb::BlockDesc& header) const {
  if (!header.has_idx()) state_->block.fail("block without 'idx'");
  if (!header.has_parent_idx()) state_->block.fail("block without 'parent_idx'");
}

void ProgramAssembler::add_var(const pb::VarDesc& v) {
  const int vi = static_cast<int>(state_->vars.size());
  Cursor vc = state_->block.nested(pb::BlockDesc::descriptor(), "vars", vi,
                                   "vars[" + std::to_string(vi) + "]");
  state_->vars.push_back(convert_var(v, vc));
}

void ProgramAssembler::add_op(const pb::OpDesc& op) {
  const int oi = static_cast<int>(state_->ops.size());
  Cursor oc = state_->block.nested(pb::BlockDesc::descriptor(), "ops", oi,
                                   "ops[" + std::to_string(oi) + "]");
  oc.op_ = oi;
  state_->ops.push_back(convert_op(op, oc, state_->names_of));
}

void ProgramAssembler::end_block(const pb::BlockDesc& header) {
  check_header(header);
  state_->blocks.push_back(Block::make(header.idx(), header.parent_idx(), state_->vars, state_->ops,
                                       header.forward_block_idx()));
  state_->vars = Array<VarDesc>();
  state_->ops = Array<OpDesc>();
}

Program ProgramAssembler::finish() {
  if (state_->blocks.empty()) state_->root.fail("the program has no blocks (block 0 is required)");
  return Program::make(state_->blocks);
}

Program from_proto(pb::ProgramDesc& desc, std::string_view source,
                   const TextFormat::ParseInfoTree* info) {
  ProgramAssembler assembler(source, info);
  if (desc.blocks_size() == 0) assembler.finish();  // throws: no blocks
  // Each message is freed once converted (swapped with an empty one that the statement's end
  // destroys), so the message and the objects made from it are not both whole at once.
  auto release = [](auto* message) {
    std::remove_pointer_t<decltype(message)> done;
    done.Swap(message);
  };
  for (int bi = 0; bi < desc.blocks_size(); ++bi) {
    pb::BlockDesc& b = *desc.mutable_blocks(bi);
    assembler.begin_block();
    assembler.check_header(b);
    for (int vi = 0; vi < b.vars_size(); ++vi) {
      assembler.add_var(b.vars(vi));
      release(b.mutable_vars(vi));
    }
    for (int oi = 0; oi < b.ops_size(); ++oi) {
      assembler.add_op(b.ops(oi));
      release(b.mutable_ops(oi));
    }
    assembler.end_block(b);
    release(&b);
  }
  return assembler.finish();
}

namespace {

[[noreturn]] void unrepresentable(int64_t block, int64_t op, const std::string& op_type,
                                  const std::string& problem) {
  std::ostringstream os;
  os << "cannot save the program: block " << block;
  if (op >= 0) os << ", op " << op << " ('" << op_type << "')";
  os << ": " << problem;
  throw ProgramError(os.str(), static_cast<int>(block), static_cast<int>(op), op_type);
}

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

void fill_arguments(const ArgumentMap& m, google::protobuf::RepeatedPtrField<pb::OpDesc::Var>* out,
                    int64_t b, int64_t o, const std::string& type) {
  if (!m.defined()) unrepresentable(b, o, type, "null parameter map");
  for (const MapObj::Entry& e : m->entries) {
    const auto* param = e.key.as<StringObj>();
    const auto* names = e.value.as<ArrayObj>();
    if (param == nullptr || names == nullptr) {
      unrepresentable(b, o, type, "parameter map entry is not (String, Array<String>)");
    }
    pb::OpDesc::Var* v = out->Add();
    v->set_parameter(param->data);
    for (const ObjectRef& n : names->data) {
      const auto* s = n.as<StringObj>();
      if (s == nullptr) {
        unrepresentable(b, o, type, "an argument of '" + param->data + "' is not a string");
      }
      v->add_arguments(s->data);
    }
  }
}

void fill_attr(const std::string& name, const Attr& a, pb::OpDesc::Attr* out, int64_t b, int64_t o,
               const std::string& type) {
  if (!a.defined() || !is_valid_attr_type(a->type) || !a.well_formed()) {
    unrepresentable(b, o, type, "attribute '" + name + "' is ill-formed");
  }
  out->set_name(name);
  out->set_type(static_cast<pb::AttrType>(a->type));
  switch (a.type()) {
    case AttrType::kInt:
      if (!fits_int32(a.as_int())) {
        unrepresentable(b, o, type,
                        "INT attribute '" + name + "' = " + std::to_string(a.as_int()) +
                            " does not fit in int32 (use LONG)");
      }
      out->set_i(static_cast<int32_t>(a.as_int()));
      break;
    case AttrType::kFloat:
      out->set_f(static_cast<float>(a.as_float()));
      break;
    case AttrType::kString:
      out->set_s(a.as_string());
      break;
    case AttrType::kInts:
      for (int64_t v : a.as_ints()) {
        if (!fits_int32(v)) {
          unrepresentable(
              b, o, type,
              "INTS attribute '" + name + "' holds " + std::to_string(v) + ", outside int32");
        }
        out->add_ints(static_cast<int32_t>(v));
      }
      break;
    case AttrType::kFloats:
      for (double v : a.as_floats()) out->add_floats(static_cast<float>(v));
      break;
    case AttrType::kStrings:
      for (const auto& v : a.as_strings()) out->add_strings(v);
      break;
    case AttrType::kBoolean:
      out->set_b(a.as_bool());
      break;
    case AttrType::kBooleans:
      for (bool v : a.as_bools()) out->add_bools(v);
      break;
    case AttrType::kBlock:
      if (!fits_int32(a.as_block())) {
        unrepresentable(b, o, type, "BLOCK attribute '" + name + "' outside int32");
      }
      out->set_block_idx(static_cast<int32_t>(a.as_block()));
      break;
    case AttrType::kLong:
      out->set_l(a.as_int());
      break;
  }
}

}  // namespace

pb::ProgramDesc to_proto(const Program& program) {
  pb::ProgramDesc desc;
  if (!program.defined() || !program->blocks.defined()) unrepresentable(-1, -1, "", "null program");
  int64_t bi = 0;
  for (const ObjectRef& bref : program->blocks->data) {
    const auto* b = bref.as<BlockObj>();
    if (b == nullptr) unrepresentable(bi, -1, "", "null block");
    if (!fits_int32(b->idx) || !fits_int32(b->parent_idx) || !fits_int32(b->forward_block_idx)) {
      unrepresentable(bi, -1, "", "block index outside int32");
    }
    pb::BlockDesc* pbb = desc.add_blocks();
    pbb->set_idx(static_cast<int32_t>(b->idx));
    pbb->set_parent_idx(static_cast<int32_t>(b->parent_idx));
    if (b->forward_block_idx != -1) {
      pbb->set_forward_block_idx(static_cast<int32_t>(b->forward_block_idx));
    }
    if (!b->vars.defined() || !b->ops.defined()) unrepresentable(bi, -1, "", "null vars or ops");
    for (const ObjectRef& vref : b->vars->data) {
      const auto* v = vref.as<VarDescObj>();
      if (v == nullptr) unrepresentable(bi, -1, "", "null variable");
      if (!is_valid_var_type(v->type)) {
        unrepresentable(bi, -1, "", "variable '" + v->name + "' has an invalid type");
      }
      pb::VarDesc* pv = pbb->add_vars();
      pv->set_name(v->name);
      if (v->persistable) pv->set_persistable(true);
      pb::VarType* t = pv->mutable_type();
      t->set_type(static_cast<pb::VarType::Type>(v->type));
      const bool has_elem = is_valid_var_type(v->data_type);
      if (v->type == static_cast<int64_t>(VarType::kChannel)) {
        // The loader requires 'data_type' in a channel description, so a variable without an
        // element type (Paddle's make_channel wrote those) is saved without a description.
        if (has_elem) {
          auto* ch = t->mutable_channel();
          ch->set_data_type(static_cast<pb::VarType::Type>(v->data_type));
          ch->set_capacity(v->capacity);
        } else if (v->capacity != 0) {
          unrepresentable(bi, -1, "",
                          "channel variable '" + v->name + "' has a capacity but no element type");
        }
      } else if (v->type == static_cast<int64_t>(VarType::kLoDTensor) ||
                 v->type == static_cast<int64_t>(VarType::kSelectedRows)) {
        pb::VarType::TensorDesc* td = v->type == static_cast<int64_t>(VarType::kLoDTensor)
                                          ? t->mutable_lod_tensor()->mutable_tensor()
                                          : t->mutable_selected_rows();
        if (has_elem) td->set_data_type(static_cast<pb::VarType::Type>(v->data_type));
        if (v->dims.defined()) {
          for (const ObjectRef& d : v->dims->data) {
            const auto* i = d.as<IntObj>();
            if (i == nullptr) unrepresentable(bi, -1, "", "variable '" + v->name + "': bad dims");
            td->add_dims(i->value);
          }
        }
        if (v->lod_level != 0 && v->type == static_cast<int64_t>(VarType::kLoDTensor)) {
          if (!fits_int32(v->lod_level)) unrepresentable(bi, -1, "", "lod_level outside int32");
          t->mutable_lod_tensor()->set_lod_level(static_cast<int32_t>(v->lod_level));
        }
      }
    }
    int64_t oi = 0;
    for (const ObjectRef& oref : b->ops->data) {
      const auto* o = oref.as<OpDescObj>();
      if (o == nullptr) unrepresentable(bi, oi, "", "null op");
      pb::OpDesc* po = pbb->add_ops();
      po->set_type(o->type);
      if (o->is_target) po->set_is_target(true);
      fill_arguments(o->inputs, po->mutable_inputs(), bi, oi, o->type);
      fill_arguments(o->outputs, po->mutable_outputs(), bi, oi, o->type);
      if (!o->attrs.defined()) unrepresentable(bi, oi, o->type, "null attribute map");
      for (const auto& e : o->attrs->entries) {
        const auto* name = e.key.as<StringObj>();
        const auto* attr = e.value.as<AttrObj>();
        if (name == nullptr || attr == nullptr) {
          unrepresentable(bi, oi, o->type, "attribute map entry is not (String, Attr)");
        }
        fill_attr(name->data, Attr(detail::ObjectUnsafe::ptr(e.value)), po->add_attrs(), bi, oi,
                  o->type);
      }
      ++oi;
    }
    ++bi;
  }
  return desc;
}

}  // namespace chanflow::ir_detail
