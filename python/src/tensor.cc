// tensor.cc — chanflow.Tensor and the conversions from and to NumPy, PyTorch and any DLPack
// producer, none of which copies or reads the elements unless a copy is asked for or needed.
//
// Import paths:
//   tensor(ndarray)        C-contiguous, aligned, native chanflow dtype and no dtype change: the
//                          tensor's storage IS the array's memory (the array is kept alive).
//                          Anything else is copied once into a fresh chanflow tensor.
//   from_dlpack(obj)       obj.__dlpack__() (or a "dltensor" capsule) consumed per the DLPack
//                          Python spec: the capsule is renamed "used_dltensor" and the producer's
//                          deleter runs when the last chanflow view of the storage dies.
// Export paths:
//   Tensor.numpy()         a read-only ndarray over the tensor's storage whose base keeps the
//                          tensor alive.
//   Tensor.__dlpack__()    a "dltensor" capsule; its destructor frees the export only when no
//                          consumer took it (renamed it "used_dltensor").
// A zero-copy import shares memory with its producer: writing to the NumPy array (or torch
// tensor) afterwards changes what the chanflow tensor sees, as torch.from_numpy does. chanflow
// itself never writes to imported memory (kernels copy on write).
#include <pybind11/numpy.h>

#include <array>
#include <atomic>
#include <bit>
#include <vector>

#include "chanflow/core/locks.h"
#include "chanflow/tensor/dlpack_interop.h"
#include "chanflow/tensor/dtype.h"
#include "native.h"

namespace chanflow::python {
namespace {

// ---- dtypes ----

// numpy.dtype objects of every chanflow dtype, indexed by DType (made at import).
std::array<py::object, kNumDTypes>& numpy_dtypes() {
  static auto* table = new std::array<py::object, kNumDTypes>();  // never destroyed: see atexit
  return *table;
}

py::dtype numpy_dtype(DType t) {
  return py::reinterpret_borrow<py::dtype>(numpy_dtypes()[static_cast<size_t>(t)]);
}

const char* kSupported = "bool, int8, int16, int32, int64, uint8, float16, float32, float64";

// The chanflow dtype of a NumPy dtype whatever its byte order, or false when there is none
// (another kind or size, a structured dtype). `*native` says whether the elements are stored in
// the host's byte order; only then can chanflow use them as they are (tensors are always native:
// anything else is copied, and the copy swaps the bytes).
bool dtype_from_numpy(const py::dtype& dt, DType* out, bool* native = nullptr) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  const char order = dt.byteorder();
  // '=' native, '|' not applicable (one byte), '<' or '>' explicit.
  if (native != nullptr) {
    *native = order == '=' || order == '|' ||
              (order == '<') == (std::endian::native == std::endian::little);
  }
  if (dt.has_fields()) return false;
  const std::optional<DType> d = dtype_from_kind(kind, size);  // CHANFLOW_DTYPES' kind column
  if (d) *out = *d;
  return d.has_value();
}

std::string dtype_repr(const py::dtype& dt) { return dt.attr("__str__")().cast<std::string>(); }

// `what`: "tensor()" ... ; the message names the dtype and lists the supported ones.
[[noreturn]] void unsupported_dtype(const char* what, const py::dtype& dt) {
  throw_type_error(std::string(what) + ": NumPy dtype '" + dtype_repr(dt) +
                   "' is not a chanflow dtype (supported: " + kSupported + ")");
}

// The dtype a `dtype=` argument names (anything numpy.dtype() accepts).
DType dtype_argument(py::handle dtype, const char* what) {
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    throw_type_error(std::string(what) + ": dtype " + py::repr(dtype).cast<std::string>() +
                     " is not a data type");
  }
  DType d;
  if (!dtype_from_numpy(dt, &d)) unsupported_dtype(what, dt);
  return d;
}

// ---- releasing Python references ----
//
// A tensor imported from NumPy holds a reference to the array (and a SharedPyObject holds one to
// any Python object), and chanflow may drop the tensor on any thread: a green thread's worker, the
// timer thread, a Python thread. Py_DECREF needs the GIL, but a worker must never block on the GIL:
// the thread holding it may be waiting for that worker (a run that has not yet released the GIL, or
// one finishing). So a release without the GIL is queued and handed to the interpreter with
// Py_AddPendingCall (callable without the GIL; the main thread runs it at its next bytecode
// boundary), and every Executor.run drains the queue when it returns. After Python's atexit hooks
// ran the queue is no longer used: the references are leaked rather than released into a finalizing
// interpreter.
struct PendingOwners {
  os::Mutex mu;
  std::vector<PyObject*> objects CHANFLOW_GUARDED_BY(mu);
  // A pending call is registered and has not run yet.
  bool scheduled CHANFLOW_GUARDED_BY(mu) = false;
};
PendingOwners& pending() {
  static auto* p = new PendingOwners();  // never destroyed: releases may come during exit
  return *p;
}
// False once Python's atexit hooks ran (release: seen by every later release).
std::atomic<bool> g_python_alive{true};

