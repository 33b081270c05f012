// objects.cc — chanflow objects as Python values: one Python class per object type.
//
// Classes. chanflow.Object is the root. Every type in the type registry when the module finishes
// importing (bind_object_classes) gets its class, a subclass of its parent type's class, unless it
// has a bound class (Tensor, Array, Map, Program, and those other files register with
// register_wrapper). A generated class is named after the last component of the type key
// ("ir.OpDesc" -> OpDesc, __qualname__ "ir.OpDesc", __module__ "chanflow.types"), is reachable as
// chanflow.types.ir.OpDesc and chanflow.object_class("ir.OpDesc"), and has one read-only property
// per reflected field. The set of classes is fixed at import: an object of a type registered
// later (a plug-in, a type first used after import) surfaces as the class of its nearest ancestor
// that has one, and its own fields are still readable (attribute lookup falls back to the
// object's dynamic reflection) and shown by repr. So `isinstance` follows the C++ hierarchy and
// never claims a type the object does not have.
//
// Boxed scalars and String surface as Python's own bool, int, float and str (as tvm-ffi does):
// they are immutable values, bool cannot be subclassed in Python, and a wrapper class that is not
// an int would break every API that wants one (range, NumPy indexing, json). chanflow.types.Int
// is therefore `int` (and Float `float`, Bool `bool`, String `str`).
//
// Equality and hashing are C++'s (object_hash.h): for every Object, identity — two Python values
// are == when they hold the same object, and hash accordingly; Strings and boxed scalars compare
// by value as the Python values they are. A bound class may define its own (Program compares by
// structure and is unhashable). Array and Map are immutable from Python: their C++ nodes are
// copy-on-write, and a node shared with C++ code is never changed in place.
//
// Instances of generated classes are made by calling the class with the one _ObjectSeed holding
// the reference (the only public way to construct a pybind11 instance of a Python subclass):
// _ObjectSeed has no constructor, so Python code cannot forge one.
#include <Python.h>
#include <pthread.h>
#include <pybind11/eval.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/json.h"
#include "chanflow/core/map.h"
#include "chanflow/core/object_hash.h"
#include "chanflow/core/reflection.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"
#include "chanflow/exec/scope.h"
#include "chanflow/ir/attr.h"
#include "chanflow/ir/block.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/program.h"
#include "chanflow/ir/var_desc.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/tensor/tensor.h"
#include "native.h"

namespace chanflow::python {

namespace {

using AnyArray = Array<ObjectRef>;
using AnyMap = Map<ObjectRef, ObjectRef>;

// ---- test fixtures -------------------------------------------------------------------------
//
// Types under the key prefix "testing." exist so the tests can check what no library type shows:
// a hierarchy deeper than Object -> leaf (testing.Node -> testing.Leaf), every field kind, and
// types registered after import (testing.LateLeaf, testing.LateRoot: registered only by
// _testing_register_late_types()).

class TestingNodeObj : public Object {
 public:
  int64_t value = 0;
  double weight = 0.0;
  bool flag = false;
  std::string label;
  ObjectRef next;
  void visit_fields(FieldVisitor& v) {
    v("value", &value);
    v("weight", &weight);
    v("flag", &flag);
    v("label", &label);
    v("next", &next);
  }
  static constexpr const char* kTypeKey = "testing.Node";
  static constexpr uint32_t kTypeChildSlots = 4;
  CHANFLOW_DECLARE_OBJECT_INFO(TestingNodeObj, Object);
};

class TestingLeafObj : public TestingNodeObj {
 public:
  Array<ObjectRef> items;
  void visit_fields(FieldVisitor& v) {
    TestingNodeObj::visit_fields(v);
    v("items", &items);
  }
  static constexpr const char* kTypeKey = "testing.Leaf";
  static constexpr uint32_t kTypeChildSlots = 2;
  CHANFLOW_DECLARE_OBJECT_INFO(TestingLeafObj, TestingNodeObj);
};

class TestingLateLeafObj : public TestingLeafObj {
 public:
  std::string late;
  void visit_fields(FieldVisitor& v) {
    TestingLeafObj::visit_fields(v);
    v("late", &late);
  }
  static constexpr const char* kTypeKey = "testing.LateLeaf";
  static constexpr uint32_t kTypeChildSlots = 0;
  CHANFLOW_DECLARE_OBJECT_INFO(TestingLateLeafObj, TestingLeafObj);
};

// Not reflected: shows the repr of objects without fields.
class TestingLateRootObj : public Object {
 public:
  static constexpr const char* kTypeKey = "testing.LateRoot";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(TestingLateRootObj, Object);
};

// ---- the class table -----------------------------------------------------------------------

// How objects of one type index become Python values: a bound class's wrapper (wrap_index is the
// type it was registered for), a generated class, or neither (chanflow.Object).
struct Resolved {
  Wrapper wrap = nullptr;
  uint32_t wrap_index = 0;
  PyObject* cls = nullptr;  // borrowed from ClassTable::generated
};

// The reference a generated class's constructor takes (see the file comment).
struct ObjectSeed {
  ObjectRef ref;
};

// Read and written with the GIL held. Never destroyed (the module lives until the process ends).
struct ClassTable {
  std::unordered_map<uint32_t, Wrapper> wrappers;
  std::unordered_map<uint32_t, py::object> bound;      // bound classes, given or learned
  std::unordered_map<uint32_t, py::object> generated;  // classes made by bind_object_classes
  std::unordered_map<uint32_t, Resolved> resolved;     // cache of resolve()
  py::object object_class;                             // chanflow.Object
  py::object json_error;                               // chanflow.JSONError
  bool classes_built = false;
};
ClassTable& table() {
  static auto* t = new ClassTable();
  return *t;
}

const Resolved& resolve(uint32_t index) {
  ClassTable& t = table();
  auto it = t.resolved.find(index);
  if (it != t.resolved.end()) return it->second;
  Resolved r;
  const TypeRegistry& registry = TypeRegistry::global();
  for (const TypeInfo* info = registry.find(index); info != nullptr;) {
    auto w = t.wrappers.find(info->index);
    if (w != t.wrappers.end()) {
      r.wrap = w->second;
      r.wrap_index = info->index;
      break;
    }
    auto g = t.generated.find(info->index);
    if (g != t.generated.end()) {
      r.cls = g->second.ptr();
      break;
    }
    if (info->parent_index == info->index) break;
    info = registry.find(info->parent_index);
  }
  return t.resolved.emplace(index, r).first->second;
}

// The Python class objects of `index` surface as; None for a bound class whose class is not known
// yet (registered without it and no object wrapped so far).
py::object class_of(uint32_t index) {
  switch (index) {
    case TypeIndex::kString:
      return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyUnicode_Type));
    case TypeIndex::kInt:
      return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyLong_Type));
    case TypeIndex::kFloat:
      return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyFloat_Type));
    case TypeIndex::kBool:
      return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyBool_Type));
    default:
      break;
  }
  const Resolved& r = resolve(index);
  ClassTable& t = table();
  if (r.wrap != nullptr) {
    auto b = t.bound.find(r.wrap_index);
    return b != t.bound.end() ? b->second : py::none();
  }
  if (r.cls != nullptr) return py::reinterpret_borrow<py::object>(r.cls);
  return t.object_class;
}

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

