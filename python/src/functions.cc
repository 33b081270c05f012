// functions.cc — the global function registry from Python (chanflow/core/function.h):
// chanflow.Function, get_global_func, register_func, list_global_funcs, remove_global_func.
//
// One registry serves C++, C and Python. A Python callable registered (or passed where a
// function is expected) becomes a FunctionObj whose body converts its arguments with wrap_object,
// calls the callable through call_with_gil — inline on an OS thread, on the Python-callback
// thread when the caller is a green thread, never on a green thread itself — and converts the
// result with to_object. The callable is held in a SharedPyObject, since the function object may
// be dropped on any thread. Calling a Function from Python releases the GIL for the call, so C++
// functions (and the green threads they start) run while other Python threads do.
#include <span>
#include <string>
#include <vector>

#include "chanflow/core/function.h"
#include "chanflow/runtime/functions.h"
#include "chanflow/runtime/trace.h"
#include "native.h"

namespace chanflow::python {
namespace {

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

// A readable name of a Python callable for error messages: its __qualname__ (or its type's).
std::string callable_name(py::handle fn) {
  py::object q = py::getattr(fn, "__qualname__", py::none());
  if (py::isinstance<py::str>(q)) return "Python function '" + q.cast<std::string>() + "'";
  return "Python callable of type '" + type_name(fn) + "'";
}

// `fn` (a Python callable) as a Function.
Function function_from_python(py::object fn) {
  const std::string result_what = "the result of " + callable_name(fn);
  SharedPyObject held(std::move(fn));
  return Function([held, result_what](std::span<const ObjectRef> args) -> ObjectRef {
    ObjectRef result;
    call_with_gil([&] {
      py::tuple py_args(args.size());
      for (size_t i = 0; i < args.size(); ++i) py_args[i] = wrap_object(args[i]);
      py::object r = held.get()(*py_args);
      try {
        result = to_object(r, result_what);
      } catch (py::error_already_set& e) {
        // A result that cannot be converted is the function's fault, reported as such (docs:
        // chanflow.TypeError naming the function), not as an exception of the callable: a
        // container that contains itself (ValueError) or is nested too deep (RecursionError).
        if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_RecursionError)) throw;
        throw TypeError(py::str(e.value()).cast<std::string>());
      }
    });
    return result;
  });
}

// A str argument as a std::string; chanflow.TypeError naming the argument otherwise.
std::string str_arg(py::handle v, const char* function, const char* name) {
  if (!py::isinstance<py::str>(v)) {
    throw_type_error(std::string(function) + ": " + name + " must be a str, got '" + type_name(v) +
                     "'");
  }
  return v.cast<std::string>();
}

// A Function from a cf.Function or a Python callable; chanflow.TypeError otherwise.
Function function_arg(py::handle f, const std::string& what) {
  if (py::isinstance<Function>(f)) return f.cast<Function>();
  if (!py::isinstance<ObjectRef>(f) && PyCallable_Check(f.ptr()) != 0) {
    return function_from_python(py::reinterpret_borrow<py::object>(f));
  }
  throw_type_error(what + " must be callable (a chanflow.Function or a Python callable), got '" +
                   type_name(f) + "'");
}

// One argument of a call: Python callables become Functions (so callbacks can be passed), the
// rest converts as to_object does.
ObjectRef call_arg(py::handle v, size_t i) {
  if (!py::isinstance<ObjectRef>(v) && PyCallable_Check(v.ptr()) != 0) {
    return function_from_python(py::reinterpret_borrow<py::object>(v));
  }
  return to_object(v, "Function call: argument " + std::to_string(i));
}

py::object call_function(const Function& f, const py::args& args, const py::kwargs& kwargs) {
  if (kwargs.size() != 0) {
    throw_type_error("Function call: chanflow functions take positional arguments only, got " +
                     std::to_string(kwargs.size()) + " keyword argument(s)");
  }
  std::vector<ObjectRef> refs;
  refs.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) refs.push_back(call_arg(args[i], i));
  ObjectRef result;
  {
    ReleaseGil nogil;
    result = f(refs);
  }
  refs.clear();
  release_pending_owners();
  return wrap_object(std::move(result));
}

void register_checked(const std::string& name, const Function& f, bool override) {
  try {
    register_func(name, f, override);
  } catch (const TypeError&) {
    throw;
  } catch (const Error& e) {
    // A name taken without override: a bad value from Python's point of view.
    throw py::value_error(e.what());
  }
}

}  // namespace

