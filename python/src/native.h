// native.h — what the translation units of the extension module chanflow._native share (private).
//
// The module is one pybind11 extension linking chanflow's static layers, so the type registry,
// the op registry and the schedulers exist once per process. Each file binds one concept:
//   errors.cc    — the Python exception classes and the C++ -> Python translation;
//   tensor.cc    — Tensor, tensor(), from_dlpack(): NumPy and DLPack without copies;
//   program.cc   — Program, BlockRef, op_schema(), load_program(): programs from files or data;
//   builder.cc   — ProgramBuilder (the C++ builder's methods), Var, VarType, block guards;
//   executor.cc  — Executor.run: feeds, fetches, channels, timeout, the GIL released;
//   interrupt.cc — Ctrl-C during a run on the main thread;
//   objects.cc   — chanflow.Object and one Python class per object type, Array and Map,
//                  to_object/object_class, to_json/from_json;
//   callback.cc  — where Python callables run when chanflow calls them (never on a green thread);
//   graph.cc     — Graph, Node, the graph ops, grad, GoMachine, TapeMachine;
//   channels.cc  — make_chan, Channel, select;
//   functions.cc — the global function registry (get_global_func, register_func).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/core/object.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/runtime/context.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow::python {

namespace py = pybind11;

// ---- errors.cc ----

// Creates the exception classes as attributes of `m` and registers the translator of every
// chanflow error (most-derived class first) and std::bad_alloc (MemoryError).
void bind_errors(py::module_& m);

// Raises chanflow.TypeError / chanflow.ShapeError from binding code: throw these C++ exceptions
// (they are chanflow's own, so the one translator maps them).
[[noreturn]] void throw_type_error(const std::string& message);

// Raises chanflow.NotFoundError (a chanflow.Error and a KeyError): a name that names nothing, such
// as a fetch of a variable block 0 does not declare. A C++ error of this module only (the C++
// library reports those as a plain Error), so it can be thrown without the GIL and rethrown later.
class NotFoundError : public Error {
 public:
  using Error::Error;
};

// ---- tensor.cc ----

void bind_tensor(py::module_& m);

// tensor(obj, dtype): the conversion feeds go through. `dtype` is None or anything numpy.dtype()
// accepts. Needs the GIL.
Tensor to_tensor(py::handle obj, py::handle dtype);

// Wraps a C++ tensor as a Python chanflow.Tensor.
py::object wrap_tensor(Tensor t);

// Drops the Python references that were released while the GIL was not held (see tensor.cc,
// "Releasing Python references"). Needs the GIL; cheap when none.
void release_pending_owners();

// Drops one reference to `o` from any thread: at once when this thread holds the GIL, else queued
// for the interpreter (never blocks on the GIL; a worker must not). Leaked after Python's atexit
// hooks ran. Never throws.
void release_python_reference(PyObject* o) noexcept;

// A Python object that C++ code may copy and drop on any thread (a green thread, a worker, the
// timer thread): copies share one reference, and the last drop goes through
// release_python_reference. Reading the object (get()) needs the GIL, as any Python access does.
class SharedPyObject {
 public:
  SharedPyObject() = default;
  explicit SharedPyObject(py::object o)
      : p_(o.release().ptr(), [](PyObject* q) { release_python_reference(q); }) {}
  py::handle get() const noexcept { return p_.get(); }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  std::shared_ptr<PyObject> p_;
};

// ---- program.cc ----

void bind_program(py::module_& m);

// ---- executor.cc ----

void bind_executor(py::module_& m);

// ---- interrupt.cc ----

// The run on whose behalf this thread runs Python now: a machine's Python op sets it around the
// call of its function (graph.cc), on the thread that calls it — the thread running a
// TapeMachine, a callback thread for a GoMachine. What Python then does on this thread belongs to
// that run, and every blocking call of this module honours its context: a channel operation or
// select waits on the context too and raises its CanceledError / DeadlineExceededError once it is
// done (channels.cc), a run started here derives its context from it (run_parent), and an
// InterruptScope inside it leaves signals to the run's own call (see InterruptScope::finish). So
// canceling a run — by its timeout, Ctrl-C, a signal handler that raises, a GoMachine that
// abandons it — also ends what its Python ops wait for, and the run can end. Scopes nest (an op
// that runs a machine whose ops run inline); the innermost one counts. `ctx` must outlive it.
class RunScope {
 public:
  explicit RunScope(const Context& ctx) noexcept;
  ~RunScope();
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;

