// program.cc — chanflow.Program, BlockRef and op_schema(): programs loaded from files or built
// from plain Python data (the entry point of chanflow.fluid's program builder).
//
// Program.from_blocks types each attribute by the registered op schema, so the fluid layer can
// pass Python values and still get Fluid's exact AttrType (INT vs LONG, FLOAT, BOOLEAN ...):
//   - a registered attribute (or one of the framework attributes every op accepts, op_role ...)
//     takes its declared type; a value that does not fit it is a chanflow.TypeError naming the
//     block, the op index, the op type and the attribute;
//   - an attribute the registry does not know takes its type from the Python value: bool ->
//     BOOLEAN, int -> INT (LONG when outside int32), float -> FLOAT, str -> STRING, BlockRef ->
//     BLOCK, lists likewise (ints and floats mixed -> FLOATS, empty -> INTS).
// The result is not verified here: the executor verifies before it runs, Program.verify() now.
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/program.h"
#include "chanflow/ir/verifier.h"
#include "native.h"

namespace chanflow::python {
namespace {

// A BLOCK attribute's value: the index of a block of the same program.
struct BlockRef {
  int64_t idx = 0;
};

// NumPy's scalar base classes, so np.int64(3) is an int and np.bool_ a bool (set at import).
struct NumpyScalars {
  py::object bool_type, integer_type, floating_type;
};
NumpyScalars& numpy_scalars() {
  static auto* s = new NumpyScalars();  // never destroyed: lives with the module
  return *s;
}

bool is_bool(py::handle v) {
  return PyBool_Check(v.ptr()) != 0 || py::isinstance(v, numpy_scalars().bool_type);
}
bool is_int(py::handle v) {  // not bool
  return (PyLong_Check(v.ptr()) != 0 && PyBool_Check(v.ptr()) == 0) ||
         py::isinstance(v, numpy_scalars().integer_type);
}
bool is_float(py::handle v) {
  return PyFloat_Check(v.ptr()) != 0 || py::isinstance(v, numpy_scalars().floating_type);
}
bool is_str(py::handle v) { return PyUnicode_Check(v.ptr()) != 0; }
bool is_list(py::handle v) { return PyList_Check(v.ptr()) != 0 || PyTuple_Check(v.ptr()) != 0; }

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }
std::string short_repr(py::handle v) {
  std::string r = py::repr(v).cast<std::string>();
  if (r.size() > 80) r = r.substr(0, 77) + "...";
  return r;
}

// ---- plain fields (block, var and op dicts) ----

int64_t as_int64(py::handle v, const std::string& where) {
  if (!is_int(v) && !is_bool(v)) {
    throw_type_error(where + ": expected an int, got '" + type_name(v) + "' " + short_repr(v));
  }
  py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) throw_type_error(where + ": " + short_repr(v) + " does not fit in int64");
  return x;
}

std::string as_string(py::handle v, const std::string& where) {
  if (!is_str(v)) {
    throw_type_error(where + ": expected a str, got '" + type_name(v) + "' " + short_repr(v));
  }
  return v.cast<std::string>();
}

py::list as_list(py::handle v, const std::string& where) {
  if (!is_list(v)) {
    throw_type_error(where + ": expected a list, got '" + type_name(v) + "' " + short_repr(v));
  }
  return py::list(py::reinterpret_borrow<py::object>(v));
}

py::dict as_dict(py::handle v, const std::string& where) {
  if (!PyDict_Check(v.ptr())) {
    throw_type_error(where + ": expected a dict, got '" + type_name(v) + "' " + short_repr(v));
  }
  return py::reinterpret_borrow<py::dict>(v);
}

