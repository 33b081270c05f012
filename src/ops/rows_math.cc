// rows_math.cc — arithmetic rows: mul (what fc is built from), mean, sum, the unary math ops,
// sign, and the gradient rules of the executor's built-in elementwise, activation, softmax and
// scale ops with the gradient ops they emit.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "chanflow/tensor/nn.h"
#include "rows.h"
#include "shape_util.h"

namespace chanflow {
namespace {

// ---- mul ------------------------------------------------------------------------------------
// Paddle's mul: X flattened to a matrix at x_num_col_dims, Y at y_num_col_dims; Out has X's
// leading dims and Y's trailing ones.
std::string check_num_col_dims(const Attr& a) {
  return a.as_int() >= 1 ? "" : "must be >= 1, got " + std::to_string(a.as_int());
}

void infer_mul(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  const TensorInfo& y = c.input(1);
  const int64_t xn = a.i("x_num_col_dims"), yn = a.i("y_num_col_dims");
  if (xn >= static_cast<int64_t>(x.shape.size()) || yn >= static_cast<int64_t>(y.shape.size())) {
    CHANFLOW_OP_THROW(ShapeError, "mul")
        << "x_num_col_dims " << xn << " / y_num_col_dims " << yn << " must be below the ranks of X "
        << shape_to_string(x.shape) << " and Y " << shape_to_string(y.shape);
  }
  const int64_t k1 = known_product(x.shape, xn, static_cast<int64_t>(x.shape.size()));
  const int64_t k2 = known_product(y.shape, 0, yn);
  if (k1 >= 0 && k2 >= 0 && k1 != k2) {
    CHANFLOW_OP_THROW(ShapeError, "mul")
        << "X " << shape_to_string(x.shape) << " flattened at " << xn << " has " << k1
        << " columns but Y " << shape_to_string(y.shape) << " flattened at " << yn << " has " << k2
        << " rows";
  }
  if (x.dtype != y.dtype) {
    CHANFLOW_OP_THROW(TypeError, "mul") << "X is " << x.dtype << " but Y is " << y.dtype;
  }
  TensorInfo out{x.dtype, {}};
  out.shape.assign(x.shape.begin(), x.shape.begin() + xn);
  out.shape.insert(out.shape.end(), y.shape.begin() + yn, y.shape.end());
  c.set_output(0, out);
}

Tensor as_matrix(const Tensor& t, int64_t col_dims) {
  return t.reshape(
      {shape_product(t.shape(), 0, col_dims), shape_product(t.shape(), col_dims, t.ndim())});
}

void check_float(const Tensor& t, const char* op, const char* slot) {
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, op) << slot << " must be FP32 or FP64, it is " << t.dtype();
  }
}

void run_mul(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), y = c.input(1);
  check_float(x, "mul", "X");
  TensorInfo xi{x.dtype(), x.shape()}, yi{y.dtype(), y.shape()};
  const int64_t xn = a.i("x_num_col_dims"), yn = a.i("y_num_col_dims");
  {
    struct Probe : InferCall {
      std::vector<const TensorInfo*> in;
      TensorInfo out;
      size_t num_inputs(int) const override { return 1; }
      const TensorInfo& input(int s, size_t) const override { return *in[static_cast<size_t>(s)]; }
      size_t num_outputs(int) const override { return 1; }
      void set_output(int, TensorInfo i, size_t) override { out = std::move(i); }
    } p;
    p.in = {&xi, &yi};
    infer_mul(a, p);  // the shape checks, once
  }
  const Tensor x2 = as_matrix(x, xn), y2 = as_matrix(y, yn);
  KernelOptions o =
      c.options(x2.shape()[0] * x2.shape()[1] * y2.shape()[1], WorkKind::kMultiplyAdds);
  Shape out_shape(x.shape().begin(), x.shape().begin() + xn);
  out_shape.insert(out_shape.end(), y.shape().begin() + yn, y.shape().end());
  c.set_output(0, matmul(x2, y2, o).reshape(out_shape));
}