int drain_pending(void* /*unused*/) {
  std::vector<PyObject*> objects;
  {
    os::LockGuard lock(pending().mu);
    objects.swap(pending().objects);
    pending().scheduled = false;
  }
  for (PyObject* o : objects) Py_DECREF(o);
  return 0;
}

}  // namespace

void release_python_reference(PyObject* owner) noexcept {
  if (PyGILState_Check() != 0) {
    Py_DECREF(owner);
    return;
  }
  if (!g_python_alive.load(std::memory_order_acquire)) return;  // leaked at exit, see above
  PendingOwners& p = pending();
  os::LockGuard lock(p.mu);
  try {
    p.objects.push_back(owner);
  } catch (...) {
    return;  // out of memory: leak the array rather than touch Python without the GIL
  }
  if (!p.scheduled && Py_AddPendingCall(&drain_pending, nullptr) == 0) p.scheduled = true;
  // When the interpreter's pending-call queue is full, the next release or run retries.
}

namespace {

// What a zero-copy import of an ndarray owns: the array reference and the DLPack header
// chanflow's from_dlpack adopts.
struct NumpyImport {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  PyObject* array = nullptr;
};

void numpy_import_deleter(DLManagedTensor* m) {
  auto* self = static_cast<NumpyImport*>(m->manager_ctx);
  release_python_reference(self->array);
  delete self;
}

// Wraps a C-contiguous, aligned ndarray of chanflow dtype `d` without copying.
Tensor import_numpy(const py::array& arr, DType d) {
  auto* ctx = new NumpyImport();
  ctx->shape.assign(arr.shape(), arr.shape() + arr.ndim());
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = const_cast<void*>(arr.data());
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(arr.ndim());
  dl.dtype = to_dl_dtype(d);
  dl.shape = ctx->shape.data();
  dl.strides = nullptr;  // row-major
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &numpy_import_deleter;
  Tensor t;
  try {
    t = from_dlpack(&ctx->managed);
  } catch (...) {
    delete ctx;  // from_dlpack did not take ownership, and the array reference is not taken yet
    throw;
  }
  // The tensor owns ctx now; the reference is taken last so that a failure above leaks nothing.
  ctx->array = arr.inc_ref().ptr();
  return t;
}

// A writable ndarray over a tensor's elements, valid while `t` lives (no base: for copying into
// a fresh tensor this code owns).
py::array view_for_writing(const Tensor& t) {
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * t.itemsize()));
  return py::array(numpy_dtype(t.dtype()),
                   std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()), strides,
                   t->raw_data(), py::none());
}

// A copy of `arr` converted to `d` (NumPy's unsafe casting, as astype) in a fresh tensor.
Tensor copy_numpy(const py::array& arr, DType d) {
  Shape shape(arr.shape(), arr.shape() + arr.ndim());
  Tensor out = Tensor::empty(shape, d);
  if (out.numel() > 0) {
    py::module_::import("numpy").attr("copyto")(view_for_writing(out), arr,
                                                py::arg("casting") = "unsafe");
  }
  return out;
}

bool is_numeric_kind(char kind) { return kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f'; }

// ---- the Python class ----

py::array tensor_numpy(const Tensor& t) {
  std::vector<py::ssize_t> strides;
  strides.reserve(t.strides().size());
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * t.itemsize()));
  // The base owns a handle to the tensor: the storage lives while the array (or a view of it)
  // does.
  py::capsule base(new Tensor(t), [](void* p) { delete static_cast<Tensor*>(p); });
  py::array arr(numpy_dtype(t.dtype()),
                std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()), strides,
                t->raw_data(), base);
  // Read-only: the tensor may be shared (chanflow tensors are values).
  py::detail::array_proxy(arr.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return arr;
}

// PyCapsule destructor of an exported tensor: frees it only if no consumer took it.
void dlpack_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor") == 0) return;  // consumed ("used_dltensor")
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}