// Rejects keys other than `known` (a misspelt key would otherwise be silently ignored).
void check_keys(const py::dict& d, std::initializer_list<const char*> known,
                const std::string& where) {
  for (auto item : d) {
    if (!is_str(item.first)) {
      throw_type_error(where + ": keys must be str, got '" + type_name(item.first) + "'");
    }
    const std::string key = item.first.cast<std::string>();
    bool ok = false;
    std::string list;
    for (const char* k : known) {
      ok = ok || key == k;
      list += list.empty() ? k : std::string(", ") + k;
    }
    if (!ok) throw_type_error(where + ": unknown key '" + key + "' (known: " + list + ")");
  }
}

std::optional<py::handle> get(const py::dict& d, const char* key) {
  PyObject* v = PyDict_GetItemString(d.ptr(), key);  // borrowed
  if (v == nullptr) return std::nullopt;
  return py::handle(v);
}

// ---- attributes ----

int64_t attr_int(py::handle v, AttrType t, const std::string& where) {
  if (!is_int(v) && !is_bool(v)) {
    throw_type_error(where + ": " + std::string(attr_type_name(t)) + " needs an int, got '" +
                     type_name(v) + "' " + short_repr(v));
  }
  const int64_t x = as_int64(v, where);
  if (t != AttrType::kLong &&
      (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())) {
    throw_type_error(where + ": " + std::to_string(x) + " does not fit " +
                     std::string(attr_type_name(t)) + " (int32)");
  }
  return x;
}

double attr_float(py::handle v, const std::string& where) {
  if (!is_float(v) && !is_int(v)) {
    throw_type_error(where + ": FLOAT needs a float, got '" + type_name(v) + "' " + short_repr(v));
  }
  const double x = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
  if (std::isfinite(x) && std::fabs(x) > FLT_MAX) {
    throw_type_error(where + ": " + short_repr(v) + " does not fit FLOAT (float32)");
  }
  return x;
}

bool attr_bool(py::handle v, const std::string& where) {
  if (!is_bool(v)) {
    throw_type_error(where + ": BOOLEAN needs a bool, got '" + type_name(v) + "' " + short_repr(v));
  }
  return PyObject_IsTrue(v.ptr()) != 0;
}

std::string attr_string(py::handle v, const std::string& where) {
  if (!is_str(v)) {
    throw_type_error(where + ": STRING needs a str, got '" + type_name(v) + "' " + short_repr(v));
  }
  return v.cast<std::string>();
}

py::list attr_list(py::handle v, AttrType t, const std::string& where) {
  if (!is_list(v)) {
    throw_type_error(where + ": " + std::string(attr_type_name(t)) + " needs a list, got '" +
                     type_name(v) + "' " + short_repr(v));
  }
  return py::list(py::reinterpret_borrow<py::object>(v));
}

Attr make_attr(AttrType t, py::handle v, const std::string& where) {
  auto item_where = [&](size_t i) { return where + "[" + std::to_string(i) + "]"; };
  switch (t) {
    case AttrType::kInt:
      return Attr::i(attr_int(v, t, where));
    case AttrType::kLong:
      return Attr::l(attr_int(v, t, where));
    case AttrType::kFloat:
      return Attr::f(attr_float(v, where));
    case AttrType::kString:
      return Attr::s(attr_string(v, where));
    case AttrType::kBoolean:
      return Attr::b(attr_bool(v, where));
    case AttrType::kBlock:
      if (!py::isinstance<BlockRef>(v)) {
        throw_type_error(where + ": BLOCK needs a BlockRef, got '" + type_name(v) + "' " +
                         short_repr(v));
      }
      return Attr::block(v.cast<BlockRef>().idx);
    case AttrType::kInts: {
      py::list l = attr_list(v, t, where);
      std::vector<int64_t> out;
      for (size_t i = 0; i < l.size(); ++i)
        out.push_back(attr_int(l[i], AttrType::kInt, item_where(i)));
      return Attr::ints(out);
    }
    case AttrType::kFloats: {
      py::list l = attr_list(v, t, where);
      std::vector<double> out;
      for (size_t i = 0; i < l.size(); ++i) out.push_back(attr_float(l[i], item_where(i)));
      return Attr::floats(out);
    }
    case AttrType::kStrings: {
      py::list l = attr_list(v, t, where);
      std::vector<std::string> out;
      for (size_t i = 0; i < l.size(); ++i) out.push_back(attr_string(l[i], item_where(i)));
      return Attr::strings(out);
    }
    case AttrType::kBooleans: {
      py::list l = attr_list(v, t, where);
      std::vector<bool> out;
      for (size_t i = 0; i < l.size(); ++i) out.push_back(attr_bool(l[i], item_where(i)));
      return Attr::bools(out);
    }
  }
  throw_type_error(where + ": unknown attribute type");
}

