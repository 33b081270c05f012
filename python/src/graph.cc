// graph.cc — chanflow.Graph, Node, the graph op functions, grad, OpContext, GoMachine and
// TapeMachine.
//
// The op functions are generated from chanflow/graph/op_list.h (one m.def per entry, its Python
// signature chosen by the entry's kind), so an op added to that list is a Python function here
// with no other edit; _native._graph_ops lists them for the package.
//
// A Python Node holds its Graph (a shared handle), so a node keeps its graph's storage alive
// however the Python objects are dropped. A Python callable used as an op (Graph.apply) is held in
// a SharedPyObject inside the node's C++ function and always runs through call_with_gil: on
// a Python-callback thread when a GoMachine's green thread needs it (the green thread parks
// meanwhile), inline on the calling thread under a TapeMachine, in a RunScope either way (native.h:
// its blocking chanflow calls end with the run). Machines run with the GIL released; a run on the
// main thread is stopped by Ctrl-C and by Python signal handlers that raise (run_interruptibly).
//
// Argument errors name the function and the argument: chanflow.TypeError for a value of the wrong
// type or dtype, ValueError for a node of another graph or a non-input binding, ShapeError for
// shapes that do not agree (from the C++ builders, which name the node).
#include <pybind11/numpy.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chanflow/graph/go_machine.h"
#include "chanflow/graph/grad.h"
#include "chanflow/graph/graph.h"
#include "chanflow/graph/op_list.h"
#include "chanflow/graph/ops.h"
#include "chanflow/graph/table_ops.h"
#include "chanflow/graph/tape_machine.h"
#include "chanflow/ops/op_table.h"
#include "chanflow/runtime/scheduler.h"
#include "native.h"

namespace chanflow::python {
namespace {

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }

std::string repr_of(py::handle v) {
  try {
    return py::repr(v).cast<std::string>();
  } catch (py::error_already_set&) {
    return "<" + type_name(v) + ">";
  }
}

// The Python-facing description of a value: "'str' 'x'" (type and repr, the repr shortened).
std::string describe_value(py::handle v) {
  std::string r = repr_of(v);
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return "'" + type_name(v) + "' " + r;
}

[[noreturn]] void throw_value_error(const std::string& message) { throw py::value_error(message); }

// ---- dtypes ----

py::object numpy_dtype_of(DType t) {
  static auto* table = new std::array<py::object, kNumDTypes>();  // never destroyed (atexit)
  py::object& d = (*table)[static_cast<size_t>(t)];
  if (!d) d = py::dtype(std::string(dtype_name(t)));
  return d;
}

// The chanflow dtype that `v` (anything numpy.dtype() accepts except None) names.
DType dtype_arg(py::handle v, const std::string& what) {
  if (v.is_none()) throw_type_error(what + " must be given (a NumPy dtype or its name)");
  py::dtype dt;
  try {
    dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(v));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
    throw_type_error(what + " " + repr_of(v) + " is not a data type");
  }
  const std::string name = py::str(dt).cast<std::string>();
  if (dt.has_fields() || !dt.attr("isnative").cast<bool>()) {
    throw_type_error(what + ": NumPy dtype '" + name + "' is not a chanflow dtype");
  }
  try {
    return dtype_from_name(dt.attr("name").cast<std::string>());
  } catch (const TypeError&) {
    throw_type_error(what + ": NumPy dtype '" + name +
                     "' is not a chanflow dtype (supported: bool, int8, int16, int32, int64, "
                     "uint8, float16, float32, float64)");
  }
}

// ---- integers, shapes, axes ----

bool is_int(py::handle v) {
  // bool is an int in Python, but never a meaningful extent or axis: rejected.
  if (PyBool_Check(v.ptr()) != 0) return false;
  if (PyLong_Check(v.ptr()) != 0) return true;
  // NumPy integers (not NumPy bools, not floats).
  return PyIndex_Check(v.ptr()) != 0 && PyFloat_Check(v.ptr()) == 0 &&
         std::string(type_name(v)) != "numpy.bool_" && std::string(type_name(v)) != "numpy.bool";
}

int64_t int_arg(py::handle v, const std::string& what) {
  if (!is_int(v)) throw_type_error(what + " must be an int, got " + describe_value(v));
  try {
    return py::int_(py::reinterpret_borrow<py::object>(v)).cast<int64_t>();
  } catch (py::cast_error&) {
    throw_value_error(what + " is out of range: " + repr_of(v));
  } catch (py::error_already_set&) {
    throw_value_error(what + " is out of range: " + repr_of(v));
  }
}

bool bool_arg(py::handle v, const std::string& what) {
  if (PyBool_Check(v.ptr()) == 0) {
    throw_type_error(what + " must be a bool, got " + describe_value(v));
  }
  return v.ptr() == Py_True;
}

bool is_sequence(py::handle v) { return PyTuple_Check(v.ptr()) != 0 || PyList_Check(v.ptr()) != 0; }

// A tuple or list of ints, each at least `min` (else ValueError saying it must be `kind`).
std::vector<int64_t> int_sequence_arg(py::handle v, const std::string& what, int64_t min,
                                      const char* kind) {
  if (!is_sequence(v)) {
    throw_type_error(what + " must be a tuple of ints, got " + describe_value(v));
  }
  std::vector<int64_t> out;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
  for (size_t i = 0; i < seq.size(); ++i) {
    const std::string item = what + "[" + std::to_string(i) + "]";
    const int64_t x = int_arg(seq[i], item);
    if (x < min) throw_value_error(item + " must be " + kind + ", got " + std::to_string(x));
    out.push_back(x);
  }
  return out;
}

// A shape: extents >= 0 (or -1 where `minus_one` says an extent is inferred). A negative extent
// is a chanflow.ShapeError (a ValueError) naming the item, as the graph layer reports a shape
// that no tensor could have (too many elements or bytes) when the node is built.
Shape shape_arg(py::handle v, const std::string& what, bool minus_one = false) {
  const int64_t min = minus_one ? -1 : 0;
  std::vector<int64_t> out = int_sequence_arg(v, what, std::numeric_limits<int64_t>::min(), "");
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < min) {
      throw ShapeError(what + "[" + std::to_string(i) + "] must be an extent >= 0" +
                       (minus_one ? " (or -1)" : "") + ", got " + std::to_string(out[i]));
    }
  }
  return out;
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = py::int_(s[i]);
  return out;
}

// ---- nodes ----

// A node as Python sees it: the node and its graph, which the node keeps alive.
struct PyNode {
  Graph graph;
  Node node;
};

py::object wrap_node(const Graph& g, const Node& n) { return py::cast(PyNode{g, n}); }

PyNode* as_node(py::handle v) {
  if (!py::isinstance<PyNode>(v)) return nullptr;
  return &v.cast<PyNode&>();
}

PyNode& node_arg(py::handle v, const std::string& what) {
  PyNode* n = as_node(v);
  if (n == nullptr) throw_type_error(what + " must be a chanflow.Node, got " + describe_value(v));
  return *n;
}

std::string node_label(const Node& n) { return "node '" + n.name() + "'"; }

// Throws ValueError when `n` is not a node of `g`.
void check_graph(const Graph& g, const PyNode& n, const std::string& what) {
  if (n.graph.impl() != g.impl()) {
    throw_value_error(what + ": " + node_label(n.node) + " belongs to another graph");
  }
}