py::object tensor_dlpack(const Tensor& t, py::handle stream) {
  if (!stream.is_none()) {
    throw_type_error("Tensor.__dlpack__: stream must be None for a CPU tensor, got " +
                     py::repr(stream).cast<std::string>());
  }
  DLManagedTensor* m = to_dlpack(t);
  PyObject* cap = PyCapsule_New(m, "dltensor", &dlpack_capsule_destructor);
  if (cap == nullptr) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

// Imports a "dltensor" capsule, consuming it.
Tensor import_capsule(py::handle capsule) {
  PyObject* cap = capsule.ptr();
  if (PyCapsule_IsValid(cap, "dltensor") == 0) {
    if (PyCapsule_IsValid(cap, "used_dltensor") != 0) {
      throw_type_error("from_dlpack: the DLPack capsule was already consumed");
    }
    const char* name = PyCapsule_GetName(cap);
    PyErr_Clear();
    throw_type_error(std::string("from_dlpack: expected a capsule named 'dltensor', got ") +
                     (name != nullptr ? "'" + std::string(name) + "'" : "an unnamed capsule"));
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
  if (m == nullptr) throw py::error_already_set();
  Tensor t;
  try {
    t = from_dlpack(m);
  } catch (const Error&) {
    throw;  // a check failed: the capsule still owns m and will free it
  } catch (const std::bad_alloc&) {
    // from_dlpack may already own m here: never let the capsule free it a second time (a leak at
    // worst, when allocation failed before the storage adopted it).
    PyCapsule_SetName(cap, "used_dltensor");
    throw;
  }
  if (PyCapsule_SetName(cap, "used_dltensor") != 0) throw py::error_already_set();
  return t;
}

Tensor from_dlpack_object(py::handle obj) {
  if (py::isinstance<Tensor>(obj)) return obj.cast<Tensor>();
  if (PyCapsule_CheckExact(obj.ptr()) != 0) return import_capsule(obj);
  if (!py::hasattr(obj, "__dlpack__")) {
    throw_type_error(std::string("from_dlpack: expected an object with __dlpack__ or a DLPack "
                                 "capsule, got '") +
                     Py_TYPE(obj.ptr())->tp_name + "'");
  }
  if (py::hasattr(obj, "__dlpack_device__")) {
    // The DLPack protocol: a (device_type, device_id) tuple of ints. Anything else is the
    // producer's mistake, named with what it returned.
    py::object dev = obj.attr("__dlpack_device__")();
    const auto is_int = [](py::handle v) {
      return PyLong_Check(v.ptr()) != 0 && PyBool_Check(v.ptr()) == 0;
    };
    if (PyTuple_Check(dev.ptr()) == 0 || PyTuple_GET_SIZE(dev.ptr()) != 2 ||
        !is_int(PyTuple_GET_ITEM(dev.ptr(), 0)) || !is_int(PyTuple_GET_ITEM(dev.ptr(), 1))) {
      std::string r = py::repr(dev).cast<std::string>();
      if (r.size() > 80) r = r.substr(0, 77) + "...";
      throw_type_error(std::string("from_dlpack: ") + Py_TYPE(obj.ptr())->tp_name +
                       ".__dlpack_device__() returned " + r + " ('" + Py_TYPE(dev.ptr())->tp_name +
                       "'), not a (device_type, device_id) tuple of two ints");
    }
    int overflow = 0;
    const long long type = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(dev.ptr(), 0), &overflow);
    if (overflow != 0 || type != kDLCPU) {
      throw_type_error("from_dlpack: only CPU tensors are supported (DLPack device type " +
                       py::repr(PyTuple_GET_ITEM(dev.ptr(), 0)).cast<std::string>() + ")");
    }
  }
  py::object cap = obj.attr("__dlpack__")();
  if (PyCapsule_CheckExact(cap.ptr()) == 0) {
    throw_type_error(std::string("from_dlpack: __dlpack__() returned '") +
                     Py_TYPE(cap.ptr())->tp_name + "', not a capsule");
  }
  return import_capsule(cap);
}

py::tuple shape_tuple(const Shape& shape) {
  py::tuple out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) out[i] = py::int_(shape[i]);
  return out;
}

}  // namespace

