// builder.cc — chanflow.ProgramBuilder: the C++ ProgramBuilder (ir/builder.h) from Python.
//
// Every method keeps its C++ name and parameters (`out` optional, as the C++ `Var out = {}`);
// the result is a cf.Program that cf.Executor runs. What differs, and why:
//   - dtypes are anything numpy.dtype() accepts ("int64", np.float32) or an element cf.VarType;
//     channel elements are a dtype or a cf.VarType (LOD_TENSOR: any tensor, CHANNEL: channels);
//   - the block guards are context managers: `with b.go(): ...` closes the block at the end of
//     the `with` as the C++ guard's destructor does at the end of its scope. A body that raises
//     abandons the block exactly as a C++ guard unwound by an exception does: the builder is
//     marked broken and build() raises. A guard that is never entered and never closed closes
//     when Python drops it (as a C++ temporary would), so `b.go()` alone makes an empty block;
//   - Var and the guards keep their builder alive (a C++ Var only points to it).
// Errors are the C++ builder's (chanflow.Error / TypeError); arguments of the wrong Python type
// raise chanflow.TypeError naming the method and the argument.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/ir/builder.h"
#include "chanflow/ir/var_type.h"
#include "native.h"

namespace chanflow::python {
namespace {

// A Var with a reference to its Python builder.
struct PyVar {
  Var var;
  py::object owner;
};

// A guard with a reference to its Python builder; the guard is destroyed (closing its block)
// before the reference is dropped.
template <class G>
struct GuardBox {
  py::object owner;
  std::optional<G> guard;
};
using PyBlockGuard = GuardBox<BlockGuard>;
using PySelectGuard = GuardBox<SelectGuard>;

std::string type_name(py::handle v) { return Py_TYPE(v.ptr())->tp_name; }
std::string short_repr(py::handle v) {
  std::string r = py::repr(v).cast<std::string>();
  if (r.size() > 80) r = r.substr(0, 77) + "...";
  return r;
}

[[noreturn]] void bad_arg(const std::string& where, const std::string& expected, py::handle v) {
  throw_type_error(where + ": expected " + expected + ", got '" + type_name(v) + "' " +
                   short_repr(v));
}

// ---- arguments ----

const Var& var_arg(py::handle v, const std::string& where) {
  if (!py::isinstance<PyVar>(v)) bad_arg(where, "a Var", v);
  return v.cast<const PyVar&>().var;
}

Var out_arg(py::handle v, const std::string& where) {
  if (v.is_none()) return Var();
  return var_arg(v, where);
}

int64_t int_arg(py::handle v, const std::string& where) {
  if (PyBool_Check(v.ptr()) != 0 || PyIndex_Check(v.ptr()) == 0) bad_arg(where, "an int", v);
  py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) throw_type_error(where + ": " + short_repr(v) + " does not fit in int64");
  return x;
}

double double_arg(py::handle v, const std::string& where) {
  if (PyBool_Check(v.ptr()) != 0 || (PyFloat_Check(v.ptr()) == 0 && PyIndex_Check(v.ptr()) == 0 &&
                                     !py::hasattr(v, "__float__"))) {
    bad_arg(where, "a number", v);
  }
  const double d = PyFloat_AsDouble(v.ptr());
  if (d == -1.0 && PyErr_Occurred() != nullptr) throw py::error_already_set();
  return d;
}

bool bool_arg(py::handle v, const std::string& where) {
  if (PyBool_Check(v.ptr()) == 0) bad_arg(where, "a bool", v);
  return v.ptr() == Py_True;
}

std::string str_arg(py::handle v, const std::string& where) {
  if (PyUnicode_Check(v.ptr()) == 0) bad_arg(where, "a str", v);
  return v.cast<std::string>();
}

std::vector<int64_t> ints_arg(py::handle v, const std::string& where) {
  if (PyList_Check(v.ptr()) == 0 && PyTuple_Check(v.ptr()) == 0) {
    bad_arg(where, "a list of ints", v);
  }
  std::vector<int64_t> out;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
  for (size_t i = 0; i < seq.size(); ++i) {
    out.push_back(int_arg(seq[i], where + "[" + std::to_string(i) + "]"));
  }
  return out;
}

// A tensor dtype: an element cf.VarType or anything numpy.dtype() accepts.
DType dtype_arg(py::handle v, const std::string& where) {
  if (py::isinstance<VarType>(v)) {
    const VarType t = v.cast<VarType>();
    if (!is_element_type(t)) {
      throw_type_error(where + ": VarType." + std::string(var_type_name(t)) +
                       " is not a tensor element type");
    }
    return dtype_from_var_type(t);
  }
  py::object dt;
  try {
    dt = py::module_::import("numpy").attr("dtype")(v);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    bad_arg(where, "a dtype (a cf.VarType element type or anything numpy.dtype() accepts)", v);
  }
  const std::string name = py::str(dt).cast<std::string>();
  try {
    return dtype_from_name(name);
  } catch (const Error&) {
    throw_type_error(where + ": NumPy dtype '" + name +
                     "' is not a chanflow dtype (bool, int8, int16, int32, int64, uint8, "
                     "float16, float32, float64)");
  }
}

// A channel's element: a cf.VarType, or a dtype (its element VarType).
VarType element_arg(py::handle v, const std::string& where) {
  if (py::isinstance<VarType>(v)) return v.cast<VarType>();
  return var_type_from_dtype(dtype_arg(v, where));
}

// Op arguments with Var objects replaced by their names, so append_op takes either.
py::object names_of_vars(py::handle v) {
  if (py::isinstance<PyVar>(v)) return py::str(v.cast<const PyVar&>().var.name());
  if (PyDict_Check(v.ptr()) != 0) {
    py::dict out;
    for (auto item : py::reinterpret_borrow<py::dict>(v))
      out[item.first] = names_of_vars(item.second);
    return out;
  }
  if (PyList_Check(v.ptr()) != 0 || PyTuple_Check(v.ptr()) != 0) {
    py::list out;
    for (py::handle e : py::reinterpret_borrow<py::sequence>(v)) out.append(names_of_vars(e));
    if (PyTuple_Check(v.ptr()) != 0) return py::tuple(out);
    return out;
  }
  return py::reinterpret_borrow<py::object>(v);
}

// ---- results ----

ProgramBuilder& builder_of(const py::object& self) { return self.cast<ProgramBuilder&>(); }

py::object wrap_var(Var v, const py::object& owner) {
  if (!v.valid()) return py::none();
  return py::cast(PyVar{std::move(v), owner});
}

template <class G>
py::object wrap_guard(G g, const py::object& owner) {
  auto box = std::make_unique<GuardBox<G>>();
  box->owner = owner;
  box->guard.emplace(std::move(g));
  return py::cast(std::move(box));
}

// Closes a guard whose `with` body raised, as a C++ guard unwound by an exception closes: its
// destructor runs while an exception is in flight, so it marks the builder broken rather than
// emit half an op.
template <class G>
void abandon(std::optional<G>& g) {
  struct Unwind {};
  if (!g) return;
  try {
    G doomed = std::move(*g);
    g.reset();
    throw Unwind{};
  } catch (const Unwind&) {
  }
}

template <class G>
void close_guard(GuardBox<G>& box) {
  if (box.guard) box.guard->close();
}

template <class G>
void def_guard_protocol(py::class_<GuardBox<G>>& cls) {
  cls.def(
         "close", [](GuardBox<G>& box) { close_guard(box); },
         "Closes the block now (emitting its op); raises on misuse (guards closed out of order). "
         "Idempotent.")
      .def_property_readonly(
          "block",
          [](const GuardBox<G>& box) {
            if (!box.guard) throw_type_error("guard: the guard was abandoned");
            return box.guard->block();
          },
          "The index of the block this guard opened.")
      .def("__enter__", [](py::object self) { return self; })
      .def(
          "__exit__",
          [](GuardBox<G>& box, py::handle exc_type, py::handle, py::handle) {
            if (exc_type.is_none()) {
              close_guard(box);
            } else {
              abandon(box.guard);
            }
            return false;
          },
          py::arg("exc_type"), py::arg("exc"), py::arg("tb"));
}

// ---- op methods ----

using UnaryOp = Var (ProgramBuilder::*)(const Var&, Var);
using BinaryOp = Var (ProgramBuilder::*)(const Var&, const Var&, Var);

void def_unary(py::class_<ProgramBuilder>& cls, const char* name, UnaryOp op, const char* doc) {
  const std::string method = std::string("ProgramBuilder.") + name;
  cls.def(
      name,
      [op, method](py::object self, py::handle x, py::handle out) {
        Var r = (builder_of(self).*op)(var_arg(x, method + ": x"), out_arg(out, method + ": out"));
        return wrap_var(std::move(r), self);
      },
      py::arg("x"), py::arg("out") = py::none(), doc);
}

void def_binary(py::class_<ProgramBuilder>& cls, const char* name, BinaryOp op, const char* doc) {
  const std::string method = std::string("ProgramBuilder.") + name;
  cls.def(
      name,
      [op, method](py::object self, py::handle x, py::handle y, py::handle out) {
        Var r = (builder_of(self).*op)(var_arg(x, method + ": x"), var_arg(y, method + ": y"),
                                       out_arg(out, method + ": out"));
        return wrap_var(std::move(r), self);
      },
      py::arg("x"), py::arg("y"), py::arg("out") = py::none(), doc);
}

std::string var_repr(const Var& v) {
  std::string out = "Var('" + v.name() + "', " + std::string(var_type_name(v.type()));
  out += " " + std::string(var_type_name(v.element()));
  return out + ", block " + std::to_string(v.block()) + ")";
}

}  // namespace

