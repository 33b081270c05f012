// native.h — what the translation units of the extension module chanflow._native share (private).
//
// The module is one pybind11 extension linking chanflow's static layers, so the type registry,
// the op registry and the schedulers exist once per process. Each file binds one concept:
//   errors.cc    — the Python exception classes and the C++ -> Python translation;
//   tensor.cc    — Tensor, tensor(), from_dlpack(): NumPy and DLPack without copies;
//   program.cc   — Program, BlockRef, op_schema(): building programs from Python data;
//   executor.cc  — Executor.run: feeds, fetches, timeout, the GIL released;
//   interrupt.cc — Ctrl-C during a run on the main thread.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <string>

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

// ---- tensor.cc ----

void bind_tensor(py::module_& m);

// tensor(obj, dtype): the conversion feeds go through. `dtype` is None or anything numpy.dtype()
// accepts. Needs the GIL.
Tensor to_tensor(py::handle obj, py::handle dtype);

// Wraps a C++ tensor as a Python chanflow.Tensor.
py::object wrap_tensor(Tensor t);

// Drops the Python references that tensors imported from NumPy released while the GIL was not
// held (see tensor.cc, "Releasing imported NumPy arrays"). Needs the GIL; cheap when none.
void release_pending_owners();

// ---- program.cc ----

void bind_program(py::module_& m);

// ---- executor.cc ----

void bind_executor(py::module_& m);

// ---- interrupt.cc ----

// Forwards SIGINT to the runs in progress on Python's main thread (see interrupt.cc). Construct
// it, with the GIL held, around a run: it installs the handler only when the calling thread is
// the main thread and Python's SIGINT handler is a Python-level one, and registers `ctx` to be
// canceled by the signal. After the run, with the GIL held again, finish() hands a SIGINT that
// came during the run back to Python (PyErr_SetInterruptEx + PyErr_CheckSignals): it throws
// py::error_already_set when Python's handler raised (KeyboardInterrupt), and returns whether a
// SIGINT came (so the caller reports a run canceled by it even when the handler did not raise).
class InterruptScope {
 public:
  explicit InterruptScope(const Context& ctx);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Ends the scope (restores the previous handler) and forwards a SIGINT that came. Needs the GIL.
  bool finish();

 private:
  void end() noexcept;
  bool active_ = false;
  void* record_ = nullptr;
  unsigned long long start_count_ = 0;
};

}  // namespace chanflow::python
