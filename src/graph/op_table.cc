// op_table.cc — the graph op table: one row per OpKind (name, form, inference, kernel, gradient),
// and the public op functions of op_list.h, each defined to build a node of the row named like it.
//
// A row's inference, kernel and gradient are written in the row when they are the op's own, or
// name one of the shared helpers above the table when ops share them (broadcasting binary ops,
// dtype rules, reductions). The kernels are the tensor layer's; eval_node (eval.cc) wraps them
// with chunking, the result's dtype cast and the shape check.
#include "op_table.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <sstream>
#include <string_view>

#include "chanflow/core/error.h"
#include "chanflow/graph/ops.h"

namespace chanflow {
namespace detail {
namespace {

// ---- inference helpers ----

// NumPy broadcasting; nullopt when the shapes do not broadcast.
std::optional<Shape> try_broadcast(const Shape& a, const Shape& b) {
  const std::size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  for (std::size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// Result dtype rules of elementwise ops, from the (promoted) operand dtype.
DType same_dtype(const Inference&, DType t) { return t; }
DType float_dtype(const Inference&, DType t) { return float_result_type(t); }
DType bool_dtype(const Inference&, DType) { return DType::kBool; }
DType true_div_dtype(const Inference&, DType t) { return is_floating(t) ? t : DType::kFloat64; }
DType pow_dtype(const Inference&, DType t) { return t == DType::kBool ? DType::kInt8 : t; }
DType no_bool_dtype(const Inference& c, DType t) {
  if (t == DType::kBool) {
    CHANFLOW_THROW(TypeError) << c.prefix() << ": " << op_kind_name(c.out.op) << " of "
                              << (c.in[1] != nullptr ? "bool tensors" : "a bool tensor");
  }
  return t;
}

// Binary elementwise: NumPy broadcasting, dtype by Rule from the promoted operand dtypes.
template <DType (*Rule)(const Inference&, DType)>
void infer_broadcast(Inference& c) {
  std::optional<Shape> shape = try_broadcast(c.in[0]->shape, c.in[1]->shape);
  if (!shape) {
    CHANFLOW_THROW(ShapeError) << c.prefix() << ": shapes " << shape_to_string(c.in[0]->shape)
                               << " and " << shape_to_string(c.in[1]->shape) << " do not broadcast";
  }
  c.out.shape = std::move(*shape);
  c.out.dtype = Rule(c, promote_types(c.in[0]->dtype, c.in[1]->dtype));
}

// Unary elementwise: the operand's shape, dtype by Rule.
template <DType (*Rule)(const Inference&, DType)>
void infer_elementwise(Inference& c) {
  c.out.shape = c.in[0]->shape;
  c.out.dtype = Rule(c, c.in[0]->dtype);
}

int64_t normalize_axis(const Inference& c, int64_t axis) {
  const Shape& s = c.in[0]->shape;
  const auto nd = static_cast<int64_t>(s.size());
  const int64_t ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    CHANFLOW_THROW(ShapeError) << c.prefix() << ": axis " << axis << " out of range for shape "
                               << shape_to_string(s);
  }
  return ax;
}

// Reductions over out.axes (empty: all), sorted and normalised; dtype by Rule. kNonEmpty: a
// reduced axis of extent 0 is an error (max, min: no identity).
template <DType (*Rule)(const Inference&, DType), bool kNonEmpty>
void infer_reduce(Inference& c) {
  const Shape& in = c.in[0]->shape;
  Axes norm;
  if (c.out.axes.empty()) {
    for (int64_t i = 0; i < std::ssize(in); ++i) norm.push_back(i);
  } else {
    for (int64_t ax : c.out.axes) norm.push_back(normalize_axis(c, ax));
    std::sort(norm.begin(), norm.end());
    if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) {
      CHANFLOW_THROW(ShapeError) << c.prefix() << ": repeated axis";
    }
  }
  Shape shape;
  for (int64_t i = 0; i < std::ssize(in); ++i) {
    const bool reduced = std::binary_search(norm.begin(), norm.end(), i);
    if (reduced && kNonEmpty && in[static_cast<std::size_t>(i)] == 0) {
      CHANFLOW_THROW(ShapeError) << c.prefix() << ": zero-size axis " << i << " of shape "
                                 << shape_to_string(in);
    }
    if (!reduced) {
      shape.push_back(in[static_cast<std::size_t>(i)]);
    } else if (c.out.keepdims) {
      shape.push_back(1);
    }
  }
  c.out.shape = std::move(shape);
  c.out.dtype = Rule(c, c.in[0]->dtype);
  c.out.axes = std::move(norm);
}
DType sum_dtype(const Inference&, DType t) { return is_floating(t) ? t : DType::kInt64; }
DType mean_dtype(const Inference&, DType t) { return is_floating(t) ? t : DType::kFloat64; }

// The softmax family: one normalised axis, the operand's shape, a float dtype.
void infer_softmax(Inference& c) {
  c.out.axis = normalize_axis(c, *c.out.axis);
  c.out.shape = c.in[0]->shape;
  c.out.dtype = float_result_type(c.in[0]->dtype);
}

// ---- gradient helpers ----

// Shapes a gradient to its operand: sums broadcast axes away and casts to the operand's dtype.
Node fit(const Node& grad, const Node& operand) {
  Node r = grad;
  if (r.shape() != operand.shape()) r = sum_to(r, operand.shape());
  if (r.dtype() != operand.dtype()) r = cast(r, operand.dtype());
  return r;
}

// The gradient of an elementwise unary op whose derivative is `dy_dx`: g * dy_dx, fitted.
void unary_chain(Vjp& v, const Node& dy_dx) {
  if (v.need(0)) v.out[0] = fit(v.g * dy_dx, v.x[0]);
}

Node swap_last2(const Node& a) {
  const auto nd = static_cast<int64_t>(a.shape().size());
  std::vector<int64_t> perm(static_cast<std::size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<std::size_t>(nd - 1)], perm[static_cast<std::size_t>(nd - 2)]);
  return transpose(a, perm);
}

// Shape of a reduction's result with keepdims=true.
Shape keep_shape(const Shape& in, const Axes& axes) {
  Shape s = in;
  for (int64_t ax : axes) s[static_cast<std::size_t>(ax)] = 1;
  return s;
}

// sum and mean: the upstream gradient broadcast back over the reduced axes (mean: divided by the
// number of elements each result averages).
void reduce_vjp(Vjp& v, bool mean) {
  if (!v.need(0)) return;
  const Shape& in = v.x[0].shape();
  const Shape ks = keep_shape(in, v.n.axes);
  Node gk = v.g.shape() == ks ? v.g : reshape(v.g, ks);
  Node b = broadcast_to(gk, in);
  if (mean) {
    int64_t count = 1;
    for (int64_t ax : v.n.axes) count *= in[static_cast<std::size_t>(ax)];
    b = b * (1.0 / static_cast<double>(count == 0 ? 1 : count));
  }
  v.out[0] = fit(b, v.x[0]);
}

// max and min: the upstream gradient split among the elements equal to the result.
void extremum_vjp(Vjp& v) {
  if (!v.need(0)) return;
  const Shape ks = keep_shape(v.x[0].shape(), v.n.axes);
  Node yk = v.y.shape() == ks ? v.y : reshape(v.y, ks);
  Node gk = v.g.shape() == ks ? v.g : reshape(v.g, ks);
  Node mask = cast(equal(v.x[0], yk), v.n.dtype);
  Node count = sum(mask, v.n.axes, /*keepdims=*/true);
  v.out[0] = fit(mask * gk / count, v.x[0]);
}

// maximum and minimum: the gradient goes to a where `mask` (a >= b, a <= b) holds, else to b.
void select_vjp(Vjp& v, const Node& mask_bool) {
  Node mask = cast(mask_bool, v.n.dtype);
  if (v.need(0)) v.out[0] = fit(v.g * mask, v.x[0]);
  if (v.need(1)) v.out[1] = fit(v.g * (1.0 - mask), v.x[1]);
}

// The forward op of the op table that a graph op computes, for vjp_by_rule: the op's gradient
// is that row's rule (one definition for graphs and programs).
OpDesc unary_forward(const char* type) { return OpDesc::make(type, {}, {}); }

// ---- the table ----
//
// Rows in OpKind order. Kernels receive the node (its attributes), the operand values and the
// kernel options; a missing vjp means gradients stop at the op.

using K = const KernelOptions&;
using N = const NodeData&;
using T = const Tensor*;

}  // namespace

constexpr std::array<OpRow, kOpKinds> kOpTable = {{
    {.kind = OpKind::kInput,
     .name = "input",
     .form = Form::kSource,
     .eval = [](N, T in, K) { return in[0]; }},
    {.kind = OpKind::kConstant,
     .name = "constant",
     .form = Form::kSource,
     .eval = [](N, T in, K) { return in[0]; }},
    {.kind = OpKind::kAdd,
     .name = "add",
     .form = Form::kBinary,
     .infer = infer_broadcast<same_dtype>,
     .eval = [](N, T in, K o) { return add(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g, v.x[0]);
           if (v.need(1)) v.out[1] = fit(v.g, v.x[1]);
         }},
    {.kind = OpKind::kSub,
     .name = "sub",
     .form = Form::kBinary,
     .infer = infer_broadcast<no_bool_dtype>,
     .eval = [](N, T in, K o) { return sub(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g, v.x[0]);
           if (v.need(1)) v.out[1] = fit(neg(v.g), v.x[1]);
         }},
    {.kind = OpKind::kMul,
     .name = "mul",
     .form = Form::kBinary,
     .infer = infer_broadcast<same_dtype>,
     .eval = [](N, T in, K o) { return mul(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g * v.x[1], v.x[0]);
           if (v.need(1)) v.out[1] = fit(v.g * v.x[0], v.x[1]);
         }},
    {.kind = OpKind::kDiv,
     .name = "div",
     .form = Form::kBinary,
     .infer = infer_broadcast<true_div_dtype>,
     .eval = [](N, T in, K o) { return div(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g / v.x[1], v.x[0]);
           if (v.need(1)) v.out[1] = fit(neg(v.g * v.y / v.x[1]), v.x[1]);
         }},
    {.kind = OpKind::kPow,
     .name = "pow",
     .form = Form::kBinary,
     .infer = infer_broadcast<pow_dtype>,
     .eval = [](N, T in, K o) { return pow(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g * v.x[1] * pow(v.x[0], v.x[1] - 1.0), v.x[0]);
           if (v.need(1)) v.out[1] = fit(v.g * v.y * log(v.x[0]), v.x[1]);
         }},
    {.kind = OpKind::kMaximum,
     .name = "maximum",
     .form = Form::kBinary,
     .infer = infer_broadcast<same_dtype>,
     .eval = [](N, T in, K o) { return maximum(in[0], in[1], o); },
     .vjp = [](Vjp& v) { select_vjp(v, greater_equal(v.x[0], v.x[1])); }},
    {.kind = OpKind::kMinimum,
     .name = "minimum",
     .form = Form::kBinary,
     .infer = infer_broadcast<same_dtype>,
     .eval = [](N, T in, K o) { return minimum(in[0], in[1], o); },
     .vjp = [](Vjp& v) { select_vjp(v, less_equal(v.x[0], v.x[1])); }},
    {.kind = OpKind::kEqual,
     .name = "equal",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return equal(in[0], in[1], o); }},
    {.kind = OpKind::kNotEqual,
     .name = "not_equal",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return not_equal(in[0], in[1], o); }},
    {.kind = OpKind::kLess,
     .name = "less",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return less(in[0], in[1], o); }},
    {.kind = OpKind::kLessEqual,
     .name = "less_equal",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return less_equal(in[0], in[1], o); }},
    {.kind = OpKind::kGreater,
     .name = "greater",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return greater(in[0], in[1], o); }},
    {.kind = OpKind::kGreaterEqual,
     .name = "greater_equal",
     .form = Form::kBinary,
     .infer = infer_broadcast<bool_dtype>,
     .eval = [](N, T in, K o) { return greater_equal(in[0], in[1], o); }},
    {.kind = OpKind::kNeg,
     .name = "neg",
     .form = Form::kUnary,
     .infer = infer_elementwise<no_bool_dtype>,
     .eval = [](N, T in, K o) { return neg(in[0], o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = neg(v.g);
         }},
    {.kind = OpKind::kAbs,
     .name = "abs",
     .form = Form::kUnary,
     .infer = infer_elementwise<same_dtype>,
     .eval = [](N, T in, K o) { return abs(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("abs")); }},
    {.kind = OpKind::kExp,
     .name = "exp",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return exp(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("exp")); }},
    {.kind = OpKind::kLog,
     .name = "log",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return log(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("log")); }},
    {.kind = OpKind::kSqrt,
     .name = "sqrt",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return sqrt(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("sqrt")); }},
    {.kind = OpKind::kTanh,
     .name = "tanh",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return tanh(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("tanh")); }},
    {.kind = OpKind::kSigmoid,
     .name = "sigmoid",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return sigmoid(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("sigmoid")); }},
    {.kind = OpKind::kRelu,
     .name = "relu",
     .form = Form::kUnary,
     .infer = infer_elementwise<same_dtype>,
     .eval = [](N, T in, K o) { return relu(in[0], o); },
     .vjp = [](Vjp& v) { vjp_by_rule(v, unary_forward("relu")); }},
    {.kind = OpKind::kSoftplus,
     .name = "softplus",
     .form = Form::kUnary,
     .infer = infer_elementwise<float_dtype>,
     .eval = [](N, T in, K o) { return softplus(in[0], o); },
     .vjp = [](Vjp& v) { unary_chain(v, sigmoid(v.x[0])); }},
    {.kind = OpKind::kSum,
     .name = "sum",
     .form = Form::kReduce,
     .infer = infer_reduce<sum_dtype, false>,
     .eval = [](N n, T in, K o) { return sum(in[0], n.axes, n.keepdims, o); },
     .vjp = [](Vjp& v) { reduce_vjp(v, /*mean=*/false); }},
    {.kind = OpKind::kMean,
     .name = "mean",
     .form = Form::kReduce,
     .infer = infer_reduce<mean_dtype, false>,
     .eval = [](N n, T in, K o) { return mean(in[0], n.axes, n.keepdims, o); },
     .vjp = [](Vjp& v) { reduce_vjp(v, /*mean=*/true); }},
    {.kind = OpKind::kMax,
     .name = "max",
     .form = Form::kReduce,
     .infer = infer_reduce<same_dtype, true>,
     .eval = [](N n, T in, K o) { return max(in[0], n.axes, n.keepdims, o); },
     .vjp = extremum_vjp},
    {.kind = OpKind::kMin,
     .name = "min",
     .form = Form::kReduce,
     .infer = infer_reduce<same_dtype, true>,
     .eval = [](N n, T in, K o) { return min(in[0], n.axes, n.keepdims, o); },
     .vjp = extremum_vjp},
    {.kind = OpKind::kArgmax,
     .name = "argmax",
     .form = Form::kArgReduce,
     .infer =
         [](Inference& c) {
           const Shape& in = c.in[0]->shape;
           if (shape_numel(in) == 0) {
             CHANFLOW_THROW(ShapeError)
                 << c.prefix() << ": zero-size shape " << shape_to_string(in);
           }
           Shape shape;
           if (c.out.axis) {
             c.out.axis = normalize_axis(c, *c.out.axis);
             for (int64_t i = 0; i < std::ssize(in); ++i) {
               if (i != *c.out.axis) {
                 shape.push_back(in[static_cast<std::size_t>(i)]);
               } else if (c.out.keepdims) {
                 shape.push_back(1);
               }
             }
           } else if (c.out.keepdims) {
             shape.assign(in.size(), 1);
           }
           c.out.shape = std::move(shape);
           c.out.dtype = DType::kInt64;
         },
     .eval = [](N n, T in, K o) { return argmax(in[0], n.axis, n.keepdims, o); }},
    {.kind = OpKind::kSoftmax,
     .name = "softmax",
     .form = Form::kAxis,
     .infer = infer_softmax,
     .eval = [](N n, T in, K o) { return softmax(in[0], *n.axis, o); },
     .vjp =
         [](Vjp& v) {
           vjp_by_rule(v, OpDesc::make("softmax", {}, {}, {{"axis", Attr::i(*v.n.axis)}}));
         }},
    {.kind = OpKind::kLogSoftmax,
     .name = "log_softmax",
     .form = Form::kAxis,
     .infer = infer_softmax,
     .eval = [](N n, T in, K o) { return log_softmax(in[0], *n.axis, o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = fit(v.g - exp(v.y) * sum(v.g, {*v.n.axis}, true), v.x[0]);
         }},
    {.kind = OpKind::kMatmul,
     .name = "matmul",
     .form = Form::kBinary,
     .infer =
         [](Inference& c) {
           const Shape& a = c.in[0]->shape;
           const Shape& b = c.in[1]->shape;
           auto fail = [&](const char* why) {
             CHANFLOW_THROW(ShapeError) << c.prefix() << ": " << why << ": " << shape_to_string(a)
                                        << " and " << shape_to_string(b);
           };
           if (a.empty() || b.empty()) fail("0-d operand");
           Shape sa = a;
           Shape sb = b;
           const bool va = sa.size() == 1;
           const bool vb = sb.size() == 1;
           if (va) sa.insert(sa.begin(), 1);
           if (vb) sb.push_back(1);
           if (sa.back() != sb[sb.size() - 2]) fail("inner extents differ");
           std::optional<Shape> batch =
               try_broadcast(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
           if (!batch) fail("batch axes do not broadcast");
           Shape out = *batch;
           if (!va) out.push_back(sa[sa.size() - 2]);
           if (!vb) out.push_back(sb.back());
           c.out.shape = std::move(out);
           c.out.dtype = promote_types(c.in[0]->dtype, c.in[1]->dtype);
         },
     .eval = [](N, T in, K o) { return matmul(in[0], in[1], o); },
     .vjp =
         [](Vjp& v) {
           const Node& x0 = v.x[0];
           const Node& x1 = v.x[1];
           const bool va = x0.shape().size() == 1;
           const bool vb = x1.shape().size() == 1;
           Node a = va ? reshape(x0, {1, x0.shape()[0]}) : x0;
           Node b = vb ? reshape(x1, {x1.shape()[0], 1}) : x1;
           Shape gs = v.g.shape();
           if (vb) gs.push_back(1);
           if (va) gs.insert(gs.end() - 1, 1);
           Node gg = gs == v.g.shape() ? v.g : reshape(v.g, gs);
           if (v.need(0)) {
             Node da = matmul(gg, swap_last2(b));
             if (da.shape() != a.shape()) da = sum_to(da, a.shape());
             if (va) da = reshape(da, x0.shape());
             v.out[0] = fit(da, x0);
           }
           if (v.need(1)) {
             Node db = matmul(swap_last2(a), gg);
             if (db.shape() != b.shape()) db = sum_to(db, b.shape());
             if (vb) db = reshape(db, x1.shape());
             v.out[1] = fit(db, x1);
           }
         },
     .work = Work::kMultiplyAdds},
    {.kind = OpKind::kReshape,
     .name = "reshape",
     .form = Form::kShape,
     .infer =
         [](Inference& c) {
           const Shape& in = c.in[0]->shape;
           const Shape given = c.out.target;
           Shape out = given;
           int64_t known = 1;
           int infer = -1;
           for (std::size_t i = 0; i < out.size(); ++i) {
             if (out[i] == -1 && infer < 0) {
               infer = static_cast<int>(i);
             } else if (out[i] < 0) {
               CHANFLOW_THROW(ShapeError)
                   << c.prefix() << ": bad target shape " << shape_to_string(given);
             } else {
               known *= out[i];
             }
           }
           const int64_t total = shape_numel(in);
           if ((infer >= 0 && (known == 0 || total % known != 0)) ||
               (infer < 0 && known != total)) {
             CHANFLOW_THROW(ShapeError) << c.prefix() << ": cannot reshape " << shape_to_string(in)
                                        << " to " << shape_to_string(given);
           }
           if (infer >= 0) out[static_cast<std::size_t>(infer)] = total / known;
           c.out.shape = out;
           c.out.dtype = c.in[0]->dtype;
           c.out.target = std::move(out);
         },
     .eval = [](N n, T in, K) { return in[0].reshape(n.target); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = reshape(v.g, v.x[0].shape());
         }},
    {.kind = OpKind::kTranspose,
     .name = "transpose",
     .form = Form::kPerm,
     .infer =
         [](Inference& c) {
           const Shape& in = c.in[0]->shape;
           const auto nd = static_cast<int64_t>(in.size());
           std::vector<int64_t> p = c.out.perm;
           if (p.empty()) {
             for (int64_t i = nd - 1; i >= 0; --i) p.push_back(i);
           }
           std::vector<int64_t> sorted = p;
           std::sort(sorted.begin(), sorted.end());
           bool ok = static_cast<int64_t>(p.size()) == nd;
           for (int64_t i = 0; ok && i < nd; ++i) ok = sorted[static_cast<std::size_t>(i)] == i;
           if (!ok) {
             std::ostringstream os;
             for (int64_t v : c.out.perm) os << v << " ";
             CHANFLOW_THROW(ShapeError)
                 << c.prefix() << ": [" << os.str()
                 << "] is not a permutation of the axes of shape " << shape_to_string(in);
           }
           Shape out;
           for (int64_t ax : p) out.push_back(in[static_cast<std::size_t>(ax)]);
           c.out.shape = std::move(out);
           c.out.dtype = c.in[0]->dtype;
           c.out.perm = std::move(p);
         },
     .eval = [](N n, T in, K) { return in[0].transpose(n.perm); },
     .vjp =
         [](Vjp& v) {
           if (!v.need(0)) return;
           const std::vector<int64_t>& perm = v.n.perm;
           std::vector<int64_t> inv(perm.size());
           for (std::size_t i = 0; i < perm.size(); ++i) {
             inv[static_cast<std::size_t>(perm[i])] = static_cast<int64_t>(i);
           }
           v.out[0] = transpose(v.g, inv);
         }},
    {.kind = OpKind::kCast,
     .name = "cast",
     .form = Form::kDType,
     .infer =
         [](Inference& c) {
           c.out.shape = c.in[0]->shape;
           c.out.dtype = c.out.to;
         },
     .eval = [](N n, T in, K o) { return cast(in[0], n.to, o); },
     .vjp =
         [](Vjp& v) {
           if (v.need(0) && is_floating(v.n.dtype)) v.out[0] = cast(v.g, v.x[0].dtype());
         }},
    {.kind = OpKind::kBroadcastTo,
     .name = "broadcast_to",
     .form = Form::kShape,
     .infer =
         [](Inference& c) {
           std::optional<Shape> b = try_broadcast(c.in[0]->shape, c.out.target);
           if (!b || *b != c.out.target) {
             CHANFLOW_THROW(ShapeError)
                 << c.prefix() << ": " << shape_to_string(c.in[0]->shape)
                 << " does not broadcast to " << shape_to_string(c.out.target);
           }
           c.out.shape = c.out.target;
           c.out.dtype = c.in[0]->dtype;
         },
     .eval =
         [](N n, T in, K) {
           Tensor r = Tensor::empty(n.shape, n.dtype);
           r.assign(in[0]);
           return r;
         },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = sum_to(v.g, v.x[0].shape());
         }},
    {.kind = OpKind::kSumTo,
     .name = "sum_to",
     .form = Form::kShape,
     .infer =
         [](Inference& c) {
           std::optional<Shape> b = try_broadcast(c.out.target, c.in[0]->shape);
           if (!b || *b != c.in[0]->shape) {
             CHANFLOW_THROW(ShapeError)
                 << c.prefix() << ": " << shape_to_string(c.out.target) << " does not broadcast to "
                 << shape_to_string(c.in[0]->shape);
           }
           c.out.shape = c.out.target;
           c.out.dtype = c.in[0]->dtype;
         },
     .eval =
         [](N n, T in, K o) {
           // The axes a broadcast to n.target would have added or stretched, summed away.
           const Shape& s = in[0].shape();
           const std::size_t lead = s.size() - n.target.size();
           Axes axes;
           for (std::size_t i = 0; i < s.size(); ++i) {
             if (i < lead || (n.target[i - lead] == 1 && s[i] != 1)) {
               axes.push_back(static_cast<int64_t>(i));
             }
           }
           Tensor r = axes.empty() ? in[0] : sum(in[0], axes, /*keepdims=*/true, o);
           return r.reshape(n.target);
         },
     .vjp =
         [](Vjp& v) {
           if (v.need(0)) v.out[0] = broadcast_to(v.g, v.x[0].shape());
         }},
    {.kind = OpKind::kTable, .name = "op", .form = Form::kTable, .vjp = table_vjp},
    {.kind = OpKind::kCustom,
     .name = "custom",
     .form = Form::kCustom,
     .vjp =
         [](Vjp& v) {
           for (std::size_t i = 0; i < v.x.size(); ++i) {
             if (v.need(i)) {
               CHANFLOW_THROW(Error)
                   << "grad: " << describe(v.n) << " is a custom op and has no gradient";
             }
           }
         }},
}};