// Graphs a machine is running with the GIL released, and how many runs each. The C++ graph is not
// synchronised: adding nodes (or setting an input) while a machine reads it would race, so the
// builders refuse while a run is in progress (from another Python thread, or from a Python op of
// that very run). Guarded by the GIL.
std::unordered_map<const void*, int>& running_graphs() {
  static auto* m = new std::unordered_map<const void*, int>();
  return *m;
}

void check_not_running(const Graph& g, const std::string& what) {
  if (running_graphs().count(g.impl().get()) != 0) {
    throw Error(what +
                ": the graph is being run by a machine (from another thread, or this is "
                "one of its Python ops): build nodes and set inputs before or after runs");
  }
}

// Marks `g` running for a scope (GIL held at both ends).
class RunningGraph {
 public:
  explicit RunningGraph(const Graph& g) : key_(g.impl().get()) { ++running_graphs()[key_]; }
  ~RunningGraph() {
    auto it = running_graphs().find(key_);
    if (--it->second == 0) running_graphs().erase(it);
  }
  RunningGraph(const RunningGraph&) = delete;
  RunningGraph& operator=(const RunningGraph&) = delete;

 private:
  const void* key_;
};

// A node argument of an op function: its graph gets a node, so it must not be running.
const PyNode& build_arg(py::handle v, const std::string& op) {
  const PyNode& n = node_arg(v, op + ": a");
  check_not_running(n.graph, op);
  return n;
}

std::vector<PyNode> node_list_arg(py::handle v, const std::string& what) {
  if (!is_sequence(v)) {
    throw_type_error(what + " must be a list of chanflow.Node, got " + describe_value(v));
  }
  std::vector<PyNode> out;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
  for (size_t i = 0; i < seq.size(); ++i) {
    out.push_back(node_arg(seq[i], what + "[" + std::to_string(i) + "]"));
  }
  return out;
}

// ---- values: numbers as constants, arrays as tensors ----

bool is_number(py::handle v) {
  if (PyBool_Check(v.ptr()) != 0 || PyLong_Check(v.ptr()) != 0 || PyFloat_Check(v.ptr()) != 0) {
    return true;
  }
  static auto* number = new py::object(py::module_::import("numpy").attr("number"));
  static auto* boolean = new py::object(py::module_::import("numpy").attr("bool_"));
  static auto* complex = new py::object(py::module_::import("numpy").attr("complexfloating"));
  return (py::isinstance(v, *number) && !py::isinstance(v, *complex)) ||
         py::isinstance(v, *boolean);
}

// A 0-d tensor of dtype `dt` holding the number `v`; TypeError when `dt` cannot hold it exactly
// (2.5 for an int32 node, 300 for uint8): a number never changes its value silently.
Tensor number_tensor(py::handle v, DType dt, const std::string& what) {
  auto does_not_fit = [&] {
    throw_type_error(what + ": " + repr_of(v) + " does not fit a " + std::string(dtype_name(dt)) +
                     " node (" + dtype_range_text(dt) + ")");
  };
  py::object f = py::reinterpret_borrow<py::object>(v);
  static auto* np_integer = new py::object(py::module_::import("numpy").attr("integer"));
  static auto* np_bool = new py::object(py::module_::import("numpy").attr("bool_"));
  const bool integral = PyBool_Check(v.ptr()) != 0 || PyLong_Check(v.ptr()) != 0 ||
                        py::isinstance(v, *np_integer) || py::isinstance(v, *np_bool);
  if (integral) {
    int64_t i = 0;
    try {
      i = py::int_(f).cast<int64_t>();  // exact: not through a double
    } catch (py::error_already_set&) {
      does_not_fit();
    } catch (py::cast_error&) {
      does_not_fit();
    }
    // Integer and bool dtypes must hold it exactly; a float dtype rounds it, as C++ does.
    if (!is_floating(dt) && !dtype_holds(dt, static_cast<double>(i))) does_not_fit();
    Tensor t = Tensor::from_vector<int64_t>({i}, Shape{});
    return dt == DType::kInt64 ? t : t.cast(dt);
  }
  const double d = f.cast<double>();
  if (!dtype_holds(dt, d)) does_not_fit();
  return Tensor::scalar(d, dt);
}

// `v` as a tensor for a place of dtype `want` (an input, a Python op's result). Arrays, Tensors
// and DLPack producers keep their own dtype (the machine or Graph.set then checks it against the
// declared one, naming the node); Python numbers and (nested) lists are converted to `want` when
// NumPy's same_kind casting allows it (an int list for a float input, not a float for an int one).
Tensor value_arg(py::handle v, DType want, const std::string& what) {
  const bool array_like = py::isinstance<Tensor>(v) || py::isinstance<py::array>(v) ||
                          py::hasattr(v, "__dlpack__") || py::hasattr(v, "__array__");
  try {
    if (array_like) return to_tensor(v, py::none());
    if (v.is_none()) throw_type_error(what + ": expected an array-like value, got None");
    py::module_ np = py::module_::import("numpy");
    py::object arr;
    try {
      arr = np.attr("asarray")(v);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError)) throw;
      throw_type_error(what + ": cannot convert " + describe_value(v) + " to an array (" +
                       py::str(e.value()).cast<std::string>() + ")");
    }
    py::object want_dt = numpy_dtype_of(want);
    const std::string kind = arr.attr("dtype").attr("kind").cast<std::string>();
    if (kind != "b" && kind != "i" && kind != "u" && kind != "f") {
      throw_type_error(what + ": " + describe_value(v) + " is not numeric (NumPy dtype '" +
                       py::str(arr.attr("dtype")).cast<std::string>() + "')");
    }
    if (!np.attr("can_cast")(arr.attr("dtype"), want_dt, "same_kind").cast<bool>()) {
      throw_type_error(what + ": a " + py::str(arr.attr("dtype")).cast<std::string>() +
                       " value does not convert to " + std::string(dtype_name(want)) +
                       " without changing kind (pass an array of that dtype)");
    }
    if (!np.attr("can_cast")(arr.attr("dtype"), want_dt, "safe").cast<bool>()) {
      // A narrowing within the kind: the values must survive it (no wrap-around of integers, no
      // overflow of floats to infinity; rounding a float is allowed).
      py::object converted;
      {
        // Overflow is what is being checked: no RuntimeWarning for it.
        py::object quiet =
            np.attr("errstate")(py::arg("over") = "ignore", py::arg("invalid") = "ignore");
        quiet.attr("__enter__")();
        try {
          converted = arr.attr("astype")(want_dt);
        } catch (...) {
          quiet.attr("__exit__")(py::none(), py::none(), py::none());
          throw;
        }
        quiet.attr("__exit__")(py::none(), py::none(), py::none());
      }
      const bool kept = is_floating(want) ? np.attr("all")(np.attr("isfinite")(converted).attr(
                                                               "__ge__")(np.attr("isfinite")(arr)))
                                                .cast<bool>()
                                          : np.attr("array_equal")(converted, arr).cast<bool>();
      if (!kept) {
        throw_type_error(what + ": " + describe_value(v) + " has values out of the range of " +
                         std::string(dtype_name(want)) + " (" + dtype_range_text(want) + ")");
      }
    }
    return to_tensor(arr, want_dt);
  } catch (const TypeError& e) {
    const std::string msg = e.what();
    if (msg.rfind(what, 0) == 0) throw;
    throw TypeError(what + ": " + msg);
  }
}

