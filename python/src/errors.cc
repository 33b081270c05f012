// errors.cc — chanflow's error hierarchy as Python exceptions.
//
// Every class derives from chanflow.Error; those with a Python twin derive from it too, so
// generic handlers work: ShapeError is a ValueError, TypeError a builtins.TypeError,
// DeadlineExceededError a TimeoutError, NotFoundError a KeyError. ProgramError carries `block`,
// `op`, `op_type` (-1, -1, "" when unknown) and LimitError `limit`, as class attributes (the
// defaults) overridden per raise.
//
// An op that failed with one of the kinds raises a class derived from both ProgramError and that
// kind, so `except` clauses for either work. It is named as the kind (chanflow.ShapeError in a
// traceback, as docs/python.md's table names it) but is not the module's ShapeError: it is reached
// as chanflow.ProgramError's subclass, and pickles through chanflow._program_error.
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "chanflow/core/error.h"
#include "native.h"

namespace chanflow::python {
namespace {

// The classes, created once at import; the module holds the references for the process's life.
struct ErrorClasses {
  PyObject* error = nullptr;
  PyObject* shape = nullptr;
  PyObject* type = nullptr;
  PyObject* channel_closed = nullptr;
  PyObject* deadlock = nullptr;
  PyObject* canceled = nullptr;
  PyObject* deadline = nullptr;
  PyObject* program = nullptr;
  PyObject* limit = nullptr;
  PyObject* machine = nullptr;
  PyObject* not_found = nullptr;
  // A ProgramError whose op failed with one of these kinds (the C++ error nested in it): both.
  PyObject* program_shape = nullptr;
  PyObject* program_type = nullptr;
  PyObject* program_channel_closed = nullptr;
  PyObject* program_canceled = nullptr;
};
ErrorClasses g_classes;

// A class named chanflow.<name>, published as the module's attribute `attr` (none when empty).
PyObject* make_class(py::module_& m, const char* name, std::initializer_list<PyObject*> bases,
                     const char* doc, py::dict attrs = py::dict(), const char* attr = nullptr) {
  py::tuple base_tuple(bases.size());
  size_t i = 0;
  for (PyObject* b : bases) base_tuple[i++] = py::reinterpret_borrow<py::object>(b);
  attrs["__doc__"] = py::str(doc);
  const std::string qualified = std::string("chanflow.") + name;
  PyObject* cls = PyErr_NewException(qualified.c_str(), base_tuple.ptr(), attrs.ptr());
  if (cls == nullptr) throw py::error_already_set();
  if (attr == nullptr) attr = name;
  if (*attr != '\0') m.add_object(attr, py::reinterpret_borrow<py::object>(cls));
  return cls;  // the new reference is kept for the process's life (g_classes)
}

// The ProgramError class of an op that failed with `kind` ("ShapeError" ...), as
// program_error_class chooses it; ProgramError itself for any other name.
PyObject* program_class_of_kind(const std::string& kind) {
  const ErrorClasses& c = g_classes;
  if (kind == "ShapeError") return c.program_shape;
  if (kind == "TypeError") return c.program_type;
  if (kind == "ChannelClosedError") return c.program_channel_closed;
  if (kind == "CanceledError") return c.program_canceled;
  return c.program;
}

// Gives a ProgramError class named as its kind a __reduce__ that pickles it by that kind (the
// class itself cannot be found by its name, which is the kind's): chanflow._program_error(kind,
// args) rebuilds it (a Python function: pickle stores it by name, which it cannot do for a native
// one), and the instance's attributes (block, op, op_type ...) follow as its state.
void make_picklable(PyObject* cls, const char* kind) {
  const std::string k = kind;
  py::handle type(cls);
  type.attr("__reduce__") = py::cpp_function(
      [k](py::handle self) {
        py::object rebuild = py::module_::import("chanflow").attr("_program_error");
        py::object state = py::getattr(self, "__dict__", py::none());
        return py::make_tuple(rebuild, py::make_tuple(k, self.attr("args")), state);
      },
      py::is_method(type));
}

// Raises `cls(message)` after setting `attrs` on the instance, and `cause` as its __cause__ (as
// `raise ... from cause` does) unless it is empty.
void raise_with(PyObject* cls, const char* message, const py::dict& attrs = py::dict(),
                py::handle cause = py::handle()) {
  try {
    py::object exc = py::reinterpret_borrow<py::object>(cls)(py::str(message));
    for (auto item : attrs) py::setattr(exc, item.first, item.second);
    if (cause)
      PyException_SetCause(exc.ptr(), py::reinterpret_borrow<py::object>(cause).release().ptr());
    PyErr_SetObject(cls, exc.ptr());
  } catch (py::error_already_set& e) {
    e.restore();  // building the exception failed (MemoryError ...): raise that instead
  }
}

// The class of a ProgramError: the combined class of its nested cause's kind, if it has one.
PyObject* program_error_class(const ProgramError& e) {
  const auto* nested = dynamic_cast<const std::nested_exception*>(&e);
  if (nested == nullptr || nested->nested_ptr() == nullptr) return g_classes.program;
  try {
    std::rethrow_exception(nested->nested_ptr());
  } catch (const ProgramError&) {
    return g_classes.program;
  } catch (const ShapeError&) {
    return g_classes.program_shape;
  } catch (const TypeError&) {
    return g_classes.program_type;
  } catch (const ChannelClosedError&) {
    return g_classes.program_channel_closed;
  } catch (const CanceledError&) {
    return g_classes.program_canceled;
  } catch (...) {
    return g_classes.program;
  }
}

// The channel a ProgramError's nested ChannelClosedError names (its program variable), if the
// error has such a cause.
std::optional<std::string> nested_channel_closed(const ProgramError& e) {
  const auto* nested = dynamic_cast<const std::nested_exception*>(&e);
  if (nested == nullptr || nested->nested_ptr() == nullptr) return std::nullopt;
  try {
    std::rethrow_exception(nested->nested_ptr());
  } catch (const ChannelClosedError& c) {
    return c.channel();
  } catch (...) {
    return std::nullopt;
  }
}

void translate(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const ProgramError& e) {
    py::dict a;
    a["block"] = e.block_index();
    a["op"] = e.op_index();
    a["op_type"] = e.op_type();
    if (std::optional<std::string> channel = nested_channel_closed(e)) a["channel"] = *channel;
    raise_with(program_error_class(e), e.what(), a);
  } catch (const LimitError& e) {
    py::dict a;
    a["limit"] = e.limit();
    raise_with(g_classes.limit, e.what(), a);
  } catch (const PythonError& e) {
    // A Python callable's own exception, back in Python: raise that very object.
    py::handle exc = e.exception().get();
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (const MachineError& e) {
    py::dict a;
    a["machine"] = e.machine();
    // `failures`: (node id, node name, message) per failed node; the first Python exception
    // among them becomes the __cause__, so its traceback is shown with the MachineError.
    py::list failures;
    py::handle cause;
    for (const MachineError::Failure& f : e.failures()) {
      failures.append(py::make_tuple(f.node_id, f.node_name, f.message));
      if (!cause && f.error) {
        try {
          std::rethrow_exception(f.error);
        } catch (const PythonError& pe) {
          cause = pe.exception().get();
        } catch (...) {
        }
      }
    }
    a["failures"] = failures;
    raise_with(g_classes.machine, e.what(), a, cause);
  } catch (const ShapeError& e) {
    raise_with(g_classes.shape, e.what());
  } catch (const TypeError& e) {
    raise_with(g_classes.type, e.what());
  } catch (const ChannelClosedError& e) {
    py::dict a;
    a["channel"] = e.channel();
    raise_with(g_classes.channel_closed, e.what(), a);
  } catch (const DeadlockError& e) {
    raise_with(g_classes.deadlock, e.what());
  } catch (const CanceledError& e) {
    raise_with(g_classes.canceled, e.what());
  } catch (const DeadlineExceededError& e) {
    raise_with(g_classes.deadline, e.what());
  } catch (const NotFoundError& e) {
    raise_with(g_classes.not_found, e.what());
  } catch (const Error& e) {
    raise_with(g_classes.error, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "chanflow: out of memory");
  }
  // Anything else falls through to pybind11's own translators (std::exception -> RuntimeError).
}

}  // namespace

[[noreturn]] void throw_type_error(const std::string& message) { throw TypeError(message); }

void bind_errors(py::module_& m) {
  ErrorClasses& c = g_classes;
  c.error = make_class(m, "Error", {PyExc_Exception},
                       "The base of every error chanflow raises; str() is the full message.");
  c.shape = make_class(m, "ShapeError", {c.error, PyExc_ValueError},
                       "Shapes do not agree; the message names both shapes and the op.");
  c.type = make_class(m, "TypeError", {c.error, PyExc_TypeError},
                      "A value has the wrong type or dtype for the operation.");
  py::dict channel_closed_attrs;
  channel_closed_attrs["channel"] = "";
  c.channel_closed = make_class(m, "ChannelClosedError", {c.error},
                                "A send on, or close of, a closed channel. `channel` is the "
                                "program variable that held the channel when an op of a program "
                                "(channel_send, channel_close, a select's send case) raised it, "
                                "else ''.",
                                channel_closed_attrs);
  c.deadlock = make_class(m, "DeadlockError", {c.error},
                          "Every green thread is parked and nothing can wake the caller; the "
                          "message lists each parked green thread and what it waits on.");
  c.canceled = make_class(m, "CanceledError", {c.error}, "The run's context was canceled.");
  c.deadline = make_class(m, "DeadlineExceededError", {c.error, PyExc_TimeoutError},
                          "The run's deadline (timeout) passed; the message names what was "
                          "still running.");
  py::dict program_attrs;
  program_attrs["block"] = -1;
  program_attrs["op"] = -1;
  program_attrs["op_type"] = "";
  c.program = make_class(m, "ProgramError", {c.error},
                         "A program failed to load, verify or run. `block` and `op` are the "
                         "position of the offending op (-1 when unknown), `op_type` its type "
                         "('' when unknown).",
                         program_attrs);
  py::dict limit_attrs;
  limit_attrs["limit"] = "";
  c.limit = make_class(m, "LimitError", {c.error},
                       "A resource limit was reached; `limit` names it as its user sets it "
                       "('max_threads', 'max_bytes' ...).",
                       limit_attrs);
  py::dict machine_attrs;
  machine_attrs["machine"] = "";
  machine_attrs["failures"] = py::tuple();
  c.machine = make_class(m, "MachineError", {c.error},
                         "A graph machine's run failed; one line per failed node. `machine` is "
                         "'GoMachine' or 'TapeMachine'; `failures` lists (node id, node name, "
                         "message) per node that failed on its own; a Python op's exception is "
                         "the __cause__.",
                         machine_attrs);
  py::dict not_found_attrs;
  // KeyError's str() is the repr of its key; this one's is its message, as every chanflow error's.
  not_found_attrs["__str__"] = py::module_::import("builtins").attr("Exception").attr("__str__");
  c.not_found = make_class(m, "NotFoundError", {c.error, PyExc_KeyError},
                           "A name that names nothing: a fetch of a variable block 0 does not "
                           "declare. Also a KeyError.",
                           not_found_attrs);
  // Catch ProgramError or the kind; these exist so both work. Each is named as its kind (what a
  // traceback shows) and published under a private name of chanflow._native only.
  c.program_shape = make_class(m, "ShapeError", {c.program, c.shape},
                               "A ProgramError whose op failed with a ShapeError.", py::dict(),
                               "_ProgramShapeError");
  c.program_type = make_class(m, "TypeError", {c.program, c.type},
                              "A ProgramError whose op failed with a TypeError.", py::dict(),
                              "_ProgramTypeError");
  c.program_channel_closed = make_class(m, "ChannelClosedError", {c.program, c.channel_closed},
                                        "A ProgramError whose op failed with a ChannelClosedError.",
                                        py::dict(), "_ProgramChannelClosedError");
  c.program_canceled = make_class(m, "CanceledError", {c.program, c.canceled},
                                  "A ProgramError whose op failed with a CanceledError.",
                                  py::dict(), "_ProgramCanceledError");
  m.def(
      "_program_error",
      [](const std::string& kind, py::tuple args) {
        return py::reinterpret_borrow<py::object>(program_class_of_kind(kind))(*args);
      },
      "Rebuilds a ProgramError of an op that failed with `kind` (what its pickle holds).");
  make_picklable(c.program_shape, "ShapeError");
  make_picklable(c.program_type, "TypeError");
  make_picklable(c.program_channel_closed, "ChannelClosedError");
  make_picklable(c.program_canceled, "CanceledError");
  py::register_exception_translator(&translate);
}

}  // namespace chanflow::python