std::string repr_text(py::handle v) { return py::repr(v).cast<std::string>(); }

// ---- strings -------------------------------------------------------------------------------
//
// chanflow Strings hold bytes; Python strs hold code points. Bytes that are not UTF-8 surface as
// lone surrogates (errors="surrogateescape") and convert back to the same bytes, so every String
// round-trips through Python unchanged.

py::object string_to_python(const std::string& s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

// The bytes of a str; nullopt (and no Python error set) when it has a lone surrogate that is not
// an escaped byte.
std::optional<std::string> python_to_string(PyObject* o) {
  Py_ssize_t size = 0;
  if (const char* data = PyUnicode_AsUTF8AndSize(o, &size)) return std::string(data, size);
  PyErr_Clear();
  PyObject* bytes = PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape");
  if (bytes == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::string out(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return out;
}

// ---- Python -> object ----------------------------------------------------------------------

// NumPy's scalar base classes (set at import).
struct NumpyTypes {
  py::object bool_type, integer_type, floating_type;
};
NumpyTypes& numpy_types() {
  static auto* n = new NumpyTypes();
  return *n;
}

// Where a value sits inside the argument being converted, rendered only for a message.
struct Path {
  const Path* parent = nullptr;
  const std::string* root = nullptr;  // the outermost node only
  Py_ssize_t index = -1;              // an item of a list/tuple
  PyObject* key = nullptr;            // a value (or, with is_key, the key) of a dict
  bool is_key = false;
};

// "what[1]['k']"; a deep place keeps its first and last steps ("what[0][0]...[0]" with the
// number of steps left out between), so a message stays short however deep the value sits.
std::string render(const Path& p) {
  std::vector<const Path*> steps;  // innermost first
  const Path* q = &p;
  for (; q->root == nullptr; q = q->parent) steps.push_back(q);
  constexpr size_t kShown = 8;  // steps kept at each end
  std::string out = *q->root;
  for (size_t i = steps.size(); i-- > 0;) {
    const size_t from_start = steps.size() - 1 - i;
    if (steps.size() > 2 * kShown && from_start == kShown) {
      out += "[... " + std::to_string(steps.size() - 2 * kShown) + " more levels ...]";
      i -= steps.size() - 2 * kShown - 1;
      continue;
    }
    const Path& s = *steps[i];
    if (s.index >= 0) {
      out += "[" + std::to_string(s.index) + "]";
    } else {
      const std::string k = repr_text(s.key);
      out += s.is_key ? " key " + k : "[" + k + "]";
    }
  }
  return out;
}

[[noreturn]] void raise_python(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

class Converter {
 public:
  ObjectRef convert(py::handle value, const Path& path) {
    PyObject* o = value.ptr();
    // Python's own types first: a nested list reaches its container check (and the recursion
    // limit there, with the place in the message) before any call that could hit it first.
    if (o == Py_None) return ObjectRef();
    if (PyBool_Check(o)) return Bool(o == Py_True);
    if (PyLong_Check(o)) return Int(int64_of(o, path));
    if (PyFloat_Check(o)) return Float(PyFloat_AS_DOUBLE(o));
    if (PyUnicode_Check(o)) {
      std::optional<std::string> s = python_to_string(o);
      if (!s) {
        raise_python(PyExc_ValueError,
                     render(path) + ": the str has a lone surrogate, which is not text");
      }
      return String(std::move(*s));
    }
    if (PyList_Check(o) != 0 || PyTuple_Check(o) != 0) return convert_sequence(value, path);
    if (PyDict_Check(o) != 0) return convert_dict(value, path);
    if (py::isinstance<ObjectRef>(value)) return value.cast<ObjectRef>();
    const NumpyTypes& np = numpy_types();
    if (np.bool_type && PyObject_IsInstance(o, np.bool_type.ptr()) == 1) {
      return Bool(PyObject_IsTrue(o) == 1);
    }
    if (np.integer_type && PyObject_IsInstance(o, np.integer_type.ptr()) == 1) {
      py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(o));
      if (!i) throw py::error_already_set();
      return Int(int64_of(i.ptr(), path));
    }
    if (np.floating_type && PyObject_IsInstance(o, np.floating_type.ptr()) == 1) {
      const double d = PyFloat_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred() != nullptr) throw py::error_already_set();
      return Float(d);
    }
    if (py::hasattr(value, "__dlpack__") || py::hasattr(value, "__array_interface__")) {
      try {
        return to_tensor(value, py::none());
      } catch (const TypeError& e) {
        throw TypeError(render(path) + ": " + e.what());
      }
    }
    throw_type_error(render(path) + ": cannot convert a Python '" + type_name(value) +
                     "' to a chanflow object (expected None, bool, int, float, str, list, "
                     "tuple, dict, a NumPy scalar or array, a DLPack producer or a chanflow "
                     "object)");
  }

 private:
  static int64_t int64_of(PyObject* o, const Path& path) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) {
      throw_type_error(render(path) + ": the int " + repr_text(o) + " does not fit in int64");
    }
    if (v == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
    return v;
  }

  // Whether less than kStackReserve of the calling thread's stack is left. A level's frames take
  // a few hundred bytes in a release build and several KiB with ASan, and a thread's stack may be
  // small (threading.stack_size), so a level count alone cannot keep the recursion inside it.
  // Conversions run with the GIL, on OS threads (never a green thread's stack).
  static bool stack_nearly_used() {
    thread_local const uintptr_t low = [] {
      pthread_attr_t attr;
      if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t{0};
      void* addr = nullptr;
      size_t size = 0;
      const int rc = pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
      return rc == 0 ? reinterpret_cast<uintptr_t>(addr) : uintptr_t{0};
    }();
    char here = 0;
    const auto sp = reinterpret_cast<uintptr_t>(&here);
    return low != 0 && sp < low + kStackReserve;
  }

  // Enters one container level: a container that contains itself is a ValueError, nesting past
  // Python's recursion limit, kMaxNesting or the thread's stack a RecursionError, each naming
  // the place. The bounds hold whatever recursion limit the program set: 100,000 levels
  // overflow an 8 MiB stack.
  class Level {
   public:
    Level(Converter* c, PyObject* o, const Path& path) : c_(c), o_(o) {
      if (!c_->active_.insert(o).second) {
        raise_python(PyExc_ValueError,
                     render(path) + ": the " + Py_TYPE(o)->tp_name + " contains itself");
      }
      if (c_->depth_ >= kMaxNesting) {
        c_->active_.erase(o_);
        raise_python(PyExc_RecursionError, render(path) + ": nested deeper than " +
                                               std::to_string(kMaxNesting) + " levels");
      }
      if (stack_nearly_used()) {
        c_->active_.erase(o_);
        raise_python(PyExc_RecursionError,
                     render(path) + ": nested deeper than this thread's stack allows");
      }
      if (Py_EnterRecursiveCall(" while converting to a chanflow object") != 0) {
        c_->active_.erase(o_);
        PyErr_Clear();
        raise_python(PyExc_RecursionError,
                     render(path) + ": nested deeper than Python's recursion limit");
      }
      ++c_->depth_;
    }
    ~Level() {
      --c_->depth_;
      Py_LeaveRecursiveCall();
      c_->active_.erase(o_);
    }
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;

   private:
    Converter* c_;
    PyObject* o_;
  };

  ObjectRef convert_sequence(py::handle value, const Path& path) {
    Level level(this, value.ptr(), path);
    AnyArray items;
    PyObject* o = value.ptr();
    const bool is_list = PyList_Check(o) != 0;
    // The size is read again each step: converting an item may run Python code (an
    // __array_interface__), which may change a list; each item is held while it converts.
    for (Py_ssize_t i = 0; i < (is_list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o)); ++i) {
      py::object item = py::reinterpret_borrow<py::object>(is_list ? PyList_GET_ITEM(o, i)
                                                                   : PyTuple_GET_ITEM(o, i));
      Path p;
      p.parent = &path;
      p.index = i;
      items.push_back(convert(item, p));
    }
    return items;
  }

  ObjectRef convert_dict(py::handle value, const Path& path) {
    Level level(this, value.ptr(), path);
    AnyMap map;
    py::list pairs = py::reinterpret_borrow<py::dict>(value).attr("items")();  // a snapshot
    for (py::handle pair : pairs) {
      py::handle k = PyTuple_GET_ITEM(pair.ptr(), 0);
      py::handle v = PyTuple_GET_ITEM(pair.ptr(), 1);
      Path kp;
      kp.parent = &path;
      kp.key = k.ptr();
      kp.is_key = true;
      ObjectRef key = convert(k, kp);
      Path vp;
      vp.parent = &path;
      vp.key = k.ptr();
      map.set(std::move(key), convert(v, vp));
    }
    return map;
  }

  static constexpr int kMaxNesting = 10'000;
  static constexpr uintptr_t kStackReserve = 256 * 1024;
  std::unordered_set<PyObject*> active_;
  int depth_ = 0;  // containers entered
};