Tensor to_tensor(py::handle obj, py::handle dtype) {
  const bool want_dtype = !dtype.is_none();
  DType target = DType::kFloat32;
  if (want_dtype) target = dtype_argument(dtype, "tensor()");
  if (py::isinstance<Tensor>(obj)) {
    Tensor t = obj.cast<Tensor>();
    return !want_dtype || t.dtype() == target ? t : t.cast(target);
  }
  if (obj.is_none()) throw_type_error("tensor(): expected an array-like value, got None");
  py::array arr;
  if (py::isinstance<py::array>(obj)) {
    arr = py::reinterpret_borrow<py::array>(obj);
  } else {
    arr = py::reinterpret_steal<py::array>(
        py::module_::import("numpy").attr("asarray")(obj).release());
  }
  const py::dtype src = arr.dtype();
  DType d;
  bool native = true;
  const bool chanflow_dtype = dtype_from_numpy(src, &d, &native);
  if (!want_dtype) {
    if (!chanflow_dtype) unsupported_dtype("tensor()", src);
    target = d;
  } else if (!is_numeric_kind(src.kind())) {
    unsupported_dtype("tensor()", src);  // no conversion from complex, object, str, datetime ...
  }
  const int flags = py::detail::array_proxy(arr.ptr())->flags;
  const bool c_contiguous = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
  const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  if (chanflow_dtype && d == target && native && c_contiguous && aligned) {
    return import_numpy(arr, d);
  }
  return copy_numpy(arr, target);
}

py::object wrap_tensor(Tensor t) { return py::cast(std::move(t)); }

void release_pending_owners() {
  bool any = false;
  {
    os::LockGuard lock(pending().mu);
    any = !pending().objects.empty();
  }
  if (any) drain_pending(nullptr);
}

void bind_tensor(py::module_& m) {
  for (int i = 0; i < kNumDTypes; ++i) {
    numpy_dtypes()[static_cast<size_t>(i)] =
        py::dtype(std::string(dtype_name(static_cast<DType>(i))));
  }
  // Releases queued after this point would reach a finalizing interpreter: leak them instead.
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { g_python_alive.store(false, std::memory_order_release); }));

  py::class_<Tensor, ObjectRef>(
      m, "Tensor",
      "An n-dimensional array of one chanflow dtype (a value: never changed once "
      "shared). Made by tensor(), from_dlpack() and Executor.run.")
      .def_property_readonly(
          "shape", [](const Tensor& t) { return shape_tuple(t.shape()); }, "Extents, a tuple.")
      .def_property_readonly(
          "dtype", [](const Tensor& t) { return numpy_dtype(t.dtype()); }, "A numpy.dtype.")
      .def_property_readonly("ndim", [](const Tensor& t) { return t.ndim(); })
      .def_property_readonly(
          "size", [](const Tensor& t) { return t.numel(); }, "Number of elements.")
      .def("numpy", &tensor_numpy,
           "A read-only NumPy view of the elements (no copy); it keeps the tensor alive.")
      .def(
          "__array__",
          [](const Tensor& t, py::handle dtype, py::handle copy) -> py::object {
            py::array view = tensor_numpy(t);
            if (!dtype.is_none()) {
              py::dtype want = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype));
              if (!want.equal(view.dtype())) {
                if (!copy.is_none() && !copy.cast<bool>()) {
                  throw py::value_error("Tensor.__array__: converting " + dtype_repr(view.dtype()) +
                                        " to " + dtype_repr(want) +
                                        " needs a copy, and copy=False was given");
                }
                return view.attr("astype")(want);
              }
            }
            if (!copy.is_none() && copy.cast<bool>()) return view.attr("copy")();
            return view;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack__", &tensor_dlpack, py::arg("stream") = py::none(),
           "A DLPack capsule ('dltensor') sharing the elements; consume it once.")
      .def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(int{kDLCPU}, 0); })
      .def("__repr__", [](const Tensor& t) { return to_string(t); });

  m.def(
      "tensor", [](py::handle obj, py::handle dtype) { return to_tensor(obj, dtype); },
      py::arg("obj"), py::arg("dtype") = py::none(),
      "A Tensor from any array-like value. Shares the memory of a C-contiguous, aligned NumPy "
      "array of a chanflow dtype when no other dtype is asked; copies otherwise.");
  m.def("from_dlpack", &from_dlpack_object, py::arg("obj"),
        "A Tensor sharing the memory of an object with __dlpack__ (NumPy, PyTorch ...) or of a "
        "DLPack capsule, which is consumed.");
}

}  // namespace chanflow::python