void run_mul_grad(const AttrReader& a, KernelCall& c) {
  // Inputs: X, Y, Out@GRAD. Outputs: X@GRAD, Y@GRAD.
  const Tensor x = c.input(0), y = c.input(1), g = c.input(2);
  const int64_t xn = a.i("x_num_col_dims"), yn = a.i("y_num_col_dims");
  const Tensor x2 = as_matrix(x, xn), y2 = as_matrix(y, yn);
  const Tensor g2 = g.reshape({x2.shape()[0], y2.shape()[1]});
  const int64_t work = x2.shape()[0] * x2.shape()[1] * y2.shape()[1];
  if (c.wants(0)) {
    c.set_output(
        0, matmul(g2, y2.transpose(), c.options(work, WorkKind::kMultiplyAdds)).reshape(x.shape()));
  }
  if (c.wants(1)) {
    c.set_output(
        1, matmul(x2.transpose(), g2, c.options(work, WorkKind::kMultiplyAdds)).reshape(y.shape()));
  }
}

void infer_grads_like_inputs(const AttrReader& a, InferCall& c) {
  // A gradient op whose first inputs are the forward inputs and whose outputs are their
  // gradients, in the same order.
  const int n = static_cast<int>(a.schema().outputs().size());
  for (int k = 0; k < n; ++k) {
    if (c.num_outputs(k) > 0 && c.num_inputs(k) > 0) c.set_output(k, c.input(k));
  }
}

void grad_mul(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "mul_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}

// ---- elementwise add / sub / mul with Paddle's axis ------------------------------------------
// Inputs of the gradient ops: X, Y, Out@GRAD. Outputs: X@GRAD, Y@GRAD.
template <int kOp>  // 0 add, 1 sub, 2 mul
void run_elementwise_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), y = c.input(1), g = c.input(2);
  const int64_t axis = a.i("axis");
  const Tensor ya = align_to(x, y, axis, "elementwise grad");
  KernelOptions o = c.options(g.numel());
  if (c.wants(0)) {
    Tensor gx = kOp == 2 ? mul(g, ya, o) : g;
    c.set_output(0, sum_to(gx, x.shape(), o));
  }
  if (c.wants(1)) {
    Tensor gy = kOp == 2 ? mul(g, x, o) : kOp == 1 ? neg(g, o) : g;
    c.set_output(1, sum_to(gy, ya.shape(), o).reshape(y.shape()));
  }
}

void grad_elementwise_add(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_add_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}
void grad_elementwise_sub(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_sub_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}
void grad_elementwise_mul(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_mul_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}

// ---- activations and unary math -------------------------------------------------------------
// Gradient ops of the form (X or Out, Out@GRAD) -> X@GRAD.
enum class Unary { kRelu, kSigmoid, kTanh, kLog, kExp, kSqrt, kSquare, kAbs };

template <Unary U>
void run_unary_grad(const AttrReader&, KernelCall& c) {
  // Input 0 is X (log, square, abs) or Out (relu, sigmoid, tanh, exp, sqrt); input 1 Out@GRAD.
  const Tensor v = c.input(0), g = c.input(1);
  KernelOptions o = c.options(g.numel());
  const DType dt = g.dtype();
  Tensor r;
  switch (U) {
    // The activations' gradients from their outputs: one fused pass each (tensor/nn.h).
    case Unary::kRelu:  // g * (out > 0)
      r = relu_grad(v, g, o);
      break;
    case Unary::kSigmoid:  // g * out * (1 - out)
      r = sigmoid_grad(v, g, o);
      break;
    case Unary::kTanh:  // g * (1 - out^2)
      r = tanh_grad(v, g, o);
      break;
    case Unary::kLog:  // g / x
      r = div(g, v, o);
      break;
    case Unary::kExp:  // g * out
      r = mul(g, v, o);
      break;
    case Unary::kSqrt:  // g * 0.5 / out
      r = div(mul(g, Tensor::scalar(0.5, dt), o), v, o);
      break;
    case Unary::kSquare:  // g * 2x
      r = mul(g, mul(v, Tensor::scalar(2, dt), o), o);
      break;
    case Unary::kAbs:  // g * sign(x)
      r = mul(g,
              sub(greater(v, Tensor::scalar(0, dt), o).cast(dt),
                  less(v, Tensor::scalar(0, dt), o).cast(dt), o),
              o);
      break;
  }
  c.set_output(0, r);
}