ObjectRef convert_root(py::handle value, const std::string& what) {
  Path root;
  root.root = &what;
  return Converter().convert(value, root);
}

// The object a lookup value stands for, or nullopt when it cannot be one (then it is no key of a
// Map nor item of an Array: every key and item is an object).
std::optional<ObjectRef> lookup_object(py::handle value) {
  static const std::string what = "lookup";
  try {
    return convert_root(value, what);
  } catch (const Error&) {
    return std::nullopt;
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_ValueError) || e.matches(PyExc_TypeError) ||
        e.matches(PyExc_RecursionError)) {
      return std::nullopt;
    }
    throw;
  }
}

// ---- fields --------------------------------------------------------------------------------

// Reads the fields of a reflected object as Python values: all of them, or the one named `only`.
class FieldReader final : public FieldVisitor {
 public:
  explicit FieldReader(std::string_view only = {}) : only_(only) {}
  void visit(std::string_view name, int64_t* v) override {
    if (want(name)) add(name, py::int_(*v));
  }
  void visit(std::string_view name, double* v) override {
    if (want(name)) add(name, py::float_(*v));
  }
  void visit(std::string_view name, bool* v) override {
    if (want(name)) add(name, py::bool_(*v));
  }
  void visit(std::string_view name, std::string* v) override {
    if (want(name)) add(name, string_to_python(*v));
  }
  void visit(std::string_view name, ObjectRef* v, const RefFieldType& /*type*/) override {
    if (want(name)) add(name, wrap_object(*v));
  }
  std::vector<std::pair<std::string, py::object>> fields;

 private:
  bool want(std::string_view name) const { return only_.empty() || name == only_; }
  void add(std::string_view name, py::object v) { fields.emplace_back(name, std::move(v)); }
  std::string_view only_;
};

// The names and kinds of a reflected type's fields, read from a default instance.
class FieldNames final : public FieldVisitor {
 public:
  void visit(std::string_view name, int64_t*) override { add(name, "int"); }
  void visit(std::string_view name, double*) override { add(name, "float"); }
  void visit(std::string_view name, bool*) override { add(name, "bool"); }
  void visit(std::string_view name, std::string*) override { add(name, "str"); }
  void visit(std::string_view name, ObjectRef*, const RefFieldType& type) override {
    add(name, type.name());
  }
  std::vector<std::pair<std::string, std::string>> fields;

 private:
  void add(std::string_view name, std::string kind) {
    fields.emplace_back(std::string(name), std::move(kind));
  }
};

std::vector<std::pair<std::string, py::object>> read_fields(const ObjectRef& ref,
                                                            std::string_view only = {}) {
  FieldReader reader(only);
  if (!ref.defined()) return {};
  if (auto info = find_reflection(ref->type_index())) {
    info->visit_fields(const_cast<Object*>(ref.get()), reader);  // read only
  }
  return std::move(reader.fields);
}

// Writes fields from Python values (the testing constructor): checked as from_json checks them.
class FieldWriter final : public FieldVisitor {
 public:
  FieldWriter(const std::string& key, py::dict values) : key_(key), values_(std::move(values)) {}
  void visit(std::string_view name, int64_t* v) override {
    if (py::handle x = take(name)) {
      if (PyLong_Check(x.ptr()) == 0 || PyBool_Check(x.ptr()) != 0) mismatch(name, "an int", x);
      *v = convert_root(x, where(name)).as<IntObj>()->value;
    }
  }
  void visit(std::string_view name, double* v) override {
    if (py::handle x = take(name)) {
      if (PyFloat_Check(x.ptr()) == 0 && (PyLong_Check(x.ptr()) == 0 || PyBool_Check(x.ptr()))) {
        mismatch(name, "a float", x);
      }
      *v = x.cast<double>();
    }
  }
  void visit(std::string_view name, bool* v) override {
    if (py::handle x = take(name)) {
      if (PyBool_Check(x.ptr()) == 0) mismatch(name, "a bool", x);
      *v = x.ptr() == Py_True;
    }
  }
  void visit(std::string_view name, std::string* v) override {
    if (py::handle x = take(name)) {
      if (PyUnicode_Check(x.ptr()) == 0) mismatch(name, "a str", x);
      *v = convert_root(x, where(name)).as<StringObj>()->data;
    }
  }
  void visit(std::string_view name, ObjectRef* v, const RefFieldType& type) override {
    if (py::handle x = take(name)) {
      ObjectRef o = convert_root(x, where(name));
      if (!type.accepts(o)) mismatch(name, "a " + type.name(), x);
      *v = std::move(o);
    }
  }
  // Throws TypeError naming the keys no field took.
  void check_all_used() const {
    for (auto item : values_) {
      const std::string k = py::str(item.first).cast<std::string>();
      if (used_.count(k) == 0) throw_type_error(key_ + ": no field '" + k + "'");
    }
  }