// The node a binary op's operand stands for: a Node, or a number as a 0-d constant of the other
// operand's dtype in its graph.
Node operand_node(py::handle v, const PyNode& other, const std::string& what) {
  if (PyNode* n = as_node(v)) return n->node;
  if (!is_number(v)) {
    throw_type_error(what + " must be a chanflow.Node or a number, got " + describe_value(v));
  }
  Graph g = other.graph;
  return g.constant(number_tensor(v, other.node.dtype(), what));
}

// Both operands of a binary op as nodes of one graph (at least one must be a Node).
std::pair<Node, Node> binary_operands(const std::string& op, py::handle a, py::handle b,
                                      const PyNode** base) {
  PyNode* na = as_node(a);
  PyNode* nb = as_node(b);
  if (na == nullptr && nb == nullptr) {
    throw_type_error(op + ": a or b must be a chanflow.Node, got " + describe_value(a) + " and " +
                     describe_value(b));
  }
  if (na != nullptr && nb != nullptr && na->graph.impl() != nb->graph.impl()) {
    throw_value_error(op + ": a (" + node_label(na->node) + ") and b (" + node_label(nb->node) +
                      ") belong to different graphs");
  }
  *base = na != nullptr ? na : nb;
  check_not_running((*base)->graph, op);
  return {operand_node(a, **base, op + ": a"), operand_node(b, **base, op + ": b")};
}

// ---- the op functions, by kind ----

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

template <class F>
py::object call_binary(const std::string& op, py::handle a, py::handle b, F f) {
  const PyNode* base = nullptr;
  auto [x, y] = binary_operands(op, a, b, &base);
  return wrap_node(base->graph, f(x, y));
}

Axes axes_arg(py::handle v, const std::string& what) {
  if (v.is_none()) return {};
  if (is_int(v)) return {int_arg(v, what)};
  Axes axes = int_sequence_arg(v, what, std::numeric_limits<int64_t>::min(), "an int");
  if (axes.empty()) {
    // NumPy's axis=() reduces over no axis, while chanflow's empty Axes means every axis: refuse
    // rather than give a result NumPy users would not expect.
    throw_value_error(what + " is empty; pass None to reduce over every axis");
  }
  return axes;
}

std::string signature_doc(const char* name, const char* kind, const char* doc) {
  const std::string k = kind;
  std::string sig;
  std::string args;
  if (k == "binary") {
    sig = "(a, b)";
    args =
        "a, b: Nodes of one graph, or one of them a number (a 0-d constant of the other's "
        "dtype).";
  } else if (k == "unary") {
    sig = "(a)";
    args = "a: a Node.";
  } else if (k == "reduce") {
    sig = "(a, axes=None, keepdims=False)";
    args = "axes: None (every axis), an int or a tuple of ints; negative axes count from the end.";
  } else if (k == "argreduce") {
    sig = "(a, axis=None, keepdims=False)";
    args = "axis: an int, or None for the index into the flattened node.";
  } else if (k == "axis") {
    sig = "(a, axis=-1)";
    args = "axis: an int; negative axes count from the end.";
  } else if (k == "shape") {
    sig = "(a, shape)";
    args = "shape: a tuple of ints.";
  } else if (k == "perm") {
    sig = "(a, perm=None)";
    args = "perm: None, or a tuple with each axis of a once.";
  } else {
    sig = "(a, dtype)";
    args = "dtype: a NumPy dtype or its name.";
  }
  return std::string(name) + sig + " -> Node\n\n" + doc + "\n\n" + args +
         "\nBuilds one node in the operands' graph; its shape and dtype are inferred now "
         "(ShapeError / chanflow.TypeError naming the node on a mismatch).";
}

// One def_<kind> per kind of op_list.h: the Python signature of that kind, its arguments checked
// and named, then the C++ function `f`.
template <class F>
void def_binary(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle b) {
        return call_binary(n, a, b, [&](const Node& x, const Node& y) { return f(x, y); });
      },
      py::arg("a"), py::arg("b"), signature_doc(name, "binary", doc).c_str());
}

template <class F>
void def_unary(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a) {
        const PyNode& x = build_arg(a, n);
        return wrap_node(x.graph, f(x.node));
      },
      py::arg("a"), signature_doc(name, "unary", doc).c_str());
}

template <class F>
void def_reduce(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle axes, py::handle keepdims) {
        const PyNode& x = build_arg(a, n);
        return wrap_node(
            x.graph, f(x.node, axes_arg(axes, n + ": axes"), bool_arg(keepdims, n + ": keepdims")));
      },
      py::arg("a"), py::arg("axes") = py::none(), py::arg("keepdims") = false,
      signature_doc(name, "reduce", doc).c_str());
}

template <class F>
void def_argreduce(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle axis, py::handle keepdims) {
        const PyNode& x = build_arg(a, n);
        std::optional<int64_t> ax;
        if (!axis.is_none()) ax = int_arg(axis, n + ": axis");
        return wrap_node(x.graph, f(x.node, ax, bool_arg(keepdims, n + ": keepdims")));
      },
      py::arg("a"), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      signature_doc(name, "argreduce", doc).c_str());
}

template <class F>
void def_axis(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle axis) {
        const PyNode& x = build_arg(a, n);
        return wrap_node(x.graph, f(x.node, int_arg(axis, n + ": axis")));
      },
      py::arg("a"), py::arg("axis") = -1, signature_doc(name, "axis", doc).c_str());
}

template <class F>
void def_shape(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle shape) {
        const PyNode& x = build_arg(a, n);
        // -1 passes here: reshape infers that extent, the other builders reject it (ShapeError).
        return wrap_node(x.graph, f(x.node, shape_arg(shape, n + ": shape", true)));
      },
      py::arg("a"), py::arg("shape"), signature_doc(name, "shape", doc).c_str());
}

template <class F>
void def_perm(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle perm) {
        const PyNode& x = build_arg(a, n);
        std::vector<int64_t> p;
        if (!perm.is_none()) {
          p = int_sequence_arg(perm, n + ": perm", std::numeric_limits<int64_t>::min(), "an int");
          // chanflow's empty perm means "reversed": an empty tuple for a node with axes is a
          // mistake, not that.
          if (p.empty() && !x.node.shape().empty()) {
            throw_value_error(n + ": perm is empty for a " + std::to_string(x.node.shape().size()) +
                              "-d node");
          }
        }
        return wrap_node(x.graph, f(x.node, p));
      },
      py::arg("a"), py::arg("perm") = py::none(), signature_doc(name, "perm", doc).c_str());
}

template <class F>
void def_dtype(py::module_& m, const char* name, const char* doc, F f) {
  const std::string n = name;
  m.def(
      name,
      [n, f](py::handle a, py::handle dtype) {
        const PyNode& x = build_arg(a, n);
        return wrap_node(x.graph, f(x.node, dtype_arg(dtype, n + ": dtype")));
      },
      py::arg("a"), py::arg("dtype"), signature_doc(name, "dtype", doc).c_str());
}