 private:
  const Context* previous_;
};

// The context of the innermost RunScope on this thread; nullptr outside one.
const Context* current_run() noexcept;

// The parent of the context of a run started now on this thread (Executor.run, a machine's run):
// the current run's context, so that canceling the run that called it cancels it too; else
// background().
Context run_parent();

struct Handoff;

// Lets signals with a Python-level handler reach a blocking call on Python's main thread (see
// interrupt.cc). Construct it, with the GIL held, around the wait: on the main thread it hooks
// every signal that has such a handler now, so that each one ends the wait — cancel `ctx` (kRetry:
// any signal; kRun: SIGINT), or wake the main thread waiting for `handoff` — and runs the handlers
// of signals that came just before (throws py::error_already_set when one raises). Elsewhere it
// does nothing.
class InterruptScope {
 public:
  enum class Mode {
    kRetry,  // a wait that performs nothing when canceled (a channel operation, select)
    kRun,    // a run, which a cancel stops for good
  };
  InterruptScope(const Context& ctx, Mode mode, Handoff* handoff = nullptr);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Ends the scope, with the GIL held. `completed`: the wait performed its operation (the run
  // returned normally); pending handlers are then left to the interpreter, which runs them as the
  // call returns, and finish returns false. Otherwise runs them: throws py::error_already_set
  // when one raises, and returns whether a signal came during the scope (a kRetry caller then
  // tries again). Inside a run (RunScope) whose context is done, whatever `completed`, it only
  // ends the scope and returns false: the caller raises the run's error, and the SIGINT that
  // canceled the run is left to the run's own call on the main thread, which hands it back to
  // Python as it ends (so Ctrl-C during a TapeMachine's Python op is the run's KeyboardInterrupt,
  // not the op's).
  bool finish(bool completed);

  // Whether a signal other than SIGINT had a Python-level handler when the scope began (false
  // off the main thread).
  bool other_signals() const noexcept { return (hooked_ & ~(1ULL << (SIGINT - 1))) != 0; }

 private:
  unsigned long long end() noexcept;
  const Context* run_ = nullptr;  // current_run() when the scope began
  bool active_ = false;
  void* record_ = nullptr;
  unsigned long long hooked_ = 0;  // the signals it hooked: bit signo - 1
};

// Runs body() (which must not need the GIL) with the GIL released, as a blocking run on behalf
// of Python: held on entry and on return; body's exception is rethrown, after
// release_pending_owners(). On the main thread SIGINT cancels `ctx` (CanceledError, or the
// handler's exception such as KeyboardInterrupt), and while another signal has a Python-level
// handler body runs on a helper thread so that the main thread runs handlers as signals come:
// one that raises cancels `ctx`, and its exception leaves the call once body returned; one that
// returns lets the run go on.
void run_interruptibly(const Context& ctx, const std::function<void()>& body);

// ---- objects.cc ----

// chanflow.Object, and a Python class for each object type registered at import (created from
// the type registry; Tensor, Channel, Program ... are the bound classes of their types).
void bind_objects(py::module_& m);

// `ref` as a Python value of the class chosen by its type index; a type registered after import
// surfaces as its nearest ancestor with a class. None for a null handle; Python's int, float,
// bool and str for Int, Float, Bool and String. Needs the GIL.
py::object wrap_object(ObjectRef ref);

// How objects of one type (and its descendants without a wrapper of their own) become Python
// values: the binding of a handle class registers `py::cast` of its handle, and its Python class,
// e.g. for Channel
//   py::class_<Channel, ObjectRef> cls(m, "Channel", ...);
//   register_wrapper(ChannelObj::runtime_type_index(),
//                    [](ObjectRef r) { return py::cast(downcast<Channel>(std::move(r))); }, cls);
// `cls` is what chanflow.object_class(key) and chanflow.types show for the type (and the base of
// the classes of its subtypes); when omitted, it is learned from the first object wrapped. Call
// while binding (at import, with the GIL), before bind_object_classes. A later registration for
// the same index wins.
using Wrapper = py::object (*)(ObjectRef ref);
void register_wrapper(uint32_t type_index, Wrapper wrap, py::handle cls = py::handle());

// Called last at import: gives every type registered by then that has no bound class its
// generated class (a subclass of its parent's), and publishes chanflow.types.
void bind_object_classes(py::module_& m);

// A Python value as an object: chanflow objects as they are; None -> null; bool (checked before
// int), int, float, str -> Bool, Int, Float, String (a str's lone surrogates from
// surrogateescape back to their bytes); NumPy bool_/integer/floating scalars -> Bool/Int/Float;
// list/tuple -> Array and dict -> Map, recursively (keys too); NumPy arrays and DLPack producers
// -> Tensor (as tensor(obj) converts them). Errors name `what` and the place inside it
// ("what[1]['k']"): chanflow.TypeError for a value with no conversion or an int beyond int64,
// ValueError for a container that contains itself or a str that is not text, RecursionError
// past Python's recursion limit or 10,000 levels. Needs the GIL.
ObjectRef to_object(py::handle value, const std::string& what);

// ---- program.cc (shared with builder.cc) ----

// An op's inputs or outputs from Python: a dict (ordered) or a list of (parameter, [names])
// pairs. Throws chanflow.TypeError naming `where` and the offending item.
OpDesc::Args op_args_from_python(py::handle v, const std::string& where);

// An op's attributes from Python, a dict or a list of (name, value) pairs, typed by the op type's
// registered schema as Program.from_blocks types them. Throws chanflow.TypeError naming `where`
// and the attribute.
OpDesc::Attrs op_attrs_from_python(const std::string& op_type, py::handle v,
                                   const std::string& where);

// ---- builder.cc ----

// ProgramBuilder, Var, VarType and the block guards.
void bind_builder(py::module_& m);

// ---- callback.cc ----

// A Python exception raised by a callable that chanflow called (a graph op, a registered
// function), carried through C++ code. what() is "ExcType: message" with the Python traceback.
// When it reaches Python again, the original exception object is raised (errors.cc), so the
// caller sees its own exception.
class PythonError : public Error {
 public:
  PythonError(const std::string& message, SharedPyObject exception)
      : Error(message), exception_(std::move(exception)) {}
  // The exception instance (never empty).
  const SharedPyObject& exception() const noexcept { return exception_; }