 private:
  std::string where(std::string_view name) const { return key_ + "." + std::string(name); }
  py::handle take(std::string_view name) {
    const std::string n(name);
    PyObject* x = PyDict_GetItemString(values_.ptr(), n.c_str());
    if (x != nullptr) used_.insert(n);
    return x;
  }
  [[noreturn]] void mismatch(std::string_view name, const std::string& expected, py::handle x) {
    throw_type_error(where(name) + ": expected " + expected + ", got '" + type_name(x) + "' " +
                     repr_text(x));
  }
  std::string key_;
  py::dict values_;
  std::unordered_set<std::string> used_;
};

// ---- repr ----------------------------------------------------------------------------------

std::string address_of(const Object* o) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", static_cast<const void*>(o));
  return buf;
}

std::string object_repr(const ObjectRef& ref) {
  if (!ref.defined()) return "None";
  const std::string key(ref->type_key());
  if (!find_reflection(ref->type_index()))
    return "<" + key + " object at " + address_of(ref.get()) + ">";
  std::string out = key + "(";
  bool first = true;
  for (auto& [name, value] : read_fields(ref)) {
    if (!first) out += ", ";
    first = false;
    out += name + "=" + repr_text(value);
  }
  return out + ")";
}

std::string array_repr(const AnyArray& a) {
  std::string out = "Array([";
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr_text(wrap_object(a->data[i]));
  }
  return out + "])";
}

std::string map_repr(const AnyMap& m) {
  std::string out = "Map({";
  bool first = true;
  for (const auto& e : m->entries) {
    if (!first) out += ", ";
    first = false;
    out += repr_text(wrap_object(e.key)) + ": " + repr_text(wrap_object(e.value));
  }
  return out + "})";
}

// ---- Array and Map -------------------------------------------------------------------------