void bind_builder(py::module_& m) {
  py::enum_<VarType> var_type(m, "VarType",
                              "Fluid's VarType numbering: tensor element types (BOOL, INT64, "
                              "FP32 ...) and variable kinds (LOD_TENSOR, CHANNEL ...).");
  for (int32_t i = 0; i <= 21; ++i) {
    const auto t = static_cast<VarType>(i);
    var_type.value(std::string(var_type_name(t)).c_str(), t);
  }

  py::class_<PyVar>(m, "Var",
                    "A variable of a ProgramBuilder: its name and type. Made by the builder's "
                    "methods; keeps its builder alive.")
      .def_property_readonly(
          "name", [](const PyVar& v) { return v.var.name(); }, "The variable's name.")
      .def_property_readonly(
          "type", [](const PyVar& v) { return v.var.type(); }, "LOD_TENSOR or CHANNEL.")
      .def_property_readonly(
          "element", [](const PyVar& v) { return v.var.element(); },
          "Tensors: the element type. Channels: what the channel carries (an element type, "
          "LOD_TENSOR for any tensor, CHANNEL for channels).")
      .def_property_readonly(
          "dtype",
          [](const PyVar& v) {
            return py::module_::import("numpy").attr("dtype")(
                std::string(dtype_name(v.var.dtype())));
          },
          "A tensor's dtype (a numpy.dtype); chanflow.TypeError for a channel.")
      .def_property_readonly(
          "is_channel", [](const PyVar& v) { return v.var.is_channel(); },
          "Whether the variable is a channel.")
      .def_property_readonly(
          "block", [](const PyVar& v) { return v.var.block(); },
          "The index of the block that declares it.")
      .def_property_readonly(
          "valid", [](const PyVar& v) { return v.var.valid(); },
          "Always True (a C++ default Var is None in Python).")
      .def("__repr__", [](const PyVar& v) { return var_repr(v.var); });

  py::class_<PyBlockGuard> block_guard(
      m, "BlockGuard",
      "An open sub-block of a ProgramBuilder (go, while_loop, conditional_block, a select case). "
      "Use it with `with`: the block closes at the end (or call close()). A body that raises "
      "abandons the block and marks the builder broken (build() raises), as in C++.");
  def_guard_protocol(block_guard);

  py::class_<PySelectGuard> select_guard(
      m, "SelectGuard",
      "An open select of a ProgramBuilder: add cases with case_send, case_recv and case_default "
      "(each returns the guard of the case's body). Closing it emits the select op.");
  def_guard_protocol(select_guard);
  select_guard
      .def(
          "case_send",
          [](PySelectGuard& s, py::handle ch, py::handle x) {
            if (!s.guard) throw_type_error("select: case_send on an abandoned select");
            return wrap_guard(s.guard->case_send(var_arg(ch, "SelectGuard.case_send: ch"),
                                                 var_arg(x, "SelectGuard.case_send: x")),
                              s.owner);
          },
          py::arg("ch"), py::arg("x"),
          "A case that sends x on ch when chosen; the ops added in its guard are its body.")
      .def(
          "case_recv",
          [](PySelectGuard& s, py::handle ch, py::handle out) {
            if (!s.guard) throw_type_error("select: case_recv on an abandoned select");
            return wrap_guard(s.guard->case_recv(var_arg(ch, "SelectGuard.case_recv: ch"),
                                                 out_arg(out, "SelectGuard.case_recv: out")),
                              s.owner);
          },
          py::arg("ch"), py::arg("out") = py::none(),
          "A case that receives from ch into `out` (a new variable when None) when chosen.")
      .def(
          "case_default",
          [](PySelectGuard& s) {
            if (!s.guard) throw_type_error("select: case_default on an abandoned select");
            return wrap_guard(s.guard->case_default(), s.owner);
          },
          "The default case (at most one): chosen when no other case can proceed.")
      .def(
          "last_received",
          [](const PySelectGuard& s) -> py::object {
            if (!s.guard) return py::none();
            return wrap_var(s.guard->last_received(), s.owner);
          },
          "The variable the last case_recv receives into (None before any).");

  py::class_<ProgramBuilder> b(
      m, "ProgramBuilder",
      "Builds a program op by op, as the C++ ProgramBuilder (its methods and names): variables, "
      "compute ops, channel ops, and go / while_loop / conditional_block / select blocks as "
      "context managers. build() returns the verified cf.Program. One builder, one thread.");
  b.def(py::init<>());

  // ---- variables ----
  b.def(
      "var",
      [](py::object self, py::handle name, py::handle dtype, py::handle dims) {
        return wrap_var(builder_of(self).var(str_arg(name, "ProgramBuilder.var: name"),
                                             dtype_arg(dtype, "ProgramBuilder.var: dtype"),
                                             ints_arg(dims, "ProgramBuilder.var: dims")),
                        self);
      },
      py::arg("name"), py::arg("dtype"), py::arg("dims") = py::list(),
      "Declares a tensor variable in the current block (Error if the name is taken there).");
  b.def(
      "make_channel",
      [](py::object self, py::handle element, py::handle capacity, py::handle name) {
        const std::string w = "ProgramBuilder.make_channel";
        const int64_t cap = int_arg(capacity, w + ": capacity");
        const std::string n = str_arg(name, w + ": name");
        ProgramBuilder& pb = builder_of(self);
        Var v = py::isinstance<VarType>(element)
                    ? pb.make_channel(element.cast<VarType>(), cap, n)
                    : pb.make_channel(dtype_arg(element, w + ": element"), cap, n);
        return wrap_var(std::move(v), self);
      },
      py::arg("element"), py::arg("capacity") = 0, py::arg("name") = "",
      "Declares a channel variable and emits channel_create. `element`: a dtype (tensors of it), "
      "VarType.LOD_TENSOR (any tensor) or VarType.CHANNEL (channels).");
  b.def(
      "declare_channel",
      [](py::object self, py::handle name, py::handle element, py::handle capacity) {
        const std::string w = "ProgramBuilder.declare_channel";
        return wrap_var(builder_of(self).declare_channel(str_arg(name, w + ": name"),
                                                         element_arg(element, w + ": element"),
                                                         int_arg(capacity, w + ": capacity")),
                        self);
      },
      py::arg("name"), py::arg("element"), py::arg("capacity") = 0,
      "Declares a channel variable without creating a channel (nil until assigned).");
  b.def(
      "lookup",
      [](py::object self, py::handle name) {
        return wrap_var(builder_of(self).lookup(str_arg(name, "ProgramBuilder.lookup: name")),
                        self);
      },
      py::arg("name"), "The variable visible from the current block by that name; Error if none.");

  // ---- compute ops ----
  b.def(
      "fill_constant",
      [](py::object self, py::handle shape, py::handle dtype, py::handle value, py::handle out) {
        const std::string w = "ProgramBuilder.fill_constant";
        return wrap_var(builder_of(self).fill_constant(
                            ints_arg(shape, w + ": shape"), dtype_arg(dtype, w + ": dtype"),
                            double_arg(value, w + ": value"), out_arg(out, w + ": out")),
                        self);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("value"), py::arg("out") = py::none(),
      "A tensor of `shape` filled with `value`.");
  def_unary(b, "assign", &ProgramBuilder::assign,
            "A copy of x (a channel's handle for a channel).");
  def_binary(b, "elementwise_add", &ProgramBuilder::elementwise_add, "x + y (broadcasting).");
  def_binary(b, "elementwise_sub", &ProgramBuilder::elementwise_sub, "x - y (broadcasting).");
  def_binary(b, "elementwise_mul", &ProgramBuilder::elementwise_mul, "x * y (broadcasting).");
  def_binary(b, "elementwise_div", &ProgramBuilder::elementwise_div, "x / y (broadcasting).");
  def_binary(b, "elementwise_max", &ProgramBuilder::elementwise_max, "max(x, y) elementwise.");
  def_binary(b, "elementwise_min", &ProgramBuilder::elementwise_min, "min(x, y) elementwise.");
  def_binary(b, "equal", &ProgramBuilder::equal, "x == y (BOOL).");
  def_binary(b, "not_equal", &ProgramBuilder::not_equal, "x != y (BOOL).");
  def_binary(b, "less_than", &ProgramBuilder::less_than, "x < y (BOOL).");
  def_binary(b, "less_equal", &ProgramBuilder::less_equal, "x <= y (BOOL).");
  def_binary(b, "greater_than", &ProgramBuilder::greater_than, "x > y (BOOL).");
  def_binary(b, "greater_equal", &ProgramBuilder::greater_equal, "x >= y (BOOL).");
  def_binary(b, "logical_and", &ProgramBuilder::logical_and, "x and y (BOOL).");
  def_binary(b, "logical_or", &ProgramBuilder::logical_or, "x or y (BOOL).");
  def_unary(b, "logical_not", &ProgramBuilder::logical_not, "not x (BOOL).");
  def_unary(b, "relu", &ProgramBuilder::relu, "max(x, 0).");
  def_unary(b, "sigmoid", &ProgramBuilder::sigmoid, "1 / (1 + exp(-x)).");
  def_unary(b, "tanh", &ProgramBuilder::tanh, "tanh(x).");
  b.def(
      "increment",
      [](py::object self, py::handle x, py::handle step, py::handle out) {
        const std::string w = "ProgramBuilder.increment";
        return wrap_var(
            builder_of(self).increment(var_arg(x, w + ": x"), double_arg(step, w + ": step"),
                                       out_arg(out, w + ": out")),
            self);
      },
      py::arg("x"), py::arg("step") = 1.0, py::arg("out") = py::none(), "x + step.");
  b.def(
      "scale",
      [](py::object self, py::handle x, py::handle scale, py::handle bias, py::handle out) {
        const std::string w = "ProgramBuilder.scale";
        return wrap_var(
            builder_of(self).scale(var_arg(x, w + ": x"), double_arg(scale, w + ": scale"),
                                   double_arg(bias, w + ": bias"), out_arg(out, w + ": out")),
            self);
      },
      py::arg("x"), py::arg("scale"), py::arg("bias") = 0.0, py::arg("out") = py::none(),
      "x * scale + bias.");
  b.def(
      "cast",
      [](py::object self, py::handle x, py::handle to, py::handle out) {
        const std::string w = "ProgramBuilder.cast";
        return wrap_var(builder_of(self).cast(var_arg(x, w + ": x"), dtype_arg(to, w + ": to"),
                                              out_arg(out, w + ": out")),
                        self);
      },
      py::arg("x"), py::arg("to"), py::arg("out") = py::none(), "x converted to dtype `to`.");
  b.def(
      "matmul",
      [](py::object self, py::handle x, py::handle y, py::handle tx, py::handle ty,
         py::handle out) {
        const std::string w = "ProgramBuilder.matmul";
        return wrap_var(
            builder_of(self).matmul(var_arg(x, w + ": x"), var_arg(y, w + ": y"),
                                    bool_arg(tx, w + ": transpose_x"),
                                    bool_arg(ty, w + ": transpose_y"), out_arg(out, w + ": out")),
            self);
      },
      py::arg("x"), py::arg("y"), py::arg("transpose_x") = false, py::arg("transpose_y") = false,
      py::arg("out") = py::none(), "The matrix product of x and y (optionally transposed).");
  b.def(
      "softmax",
      [](py::object self, py::handle x, py::handle axis, py::handle out) {
        const std::string w = "ProgramBuilder.softmax";
        return wrap_var(builder_of(self).softmax(var_arg(x, w + ": x"), int_arg(axis, w + ": axis"),
                                                 out_arg(out, w + ": out")),
                        self);
      },
      py::arg("x"), py::arg("axis") = -1, py::arg("out") = py::none(), "softmax along `axis`.");
  for (const bool mean : {false, true}) {
    const char* name = mean ? "reduce_mean" : "reduce_sum";
    b.def(
        name,
        [mean, name](py::object self, py::handle x, py::handle dims, py::handle keep_dim,
                     py::handle out) {
          const std::string w = std::string("ProgramBuilder.") + name;
          ProgramBuilder& pb = builder_of(self);
          const Var& xv = var_arg(x, w + ": x");
          std::vector<int64_t> d = ints_arg(dims, w + ": dims");
          const bool keep = bool_arg(keep_dim, w + ": keep_dim");
          Var o = out_arg(out, w + ": out");
          return wrap_var(mean ? pb.reduce_mean(xv, d, keep, o) : pb.reduce_sum(xv, d, keep, o),
                          self);
        },
        py::arg("x"), py::arg("dims"), py::arg("keep_dim") = false, py::arg("out") = py::none(),
        mean ? "The mean over `dims`." : "The sum over `dims`.");
  }
  b.def(
      "reshape",
      [](py::object self, py::handle x, py::handle shape, py::handle out) {
        const std::string w = "ProgramBuilder.reshape";
        return wrap_var(
            builder_of(self).reshape(var_arg(x, w + ": x"), ints_arg(shape, w + ": shape"),
                                     out_arg(out, w + ": out")),
            self);
      },
      py::arg("x"), py::arg("shape"), py::arg("out") = py::none(), "x with another shape.");
  b.def(
      "transpose",
      [](py::object self, py::handle x, py::handle perm, py::handle out) {
        const std::string w = "ProgramBuilder.transpose";
        return wrap_var(
            builder_of(self).transpose(var_arg(x, w + ": x"), ints_arg(perm, w + ": perm"),
                                       out_arg(out, w + ": out")),
            self);
      },
      py::arg("x"), py::arg("perm"), py::arg("out") = py::none(), "x with axes permuted.");
  b.def(
      "print",
      [](py::object self, py::handle x, py::handle message) {
        const std::string w = "ProgramBuilder.print";
        builder_of(self).print(var_arg(x, w + ": x"), str_arg(message, w + ": message"));
      },
      py::arg("x"), py::arg("message") = "", "Prints x (and `message`) when the op runs.");

  // ---- CSP ----
  b.def(
      "channel_send",
      [](py::object self, py::handle ch, py::handle x) {
        const std::string w = "ProgramBuilder.channel_send";
        return wrap_var(
            builder_of(self).channel_send(var_arg(ch, w + ": ch"), var_arg(x, w + ": x")), self);
      },
      py::arg("ch"), py::arg("x"), "Sends x on ch; returns the Status variable (BOOL).");
  b.def(
      "channel_recv",
      [](py::object self, py::handle ch, py::handle out) {
        const std::string w = "ProgramBuilder.channel_recv";
        auto [v, ok] =
            builder_of(self).channel_recv(var_arg(ch, w + ": ch"), out_arg(out, w + ": out"));
        return py::make_tuple(wrap_var(std::move(v), self), wrap_var(std::move(ok), self));
      },
      py::arg("ch"), py::arg("out") = py::none(),
      "Receives from ch into `out` (a new variable when None); returns (value, ok), ok a BOOL "
      "variable, false once the channel is closed and drained.");
  b.def(
      "channel_close",
      [](py::object self, py::handle ch) {
        builder_of(self).channel_close(var_arg(ch, "ProgramBuilder.channel_close: ch"));
      },
      py::arg("ch"), "Closes ch.");

  // ---- control flow ----
  b.def(
      "go", [](py::object self) { return wrap_guard(builder_of(self).go(), self); },
      "Opens a block whose ops run on a new green thread (a go op); use with `with`.");
  b.def(
      "while_loop",
      [](py::object self, py::handle cond) {
        return wrap_guard(
            builder_of(self).while_loop(var_arg(cond, "ProgramBuilder.while_loop: cond")), self);
      },
      py::arg("cond"),
      "Opens a block that runs while `cond` (a BOOL tensor the body updates) is true.");
  b.def(
      "conditional_block",
      [](py::object self, py::handle cond) {
        return wrap_guard(builder_of(self).conditional_block(
                              var_arg(cond, "ProgramBuilder.conditional_block: cond")),
                          self);
      },
      py::arg("cond"),
      "Opens a block that runs once if `cond` (a one-element BOOL tensor) is true.");
  b.def(
      "select", [](py::object self) { return wrap_guard(builder_of(self).select(), self); },
      "Opens a select; add cases on the returned SelectGuard.");

  // ---- generic ----
  b.def(
      "append_op",
      [](py::object self, py::handle type, py::handle inputs, py::handle outputs,
         py::handle attrs) {
        const std::string w = "ProgramBuilder.append_op";
        const std::string t = str_arg(type, w + ": type");
        const std::string ow = w + " ('" + t + "')";
        OpDesc::Attrs a;
        if (!attrs.is_none()) a = op_attrs_from_python(t, attrs, ow + " attrs");
        builder_of(self).append_op(t, op_args_from_python(names_of_vars(inputs), ow + " inputs"),
                                   op_args_from_python(names_of_vars(outputs), ow + " outputs"), a);
      },
      py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::none(),
      "Appends any registered op. inputs/outputs: {parameter: [Var or name, ...]} (or a list of "
      "pairs); attrs: {name: value}, typed by the op's schema as Program.from_blocks types them.");
  b.def(
      "current_block", [](py::object self) { return builder_of(self).current_block(); },
      "The index of the block ops are appended to.");
  b.def(
      "build", [](py::object self) { return builder_of(self).build(); },
      "The verified program (attribute defaults filled). Raises when a guard is still open or "
      "a block was abandoned. The builder may go on; build() again gives the larger program.");
}

}  // namespace chanflow::python