// The AttrType of a value of an attribute no schema declares.
AttrType infer_attr_type(py::handle v, const std::string& where) {
  if (is_bool(v)) return AttrType::kBoolean;
  if (is_int(v)) {
    const int64_t x = as_int64(v, where);
    return x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()
               ? AttrType::kLong
               : AttrType::kInt;
  }
  if (is_float(v)) return AttrType::kFloat;
  if (is_str(v)) return AttrType::kString;
  if (py::isinstance<BlockRef>(v)) return AttrType::kBlock;
  if (is_list(v)) {
    py::list l = py::list(py::reinterpret_borrow<py::object>(v));
    bool all_bool = true, all_int = true, all_number = true, all_str = true;
    for (auto e : l) {
      all_bool = all_bool && is_bool(e);
      all_int = all_int && is_int(e);
      all_number = all_number && (is_int(e) || is_float(e));
      all_str = all_str && is_str(e);
    }
    if (l.empty() || all_int) return AttrType::kInts;
    if (all_bool) return AttrType::kBooleans;
    if (all_number) return AttrType::kFloats;
    if (all_str) return AttrType::kStrings;
    throw_type_error(where + ": a list attribute holds bools, ints and floats, or strs only, got " +
                     short_repr(v));
  }
  throw_type_error(where + ": cannot make an attribute of '" + type_name(v) + "' " + short_repr(v) +
                   " (bool, int, float, str, BlockRef or a list of them)");
}

// ---- blocks, vars, ops ----

OpDesc::Args make_args(py::handle v, const std::string& where) {
  OpDesc::Args out;
  // A dict (ordered) or a list of (parameter, [names]) pairs.
  py::list pairs = PyDict_Check(v.ptr()) != 0
                       ? py::list(py::reinterpret_borrow<py::dict>(v).attr("items")())
                       : as_list(v, where);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string pw = where + "[" + std::to_string(i) + "]";
    py::handle pair = pairs[i];
    if (!is_list(pair) || py::len(pair) != 2) {
      throw_type_error(pw + ": expected a (parameter, [names]) pair, got " + short_repr(pair));
    }
    py::sequence seq = py::reinterpret_borrow<py::sequence>(pair);
    const std::string param = as_string(seq[0], pw + " parameter");
    py::list names = as_list(seq[1], pw + " ('" + param + "') names");
    std::vector<std::string> ns;
    for (size_t j = 0; j < names.size(); ++j) {
      ns.push_back(as_string(names[j], pw + " ('" + param + "') names[" + std::to_string(j) + "]"));
    }
    out.emplace_back(param, std::move(ns));
  }
  return out;
}