// An index argument: an int (or anything with __index__), negative counting from the end.
size_t array_index(const AnyArray& a, py::handle index, const char* what) {
  if (PyIndex_Check(index.ptr()) == 0) {
    throw_type_error(std::string(what) + ": Array indices must be integers or slices, not '" +
                     type_name(index) + "'");
  }
  const Py_ssize_t n = static_cast<Py_ssize_t>(a.size());
  Py_ssize_t i = PyNumber_AsSsize_t(index.ptr(), PyExc_IndexError);
  if (i == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  if (i < 0) i += n;
  if (i < 0 || i >= n) {
    raise_python(PyExc_IndexError, std::string(what) + ": index " + repr_text(index) +
                                       " out of range for an Array of " + std::to_string(n) +
                                       " item(s)");
  }
  return static_cast<size_t>(i);
}

py::object array_getitem(const AnyArray& a, py::handle index) {
  if (PySlice_Check(index.ptr()) != 0) {
    Py_ssize_t start = 0, stop = 0, step = 0;
    if (PySlice_Unpack(index.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
    const Py_ssize_t n =
        PySlice_AdjustIndices(static_cast<Py_ssize_t>(a.size()), &start, &stop, step);
    AnyArray out;
    out.reserve(static_cast<size_t>(n));
    for (Py_ssize_t k = 0, i = start; k < n; ++k, i += step) {
      out.push_back(a->data[static_cast<size_t>(i)]);
    }
    return wrap_object(std::move(out));
  }
  return wrap_object(a->data[array_index(a, index, "Array[]")]);
}

// Index of the first item equal (object_equal) to `value` in [start, stop), or -1.
Py_ssize_t array_find(const AnyArray& a, py::handle value, Py_ssize_t start, Py_ssize_t stop) {
  std::optional<ObjectRef> v = lookup_object(value);
  if (!v) return -1;
  const Py_ssize_t n = static_cast<Py_ssize_t>(a.size());
  if (start < 0) start = std::max<Py_ssize_t>(0, start + n);
  if (stop < 0) stop = std::max<Py_ssize_t>(0, stop + n);
  stop = std::min(stop, n);
  for (Py_ssize_t i = start; i < stop; ++i) {
    if (detail::object_equal(a->data[static_cast<size_t>(i)], *v)) return i;
  }
  return -1;
}

AnyArray array_from_iterable(py::handle items) {
  static const std::string what = "Array(items)";
  if (py::isinstance<AnyArray>(items)) {  // a new array with the same items
    const AnyArray src = items.cast<AnyArray>();
    return AnyArray(src.begin(), src.end());
  }
  py::object it = py::reinterpret_steal<py::object>(PyObject_GetIter(items.ptr()));
  if (!it) {
    PyErr_Clear();
    throw_type_error("Array(items): expected an iterable, got '" + type_name(items) + "'");
  }
  AnyArray out;
  Path root;
  root.root = &what;
  Converter c;
  Py_ssize_t i = 0;
  while (py::object item = py::reinterpret_steal<py::object>(PyIter_Next(it.ptr()))) {
    Path p;
    p.parent = &root;
    p.index = i++;
    out.push_back(c.convert(item, p));
  }
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  return out;
}

AnyMap map_from_python(py::handle items, const py::kwargs& kwargs) {
  static const std::string what = "Map(items)";
  AnyMap out;
  Path root;
  root.root = &what;
  Converter c;
  auto add = [&](py::handle k, py::handle v) {
    Path kp;
    kp.parent = &root;
    kp.key = k.ptr();
    kp.is_key = true;
    ObjectRef key = c.convert(k, kp);
    Path vp;
    vp.parent = &root;
    vp.key = k.ptr();
    out.set(std::move(key), c.convert(v, vp));
  };
  if (py::isinstance<AnyMap>(items)) {
    for (const auto& e : items.cast<AnyMap>()->entries) out.set(e.key, e.value);
  } else if (!items.is_none()) {
    if (py::hasattr(items, "keys")) {  // a mapping, as dict() reads one
      for (py::handle k : items.attr("keys")()) {
        py::object v = items[k];
        add(k, v);
      }
    } else {
      py::object it = py::reinterpret_steal<py::object>(PyObject_GetIter(items.ptr()));
      if (!it) {
        PyErr_Clear();
        throw_type_error(
            "Map(items): expected a mapping or an iterable of (key, value) pairs, "
            "got '" +
            type_name(items) + "'");
      }
      Py_ssize_t i = 0;
      while (py::object pair = py::reinterpret_steal<py::object>(PyIter_Next(it.ptr()))) {
        if (PySequence_Check(pair.ptr()) == 0 || PySequence_Size(pair.ptr()) != 2) {
          PyErr_Clear();
          throw_type_error("Map(items): item " + std::to_string(i) +
                           " is not a (key, value) pair: " + repr_text(pair));
        }
        py::object k = py::reinterpret_steal<py::object>(PySequence_GetItem(pair.ptr(), 0));
        py::object v = py::reinterpret_steal<py::object>(PySequence_GetItem(pair.ptr(), 1));
        if (!k || !v) throw py::error_already_set();
        add(k, v);
        ++i;
      }
      if (PyErr_Occurred() != nullptr) throw py::error_already_set();
    }
  }
  for (auto item : kwargs) add(item.first, item.second);
  return out;
}

// Iterates an Array's items or a Map's keys, values or items. The container is immutable, so
// positions stay valid.
struct ItemIterator {
  enum Kind { kArrayItems, kMapKeys, kMapValues, kMapItems };
  ObjectRef container;
  Kind kind;
  size_t next = 0;

  size_t size() const {
    return kind == kArrayItems ? container.as<ArrayObj>()->data.size()
                               : container.as<MapObj>()->entries.size();
  }
  py::object at(size_t i) const {
    if (kind == kArrayItems) return wrap_object(container.as<ArrayObj>()->data[i]);
    const MapObj::Entry& e = container.as<MapObj>()->entries[i];
    if (kind == kMapKeys) return wrap_object(e.key);
    if (kind == kMapValues) return wrap_object(e.value);
    return py::make_tuple(wrap_object(e.key), wrap_object(e.value));
  }
};

// A Map's keys(), values() or items(): sized, iterable, and supporting `in`, over the map as it
// is (maps are immutable).
struct MapView {
  AnyMap map;
  ItemIterator::Kind kind;
};

std::optional<size_t> map_find(const AnyMap& m, py::handle key) {
  std::optional<ObjectRef> k = lookup_object(key);
  if (!k) return std::nullopt;
  const MapObj& node = *m.operator->();
  const size_t i = node.find(detail::object_hash(*k),
                             [&](const ObjectRef& e) { return detail::object_equal(e, *k); });
  if (i == MapObj::kNotFound) return std::nullopt;
  return i;
}

bool map_view_contains(const MapView& v, py::handle x) {
  const MapObj& node = *v.map.operator->();
  switch (v.kind) {
    case ItemIterator::kMapKeys:
      return map_find(v.map, x).has_value();
    case ItemIterator::kMapValues: {
      std::optional<ObjectRef> o = lookup_object(x);
      if (!o) return false;
      for (const auto& e : node.entries) {
        if (detail::object_equal(e.value, *o)) return true;
      }
      return false;
    }
    default: {
      if (PyTuple_Check(x.ptr()) == 0 || PyTuple_GET_SIZE(x.ptr()) != 2) return false;
      std::optional<size_t> i = map_find(v.map, PyTuple_GET_ITEM(x.ptr(), 0));
      if (!i) return false;
      std::optional<ObjectRef> o = lookup_object(PyTuple_GET_ITEM(x.ptr(), 1));
      return o && detail::object_equal(node.entries[*i].value, *o);
    }
  }
}

// ---- JSON ----------------------------------------------------------------------------------

[[noreturn]] void raise_json_error(const std::string& message) {
  PyErr_SetString(table().json_error.ptr(), message.c_str());
  throw py::error_already_set();
}

py::str object_to_json(py::handle obj) {
  const ObjectRef root = convert_root(obj, "to_json(obj)");
  std::string text;
  try {
    ReleaseGil nogil;
    text = to_json(root);
  } catch (const TypeError&) {
    throw;
  } catch (const Error& e) {
    const std::string message = e.what();
    // A type to_json cannot save is a type error (as json.dumps raises TypeError); a cycle or
    // text that is not UTF-8 is a bad value.
    if (message.find("has no reflection") != std::string::npos) throw TypeError(message);
    raise_json_error(message);
  }
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "strict"));
}

py::object object_from_json(py::handle text) {
  std::string s;
  if (PyUnicode_Check(text.ptr()) != 0) {
    std::optional<std::string> t = python_to_string(text.ptr());
    if (!t) raise_json_error("from_json(text): the str has a lone surrogate, which is not text");
    s = std::move(*t);
  } else if (PyBytes_Check(text.ptr()) != 0 || PyByteArray_Check(text.ptr()) != 0) {
    s = py::bytes(py::reinterpret_borrow<py::object>(text)).cast<std::string>();
  } else {
    throw_type_error("from_json(text): expected a str or bytes, got '" + type_name(text) + "'");
  }
  ObjectRef root;
  try {
    ReleaseGil nogil;
    root = from_json(s);
  } catch (const Error& e) {
    raise_json_error(e.what());
  }
  return wrap_object(std::move(root));
}

// ---- the testing constructors --------------------------------------------------------------

py::object testing_make_object(const std::string& key, const py::kwargs& fields) {
  std::optional<uint32_t> index = TypeRegistry::global().index_of(key);
  if (!index) throw py::value_error("_testing_make_object: no object type '" + key + "'");
  std::optional<ReflectionInfo> info = find_reflection(*index);
  if (!info) throw_type_error("_testing_make_object: type '" + key + "' is not reflected");
  ObjectRef obj = info->create();
  FieldWriter writer(key, py::dict(fields));
  info->visit_fields(const_cast<Object*>(obj.get()), writer);  // not yet shared
  writer.check_all_used();
  return wrap_object(std::move(obj));
}

// ---- classes -------------------------------------------------------------------------------

// Makes `field`'s read-only property.
py::object field_property(const std::string& field, const std::string& kind) {
  py::cpp_function getter(
      [field](const ObjectRef& self) -> py::object {
        auto values = read_fields(self, field);
        if (values.empty()) {
          raise_python(PyExc_AttributeError, "'" + std::string(self->type_key()) +
                                                 "' object has no field '" + field + "'");
        }
        return std::move(values.front().second);
      },
      py::name(field.c_str()));
  const std::string doc = "The reflected field '" + field + "' (" + kind + "), read-only.";
  return py::module_::import("builtins")
      .attr("property")(getter, py::none(), py::none(), py::str(doc));
}

// The fields of a reflected type (empty when it is not reflected).
std::vector<std::pair<std::string, std::string>> field_names(uint32_t index) {
  FieldNames names;
  if (auto info = find_reflection(index)) {
    ObjectRef sample = info->create();
    info->visit_fields(const_cast<Object*>(sample.get()), names);
  }
  return std::move(names.fields);
}

// Adds a property for each field whose name is not already an attribute of `cls` (or of a base).
// A field named like an existing attribute (a method of Object such as `fields`, a bound class's
// own property) leaves that attribute in place; its value is then read through fields().
void add_field_properties(py::handle cls, uint32_t index) {
  for (const auto& [name, kind] : field_names(index)) {
    if (py::hasattr(cls, name.c_str())) continue;
    py::setattr(cls, name.c_str(), field_property(name, kind));
  }
}

std::string class_doc(const TypeInfo& info) {
  std::string doc = "chanflow objects of type '" + info.key + "' (type index " +
                    std::to_string(info.index) + ").";
  auto fields = field_names(info.index);
  if (!fields.empty()) {
    doc += " Reflected fields (read-only):";
    for (size_t i = 0; i < fields.size(); ++i) {
      doc += (i == 0 ? " " : ", ") + fields[i].first + " (" + fields[i].second + ")";
    }
    doc += ".";
  }
  return doc;
}

py::object make_class(const TypeInfo& info, py::handle parent) {
  const size_t dot = info.key.rfind('.');
  const std::string name = dot == std::string::npos ? info.key : info.key.substr(dot + 1);
  py::dict ns;
  ns["__slots__"] = py::tuple();
  ns["__module__"] = "chanflow.types";
  ns["__qualname__"] = info.key;
  ns["__doc__"] = class_doc(info);
  py::handle meta = reinterpret_cast<PyObject*>(Py_TYPE(parent.ptr()));
  py::object cls = py::reinterpret_borrow<py::object>(meta)(name, py::make_tuple(parent), ns);
  add_field_properties(cls, info.index);
  return cls;
}

// Registers the library's object types that register on first use, so that they count as
// registered at import.
void register_library_types() {
  (void)StringObj::runtime_type_index();
  (void)ArrayObj::runtime_type_index();
  (void)MapObj::runtime_type_index();
  (void)IntObj::runtime_type_index();
  (void)FloatObj::runtime_type_index();
  (void)BoolObj::runtime_type_index();
  (void)ScopeObj::runtime_type_index();
  (void)ChannelObj::runtime_type_index();
  (void)TensorStorageObj::runtime_type_index();
  (void)TensorObj::runtime_type_index();
  (void)ProgramObj::runtime_type_index();
  (void)BlockObj::runtime_type_index();
  (void)OpDescObj::runtime_type_index();
  (void)VarDescObj::runtime_type_index();
  (void)AttrObj::runtime_type_index();
  register_reflection<TestingNodeObj>();
  register_reflection<TestingLeafObj>();
}

// Puts `cls` at the dotted path of `key` under the `types` module, making sub-namespaces
// (modules chanflow.types.<prefix>) as needed. A name already taken by something else keeps it.
void publish(const py::object& types, py::dict& sys_modules, const std::string& key,
             py::handle cls) {
  py::object ns = types;
  std::string module_name = "chanflow.types";
  size_t start = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
    const std::string part = key.substr(start, dot - start);
    module_name += "." + part;
    if (!py::hasattr(ns, part.c_str())) {
      py::object sub = py::module_::import("types").attr("ModuleType")(
          module_name,
          "chanflow object classes under the type key prefix '" + module_name.substr(15) + ".'");
      py::setattr(ns, part.c_str(), sub);
      sys_modules[py::str(module_name)] = sub;
    }
    ns = ns.attr(part.c_str());
    if (!py::isinstance<py::module_>(ns)) return;  // a class took the name
    start = dot + 1;
  }
  const std::string last = key.substr(start);
  if (!py::hasattr(ns, last.c_str())) py::setattr(ns, last.c_str(), cls);
}

}  // namespace