// Each kind's call of the C++ function.
#define CF_PY_OP_binary(name) [](const Node& a, const Node& b) { return ::chanflow::name(a, b); }
#define CF_PY_OP_unary(name) [](const Node& a) { return ::chanflow::name(a); }
#define CF_PY_OP_reduce(name) \
  [](const Node& a, const Axes& axes, bool keep) { return ::chanflow::name(a, axes, keep); }
#define CF_PY_OP_argreduce(name)                              \
  [](const Node& a, std::optional<int64_t> axis, bool keep) { \
    return ::chanflow::name(a, axis, keep);                   \
  }
#define CF_PY_OP_axis(name) [](const Node& a, int64_t axis) { return ::chanflow::name(a, axis); }
#define CF_PY_OP_shape(name) [](const Node& a, const Shape& s) { return ::chanflow::name(a, s); }
#define CF_PY_OP_perm(name) \
  [](const Node& a, const std::vector<int64_t>& p) { return ::chanflow::name(a, p); }
#define CF_PY_OP_dtype(name) [](const Node& a, DType t) { return ::chanflow::name(a, t); }
#define CF_PY_DEF_OP(kind, name, doc) def_##kind(m, #name, doc, CF_PY_OP_##kind(name));

void bind_op_functions(py::module_& m) {
  CHANFLOW_GRAPH_OPS(CF_PY_DEF_OP)
  py::list ops;
#define CF_PY_LIST_OP(kind, name, doc) ops.append(py::make_tuple(#name, #kind, doc));
  CHANFLOW_GRAPH_OPS(CF_PY_LIST_OP)
#undef CF_PY_LIST_OP
  m.attr("_graph_ops") = py::tuple(ops);
}

#undef CF_PY_DEF_OP
#undef CF_PY_OP_binary
#undef CF_PY_OP_unary
#undef CF_PY_OP_reduce
#undef CF_PY_OP_argreduce
#undef CF_PY_OP_axis
#undef CF_PY_OP_shape
#undef CF_PY_OP_perm
#undef CF_PY_OP_dtype

// ---- Python operators on nodes ----

// `a op b` for Node.__add__ and friends: NotImplemented (so Python tries the other side, then
// raises TypeError) unless `b` is a Node or a number.
template <class F>
py::object node_operator(const char* op, py::handle self, py::handle other, bool reflected, F f) {
  if (as_node(other) == nullptr && !is_number(other)) return not_implemented();
  return reflected ? call_binary(op, other, self, f) : call_binary(op, self, other, f);
}

// ---- custom ops (Graph.apply) ----

// What a Python op function sees as its first argument when apply(..., context=True): the run's
// context, to stop long work when the run is cancelled or times out.
struct PyOpContext {
  Context ctx;
};

bool context_done(const Context& ctx) {
  if (ctx.err()) return true;
  const std::optional<Clock::time_point> d = ctx.deadline();
  return d.has_value() && Clock::now() >= *d;
}

struct PyOp {
  SharedPyObject fn;
  std::string name;
  DType dtype;
  bool pass_context;
};

// The C++ function of a Python op: converts the operands to Tensors, calls the Python function on
// an OS thread holding the GIL (call_with_gil) and converts its result.
//
// An op that stops because its run is over (ctx.check(), or a channel operation or select that
// the run's end interrupted, raising the run's CanceledError or DeadlineExceededError, the context
// being done) fails the way a C++ op does, with the context's own error: the machine then counts
// it as the run's cancellation, not as the node's failure.
CustomFn python_op(std::shared_ptr<const PyOp> op) {
  return [op = std::move(op)](std::span<const Tensor> operands, const OpContext& oc) {
    Tensor out;
    const Context ctx = oc.ctx();
    bool stopped_by_run = false;
    call_with_gil([&] {
      // On the thread that runs fn: its blocking chanflow calls end with the run (native.h).
      RunScope in_run(ctx);
      py::tuple args(operands.size() + (op->pass_context ? 1 : 0));
      size_t k = 0;
      if (op->pass_context) args[k++] = py::cast(PyOpContext{ctx});
      for (const Tensor& t : operands) args[k++] = wrap_tensor(t);
      py::object r;
      try {
        r = py::reinterpret_borrow<py::object>(op->fn.get())(*args);
      } catch (py::error_already_set& e) {
        static auto* module = new py::object(py::module_::import("chanflow._native"));
        if (context_done(ctx) && (e.matches(module->attr("CanceledError")) ||
                                  e.matches(module->attr("DeadlineExceededError")))) {
          stopped_by_run = true;
          return;
        }
        throw;
      }
      out = value_arg(r, op->dtype, "Python op '" + op->name + "' result");
    });
    if (stopped_by_run) {
      OpContext(&ctx).check();  // throws the context's error (it is done)
      throw CanceledError("Python op '" + op->name + "': stopped by its run");
    }
    return out;
  };
}

// ---- machines ----

// The context of a run: a child of the run whose Python op calls it, if any (run_parent).
Context run_context(py::handle timeout, const std::string& what) {
  if (timeout.is_none()) return with_cancel(run_parent());
  if ((PyFloat_Check(timeout.ptr()) == 0 && PyLong_Check(timeout.ptr()) == 0) ||
      PyBool_Check(timeout.ptr()) != 0) {
    throw_type_error(what + ": timeout must be a number of seconds or None, got " +
                     describe_value(timeout));
  }
  const double seconds = timeout.cast<double>();
  if (std::isnan(seconds) || seconds < 0) {
    throw_value_error(what + ": timeout must be >= 0 seconds, got " + repr_of(timeout));
  }
  if (seconds > 1e9) return with_cancel(run_parent());  // past what the clock holds: no deadline
  return with_timeout(run_parent(),
                      std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9))));
}

// The checked C++ bindings of a Python dict {input node: value}.
Bindings bindings_arg(py::handle b, const Graph& g, const std::string& what) {
  Bindings out;
  if (b.is_none()) return out;
  if (PyDict_Check(b.ptr()) == 0) {
    throw_type_error(what + ": bindings must be a dict of input Node -> array, got " +
                     describe_value(b));
  }
  for (auto item : py::reinterpret_borrow<py::dict>(b)) {
    PyNode* n = as_node(item.first);
    if (n == nullptr) {
      throw_type_error(what + ": bindings keys must be chanflow.Node, got " +
                       describe_value(item.first));
    }
    check_graph(g, *n, what + ": bindings");
    if (n->node.op() != OpKind::kInput) {
      throw_value_error(what + ": bindings: " + node_label(n->node) + " is not an input (it is " +
                        op_kind_name(n->node.op()) + ")");
    }
    out.emplace_back(n->node, value_arg(item.second, n->node.dtype(),
                                        what + ": bindings['" + n->node.name() + "']"));
  }
  return out;
}

// Runs `body` (a blocking machine call) with the GIL released, stopped by Ctrl-C and by a
// Python signal handler that raises (run_interruptibly); raises what it threw once the GIL is back.
template <class Body>
void run_blocking(const Context& ctx, Body body) {
  run_interruptibly(ctx, std::function<void()>(std::move(body)));
}