template <Unary U>
void run_unary(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0);
  check_float(x, a.schema().type().c_str(), "X");
  KernelOptions o = c.options(x.numel());
  switch (U) {
    case Unary::kLog:
      c.set_output(0, log(x, o));
      break;
    case Unary::kExp:
      c.set_output(0, exp(x, o));
      break;
    case Unary::kSqrt:
      c.set_output(0, sqrt(x, o));
      break;
    case Unary::kSquare:
      c.set_output(0, mul(x, x, o));
      break;
    case Unary::kAbs:
      c.set_output(0, abs(x, o));
      break;
    default:
      CHANFLOW_CHECK(false) << "run_unary: an executor built-in";
  }
}

// sign: Out = -1, 0 or 1 by the sign of X (NaN stays NaN).
void run_sign(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0);
  check_float(x, "sign", "X");
  c.set_output(0, sign(x, c.options(x.numel())));
}
// sign is flat almost everywhere: X's gradient is zeros of Out@GRAD's shape, rather than none.
// Paddle emits scale(Out@GRAD, 0); fill_zeros_like(Out@GRAD) gives the same zeros (a NaN in
// Out@GRAD aside) and, unlike the executor's built-in scale, runs in graphs too.
void grad_sign(const AttrReader&, GradCall& c) {
  const GradValue g = c.output_grad(0);
  if (!g.valid() || !c.needs_grad(0)) return;
  std::vector<GradValue> r = c.emit("fill_zeros_like", {{"X", {g}}}, {}, {"Out"});
  if (r[0].valid()) c.set_input_grad(0, r[0]);
}

void infer_float_like_x(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, a.schema().type()) << "X must be FP32 or FP64, it is " << x.dtype;
  }
  c.set_output(0, x);
}

// Rules: which forward value the gradient op reads (X or Out).
#define CHANFLOW_UNARY_GRAD_RULE(name, reads)                                                    \
  void grad_##name(const AttrReader&, GradCall& c) {                                             \
    emit_grad_op(c, #name "_grad",                                                               \
                 reads[0] == 'X' ? std::vector<std::string>{"X"} : std::vector<std::string>{},   \
                 reads[0] == 'O' ? std::vector<std::string>{"Out"} : std::vector<std::string>{}, \
                 {"Out"}, {"X"});                                                                \
  }
CHANFLOW_UNARY_GRAD_RULE(relu, "Out")
CHANFLOW_UNARY_GRAD_RULE(sigmoid, "Out")
CHANFLOW_UNARY_GRAD_RULE(tanh, "Out")
CHANFLOW_UNARY_GRAD_RULE(log, "X")
CHANFLOW_UNARY_GRAD_RULE(exp, "Out")
CHANFLOW_UNARY_GRAD_RULE(sqrt, "Out")
CHANFLOW_UNARY_GRAD_RULE(square, "X")
CHANFLOW_UNARY_GRAD_RULE(abs, "X")
#undef CHANFLOW_UNARY_GRAD_RULE

void infer_grad_like_second(const AttrReader&, InferCall& c) {
  // (X or Out, Out@GRAD) -> X@GRAD: the type of Out@GRAD (the first present input when the
  // forward value is absent).
  c.set_output(0, c.input(c.num_inputs(1) > 0 ? 1 : 0));
}

// ---- softmax --------------------------------------------------------------------------------
void run_softmax_grad(const AttrReader& a, KernelCall& c) {
  // (Out, Out@GRAD) -> X@GRAD = Out * (g - sum(g * Out, axis)).
  const Tensor out = c.input(0), g = c.input(1);
  KernelOptions o = c.options(g.numel());
  const Tensor s = sum(mul(g, out, o), {a.i("axis")}, true, o);
  c.set_output(0, mul(out, sub(g, s, o), o));
}
void grad_softmax(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "softmax_grad", {}, {"Out"}, {"Out"}, {"X"});
}