void register_wrapper(uint32_t type_index, Wrapper wrap, py::handle cls) {
  ClassTable& t = table();
  t.wrappers[type_index] = wrap;
  if (cls) t.bound[type_index] = py::reinterpret_borrow<py::object>(cls);
  t.resolved.clear();
}

py::object wrap_object(ObjectRef ref) {
  if (!ref.defined()) return py::none();
  switch (ref->type_index()) {
    case TypeIndex::kInt:
      return py::int_(static_cast<const IntObj*>(ref.get())->value);
    case TypeIndex::kFloat:
      return py::float_(static_cast<const FloatObj*>(ref.get())->value);
    case TypeIndex::kBool:
      return py::bool_(static_cast<const BoolObj*>(ref.get())->value);
    case TypeIndex::kString:
      return string_to_python(static_cast<const StringObj*>(ref.get())->data);
    default:
      break;
  }
  // A copy: wrapping may run Python code (a finalizer) that resolves and rehashes the cache.
  const Resolved r = resolve(ref->type_index());
  ClassTable& t = table();
  if (r.wrap != nullptr) {
    const uint32_t index = r.wrap_index;
    py::object o = r.wrap(std::move(ref));
    if (t.bound.count(index) == 0) {
      t.bound[index] =
          py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(Py_TYPE(o.ptr())));
    }
    return o;
  }
  if (r.cls == nullptr) return py::cast(std::move(ref));
  // A seed per call: allocating the instance may run a finalizer that wraps another object.
  py::object seed = py::cast(ObjectSeed{std::move(ref)});
  return py::reinterpret_borrow<py::object>(r.cls)(seed);
}

ObjectRef to_object(py::handle value, const std::string& what) { return convert_root(value, what); }