namespace {

constexpr bool rows_in_kind_order() {
  for (std::size_t i = 0; i < kOpTable.size(); ++i) {
    if (static_cast<std::size_t>(kOpTable[i].kind) != i) return false;
  }
  return true;
}
static_assert(rows_in_kind_order(), "op table rows must be in OpKind order, one per kind");

// What an op_list.h entry's function builds: a node of the row with the entry's name, or, for the
// sugar entries, of another row. A unary entry over a binary row applies it to (a, a); min_rank
// constrains a binary entry's operands.
struct Target {
  OpKind kind;
  const char* entry;
  int min_rank = 0;
};

consteval Target target_of(std::string_view entry) {
  if (entry == "square") return {OpKind::kMul, "square"};
  if (entry == "batched_matmul") return {OpKind::kMatmul, "batched_matmul", 3};
  for (const OpRow& r : kOpTable) {
    if (std::string_view(r.name) == entry) return {r.kind, r.name};
  }
  // Reached only for a name with no row: a throw is not a constant expression, so the entry's
  // function fails to compile.
  throw "op_list.h names a function with no row in the op table";
}

Node unary_entry(Target t, const Node& a) {
  return kOpTable[static_cast<std::size_t>(t.kind)].form == Form::kBinary
             ? build_binary(t.kind, a, a)
             : build_unary(t.kind, a);
}

}  // namespace
}  // namespace detail