// ---- scale ----------------------------------------------------------------------------------
// d(scale * x + bias)/dx = scale: the gradient is the scale op itself with bias 0.
void grad_scale(const AttrReader& a, GradCall& c) {
  const GradValue g = c.output_grad(0);
  if (!g.valid() || !c.needs_grad(0)) return;
  std::vector<GradValue> r = c.emit(
      "scale", {{"X", {g}}}, {{"scale", Attr::f(a.f("scale"))}, {"bias", Attr::f(0.0)}}, {"Out"});
  if (r[0].valid()) c.set_input_grad(0, r[0]);
}

// ---- mean -----------------------------------------------------------------------------------
void infer_mean(const AttrReader&, InferCall& c) {
  c.set_output(0, TensorInfo{c.input(0).dtype, {1}});
}
void run_mean(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0);
  check_float(x, "mean", "X");
  c.set_output(0, mean(x, {}, false, c.options(x.numel())).reshape({1}));
}
void run_mean_grad(const AttrReader&, KernelCall& c) {
  // (X, Out@GRAD) -> X@GRAD = Out@GRAD / numel(X) everywhere.
  const Tensor x = c.input(0), g = c.input(1);
  const double n = static_cast<double>(std::max<int64_t>(x.numel(), 1));
  Tensor r = Tensor::empty(x.shape(), x.dtype());
  r.fill(g.cast(DType::kFloat64).item<double>() / n);
  c.set_output(0, r);
}
void infer_mean_grad(const AttrReader&, InferCall& c) { c.set_output(0, c.input(0)); }
void grad_mean(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "mean_grad", {"X"}, {}, {"Out"}, {"X"});
}

// ---- sum (n-ary) ----------------------------------------------------------------------------
void infer_sum(const AttrReader&, InferCall& c) {
  TensorInfo out = c.input(0);
  for (size_t i = 1; i < c.num_inputs(0); ++i) {
    const TensorInfo& t = c.input(0, i);
    if (t.dtype != out.dtype) {
      CHANFLOW_OP_THROW(TypeError, "sum")
          << "X[" << i << "] is " << t.dtype << " but X[0] is " << out.dtype;
    }
    if (!shapes_compatible(t.shape, out.shape)) {
      CHANFLOW_OP_THROW(ShapeError, "sum")
          << "X[" << i << "] has shape " << shape_to_string(t.shape) << " but X[0] has "
          << shape_to_string(out.shape);
    }
  }
  c.set_output(0, out);
}
void run_sum(const AttrReader&, KernelCall& c) {
  Tensor acc = c.input(0);
  for (size_t i = 1; i < c.num_inputs(0); ++i) {
    const Tensor t = c.input(0, i);
    if (t.shape() != acc.shape() || t.dtype() != acc.dtype()) {
      CHANFLOW_OP_THROW(ShapeError, "sum")
          << "X[" << i << "] is " << t.dtype() << " " << shape_to_string(t.shape())
          << " but X[0] is " << acc.dtype() << " " << shape_to_string(acc.shape());
    }
    acc = add(acc, t, c.options(t.numel()));
  }
  c.set_output(0, acc);
}
void grad_sum(const AttrReader&, GradCall& c) {
  // Every addend's gradient is the output's.
  const GradValue g = c.output_grad(0);
  if (!g.valid()) return;
  for (size_t i = 0; c.input(0, i).valid(); ++i) {
    if (c.needs_grad(0, i)) c.set_input_grad(0, g, i);
  }
}

// ---- more gradient rules of the executor's built-in ops --------------------------------------
// g broadcast (NumPy's rules) to `shape`.
Tensor broadcast_to_shape(const Tensor& g, const Shape& shape, DType dt, const KernelOptions& o) {
  return add(Tensor::zeros(shape, dt), g, o);
}