void bind_objects(py::module_& m) {
  ClassTable& t = table();
  py::module_ np = py::module_::import("numpy");
  numpy_types().bool_type = np.attr("bool_");
  numpy_types().integer_type = np.attr("integer");
  numpy_types().floating_type = np.attr("floating");

  py::class_<ObjectSeed>(m, "_ObjectSeed",
                         "A reference handed to a generated class's constructor (internal).");

  py::class_<ObjectRef> object(
      m, "Object",
      "The base of every chanflow object: ref-counted, with a type index and a type key from the "
      "one type registry. Each type surfaces as its own subclass (chanflow.types, object_class); "
      "== and hash are by identity, as chanflow's Map compares keys.");
  t.object_class = object;
  object
      .def(py::init([](ObjectSeed& seed) {
             if (!seed.ref.defined()) throw_type_error("Object(): objects are made by chanflow");
             return std::move(seed.ref);
           }),
           py::arg("seed"))
      .def_property_readonly(
          "type_key", [](const ObjectRef& r) { return std::string(r->type_key()); },
          "The key of this object's type in the type registry, e.g. 'ir.OpDesc'.")
      .def_property_readonly(
          "type_index", [](const ObjectRef& r) { return r->type_index(); },
          "The index of this object's type in the type registry.")
      .def(
          "same_as",
          [](const ObjectRef& self, py::handle other) {
            return py::isinstance<ObjectRef>(other) && self.same_as(other.cast<ObjectRef>());
          },
          py::arg("other"), "Whether `other` is a handle to this very object.")
      .def(
          "__eq__",
          [](const ObjectRef& self, py::handle other) -> py::object {
            if (!py::isinstance<ObjectRef>(other))
              return py::reinterpret_borrow<py::object>(Py_NotImplemented);
            return py::bool_(detail::object_equal(self, other.cast<ObjectRef>()));
          },
          py::arg("other"))
      .def("__hash__",
           [](const ObjectRef& self) { return static_cast<Py_ssize_t>(detail::object_hash(self)); })
      .def("__repr__", &object_repr)
      .def(
          "fields",
          [](const ObjectRef& self) {
            py::dict out;
            for (auto& [name, value] : read_fields(self)) out[py::str(name)] = value;
            return out;
          },
          "The reflected fields of this object's own type, as a dict in declaration order (empty "
          "for types without reflection).")
      .def(
          "__getattr__",
          [](const ObjectRef& self, const std::string& name) -> py::object {
            // Reached only when normal lookup fails: a field of a type that surfaces as an
            // ancestor's class (registered after import).
            auto values = read_fields(self, name);
            if (values.empty()) {
              raise_python(PyExc_AttributeError, "'" + std::string(self->type_key()) +
                                                     "' object has no attribute '" + name + "'");
            }
            return std::move(values.front().second);
          },
          py::arg("name"))
      .def("__dir__",
           [](py::object self) {
             py::list names = py::module_::import("builtins").attr("object").attr("__dir__")(self);
             for (auto& [name, value] : read_fields(self.cast<ObjectRef>())) {
               if (!names.contains(py::str(name))) names.append(py::str(name));
             }
             return names;
           })
      .def("__reduce__", [](py::object self) {
        // Pickles through JSON: containers and reflected types pickle; others raise TypeError.
        py::str text;
        try {
          text = object_to_json(self);
        } catch (const TypeError& e) {
          throw TypeError(std::string("cannot pickle a chanflow '") +
                          std::string(self.cast<ObjectRef>()->type_key()) +
                          "' object (objects pickle through to_json): " + e.what());
        }
        return py::make_tuple(py::module_::import("chanflow._native").attr("_unpickle"),
                              py::make_tuple(text));
      });

  register_wrapper(
      TensorObj::runtime_type_index(),
      [](ObjectRef r) { return wrap_tensor(downcast<Tensor>(std::move(r))); }, py::handle());

  // ---- Array ----
  py::class_<AnyArray, ObjectRef> array(
      m, "Array",
      "chanflow's Array: an immutable sequence of objects (copy-on-write in C++). Array(items) "
      "converts each item as to_object does. Behaves as a collections.abc.Sequence; == and "
      "hash are by identity (as chanflow's Map compares keys); same_elements compares items.");
  array
      .def(py::init([](py::handle items) { return array_from_iterable(items); }),
           py::arg("items") = py::tuple())
      .def("__len__", [](const AnyArray& a) { return a.size(); })
      .def("__getitem__", &array_getitem, py::arg("index"))
      .def("__iter__",
           [](const AnyArray& a) {
             return ItemIterator{a, ItemIterator::kArrayItems};
           })
      .def(
          "__contains__",
          [](const AnyArray& a, py::handle v) {
            return array_find(a, v, 0, static_cast<Py_ssize_t>(a.size())) >= 0;
          },
          py::arg("value"))
      .def(
          "index",
          [](const AnyArray& a, py::handle v, Py_ssize_t start, py::handle stop) {
            Py_ssize_t end = static_cast<Py_ssize_t>(a.size());
            if (!stop.is_none()) {
              if (PyIndex_Check(stop.ptr()) == 0) {
                throw_type_error("Array.index: stop must be an int, got '" + type_name(stop) + "'");
              }
              end = PyNumber_AsSsize_t(stop.ptr(), nullptr);  // clamped, as list.index does
            }
            const Py_ssize_t i = array_find(a, v, start, end);
            if (i < 0) raise_python(PyExc_ValueError, repr_text(v) + " is not in the Array");
            return i;
          },
          py::arg("value"), py::arg("start") = 0, py::arg("stop") = py::none(),
          "The position of the first item equal to `value` (chanflow's equality); ValueError when "
          "none.")
      .def(
          "count",
          [](const AnyArray& a, py::handle v) {
            std::optional<ObjectRef> o = lookup_object(v);
            size_t n = 0;
            if (o) {
              for (const ObjectRef& e : a->data) n += detail::object_equal(e, *o) ? 1 : 0;
            }
            return n;
          },
          py::arg("value"), "How many items equal `value` (chanflow's equality).")
      .def(
          "same_elements", [](const AnyArray& a, const AnyArray& b) { return a.same_elements(b); },
          py::arg("other"),
          "Whether both arrays hold the same objects in the same order (C++ same_elements).")
      .def("__repr__", &array_repr);
  register_wrapper(
      ArrayObj::runtime_type_index(),
      [](ObjectRef r) { return py::cast(downcast<AnyArray>(std::move(r))); }, array);

  // ---- Map ----
  py::class_<AnyMap, ObjectRef> map(
      m, "Map",
      "chanflow's Map: an immutable mapping of objects to objects, in insertion order. Keys "
      "compare as in C++: strings and boxed scalars by value and type (1, 1.0 and True are three "
      "keys), other objects by identity. Map(items) takes a mapping or (key, value) pairs and "
      "keyword arguments, converting each as to_object does. Behaves as a "
      "collections.abc.Mapping; == and hash are by identity.");
  map.def(py::init([](py::handle items, const py::kwargs& kwargs) {
            return map_from_python(items, kwargs);
          }),
          py::arg("items") = py::none())
      .def("__len__", [](const AnyMap& a) { return a.size(); })
      .def(
          "__getitem__",
          [](const AnyMap& a, py::handle key) {
            std::optional<size_t> i = map_find(a, key);
            if (!i) {
              PyErr_SetObject(PyExc_KeyError, key.ptr());
              throw py::error_already_set();
            }
            return wrap_object(a->entries[*i].value);
          },
          py::arg("key"))
      .def(
          "get",
          [](const AnyMap& a, py::handle key, py::object dflt) {
            std::optional<size_t> i = map_find(a, key);
            return i ? wrap_object(a->entries[*i].value) : dflt;
          },
          py::arg("key"), py::arg("default") = py::none(),
          "The value of `key`, or `default` when the map has no such key.")
      .def(
          "__contains__",
          [](const AnyMap& a, py::handle key) { return map_find(a, key).has_value(); },
          py::arg("key"))
      .def("__iter__",
           [](const AnyMap& a) {
             return ItemIterator{a, ItemIterator::kMapKeys};
           })
      .def(
          "keys",
          [](const AnyMap& a) {
            return MapView{a, ItemIterator::kMapKeys};
          },
          "The keys, in insertion order (a view: len, iteration, in).")
      .def(
          "values",
          [](const AnyMap& a) {
            return MapView{a, ItemIterator::kMapValues};
          },
          "The values, in insertion order (a view: len, iteration, in).")
      .def(
          "items",
          [](const AnyMap& a) {
            return MapView{a, ItemIterator::kMapItems};
          },
          "The (key, value) pairs, in insertion order (a view: len, iteration, in).")
      .def("__repr__", &map_repr);
  register_wrapper(
      MapObj::runtime_type_index(),
      [](ObjectRef r) { return py::cast(downcast<AnyMap>(std::move(r))); }, map);

  py::class_<ItemIterator>(m, "_ItemIterator", "An iterator over an Array or a Map (internal).")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](ItemIterator& it) -> py::object {
        if (it.next >= it.size()) throw py::stop_iteration();
        return it.at(it.next++);
      });
  py::class_<MapView>(m, "_MapView", "A Map's keys(), values() or items() (internal).")
      .def("__len__", [](const MapView& v) { return v.map.size(); })
      .def("__iter__",
           [](const MapView& v) {
             return ItemIterator{v.map, v.kind};
           })
      .def("__contains__", &map_view_contains, py::arg("value"))
      .def("__repr__", [](const MapView& v) {
        const char* name = v.kind == ItemIterator::kMapKeys     ? "keys"
                           : v.kind == ItemIterator::kMapValues ? "values"
                                                                : "items";
        py::list items;
        ItemIterator it{v.map, v.kind};
        for (size_t i = 0; i < it.size(); ++i) items.append(it.at(i));
        return std::string("Map.") + name + "(" + repr_text(items) + ")";
      });

  py::module_ abc = py::module_::import("collections.abc");
  abc.attr("Sequence").attr("register")(array);
  abc.attr("Mapping").attr("register")(map);

  // ---- JSON ----
  PyObject* json_error = PyErr_NewExceptionWithDoc(
      "chanflow.JSONError",
      "to_json could not save an object graph (a cycle, text that is not UTF-8) or from_json "
      "could not load the text (malformed JSON, unknown types, ill-typed fields, forward "
      "references). Also a ValueError.",
      py::make_tuple(m.attr("Error"), py::handle(PyExc_ValueError)).ptr(), nullptr);
  if (json_error == nullptr) throw py::error_already_set();
  t.json_error = py::reinterpret_steal<py::object>(json_error);
  m.add_object("JSONError", t.json_error);
  m.def("to_json", &object_to_json, py::arg("obj"),
        "Saves the object graph reachable from `obj` (converted as to_object does) as chanflow's "
        "JSON format; shared objects stay shared. Raises chanflow.TypeError for an object whose "
        "type has no reflection and JSONError for a cycle. Releases the GIL while it runs.");
  m.def("from_json", &object_from_json, py::arg("text"),
        "Rebuilds an object graph saved by to_json (str or bytes). Raises JSONError naming the "
        "node and the problem for malformed or ill-typed input. Releases the GIL while it runs.");

  // What pickles reduce to: a Python function (pickle saves it by name; a pybind11 function
  // cannot be saved).
  py::dict scope;
  scope["__name__"] = "chanflow._native";
  scope["_from_json"] = m.attr("from_json");
  py::exec("def _unpickle(text):\n    return _from_json(text)\n", scope);
  m.add_object("_unpickle", scope["_unpickle"]);

  m.def(
      "to_object",
      [](py::handle value) { return wrap_object(to_object(value, "to_object(value)")); },
      py::arg("value"),
      "`value` as a chanflow object, shown as Python shows objects: None, bool, int, float and str "
      "stay themselves (boxed in C++); list and tuple become Array, dict becomes Map "
      "(recursively); "
      "NumPy scalars become bool/int/float and arrays Tensor. Raises chanflow.TypeError naming the "
      "place of a value that has no conversion, ValueError for a container that contains itself.");
  m.def(
      "object_class",
      [](py::handle key) -> py::object {
        std::optional<uint32_t> index;
        if (PyUnicode_Check(key.ptr()) != 0) {
          index = TypeRegistry::global().index_of(key.cast<std::string>());
        } else if (PyIndex_Check(key.ptr()) != 0) {
          const int64_t i = key.cast<int64_t>();
          if (i >= 0 && i < TypeRegistry::kMaxTypeIndex &&
              TypeRegistry::global().find(static_cast<uint32_t>(i)) != nullptr) {
            index = static_cast<uint32_t>(i);
          }
        } else {
          throw_type_error("object_class(key): expected a type key (str) or index (int), got '" +
                           type_name(key) + "'");
        }
        if (!index) throw py::value_error("object_class: no object type " + repr_text(key));
        return class_of(*index);
      },
      py::arg("key"),
      "The Python class objects of a type (by key or index) surface as: its own class, or for a "
      "type registered after import its nearest ancestor's; int/float/bool/str for the boxed "
      "scalars and String. ValueError for an unknown type.");

  m.def(
      "_registered_types",
      [] {
        py::list out;
        const TypeRegistry& registry = TypeRegistry::global();
        for (uint32_t i = 0; i < TypeRegistry::kMaxTypeIndex; ++i) {
          if (const TypeInfo* info = registry.find(i)) {
            out.append(py::make_tuple(info->index, info->key, info->parent_index));
          }
        }
        return out;
      },
      "Internal: (index, key, parent index) of every registered type, by index.");

  // ---- testing ----
  m.def(
      "_testing_register_late_types",
      [] {
        register_reflection<TestingLateLeafObj>();
        (void)TestingLateRootObj::runtime_type_index();
      },
      "Testing only: registers the types testing.LateLeaf (a child of testing.Leaf) and "
      "testing.LateRoot (of Object), after import.");
  m.def("_testing_make_object", &testing_make_object, py::arg("key"),
        "Testing only: a new object of a reflected type, its fields set from keyword arguments "
        "(checked as from_json checks them).");
  m.def(
      "_testing_make_late_root",
      [] { return wrap_object(ObjectRef(make_object<TestingLateRootObj>())); },
      "Testing only: an object of testing.LateRoot (registering it if needed).");
}