// ---- the op functions of op_list.h ----

#define CHANFLOW_GRAPH_DEFINE_binary(name)                          \
  Node name(const Node& a, const Node& b) {                         \
    constexpr detail::Target t = detail::target_of(#name);          \
    return detail::build_binary(t.kind, a, b, t.min_rank, t.entry); \
  }
#define CHANFLOW_GRAPH_DEFINE_unary(name) \
  Node name(const Node& a) { return detail::unary_entry(detail::target_of(#name), a); }
#define CHANFLOW_GRAPH_DEFINE_reduce(name)                                         \
  Node name(const Node& a, const Axes& axes, bool keepdims) {                      \
    return detail::build_reduce(detail::target_of(#name).kind, a, axes, keepdims); \
  }
#define CHANFLOW_GRAPH_DEFINE_argreduce(name)                                         \
  Node name(const Node& a, std::optional<int64_t> axis, bool keepdims) {              \
    return detail::build_argreduce(detail::target_of(#name).kind, a, axis, keepdims); \
  }
#define CHANFLOW_GRAPH_DEFINE_axis(name)                               \
  Node name(const Node& a, int64_t axis) {                             \
    return detail::build_axis(detail::target_of(#name).kind, a, axis); \
  }
#define CHANFLOW_GRAPH_DEFINE_shape(name)                                \
  Node name(const Node& a, const Shape& shape) {                         \
    return detail::build_shape(detail::target_of(#name).kind, a, shape); \
  }
#define CHANFLOW_GRAPH_DEFINE_perm(name)                               \
  Node name(const Node& a, const std::vector<int64_t>& perm) {         \
    return detail::build_perm(detail::target_of(#name).kind, a, perm); \
  }
#define CHANFLOW_GRAPH_DEFINE_dtype(name)                                \
  Node name(const Node& a, DType dtype) {                                \
    return detail::build_dtype(detail::target_of(#name).kind, a, dtype); \
  }
#define CHANFLOW_GRAPH_DEFINE_OP(kind, name, doc) CHANFLOW_GRAPH_DEFINE_##kind(name)
CHANFLOW_GRAPH_OPS(CHANFLOW_GRAPH_DEFINE_OP)
#undef CHANFLOW_GRAPH_DEFINE_OP
#undef CHANFLOW_GRAPH_DEFINE_binary
#undef CHANFLOW_GRAPH_DEFINE_unary
#undef CHANFLOW_GRAPH_DEFINE_reduce
#undef CHANFLOW_GRAPH_DEFINE_argreduce
#undef CHANFLOW_GRAPH_DEFINE_axis
#undef CHANFLOW_GRAPH_DEFINE_shape
#undef CHANFLOW_GRAPH_DEFINE_perm
#undef CHANFLOW_GRAPH_DEFINE_dtype

}  // namespace chanflow