// reduce_sum_grad / reduce_mean_grad: X, Out@GRAD -> X@GRAD (attributes dim, keep_dim,
// reduce_all as the forward op's).
template <bool kMean>
void run_reduce_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), g = c.input(1);
  const int64_t nd = x.ndim();
  std::vector<bool> reduced(static_cast<size_t>(nd), a.b("reduce_all"));
  if (!a.b("reduce_all")) {
    for (int64_t d : a.ints("dim")) {
      const int64_t k = d < 0 ? d + nd : d;
      if (k < 0 || k >= nd) {
        CHANFLOW_OP_THROW(ShapeError, a.schema().type())
            << "dim " << d << " out of range for X of shape " << shape_to_string(x.shape());
      }
      reduced[static_cast<size_t>(k)] = true;
    }
  }
  // The upstream gradient with the reduced axes kept (extent 1).
  Shape kept = x.shape();
  double count = 1;
  for (int64_t k = 0; k < nd; ++k) {
    if (reduced[static_cast<size_t>(k)]) {
      count *= static_cast<double>(kept[static_cast<size_t>(k)]);
      kept[static_cast<size_t>(k)] = 1;
    }
  }
  KernelOptions o = c.options(x.numel());
  Tensor gk = g.reshape(kept);
  if (kMean) gk = mul(gk, Tensor::scalar(1.0 / std::max(count, 1.0), g.dtype()), o);
  c.set_output(0, broadcast_to_shape(gk, x.shape(), g.dtype(), o));
}

void grad_reduce_sum(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "reduce_sum_grad", {"X"}, {}, {"Out"}, {"X"});
}
void grad_reduce_mean(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "reduce_mean_grad", {"X"}, {}, {"Out"}, {"X"});
}

// reshape_grad: X, Out@GRAD -> X@GRAD.
void run_reshape_grad(const AttrReader&, KernelCall& c) {
  c.set_output(0, c.input(1).reshape(c.input(0).shape()));
}
void grad_reshape(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "reshape_grad", {"X"}, {}, {"Out"}, {"X"});
}

// transpose_grad: Out@GRAD -> X@GRAD, permuted back.
void run_transpose_grad(const AttrReader& a, KernelCall& c) {
  const std::vector<int64_t> perm = a.ints("axis");
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(perm.size()) : perm[i];
    inv[static_cast<size_t>(p)] = static_cast<int64_t>(i);
  }
  c.set_output(0, c.input(0).transpose(inv).contiguous());
}
void infer_transpose_grad(const AttrReader& a, InferCall& c) {
  const TensorInfo& g = c.input(0);
  const std::vector<int64_t> perm = a.ints("axis");
  TensorInfo out{g.dtype, Shape(g.shape.size(), -1)};
  if (perm.size() == g.shape.size()) {
    for (size_t i = 0; i < perm.size(); ++i) {
      const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(perm.size()) : perm[i];
      if (p >= 0 && p < static_cast<int64_t>(perm.size()))
        out.shape[static_cast<size_t>(p)] = g.shape[i];
    }
  }
  c.set_output(0, out);
}
void grad_transpose(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "transpose_grad", {}, {}, {"Out"}, {"X"});
}

// elementwise_div_grad, _max_grad, _min_grad: X, Y, Out@GRAD -> X@GRAD, Y@GRAD (Paddle's axis).
template <int kOp>  // 0 div, 1 max, 2 min
void run_elementwise_grad2(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), y = c.input(1), g = c.input(2);
  const Tensor ya = align_to(x, y, a.i("axis"), a.schema().type().c_str());
  KernelOptions o = c.options(g.numel());
  const DType dt = g.dtype();
  Tensor gx, gy;
  if (kOp == 0) {
    gx = div(g, ya, o);
    gy = neg(div(mul(g, x, o), mul(ya, ya, o), o), o);
  } else {
    // Paddle: max gives X the gradient where X > Y, else Y; min where X < Y, else Y.
    const Tensor to_x = (kOp == 1 ? greater(x, ya, o) : less(x, ya, o)).cast(dt);
    gx = mul(g, to_x, o);
    gy = mul(g, sub(Tensor::scalar(1, dt), to_x, o), o);
  }
  if (c.wants(0)) c.set_output(0, sum_to(gx, x.shape(), o));
  if (c.wants(1)) c.set_output(1, sum_to(gy, ya.shape(), o).reshape(y.shape()));
}
void grad_elementwise_div(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_div_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}
void grad_elementwise_max(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_max_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}
void grad_elementwise_min(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "elementwise_min_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}

// softplus_grad: X, Out@GRAD -> X@GRAD = g * sigmoid(X).
void run_softplus_grad(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0), g = c.input(1);
  KernelOptions o = c.options(g.numel());
  c.set_output(0, mul(g, sigmoid(x, o), o));
}
void grad_softplus(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "softplus_grad", {"X"}, {}, {"Out"}, {"X"});
}