VarDesc make_var(py::handle v, const std::string& where) {
  py::dict d = as_dict(v, where);
  check_keys(d, {"name", "type", "data_type", "dims", "lod_level", "capacity", "persistable"},
             where);
  auto name_v = get(d, "name");
  if (!name_v) throw_type_error(where + ": missing key 'name'");
  const std::string name = as_string(*name_v, where + " name");
  const std::string w = where + " ('" + name + "')";
  auto int_field = [&](const char* key, int64_t dflt) {
    auto f = get(d, key);
    return f ? as_int64(*f, w + " " + key) : dflt;
  };
  const int64_t type = int_field("type", static_cast<int64_t>(VarType::kLoDTensor));
  const int64_t data_type = int_field("data_type", -1);
  const int64_t lod_level = int_field("lod_level", 0);
  const int64_t capacity = int_field("capacity", 0);
  std::vector<int64_t> dims;
  if (auto f = get(d, "dims")) {
    py::list l = as_list(*f, w + " dims");
    for (size_t i = 0; i < l.size(); ++i) {
      dims.push_back(as_int64(l[i], w + " dims[" + std::to_string(i) + "]"));
    }
  }
  bool persistable = false;
  if (auto f = get(d, "persistable")) {
    if (!is_bool(*f)) {
      throw_type_error(w + " persistable: expected a bool, got '" + type_name(*f) + "'");
    }
    persistable = PyObject_IsTrue(f->ptr()) != 0;
  }
  return VarDesc::make(name, type, data_type, dims, lod_level, capacity, persistable);
}

// Attributes as (name, value) pairs (a dict or a list), typed by `type`'s schema. `where` names
// the attribute list, `op_where` the op (messages name "<op_where>, attribute '<name>'").
OpDesc::Attrs typed_attrs(const std::string& type, py::handle v, const std::string& where,
                          const std::string& op_where) {
  OpDesc::Attrs attrs;
  const OpSchema* schema = OpSchemaRegistry::global().find(type);
  py::list pairs = PyDict_Check(v.ptr()) != 0
                       ? py::list(py::reinterpret_borrow<py::dict>(v).attr("items")())
                       : as_list(v, where);
  for (size_t i = 0; i < pairs.size(); ++i) {
    py::handle pair = pairs[i];
    if (!is_list(pair) || py::len(pair) != 2) {
      throw_type_error(where + "[" + std::to_string(i) + "]: expected a (name, value) pair, got " +
                       short_repr(pair));
    }
    py::sequence seq = py::reinterpret_borrow<py::sequence>(pair);
    const std::string name = as_string(seq[0], where + "[" + std::to_string(i) + "] name");
    const std::string aw = op_where + ", attribute '" + name + "'";
    py::object value = seq[1];
    const AttrSpec* spec = schema != nullptr ? schema->attr(name) : nullptr;
    AttrType t;
    if (spec != nullptr) {
      t = spec->type;
    } else {
      t = infer_attr_type(value, aw);
      if (const AttrSpec* fw = framework_attr(name, t)) t = fw->type;
    }
    attrs.emplace_back(name, make_attr(t, value, aw));
  }
  return attrs;
}

OpDesc make_op(py::handle v, int64_t block, size_t index) {
  const std::string where = "block " + std::to_string(block) + ", op " + std::to_string(index);
  py::dict d = as_dict(v, where);
  check_keys(d, {"type", "inputs", "outputs", "attrs"}, where);
  auto type_v = get(d, "type");
  if (!type_v) throw_type_error(where + ": missing key 'type'");
  const std::string type = as_string(*type_v, where + " type");
  const std::string w = where + " ('" + type + "')";
  OpDesc::Args inputs, outputs;
  if (auto f = get(d, "inputs")) inputs = make_args(*f, w + " inputs");
  if (auto f = get(d, "outputs")) outputs = make_args(*f, w + " outputs");
  OpDesc::Attrs attrs;
  if (auto f = get(d, "attrs")) attrs = typed_attrs(type, *f, w + " attrs", w);
  return OpDesc::make(type, inputs, outputs, attrs);
}