// Marks a Python machine busy for one call: a second call from another Python thread (possible
// while the first has released the GIL) raises Error instead of racing. The flag is only touched
// with the GIL held.
class BusyScope {
 public:
  BusyScope(bool& busy, const std::string& what) : busy_(busy) {
    if (busy_) {
      throw Error(what +
                  ": another call is in progress on this machine (calls on one machine "
                  "must not overlap)");
    }
    busy_ = true;
  }
  ~BusyScope() { busy_ = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  bool& busy_;
};

std::vector<Bindings> items_arg(py::handle items, const Graph& g, const std::string& what) {
  if (!is_sequence(items)) {
    throw_type_error(what + ": items must be a list of bindings dicts, got " +
                     describe_value(items));
  }
  std::vector<Bindings> out;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(items);
  for (size_t i = 0; i < seq.size(); ++i) {
    out.push_back(bindings_arg(seq[i], g, what + ": items[" + std::to_string(i) + "]"));
  }
  return out;
}

std::vector<Node> outputs_arg(py::handle outputs, const Graph& g, const std::string& what) {
  std::vector<Node> out;
  for (const PyNode& n : node_list_arg(outputs, what + ": outputs")) {
    check_graph(g, n, what + ": outputs");
    out.push_back(n.node);
  }
  return out;
}

py::list stream_results(const std::vector<std::vector<Tensor>>& results) {
  py::list out;
  for (const auto& item : results) {
    py::list row;
    for (const Tensor& t : item) row.append(wrap_tensor(t));
    out.append(row);
  }
  return out;
}

class PyGoMachine {
 public:
  PyGoMachine(const Graph& g, int window, int workers) : graph_(g) {
    GoMachineOptions o;
    o.window = window;
    if (workers > 0) {
      sched_ = std::make_unique<Scheduler>(SchedulerOptions{.workers = workers});
      o.scheduler = sched_.get();
    }
    m_ = std::make_unique<GoMachine>(g, o);
  }
  // Closing waits for the runners, which may be waiting for the Python-callback thread: the GIL
  // must not be held. The machine goes before the scheduler it runs on.
  ~PyGoMachine() {
    if (PyGILState_Check() != 0) {
      ReleaseGil nogil;
      m_.reset();
      sched_.reset();
    }
  }

  void run(py::handle bindings, py::handle timeout) {
    BusyScope busy(busy_, "GoMachine.run");
    Bindings b = bindings_arg(bindings, graph_, "GoMachine.run");
    const Context ctx = run_context(timeout, "GoMachine.run");
    RunningGraph running(graph_);
    run_blocking(ctx, [&] {
      m_->run(ctx, b);
      b.clear();  // the values' Python references are released without the GIL: queued
    });
  }

  py::list stream(py::handle items, py::handle outputs, py::handle timeout) {
    BusyScope busy(busy_, "GoMachine.stream");
    std::vector<Bindings> in = items_arg(items, graph_, "GoMachine.stream");
    const std::vector<Node> outs = outputs_arg(outputs, graph_, "GoMachine.stream");
    const Context ctx = run_context(timeout, "GoMachine.stream");
    std::vector<std::vector<Tensor>> results;
    RunningGraph running(graph_);
    run_blocking(ctx, [&] {
      results = m_->stream(ctx, in, outs);
      in.clear();
    });
    return stream_results(results);
  }

  py::object result(py::handle node) {
    BusyScope busy(busy_, "GoMachine.result");
    const PyNode& n = node_arg(node, "GoMachine.result: node");
    check_graph(graph_, n, "GoMachine.result");
    return wrap_tensor(m_->result(n.node));
  }

  void close() {
    BusyScope busy(busy_, "GoMachine.close");
    ReleaseGil nogil;
    m_->close();
  }
  bool closed() const { return m_->closed(); }

  const Graph& graph() const { return graph_; }
  py::object workers() const {
    return sched_ ? py::object(py::int_(sched_->workers())) : py::object(py::none());
  }

 private:
  Graph graph_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<GoMachine> m_;
  bool busy_ = false;  // guarded by the GIL
};

class PyTapeMachine {
 public:
  explicit PyTapeMachine(const Graph& g) : graph_(g), m_(std::make_unique<TapeMachine>(g)) {}

  void run(py::handle bindings, py::handle timeout) {
    BusyScope busy(busy_, "TapeMachine.run");
    check_open("run");
    Bindings b = bindings_arg(bindings, graph_, "TapeMachine.run");
    const Context ctx = run_context(timeout, "TapeMachine.run");
    RunningGraph running(graph_);
    run_blocking(ctx, [&] {
      m_->run(ctx, b);
      b.clear();
    });
  }

  py::list stream(py::handle items, py::handle outputs, py::handle timeout) {
    BusyScope busy(busy_, "TapeMachine.stream");
    check_open("stream");
    std::vector<Bindings> in = items_arg(items, graph_, "TapeMachine.stream");
    const std::vector<Node> outs = outputs_arg(outputs, graph_, "TapeMachine.stream");
    const Context ctx = run_context(timeout, "TapeMachine.stream");
    std::vector<std::vector<Tensor>> results;
    RunningGraph running(graph_);
    run_blocking(ctx, [&] {
      for (const Bindings& b : in) {
        m_->run(ctx, b);
        std::vector<Tensor>& row = results.emplace_back();
        for (const Node& o : outs) row.push_back(m_->result(o));
      }
      in.clear();
    });
    return stream_results(results);
  }

  py::object result(py::handle node) {
    BusyScope busy(busy_, "TapeMachine.result");
    const PyNode& n = node_arg(node, "TapeMachine.result: node");
    check_graph(graph_, n, "TapeMachine.result");
    return wrap_tensor(m_->result(n.node));
  }

  void close() {
    BusyScope busy(busy_, "TapeMachine.close");
    closed_ = true;
  }
  bool closed() const { return closed_; }
  const Graph& graph() const { return graph_; }

 private:
  void check_open(const char* what) {
    if (closed_) throw Error(std::string("TapeMachine.") + what + ": the machine is closed");
  }

  Graph graph_;
  std::unique_ptr<TapeMachine> m_;
  bool busy_ = false;  // guarded by the GIL
  bool closed_ = false;
};

int window_arg(py::handle v) {
  const int64_t w = int_arg(v, "GoMachine: window");
  if (w < 1 || w > 1 << 16)
    throw_value_error("GoMachine: window must be 1 .. 65536, got " + std::to_string(w));
  return static_cast<int>(w);
}

int workers_arg(py::handle v) {
  if (v.is_none()) return 0;
  const int64_t w = int_arg(v, "GoMachine: workers");
  if (w < 1 || w > kMaxWorkers) {
    throw_value_error("GoMachine: workers must be None or 1 .. " + std::to_string(kMaxWorkers) +
                      ", got " + std::to_string(w));
  }
  return static_cast<int>(w);
}

const Graph& graph_arg(py::handle v, const std::string& what) {
  if (!py::isinstance<Graph>(v)) {
    throw_type_error(what + " must be a chanflow.Graph, got " + describe_value(v));
  }
  return v.cast<const Graph&>();
}

std::string name_arg(py::handle v, const std::string& what) {
  if (v.is_none()) return {};
  if (PyUnicode_Check(v.ptr()) == 0) {
    throw_type_error(what + " must be a str or None, got " + describe_value(v));
  }
  return v.cast<std::string>();
}

std::string node_repr(const PyNode& n) {
  std::string shape = py::repr(shape_tuple(n.node.shape())).cast<std::string>();
  return "Node(id=" + std::to_string(n.node.id()) + ", name='" + n.node.name() + "', op='" +
         op_kind_name(n.node.op()) + "', shape=" + shape +
         ", dtype=" + std::string(dtype_name(n.node.dtype())) + ")";
}

}  // namespace