// matmul_grad: X, Y, Out@GRAD -> X@GRAD, Y@GRAD for Out = alpha * op(X) @ op(Y) on operands of
// rank >= 2 with the same batch dims (Paddle's front end's uses); others are an error naming
// the shapes.
Tensor swap_last2(const Tensor& t) {
  std::vector<int64_t> perm(static_cast<size_t>(t.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return t.transpose(perm);
}
void run_matmul_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), y = c.input(1), g = c.input(2);
  if (x.ndim() < 2 || x.ndim() != y.ndim() ||
      !std::equal(x.shape().begin(), x.shape().end() - 2, y.shape().begin())) {
    CHANFLOW_OP_THROW(ShapeError, "matmul_grad")
        << "the gradient needs X and Y of rank >= 2 with equal batch dims, got X "
        << shape_to_string(x.shape()) << " and Y " << shape_to_string(y.shape());
  }
  const bool tx = a.b("transpose_X"), ty = a.b("transpose_Y");
  const Tensor alpha = Tensor::scalar(a.f("alpha"), g.dtype());
  const int64_t work = g.numel() * (tx ? x.shape()[x.ndim() - 2] : x.shape().back());
  KernelOptions o = c.options(work, WorkKind::kMultiplyAdds);
  const Tensor ox = tx ? swap_last2(x) : x, oy = ty ? swap_last2(y) : y;
  if (c.wants(0)) {
    Tensor d = tx ? matmul(oy, swap_last2(g), o) : matmul(g, swap_last2(oy), o);
    c.set_output(0, mul(d, alpha, o));
  }
  if (c.wants(1)) {
    Tensor d = ty ? matmul(swap_last2(g), ox, o) : matmul(swap_last2(ox), g, o);
    c.set_output(1, mul(d, alpha, o));
  }
}
void grad_matmul(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "matmul_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"});
}

}  // namespace