Block make_block(py::handle v, size_t position) {
  const std::string where = "blocks[" + std::to_string(position) + "]";
  py::dict d = as_dict(v, where);
  check_keys(d, {"idx", "parent_idx", "vars", "ops", "forward_block_idx"}, where);
  auto idx_v = get(d, "idx");
  const int64_t idx = idx_v ? as_int64(*idx_v, where + " idx") : static_cast<int64_t>(position);
  auto parent_v = get(d, "parent_idx");
  const int64_t parent = parent_v ? as_int64(*parent_v, where + " parent_idx") : -1;
  auto fwd_v = get(d, "forward_block_idx");
  const int64_t fwd = fwd_v ? as_int64(*fwd_v, where + " forward_block_idx") : -1;
  Array<VarDesc> vars;
  if (auto f = get(d, "vars")) {
    py::list l = as_list(*f, where + " vars");
    for (size_t i = 0; i < l.size(); ++i) {
      vars.push_back(make_var(l[i], "block " + std::to_string(idx) + ", var " + std::to_string(i)));
    }
  }
  Array<OpDesc> ops;
  if (auto f = get(d, "ops")) {
    py::list l = as_list(*f, where + " ops");
    for (size_t i = 0; i < l.size(); ++i) ops.push_back(make_op(l[i], idx, i));
  }
  return Block::make(idx, parent, vars, ops, fwd);
}

Program from_blocks(py::handle blocks) {
  py::list l = as_list(blocks, "Program.from_blocks: blocks");
  Array<Block> out;
  for (size_t i = 0; i < l.size(); ++i) out.push_back(make_block(l[i], i));
  return Program::make(out);
}

// ---- schemas ----

template <class Item, class Vector>
py::list list_of(const Vector& values) {
  py::list l;
  for (const auto& v : values) l.append(Item(v));
  return l;
}

py::object attr_to_python(const Attr& a) {
  switch (a.type()) {
    case AttrType::kInt:
    case AttrType::kLong:
      return py::int_(a.as_int());
    case AttrType::kFloat:
      return py::float_(a.as_float());
    case AttrType::kString:
      return py::str(a.as_string());
    case AttrType::kBoolean:
      return py::bool_(a.as_bool());
    case AttrType::kBlock:
      return py::cast(BlockRef{a.as_block()});
    // Lists are built item by item: this module does not include pybind11/stl.h, so py::cast of
    // a std::vector would fail at run time ("Unable to convert call argument").
    case AttrType::kInts:
      return list_of<py::int_>(a.as_ints());
    case AttrType::kFloats:
      return list_of<py::float_>(a.as_floats());
    case AttrType::kStrings:
      return list_of<py::str>(a.as_strings());
    case AttrType::kBooleans:
      return list_of<py::bool_>(a.as_bools());
  }
  return py::none();
}

py::object op_schema(const std::string& type) {
  const OpSchema* s = OpSchemaRegistry::global().find(type);
  if (s == nullptr) return py::none();
  py::list inputs, outputs;
  for (const ArgSpec& a : s->inputs()) inputs.append(a.name);
  for (const ArgSpec& a : s->outputs()) outputs.append(a.name);
  py::dict attrs;
  for (const AttrSpec& a : s->attrs()) {
    attrs[py::str(a.name)] = py::make_tuple(
        static_cast<int>(a.type), a.make_default ? attr_to_python(a.make_default()) : py::none());
  }
  py::dict out;
  out["inputs"] = inputs;
  out["outputs"] = outputs;
  out["attrs"] = attrs;
  return out;
}

std::string fspath(py::handle path) {
  py::object p = py::module_::import("os").attr("fspath")(path);
  if (!is_str(p)) throw_type_error("path: expected a str path, got bytes");
  return p.cast<std::string>();
}

}  // namespace

OpDesc::Args op_args_from_python(py::handle v, const std::string& where) {
  return make_args(v, where);
}

OpDesc::Attrs op_attrs_from_python(const std::string& op_type, py::handle v,
                                   const std::string& where) {
  return typed_attrs(op_type, v, where, where);
}