void bind_graph(py::module_& m) {
  py::options options;
  options.disable_function_signatures();  // each docstring starts with its own Python signature

  py::class_<PyOpContext>(
      m, "OpContext",
      "The run a Python op (Graph.apply(..., context=True)) is computing for. A long op calls "
      "check() between pieces of work, so that a cancelled or timed-out run stops promptly.")
      .def(
          "check", [](const PyOpContext& c) { OpContext(&c.ctx).check(); },
          "check() -> None\n\nRaises the run's CanceledError / DeadlineExceededError once it "
          "is cancelled or past its deadline; else returns at once.")
      .def_property_readonly(
          "cancelled", [](const PyOpContext& c) { return context_done(c.ctx); },
          "Whether the run is cancelled or past its deadline (check() would raise).");

  py::class_<Graph> graph(
      m, "Graph",
      "An expression graph: inputs, constants and op nodes (built by the op functions, "
      "chanflow.add ..., and by Python operators on nodes). Shapes and dtypes are inferred as "
      "nodes are built. Build from one thread; machines read it concurrently.");
  py::class_<PyNode> node(
      m, "Node",
      "A node of a Graph (it keeps the graph alive). Arithmetic operators build nodes: + - * / "
      "** @, unary - and abs(), with Nodes or numbers on either side (a number becomes a 0-d "
      "constant of the node's dtype). == and hash are identity (the same node of the same "
      "graph), never elementwise: use chanflow.equal for that.");

  graph.def(py::init<>(), "Graph()\n\nAn empty graph.")
      .def(
          "input",
          [](Graph& g, py::handle name, py::handle dtype, py::handle shape) {
            check_not_running(g, "Graph.input");
            if (PyUnicode_Check(name.ptr()) == 0) {
              throw_type_error("Graph.input: name must be a str, got " + describe_value(name));
            }
            return wrap_node(
                g, g.input(name.cast<std::string>(), dtype_arg(dtype, "Graph.input: dtype"),
                           shape_arg(shape, "Graph.input: shape")));
          },
          py::arg("name"), py::arg("dtype"), py::arg("shape"),
          "input(name, dtype, shape) -> Node\n\nA placeholder of a fixed dtype and shape (a "
          "tuple of ints). Its value comes from set() or from a machine's run bindings.")
      .def(
          "constant",
          [](Graph& g, py::handle value, py::handle name) {
            check_not_running(g, "Graph.constant");
            Tensor t;
            try {
              t = to_tensor(value, py::none());
            } catch (const TypeError& e) {
              throw TypeError(std::string("Graph.constant: value: ") + e.what());
            }
            return wrap_node(g, g.constant(t, name_arg(name, "Graph.constant: name")));
          },
          py::arg("value"), py::arg("name") = py::none(),
          "constant(value, name=None) -> Node\n\nA node always holding `value` (anything "
          "chanflow.tensor() accepts, converted as it converts; a NumPy array is shared, not "
          "copied: do not change it afterwards).")
      .def(
          "scalar",
          [](Graph& g, py::handle value, py::handle dtype, py::handle name) {
            check_not_running(g, "Graph.scalar");
            if (!is_number(value)) {
              throw_type_error("Graph.scalar: value must be a number, got " +
                               describe_value(value));
            }
            DType dt;
            if (!dtype.is_none()) {
              dt = dtype_arg(dtype, "Graph.scalar: dtype");
            } else if (py::hasattr(value, "dtype")) {  // a NumPy scalar (np.float64 is a float)
              dt = dtype_arg(value.attr("dtype"), "Graph.scalar: value");
            } else if (PyBool_Check(value.ptr()) != 0) {
              dt = DType::kBool;
            } else if (PyFloat_Check(value.ptr()) != 0) {
              dt = DType::kFloat32;
            } else {
              dt = DType::kInt64;
            }
            return wrap_node(g, g.constant(number_tensor(value, dt, "Graph.scalar"),
                                           name_arg(name, "Graph.scalar: name")));
          },
          py::arg("value"), py::arg("dtype") = py::none(), py::arg("name") = py::none(),
          "scalar(value, dtype=None, name=None) -> Node\n\nA 0-d constant. Without dtype: a "
          "Python float gives float32 (as the C++ g.scalar(1.0f), so it does not promote a "
          "float32 graph), an int int64, a bool bool, a NumPy scalar its own dtype. A value "
          "the dtype cannot hold exactly raises chanflow.TypeError.")
      .def(
          "apply",
          [](Graph& g, py::handle fn, py::handle operands, py::handle shape, py::handle dtype,
             py::handle name, py::handle context) {
            check_not_running(g, "Graph.apply");
            if (PyCallable_Check(fn.ptr()) == 0) {
              throw_type_error("Graph.apply: fn must be callable, got " + describe_value(fn));
            }
            std::vector<Node> ops;
            for (const PyNode& n : node_list_arg(operands, "Graph.apply: operands")) {
              check_graph(g, n, "Graph.apply: operands");
              ops.push_back(n.node);
            }
            const Shape s = shape_arg(shape, "Graph.apply: shape");
            const DType dt = dtype_arg(dtype, "Graph.apply: dtype");
            std::string nm = name_arg(name, "Graph.apply: name");
            if (nm.empty()) nm = "custom" + std::to_string(g.size());  // the C++ default name
            auto op =
                std::make_shared<PyOp>(PyOp{SharedPyObject(py::reinterpret_borrow<py::object>(fn)),
                                            nm, dt, bool_arg(context, "Graph.apply: context")});
            return wrap_node(g, g.apply(nm, ops, s, dt, python_op(std::move(op))));
          },
          py::arg("fn"), py::arg("operands"), py::arg("shape"), py::arg("dtype"),
          py::arg("name") = py::none(), py::arg("context") = false,
          "apply(fn, operands, shape, dtype, name=None, context=False) -> Node\n\nA node computed "
          "by the Python callable fn(*operand_values) (fn(ctx, *operand_values) with "
          "context=True, ctx an OpContext). The values are chanflow Tensors (np.asarray views "
          "them without copying); fn returns an array of the declared shape and dtype (a "
          "Python number or list is converted to dtype), else the node fails with "
          "ShapeError / chanflow.TypeError. fn never runs on a green thread: a GoMachine hands "
          "it to a Python-callback thread (Python ops run one at a time, as the GIL would have "
          "them) and parks the node's green thread meanwhile; a TapeMachine calls it on the "
          "thread that runs the machine. An exception in fn fails the run with MachineError, "
          "its __cause__ being that exception. The node has no gradient (grad through it "
          "raises chanflow.Error).")
      .def(
          "set",
          [](Graph& g, py::handle input, py::handle value) {
            check_not_running(g, "Graph.set");
            const PyNode& n = node_arg(input, "Graph.set: input");
            check_graph(g, n, "Graph.set");
            if (n.node.op() != OpKind::kInput) {
              throw_value_error("Graph.set: " + node_label(n.node) + " is not an input (it is " +
                                op_kind_name(n.node.op()) + ")");
            }
            g.set(n.node, value_arg(value, n.node.dtype(), "Graph.set: value"));
          },
          py::arg("input"), py::arg("value"),
          "set(input, value) -> None\n\nBinds an input's default value (used by runs whose "
          "bindings do not give one). An array must have the input's shape and dtype; a "
          "Python number or list is converted to its dtype.")
      .def(
          "nodes",
          [](const Graph& g) {
            py::list out;
            for (const Node& n : g.nodes()) out.append(wrap_node(g, n));
            return out;
          },
          "nodes() -> list[Node]\n\nEvery node, in id (= topological) order.")
      .def(
          "node",
          [](const Graph& g, py::handle id) {
            const int64_t i = int_arg(id, "Graph.node: id");
            if (i < 0 || i >= g.size()) {
              throw py::index_error("Graph.node: id " + std::to_string(i) +
                                    " is out of range (the graph has " + std::to_string(g.size()) +
                                    " nodes)");
            }
            return wrap_node(g, g.node(i));
          },
          py::arg("id"), "node(id) -> Node\n\nThe node with that id (0 <= id < len(graph)).")
      .def("__len__", &Graph::size)
      .def("to_dot", &Graph::to_dot,
           "to_dot() -> str\n\nGraphviz text: a box per node, edges labelled by operand "
           "position.")
      .def("__eq__",
           [](const Graph& a, py::handle b) -> py::object {
             if (!py::isinstance<Graph>(b)) return not_implemented();
             return py::bool_(a.impl() == b.cast<const Graph&>().impl());
           })
      .def("__hash__", [](const Graph& g) { return std::hash<const void*>()(g.impl().get()); })
      .def("__repr__", [](const Graph& g) {
        return "Graph(" + std::to_string(g.size()) + " node" + (g.size() == 1 ? "" : "s") + ")";
      });

  node.def_property_readonly(
          "name", [](const PyNode& n) { return n.node.name(); }, "The node's name.")
      .def_property_readonly(
          "id", [](const PyNode& n) { return n.node.id(); },
          "Its id: creation order, a topological order.")
      .def_property_readonly(
          "op", [](const PyNode& n) { return std::string(op_kind_name(n.node.op())); },
          "What it computes: 'input', 'constant', 'add', 'matmul', ..., 'custom'.")
      .def_property_readonly(
          "shape", [](const PyNode& n) { return shape_tuple(n.node.shape()); },
          "The inferred shape, a tuple.")
      .def_property_readonly(
          "dtype", [](const PyNode& n) { return numpy_dtype_of(n.node.dtype()); },
          "The inferred dtype, a numpy.dtype.")
      .def_property_readonly(
          "inputs",
          [](const PyNode& n) {
            py::list out;
            for (const Node& i : n.node.inputs()) out.append(wrap_node(n.graph, i));
            return out;
          },
          "The operand nodes, in operand order.")
      .def_property_readonly(
          "graph", [](const PyNode& n) { return n.graph; }, "The Graph it belongs to.")
      .def("__repr__", &node_repr)
      .def("__eq__",
           [](const PyNode& a, py::handle b) -> py::object {
             PyNode* o = as_node(b);
             if (o == nullptr) return not_implemented();
             return py::bool_(a.graph.impl() == o->graph.impl() && a.node.id() == o->node.id());
           })
      .def("__hash__",
           [](const PyNode& n) {
             return std::hash<const void*>()(n.graph.impl().get()) ^
                    (static_cast<size_t>(n.node.id()) * 0x9E3779B97F4A7C15ULL);
           })
      .def("__neg__", [](const PyNode& a) { return wrap_node(a.graph, neg(a.node)); })
      .def("__pos__", [](py::handle a) { return py::reinterpret_borrow<py::object>(a); })
      .def("__abs__", [](const PyNode& a) { return wrap_node(a.graph, abs(a.node)); });
  // NumPy must not take over `array + node` (it would build an object array, one node per
  // element): with __array_ufunc__ None it returns NotImplemented and Node's reflected operator
  // decides (a TypeError for arrays: make them constants with Graph.constant).
  node.attr("__array_ufunc__") = py::none();

#define CF_PY_NODE_OPERATOR(py_name, py_rname, op)                               \
  node.def(py_name, [](py::handle self, py::handle other) {                      \
    return node_operator(#op, self, other, false,                                \
                         [](const Node& x, const Node& y) { return op(x, y); }); \
  });                                                                            \
  node.def(py_rname, [](py::handle self, py::handle other) {                     \
    return node_operator(#op, self, other, true,                                 \
                         [](const Node& x, const Node& y) { return op(x, y); }); \
  });
  CF_PY_NODE_OPERATOR("__add__", "__radd__", add)
  CF_PY_NODE_OPERATOR("__sub__", "__rsub__", sub)
  CF_PY_NODE_OPERATOR("__mul__", "__rmul__", mul)
  CF_PY_NODE_OPERATOR("__truediv__", "__rtruediv__", div)
  CF_PY_NODE_OPERATOR("__matmul__", "__rmatmul__", matmul)
#undef CF_PY_NODE_OPERATOR
  node.def(
      "__pow__",
      [](py::handle a, py::handle b, py::handle mod) {
        if (!mod.is_none()) return not_implemented();
        return node_operator("pow", a, b, false,
                             [](const Node& x, const Node& y) { return pow(x, y); });
      },
      py::arg("b"), py::arg("mod") = py::none());
  node.def(
      "__rpow__",
      [](py::handle a, py::handle b, py::handle mod) {
        if (!mod.is_none()) return not_implemented();
        return node_operator("pow", a, b, true,
                             [](const Node& x, const Node& y) { return pow(x, y); });
      },
      py::arg("b"), py::arg("mod") = py::none());

  bind_op_functions(m);

  m.def(
      "grad",
      [](py::handle loss, py::handle wrt) {
        const PyNode& l = node_arg(loss, "grad: loss");
        check_not_running(l.graph, "grad");
        std::vector<Node> nodes;
        for (const PyNode& n : node_list_arg(wrt, "grad: wrt")) {
          check_graph(l.graph, n, "grad: wrt");
          nodes.push_back(n.node);
        }
        py::list out;
        for (const Node& g : grad(l.node, nodes)) out.append(wrap_node(l.graph, g));
        return out;
      },
      py::arg("loss"), py::arg("wrt"),
      "grad(loss, wrt) -> list[Node]\n\nReverse-mode gradients: for each node of the list `wrt`, "
      "a node holding d loss / d node (same shape and dtype). loss must have one element and a "
      "float dtype. Appends the backward nodes to loss's graph; build machines after calling "
      "it.");

  // The op table's ops as graph nodes (graph/table_ops.h).
  auto table_inputs = [](const std::string& type, py::handle inputs, Graph* owner) {
    if (!PyDict_Check(inputs.ptr())) {
      throw_type_error("op('" + type +
                       "'): inputs must be a dict of slot name -> Node or list "
                       "of Nodes, got " +
                       describe_value(inputs));
    }
    OpInputs out;
    for (auto item : py::reinterpret_borrow<py::dict>(inputs)) {
      if (!PyUnicode_Check(item.first.ptr())) {
        throw_type_error("op('" + type + "'): input slot names must be str, got " +
                         describe_value(item.first));
      }
      const std::string slot = item.first.cast<std::string>();
      const std::string where = "op('" + type + "'): input '" + slot + "'";
      std::vector<PyNode> nodes;
      if (as_node(item.second) != nullptr) {
        nodes.push_back(node_arg(item.second, where));
      } else {
        nodes = node_list_arg(item.second, where);
      }
      std::vector<Node> ns;
      for (const PyNode& n : nodes) {
        if (owner->impl() == nullptr) *owner = n.graph;
        check_graph(*owner, n, where);
        ns.push_back(n.node);
      }
      out.emplace_back(slot, std::move(ns));
    }
    if (owner->impl() == nullptr) throw Error("op('" + type + "'): no input nodes");
    check_not_running(*owner, "op('" + type + "')");
    return out;
  };
  m.def(
      "op",
      [table_inputs](const std::string& type, py::handle inputs, py::handle attrs,
                     py::handle output) {
        Graph g{std::shared_ptr<detail::GraphImpl>()};
        OpInputs ins = table_inputs(type, inputs, &g);
        OpDesc::Attrs a = attrs.is_none()
                              ? OpDesc::Attrs{}
                              : op_attrs_from_python(type, attrs, "op('" + type + "'): attrs");
        const std::string out = output.is_none() ? std::string() : output.cast<std::string>();
        return wrap_node(g, op(type, ins, a, out));
      },
      py::arg("type"), py::arg("inputs"), py::arg("attrs") = py::none(),
      py::arg("output") = py::none(),
      "op(type, inputs, attrs=None, output=None) -> Node\n\nA node of the op table's op `type` "
      "(Paddle's names: 'conv2d', 'pool2d', 'batch_norm', 'mul', ...): inputs by slot name "
      "({'Input': x, 'Filter': w}), attributes by name, the node of output slot `output` (the "
      "first when None). cf.grad differentiates it with the op's gradient rule, the same one "
      "program backward uses.");
  m.def(
      "op_outputs",
      [table_inputs](const std::string& type, py::handle inputs, py::handle attrs,
                     py::handle outputs) {
        Graph g{std::shared_ptr<detail::GraphImpl>()};
        OpInputs ins = table_inputs(type, inputs, &g);
        OpDesc::Attrs a = attrs.is_none() ? OpDesc::Attrs{}
                                          : op_attrs_from_python(
                                                type, attrs, "op_outputs('" + type + "'): attrs");
        std::vector<std::string> outs;
        if (!outputs.is_none()) {
          for (auto o : py::iter(outputs)) outs.push_back(py::str(o).cast<std::string>());
        }
        py::dict r;
        for (const auto& [slot, n] : op_outputs(type, ins, a, outs))
          r[py::str(slot)] = wrap_node(g, n);
        return r;
      },
      py::arg("type"), py::arg("inputs"), py::arg("attrs") = py::none(),
      py::arg("outputs") = py::none(),
      "op_outputs(type, inputs, attrs=None, outputs=None) -> dict[str, Node]\n\nOne node per "
      "output slot of `outputs` (every slot when None) of the op table's op `type`.");
  m.def(
      "table_op_types",
      [] {
        py::list out;
        for (const std::string& t : op_def_types()) out.append(py::str(t));
        return out;
      },
      "The op table's op types (those graphs build with op() have a kernel; the rest add a "
      "gradient rule to an executor built-in).");

  py::class_<PyGoMachine>(
      m, "GoMachine",
      "Runs a Graph with its nodes as concurrent state machines on green threads. "
      "window: how many stream() items may be in flight; workers: None runs the nodes on the "
      "process's shared scheduler, an int on a scheduler of that many worker threads owned by "
      "the machine. Use it as a context manager, or close() it.")
      .def(py::init([](py::handle g, py::handle window, py::handle workers) {
             const Graph& gr = graph_arg(g, "GoMachine: graph");
             return std::make_unique<PyGoMachine>(gr, window_arg(window), workers_arg(workers));
           }),
           py::arg("graph"), py::arg("window") = 4, py::arg("workers") = py::none())
      .def("run", &PyGoMachine::run, py::arg("bindings") = py::none(),
           py::arg("timeout") = py::none(),
           "run(bindings=None, timeout=None) -> None\n\nComputes every node. bindings: {input "
           "Node: value} for this run (else each input's Graph.set value). Blocks with the GIL "
           "released; Ctrl-C on the main thread stops it (KeyboardInterrupt); `timeout` "
           "seconds raise DeadlineExceededError at the deadline (the abandoned run finishes in "
           "the background; the next call waits for it). A failed node raises MachineError "
           "naming each failed node.")
      .def("stream", &PyGoMachine::stream, py::arg("items"), py::arg("outputs"),
           py::arg("timeout") = py::none(),
           "stream(items, outputs, timeout=None) -> list[list[Tensor]]\n\nPipelines a list of "
           "bindings dicts through the graph (up to `window` at once) and returns, per item in "
           "order, the values of `outputs`.")
      .def("result", &PyGoMachine::result, py::arg("node"),
           "result(node) -> Tensor\n\nThe node's value in the last completed run (or stream "
           "item).")
      .def("close", &PyGoMachine::close,
           "close() -> None\n\nWaits for the last run's green threads; later runs raise "
           "chanflow.Error. Idempotent; result() keeps working.")
      .def_property_readonly("closed", &PyGoMachine::closed)
      .def_property_readonly("graph", &PyGoMachine::graph)
      .def_property_readonly("workers", &PyGoMachine::workers,
                             "The worker count given, or None (the shared scheduler).")
      .def("__enter__", [](py::handle self) { return py::reinterpret_borrow<py::object>(self); })
      .def("__exit__", [](PyGoMachine& self, py::args) { self.close(); });

  py::class_<PyTapeMachine>(
      m, "TapeMachine",
      "Runs a Graph node by node in id order on the calling thread: the reference the "
      "GoMachine agrees with.")
      .def(py::init([](py::handle g) {
             return std::make_unique<PyTapeMachine>(graph_arg(g, "TapeMachine: graph"));
           }),
           py::arg("graph"))
      .def("run", &PyTapeMachine::run, py::arg("bindings") = py::none(),
           py::arg("timeout") = py::none(),
           "run(bindings=None, timeout=None) -> None\n\nComputes every node, as "
           "GoMachine.run (GIL released, Ctrl-C, timeout, MachineError).")
      .def("stream", &PyTapeMachine::stream, py::arg("items"), py::arg("outputs"),
           py::arg("timeout") = py::none(),
           "stream(items, outputs, timeout=None) -> list[list[Tensor]]\n\nOne run per item, "
           "in order; the values of `outputs` per item.")
      .def("result", &PyTapeMachine::result, py::arg("node"),
           "result(node) -> Tensor\n\nThe node's value in the last successful run.")
      .def("close", &PyTapeMachine::close,
           "close() -> None\n\nLater runs raise chanflow.Error; result() keeps working.")
      .def_property_readonly("closed", &PyTapeMachine::closed)
      .def_property_readonly("graph", &PyTapeMachine::graph)
      .def("__enter__", [](py::handle self) { return py::reinterpret_borrow<py::object>(self); })
      .def("__exit__", [](PyTapeMachine& self, py::args) { self.close(); });
}

}  // namespace chanflow::python
