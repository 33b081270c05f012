// objects.cc — chanflow objects as Python values.
//
// chanflow.Object wraps any ObjectRef; the classes of the bound handle types (Tensor ...) derive
// from it. The boxed scalars and String surface as Python's own bool, int, float and str (as
// tvm-ffi does): they are immutable values, and Python code compares and hashes them as such.
#include <string>
#include <unordered_map>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/map.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"
#include "chanflow/tensor/tensor.h"
#include "native.h"

namespace chanflow::python {

namespace {

// type index -> wrapper. Written at import (GIL held), read with the GIL held.
std::unordered_map<uint32_t, Wrapper>& wrappers() {
  static auto* w = new std::unordered_map<uint32_t, Wrapper>();
  return *w;
}

}  // namespace

void register_wrapper(uint32_t type_index, Wrapper wrap) { wrappers()[type_index] = wrap; }

py::object wrap_object(ObjectRef ref) {
  if (!ref.defined()) return py::none();
  if (const auto* i = ref.as<IntObj>()) return py::int_(i->value);
  if (const auto* f = ref.as<FloatObj>()) return py::float_(f->value);
  if (const auto* b = ref.as<BoolObj>()) return py::bool_(b->value);
  if (const auto* s = ref.as<StringObj>()) return py::str(s->data);
  // The nearest type up the ancestry with a wrapper; Object's own class otherwise.
  const TypeRegistry& registry = TypeRegistry::global();
  for (const TypeInfo* t = registry.find(ref->type_index()); t != nullptr;) {
    auto it = wrappers().find(t->index);
    if (it != wrappers().end()) return it->second(std::move(ref));
    if (t->parent_index == t->index) break;
    t = registry.find(t->parent_index);
  }
  return py::cast(std::move(ref));
}

ObjectRef to_object(py::handle value, const std::string& what) {
  if (value.is_none()) return ObjectRef();
  if (py::isinstance<ObjectRef>(value)) return value.cast<ObjectRef>();
  if (PyBool_Check(value.ptr())) return Bool(value.cast<bool>());
  if (PyLong_Check(value.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow != 0) {
      throw_type_error(what + ": the int " + py::repr(value).cast<std::string>() +
                       " does not fit in int64");
    }
    return Int(v);
  }
  if (PyFloat_Check(value.ptr())) return Float(value.cast<double>());
  if (PyUnicode_Check(value.ptr())) return String(value.cast<std::string>());
  if (PyList_Check(value.ptr()) != 0 || PyTuple_Check(value.ptr()) != 0) {
    Array<ObjectRef> items;
    py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
    for (size_t i = 0; i < seq.size(); ++i) {
      items.push_back(to_object(seq[i], what + "[" + std::to_string(i) + "]"));
    }
    return items;
  }
  if (PyDict_Check(value.ptr()) != 0) {
    Map<ObjectRef, ObjectRef> map;
    for (auto item : py::reinterpret_borrow<py::dict>(value)) {
      const std::string key_repr = py::repr(item.first).cast<std::string>();
      map.set(to_object(item.first, what + " key " + key_repr),
              to_object(item.second, what + "[" + key_repr + "]"));
    }
    return map;
  }
  if (py::hasattr(value, "__dlpack__") || py::hasattr(value, "__array_interface__")) {
    return to_tensor(value, py::none());
  }
  throw_type_error(what + ": cannot convert a Python '" +
                   std::string(Py_TYPE(value.ptr())->tp_name) +
                   "' to a chanflow object (expected None, bool, int, float, str, list, tuple, "
                   "dict, an array or a chanflow object)");
}

void bind_objects(py::module_& m) {
  register_wrapper(TensorObj::runtime_type_index(),
                   [](ObjectRef r) { return wrap_tensor(downcast<Tensor>(std::move(r))); });
  py::class_<ObjectRef>(m, "Object",
                        "The base of every chanflow object: ref-counted, with a type index and a "
                        "type key from the one type registry.")
      .def_property_readonly(
          "type_key",
          [](const ObjectRef& r) { return r.defined() ? std::string(r->type_key()) : "None"; })
      .def_property_readonly("type_index",
                             [](const ObjectRef& r) { return r.defined() ? r->type_index() : 0u; })
      .def("same_as", &ObjectRef::same_as, py::arg("other"),
           "Whether both handles refer to the same object.");
}

}  // namespace chanflow::python