void bind_functions(py::module_& m) {
  register_runtime_functions();  // idempotent: normally done while the module loaded

  py::class_<Function, ObjectRef> cls(
      m, "Function",
      "A function object of chanflow's global registry: C++ built-ins, C callbacks and Python "
      "callables alike. Call it with positional arguments, which are converted to chanflow "
      "objects (Python callables become Functions); the result is converted back. The GIL is "
      "released during the call.");
  cls.def(py::init([](py::handle fn) { return function_arg(fn, "Function(fn): fn"); }),
          py::arg("fn"),
          "Wraps a Python callable as a chanflow Function (not registered). When chanflow calls "
          "it from a green thread it runs on the Python-callback thread.");
  cls.def("__call__", &call_function,
          "Calls the function. Arguments: None, bool, int, float, str, list, tuple, dict, "
          "arrays, chanflow objects and callables.");
  register_wrapper(
      TypeIndex::kFunction, [](ObjectRef r) { return py::cast(downcast<Function>(std::move(r))); },
      cls);

  m.def(
      "get_global_func",
      [](py::handle name, bool allow_missing) -> py::object {
        const std::string n = str_arg(name, "get_global_func", "name");
        std::optional<Function> f = get_global_func(n);
        if (f) return py::cast(*std::move(f));
        if (allow_missing) return py::none();
        throw py::value_error("get_global_func: no global function named '" + n +
                              "' is registered");
      },
      py::arg("name"), py::arg("allow_missing") = false,
      "The chanflow.Function registered under `name`. A missing name raises ValueError, or "
      "returns None with allow_missing=True.");

  m.def(
      "register_func",
      [](py::handle name, py::object f, bool override) -> py::object {
        const std::string n = str_arg(name, "register_func", "name");
        if (n.empty()) throw py::value_error("register_func: the name must not be empty");
        if (f.is_none()) {
          // Decorator form: register the decorated callable, hand it back unchanged.
          return py::cpp_function([n, override](py::object fn) {
            register_checked(n, function_arg(fn, "register_func: the decorated object"), override);
            return fn;
          });
        }
        register_checked(n, function_arg(f, "register_func: f"), override);
        return f;
      },
      py::arg("name"), py::arg("f") = py::none(), py::arg("override") = false,
      "Registers `f` (a Python callable or a chanflow.Function) under `name` in the global "
      "registry, where C++, C and Python find it; returns f. Without f, returns a decorator: "
      "@register_func(\"my.add\"). A name already registered raises ValueError unless "
      "override=True replaces it (calls in progress finish with the old function).");

  m.def(
      "list_global_funcs",
      [] {
        py::list names;
        for (const std::string& n : list_global_funcs()) names.append(py::str(n));
        return names;
      },
      "The names of every registered function, sorted.");

  m.def(
      "remove_global_func",
      [](py::handle name) {
        return remove_global_func(str_arg(name, "remove_global_func", "name"));
      },
      py::arg("name"),
      "Removes the function registered under `name`; returns whether there was one. Calls in "
      "progress finish normally.");

  // The runtime's trace (chanflow/runtime/trace.h): green threads, channels, GoMachine nodes.
  m.def(
      "trace_start",
      [](py::handle path, py::handle max_events) {
        trace::Options o;
        o.path = path.is_none() ? std::string() : str_arg(path, "trace_start", "path");
        if (!py::isinstance<py::int_>(max_events) || py::isinstance<py::bool_>(max_events) ||
            max_events.cast<int64_t>() < 0) {
          throw py::value_error("trace_start: max_events must be an int >= 0 (0: no bound)");
        }
        o.max_events = static_cast<std::size_t>(max_events.cast<int64_t>());
        trace::start(o);
      },
      py::arg("path") = py::none(), py::arg("max_events") = trace::kDefaultMaxEvents,
      "Starts the runtime's trace: events stream to `path` as Chrome trace JSON (None: kept in "
      "memory for trace_json()); at most max_events are written, later ones are counted as "
      "dropped. Stops a trace already on first. docs/runtime.md, 'Tracing', has the format.");
  m.def(
      "trace_stop",
      [] {
        ReleaseGil nogil;  // waits for the writer thread
        trace::stop();
      },
      "Stops the trace and completes its file (a no-op when off).");
  m.def(
      "trace_json", [] { return trace::to_json(); },
      "The last in-memory trace (trace_start without a path) as a JSON string, once stopped.");
}

}  // namespace chanflow::python