void bind_object_classes(py::module_& m) {
  ClassTable& t = table();
  register_library_types();
  py::object types = py::module_::import("types").attr("ModuleType")(
      "chanflow.types",
      "One Python class per chanflow object type registered when chanflow was imported, at the "
      "dotted path of its type key (chanflow.types.ir.OpDesc). Int, Float, Bool and String are "
      "Python's int, float, bool and str.");
  py::dict sys_modules = py::module_::import("sys").attr("modules");
  sys_modules["chanflow.types"] = types;
  // The bound classes made after bind_objects registered their wrappers.
  if (t.bound.count(TypeIndex::kTensor) == 0) t.bound[TypeIndex::kTensor] = m.attr("Tensor");
  const TypeRegistry& registry = TypeRegistry::global();
  // A child's index is larger than its parent's, so parents get their classes first.
  for (uint32_t i = 0; i < TypeRegistry::kMaxTypeIndex; ++i) {
    const TypeInfo* info = registry.find(i);
    if (info == nullptr) continue;
    py::object cls;
    if (i == TypeIndex::kObject || i == TypeIndex::kString || i == TypeIndex::kInt ||
        i == TypeIndex::kFloat || i == TypeIndex::kBool) {
      cls = class_of(i);
    } else if (t.wrappers.count(i) != 0) {
      cls = class_of(i);
      if (!cls.is_none()) add_field_properties(cls, i);
    } else {
      py::object parent = class_of(info->parent_index);
      if (parent.is_none() ||
          !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(parent.ptr()),
                            reinterpret_cast<PyTypeObject*>(t.object_class.ptr()))) {
        parent = t.object_class;
      }
      cls = make_class(*info, parent);
      t.generated[i] = cls;
      t.resolved.clear();
    }
    if (!cls.is_none()) publish(types, sys_modules, info->key, cls);
  }
  t.classes_built = true;
  m.add_object("types", types);
}

}  // namespace chanflow::python