std::vector<OpDef> math_rows() {
  std::vector<OpDef> rows;
  auto add = [&](const OpDefBuilder& b) { rows.push_back(b.build()); };

  OpDefBuilder mul_row("mul");
  mul_row.doc("Out = X (as a matrix at x_num_col_dims) @ Y (as a matrix at y_num_col_dims)")
      .input("X")
      .input("Y")
      .output("Out")
      .attr("x_num_col_dims", T::kInt, i_default(1), "X's leading dims that form the rows",
            check_num_col_dims)
      .attr("y_num_col_dims", T::kInt, i_default(1), "Y's leading dims that form the rows",
            check_num_col_dims)
      .infer(infer_mul)
      .kernel(run_mul)
      .grad(grad_mul);
  add(mul_row);
  add(mul_row.grad_op("mul_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"})
          .infer(infer_grads_like_inputs)
          .kernel(run_mul_grad));

  // The executor's elementwise ops: their rules here, their gradient ops as rows.
  struct Binary {
    const char* type;
    GradFn rule;
    KernelFn grad_kernel;
  };
  for (const Binary& b :
       {Binary{"elementwise_add", grad_elementwise_add, run_elementwise_grad<0>},
        Binary{"elementwise_sub", grad_elementwise_sub, run_elementwise_grad<1>},
        Binary{"elementwise_mul", grad_elementwise_mul, run_elementwise_grad<2>}}) {
    add(OpDefBuilder::grad_rule_of(b.type).grad(b.rule));
    OpDefBuilder fwd(b.type);  // the built-in schema's slots and attributes, for grad_op
    fwd.input("X").input("Y").output("Out").attr("axis", T::kInt, i_default(-1),
                                                 "broadcast axis of Y in X (-1: NumPy rules)");
    add(fwd.grad_op(std::string(b.type) + "_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"})
            .infer(infer_grads_like_inputs)
            .kernel(b.grad_kernel));
  }

  // Activations the executor runs: rules and gradient ops reading Out.
  struct Act {
    const char* type;
    GradFn rule;
    KernelFn grad_kernel;
  };
  for (const Act& a : {Act{"relu", grad_relu, run_unary_grad<Unary::kRelu>},
                       Act{"sigmoid", grad_sigmoid, run_unary_grad<Unary::kSigmoid>},
                       Act{"tanh", grad_tanh, run_unary_grad<Unary::kTanh>}}) {
    add(OpDefBuilder::grad_rule_of(a.type).grad(a.rule));
    OpDefBuilder fwd(a.type);
    fwd.input("X").output("Out");
    add(fwd.grad_op(std::string(a.type) + "_grad", {}, {"Out"}, {"Out"}, {"X"})
            .infer(infer_grad_like_second)
            .kernel(a.grad_kernel));
  }
  {
    add(OpDefBuilder::grad_rule_of("softplus").grad(grad_softplus));
    OpDefBuilder fwd("softplus");
    fwd.input("X").output("Out");
    add(fwd.grad_op("softplus_grad", {"X"}, {}, {"Out"}, {"X"})
            .infer(infer_grad_like_second)
            .kernel(run_softplus_grad));
  }
  for (const Binary& b :
       {Binary{"elementwise_div", grad_elementwise_div, run_elementwise_grad2<0>},
        Binary{"elementwise_max", grad_elementwise_max, run_elementwise_grad2<1>},
        Binary{"elementwise_min", grad_elementwise_min, run_elementwise_grad2<2>}}) {
    add(OpDefBuilder::grad_rule_of(b.type).grad(b.rule));
    OpDefBuilder fwd(b.type);
    fwd.input("X").input("Y").output("Out").attr("axis", T::kInt, i_default(-1),
                                                 "broadcast axis of Y in X (-1: NumPy rules)");
    add(fwd.grad_op(std::string(b.type) + "_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"})
            .infer(infer_grads_like_inputs)
            .kernel(b.grad_kernel));
  }
  for (const Binary& r : {Binary{"reduce_sum", grad_reduce_sum, run_reduce_grad<false>},
                          Binary{"reduce_mean", grad_reduce_mean, run_reduce_grad<true>}}) {
    const char* type = r.type;
    KernelFn kernel = r.grad_kernel;
    add(OpDefBuilder::grad_rule_of(type).grad(r.rule));
    OpDefBuilder fwd(type);
    fwd.input("X")
        .output("Out")
        .attr("dim", T::kInts, ints_default({0}))
        .attr("keep_dim", T::kBoolean, b_default(false))
        .attr("reduce_all", T::kBoolean, b_default(false));
    add(fwd.grad_op(std::string(type) + "_grad", {"X"}, {}, {"Out"}, {"X"})
            .infer(infer_mean_grad)
            .kernel(kernel));
  }
  {
    add(OpDefBuilder::grad_rule_of("reshape").grad(grad_reshape));
    OpDefBuilder fwd("reshape");
    fwd.input("X").output("Out").attr("shape", T::kInts, {});
    add(fwd.grad_op("reshape_grad", {"X"}, {}, {"Out"}, {"X"})
            .infer(infer_mean_grad)
            .kernel(run_reshape_grad));
  }
  {
    add(OpDefBuilder::grad_rule_of("transpose").grad(grad_transpose));
    OpDefBuilder fwd("transpose");
    fwd.input("X").output("Out").attr("axis", T::kInts, {});
    add(fwd.grad_op("transpose_grad", {}, {}, {"Out"}, {"X"})
            .infer(infer_transpose_grad)
            .kernel(run_transpose_grad));
  }
  {
    add(OpDefBuilder::grad_rule_of("matmul").grad(grad_matmul));
    OpDefBuilder fwd("matmul");
    fwd.input("X")
        .input("Y")
        .output("Out")
        .attr("transpose_X", T::kBoolean, b_default(false))
        .attr("transpose_Y", T::kBoolean, b_default(false))
        .attr("alpha", T::kFloat, f_default(1.0));
    add(fwd.grad_op("matmul_grad", {"X", "Y"}, {}, {"Out"}, {"X", "Y"})
            .infer(infer_grads_like_inputs)
            .kernel(run_matmul_grad));
  }

  // Unary math ops of the table.
  struct Math {
    const char* type;
    const char* doc;
    KernelFn kernel;
    GradFn rule;
    KernelFn grad_kernel;
    bool reads_x;
  };
  for (const Math& m : {Math{"log", "Out = ln(X)", run_unary<Unary::kLog>, grad_log,
                             run_unary_grad<Unary::kLog>, true},
                        Math{"exp", "Out = e^X", run_unary<Unary::kExp>, grad_exp,
                             run_unary_grad<Unary::kExp>, false},
                        Math{"sqrt", "Out = sqrt(X)", run_unary<Unary::kSqrt>, grad_sqrt,
                             run_unary_grad<Unary::kSqrt>, false},
                        Math{"square", "Out = X * X", run_unary<Unary::kSquare>, grad_square,
                             run_unary_grad<Unary::kSquare>, true},
                        Math{"abs", "Out = |X|", run_unary<Unary::kAbs>, grad_abs,
                             run_unary_grad<Unary::kAbs>, true}}) {
    OpDefBuilder fwd(m.type);
    fwd.doc(m.doc).input("X").output("Out").infer(infer_float_like_x).kernel(m.kernel).grad(m.rule);
    add(fwd);
    add(fwd.grad_op(std::string(m.type) + "_grad",
                    m.reads_x ? std::vector<std::string>{"X"} : std::vector<std::string>{},
                    m.reads_x ? std::vector<std::string>{} : std::vector<std::string>{"Out"},
                    {"Out"}, {"X"})
            .infer(infer_grad_like_second)
            .kernel(m.grad_kernel));
  }

  add(OpDefBuilder("sign")
          .doc("Out = -1, 0 or 1 by the sign of X (NaN stays NaN); its gradient is zero "
               "(fill_zeros_like of Out@GRAD)")
          .input("X")
          .output("Out")
          .infer(infer_float_like_x)
          .kernel(run_sign)
          .grad(grad_sign));

  add(OpDefBuilder::grad_rule_of("softmax").grad(grad_softmax));
  {
    OpDefBuilder fwd("softmax");
    fwd.input("X").output("Out").attr("axis", T::kInt, i_default(-1));
    add(fwd.grad_op("softmax_grad", {}, {"Out"}, {"Out"}, {"X"})
            .infer(infer_grad_like_second)
            .kernel(run_softmax_grad));
  }
  add(OpDefBuilder::grad_rule_of("scale").grad(grad_scale));

  OpDefBuilder mean_row("mean");
  mean_row.doc("Out = the mean of every element of X, shape [1]")
      .input("X")
      .output("Out")
      .infer(infer_mean)
      .kernel(run_mean)
      .grad(grad_mean);
  add(mean_row);
  add(mean_row.grad_op("mean_grad", {"X"}, {}, {"Out"}, {"X"})
          .infer(infer_mean_grad)
          .kernel(run_mean_grad));

  add(OpDefBuilder("sum")
          .doc("Out = X[0] + X[1] + ... (same shape and dtype)")
          .input("X", true, true)
          .output("Out")
          .infer(infer_sum)
          .kernel(run_sum)
          .grad(grad_sum));
  return rows;
}

}  // namespace chanflow