 private:
  SharedPyObject exception_;
};

// Runs `fn` with the GIL held, on an OS thread where Python may run, and returns when it has
// run. Python callables never run on a green thread (a green thread migrates between OS threads;
// CPython's thread state belongs to one): called from a green thread, `fn` is handed to a
// Python-callback thread (a pool, started on first use, that grows only while every callback
// thread is blocked in chanflow: see callback.cc) and the green thread parks until it is done, so
// its worker runs other green threads meanwhile. Called from an OS thread, `fn` runs inline (the
// GIL taken if this thread does not hold it). A py::error_already_set from `fn` is rethrown as
// PythonError; other exceptions propagate unchanged. After Python's atexit hooks ran, throws
// Error ("Python is shutting down") without running `fn`.
void call_with_gil(const std::function<void()>& fn);

// Releases the GIL for a scope in which this thread blocks in chanflow (a channel operation, a
// run, a join), like py::gil_scoped_release, and retakes it at the end of the scope. The
// difference is what happens when the interpreter began to finalize meanwhile: CPython 3.11
// ends such a thread (a daemon thread: Python no longer waits for it) with pthread_exit while
// it retakes the GIL. That is a forced unwind, and it would run through this destructor, which
// is noexcept, and so call std::terminate: the process would abort at exit instead of exiting.
// ReleaseGil instead parks the thread for good (as CPython 3.14 does itself), so the process
// exits normally; the thread held no Python state and was about to vanish. On a Python-callback
// thread it also tells the pool that this thread blocks in chanflow, so that the callables queued
// meanwhile go to another callback thread (what this one waits for may be one of them).
class ReleaseGil {
 public:
  ReleaseGil() noexcept;
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  void* slot_ = nullptr;  // the callback thread's pool slot, when this scope counts it blocked
  PyThreadState* state_ = nullptr;
};

// Registers the stop of the callback threads with atexit (they finish the queued callables and
// exit; one blocked in chanflow for good is left behind; callables nobody can run then fail as
// after shutdown), and the fork handler that gives a child process a new pool. Needs the GIL.
void bind_callbacks(py::module_& m);

// ---- graph.cc, channels.cc, functions.cc ----

void bind_graph(py::module_& m);
void bind_channels(py::module_& m);
void bind_functions(py::module_& m);

}  // namespace chanflow::python