void bind_program(py::module_& m) {
  py::module_ np = py::module_::import("numpy");
  numpy_scalars().bool_type = np.attr("bool_");
  numpy_scalars().integer_type = np.attr("integer");
  numpy_scalars().floating_type = np.attr("floating");

  py::class_<BlockRef>(m, "BlockRef", "The value of a BLOCK attribute: a block index.")
      .def(
          py::init([](py::handle idx) {
            const int64_t i = as_int64(idx, "BlockRef");
            if (i < 0)
              throw py::value_error("BlockRef: block index must be >= 0, got " + std::to_string(i));
            return BlockRef{i};
          }),
          py::arg("idx"))
      .def_readonly("idx", &BlockRef::idx)
      .def("__eq__",
           [](const BlockRef& a, py::handle b) {
             return py::isinstance<BlockRef>(b) && b.cast<BlockRef>().idx == a.idx;
           })
      .def("__hash__", [](const BlockRef& a) { return py::hash(py::int_(a.idx)); })
      .def("__repr__", [](const BlockRef& a) { return "BlockRef(" + std::to_string(a.idx) + ")"; });

  py::class_<Program, ObjectRef> program(
      m, "Program",
      "A program (Fluid's ProgramDesc), the chanflow object of type 'ir.Program'. Built by "
      "from_blocks or ProgramBuilder, or loaded; verified when an Executor runs it (or by "
      "verify()). == compares by structure (unhashable).");
  register_wrapper(
      ProgramObj::runtime_type_index(),
      [](ObjectRef r) { return py::cast(downcast<Program>(std::move(r))); }, program);
  program
      .def_static(
          "from_text",
          [](const std::string& text, const std::string& source) {
            return Program::from_text(text, source);
          },
          py::arg("text"), py::arg("source") = "<text>")
      .def_static(
          "from_binary",
          [](const py::bytes& data, const std::string& source) {
            return Program::from_binary(std::string_view(data), source);
          },
          py::arg("data"), py::arg("source") = "<binary>")
      .def_static(
          "load", [](py::handle path) { return Program::from_file(fspath(path)); }, py::arg("path"),
          "Loads a .pbtxt/.txt/.prototxt (text) or .pb/.bin (binary) file.")
      .def_static("from_blocks", &from_blocks, py::arg("blocks"))
      .def("to_text", &Program::to_text)
      .def("to_binary", [](const Program& p) { return py::bytes(p.to_binary()); })
      .def(
          "save", [](const Program& p, py::handle path) { p.save(fspath(path)); }, py::arg("path"),
          "Writes the file, its format chosen by extension as load() reads it.")
      .def(
          "verify", [](const Program& p) { check_program(p); },
          "Checks the program as the executor does; raises ProgramError at the first problem.")
      .def_property_readonly("num_blocks", &Program::num_blocks)
      .def("__eq__",
           [](const Program& a, py::handle b) {
             return py::isinstance<Program>(b) && a.equals(b.cast<Program>());
           })
      .def("__repr__", [](const Program& p) {
        return "<chanflow.Program with " + std::to_string(p.num_blocks()) + " block(s)>";
      });
  // __eq__ without __hash__: unhashable (a program is compared by structure).
  m.attr("Program").attr("__hash__") = py::none();
  m.def(
      "load_program", [](py::handle path) { return Program::from_file(fspath(path)); },
      py::arg("path"),
      "Loads a program file: .pbtxt/.txt/.prototxt as text, .pb/.bin as binary (Program.load).");

  m.def("op_schema", &op_schema, py::arg("type"),
        "The registered schema of an op type as {'inputs': [...], 'outputs': [...], 'attrs': "
        "{name: (attr_type, default or None)}}, or None when the type is not registered.");
  m.def(
      "op_types",
      [] {
        py::list names;
        for (const std::string& t : OpSchemaRegistry::global().op_types()) names.append(t);
        return names;
      },
      "Every registered op type, sorted (each has an op_schema).");
}

}  // namespace chanflow::python
