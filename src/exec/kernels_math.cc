// kernels_math.cc — elementwise arithmetic, comparisons, logic, activations, softmax, reductions
// and matmul, on the tensor layer's kernels. Each op is one row of math_kernels() (kernel.h); its
// attributes are the struct the row names.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "chanflow/tensor/ops.h"
#include "kernel.h"

namespace chanflow::exec_detail {
namespace {

using Binary = Tensor (*)(const Tensor&, const Tensor&, const KernelOptions&);
using Unary = Tensor (*)(const Tensor&, const KernelOptions&);

// Fluid's `axis`: Y (of lower rank) is aligned with X's axes starting at `axis`.
Tensor align_y(const Tensor& x, const Tensor& y, int64_t axis) {
  if (axis < 0 || y.ndim() >= x.ndim()) return y;
  if (axis + y.ndim() > x.ndim()) {
    CHANFLOW_THROW(ShapeError) << "axis " << axis << " does not fit Y of shape "
                               << shape_to_string(y.shape()) << " into X of shape "
                               << shape_to_string(x.shape());
  }
  Shape s(static_cast<size_t>(axis), 1);
  s.insert(s.end(), y.shape().begin(), y.shape().end());
  s.resize(static_cast<size_t>(x.ndim()), 1);
  return y.reshape(s);
}

// Fluid's broadcast `axis` of the elementwise and comparison ops.
struct AxisAttrs {
  int64_t axis = -1;
  static constexpr auto kFields = std::tuple{field("axis", &AxisAttrs::axis)};
};

template <Binary K, class A>
void run_binary(const PreparedOp& op, const A& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  int64_t axis = -1;
  if constexpr (std::is_same_v<A, AxisAttrs>) axis = a.axis;
  Tensor y = align_y(x, read_tensor(op, f, 1), axis);
  KernelOptions o = kernel_options(f, x.numel() + y.numel());
  o.out = take_output_buffer(op, f, 0);
  write_out(op, f, 0, K(x, y, o));
}

template <Unary K>
void run_unary(const PreparedOp& op, const NoAttrs&, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  KernelOptions o = kernel_options(f, x.numel());
  o.out = take_output_buffer(op, f, 0);
  write_out(op, f, 0, K(x, o));
}

void run_softmax(const PreparedOp& op, const AxisAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  write_out(op, f, 0, softmax(x, a.axis, kernel_options(f, x.numel())));
}

struct ReduceAttrs {
  std::vector<int64_t> dim;
  bool keep_dim = false;
  bool reduce_all = false;
  static constexpr auto kFields =
      std::tuple{field("dim", &ReduceAttrs::dim), field("keep_dim", &ReduceAttrs::keep_dim),
                 field("reduce_all", &ReduceAttrs::reduce_all)};
};

template <Tensor (*R)(const Tensor&, const Axes&, bool, const KernelOptions&)>
void run_reduce(const PreparedOp& op, const ReduceAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  static const Axes kAll;  // reduce_all: every axis
  write_out(op, f, 0, R(x, a.reduce_all ? kAll : a.dim, a.keep_dim, kernel_options(f, x.numel())));
}

// Paddle's arg_max: `axis` must fit X's rank even when flatten (Paddle checks it too); flatten
// gives shape [1] whatever keepdims says; INT32 indices need the searched extent to fit int32.
struct ArgMaxAttrs {
  int64_t axis = 0;
  bool keepdims = false;
  bool flatten = false;
  int64_t dtype_number = 3;     // as written: INT32 (2), INT64 (3) or -1 (INT64)
  DType dtype = DType::kInt64;  // derived: the index dtype
  static constexpr auto kFields = std::tuple{
      field("axis", &ArgMaxAttrs::axis), field("keepdims", &ArgMaxAttrs::keepdims),
      field("flatten", &ArgMaxAttrs::flatten), field("dtype", &ArgMaxAttrs::dtype_number)};
  static void finish(ArgMaxAttrs& a) {
    a.dtype = a.dtype_number == 2 ? DType::kInt32 : DType::kInt64;
  }
};

void run_arg_max(const PreparedOp& op, const ArgMaxAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  const int64_t nd = x.ndim();
  if (a.axis < -nd || a.axis >= nd) {
    CHANFLOW_THROW(ShapeError) << "arg_max: axis " << a.axis << " out of range for X ('"
                               << op.in_names[0] << "') of shape " << shape_to_string(x.shape());
  }
  const int64_t axis = a.axis < 0 ? a.axis + nd : a.axis;
  const int64_t extent = a.flatten ? x.numel() : x.shape()[static_cast<size_t>(axis)];
  if (a.dtype == DType::kInt32 && extent > std::numeric_limits<int32_t>::max()) {
    CHANFLOW_THROW(ShapeError) << "arg_max: " << extent << " elements searched do not fit INT32 "
                               << "indices (use dtype INT64)";
  }
  const KernelOptions o = kernel_options(f, x.numel());
  Tensor r =
      a.flatten ? argmax(x, std::nullopt, false, o).reshape({1}) : argmax(x, axis, a.keepdims, o);
  write_out(op, f, 0, a.dtype == r.dtype() ? r : r.cast(a.dtype));
}

Tensor swap_last(const Tensor& t) {
  if (t.ndim() < 2) return t;
  std::vector<int64_t> perm(static_cast<size_t>(t.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return t.transpose(perm);
}

struct MatmulAttrs {
  bool transpose_x = false;
  bool transpose_y = false;
  double alpha = 1.0;
  static constexpr auto kFields = std::tuple{field("transpose_X", &MatmulAttrs::transpose_x),
                                             field("transpose_Y", &MatmulAttrs::transpose_y),
                                             field("alpha", &MatmulAttrs::alpha)};
};

void run_matmul(const PreparedOp& op, const MatmulAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  Tensor y = read_tensor(op, f, 1);
  if (a.transpose_x) x = swap_last(x);
  if (a.transpose_y) y = swap_last(y);
  // Multiply-adds: every output element sums over the inner extent.
  const int64_t inner = x.ndim() == 0 ? 1 : x.shape().back();
  const int64_t rows = x.ndim() == 0 ? 1 : x.numel() / std::max<int64_t>(1, inner);
  const int64_t cols = y.ndim() == 0 ? 1 : y.shape().back();
  Tensor r = matmul(x, y, kernel_options(f, rows * cols * inner, WorkKind::kMultiplyAdds));
  if (a.alpha != 1.0) r = mul(r, Tensor::scalar(a.alpha, r.dtype()));
  write_out(op, f, 0, std::move(r));
}

// ---- inference ------------------------------------------------------------------------------

void need(const std::vector<TensorInfo>& in, size_t n, const OpDesc& op) {
  if (in.size() < n) {
    CHANFLOW_THROW(Error) << op.type() << ": inference needs " << n << " inputs, got " << in.size();
  }
}

Shape broadcast_info(const Shape& a, const Shape& b, const char* what) {
  // Unknown extents (-1) stay unknown unless the other side fixes them.
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x == -1 || y == -1) {
      out[i] = (x == -1 && y > 1) ? y : (y == -1 && x > 1) ? x : -1;
    } else if (x == y || y == 1) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else {
      CHANFLOW_THROW(ShapeError) << what << ": shapes " << shape_to_string(a) << " and "
                                 << shape_to_string(b) << " do not broadcast";
    }
  }
  return out;
}

enum class Result { kPromote, kDiv, kBool };
template <Result R, class A>
std::vector<TensorInfo> infer_binary(const A&, const OpDesc& op,
                                     const std::vector<TensorInfo>& in) {
  need(in, 2, op);
  TensorInfo o;
  o.shape = broadcast_info(in[0].shape, in[1].shape, op.type().c_str());
  const DType p = promote_types(in[0].dtype, in[1].dtype);
  if constexpr (R == Result::kBool) {
    o.dtype = DType::kBool;
  } else if constexpr (R == Result::kDiv) {
    o.dtype = p == DType::kBool ? DType::kFloat64 : p;  // trunc_div: integers stay integers
  } else {
    o.dtype = p;
  }
  return {o};
}

template <bool kFloat, bool kBool = false, class A = NoAttrs>
std::vector<TensorInfo> infer_unary(const A&, const OpDesc& op, const std::vector<TensorInfo>& in) {
  need(in, 1, op);
  TensorInfo o = in[0];
  if (kFloat) o.dtype = float_result_type(o.dtype);
  if (kBool) o.dtype = DType::kBool;
  return {o};
}

template <bool kMean>
std::vector<TensorInfo> infer_reduce(const ReduceAttrs& attrs, const OpDesc& op,
                                     const std::vector<TensorInfo>& in) {
  need(in, 1, op);
  const TensorInfo& x = in[0];
  const bool all = attrs.reduce_all;
  const bool keep = attrs.keep_dim;
  const std::vector<int64_t>& dims = attrs.dim;
  const auto nd = static_cast<int64_t>(x.shape.size());
  std::vector<bool> red(static_cast<size_t>(nd), all || dims.empty());
  for (int64_t d : dims) {
    const int64_t a = d < 0 ? d + nd : d;
    if (a < 0 || a >= nd) {
      CHANFLOW_THROW(ShapeError) << op.type() << ": axis " << d << " out of range for rank " << nd;
    }
    red[static_cast<size_t>(a)] = true;
  }
  TensorInfo o;
  for (int64_t i = 0; i < nd; ++i) {
    if (!red[static_cast<size_t>(i)]) {
      o.shape.push_back(x.shape[static_cast<size_t>(i)]);
    } else if (keep) {
      o.shape.push_back(1);
    }
  }
  o.dtype = is_floating(x.dtype) ? x.dtype : (kMean ? DType::kFloat64 : DType::kInt64);
  return {o};
}

std::vector<TensorInfo> infer_arg_max(const ArgMaxAttrs& attrs, const OpDesc& op,
                                      const std::vector<TensorInfo>& in) {
  need(in, 1, op);
  const Shape& xs = in[0].shape;
  const auto nd = static_cast<int64_t>(xs.size());
  const int64_t axis = attrs.axis;
  if (axis < -nd || axis >= nd) {
    CHANFLOW_THROW(ShapeError) << "arg_max: axis " << axis << " out of range for rank " << nd;
  }
  const bool keep = attrs.keepdims;
  const bool flat = attrs.flatten;
  TensorInfo o;
  o.dtype = attrs.dtype;
  if (flat) {
    o.shape = {1};
    return {o};
  }
  const int64_t a = axis < 0 ? axis + nd : axis;
  for (int64_t i = 0; i < nd; ++i) {
    if (i != a) {
      o.shape.push_back(xs[static_cast<size_t>(i)]);
    } else if (keep) {
      o.shape.push_back(1);
    }
  }
  return {o};
}

std::vector<TensorInfo> infer_matmul(const MatmulAttrs& attrs, const OpDesc& op,
                                     const std::vector<TensorInfo>& in) {
  need(in, 2, op);
  Shape a = in[0].shape, b = in[1].shape;
  if (a.empty() || b.empty()) CHANFLOW_THROW(ShapeError) << "matmul: 0-d operand";
  if (attrs.transpose_x && a.size() >= 2) {
    std::swap(a[a.size() - 1], a[a.size() - 2]);
  }
  if (attrs.transpose_y && b.size() >= 2) {
    std::swap(b[b.size() - 1], b[b.size() - 2]);
  }
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  const int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (k1 != -1 && k2 != -1 && k1 != k2) {
    CHANFLOW_THROW(ShapeError) << "matmul: inner extents differ: " << shape_to_string(in[0].shape)
                               << " @ " << shape_to_string(in[1].shape);
  }
  Shape batch =
      broadcast_info(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), "matmul");
  TensorInfo o;
  o.shape = batch;
  if (!a1) o.shape.push_back(a[a.size() - 2]);
  if (!b1) o.shape.push_back(b.back());
  o.dtype = promote_types(in[0].dtype, in[1].dtype);
  return {o};
}

}  // namespace

std::vector<KernelRow> math_kernels() {
  using R = Result;
  using A = AxisAttrs;
  using N = NoAttrs;
  return {
      op<A, run_binary<add, A>, bind_xy_out, infer_binary<R::kPromote, A>>("elementwise_add"),
      op<A, run_binary<sub, A>, bind_xy_out, infer_binary<R::kPromote, A>>("elementwise_sub"),
      op<A, run_binary<mul, A>, bind_xy_out, infer_binary<R::kPromote, A>>("elementwise_mul"),
      op<A, run_binary<trunc_div, A>, bind_xy_out, infer_binary<R::kDiv, A>>("elementwise_div"),
      op<A, run_binary<maximum, A>, bind_xy_out, infer_binary<R::kPromote, A>>("elementwise_max"),
      op<A, run_binary<minimum, A>, bind_xy_out, infer_binary<R::kPromote, A>>("elementwise_min"),
      op<A, run_binary<equal, A>, bind_xy_out, infer_binary<R::kBool, A>>("equal"),
      op<A, run_binary<not_equal, A>, bind_xy_out, infer_binary<R::kBool, A>>("not_equal"),
      op<A, run_binary<less, A>, bind_xy_out, infer_binary<R::kBool, A>>("less_than"),
      op<A, run_binary<less_equal, A>, bind_xy_out, infer_binary<R::kBool, A>>("less_equal"),
      op<A, run_binary<greater, A>, bind_xy_out, infer_binary<R::kBool, A>>("greater_than"),
      op<A, run_binary<greater_equal, A>, bind_xy_out, infer_binary<R::kBool, A>>("greater_equal"),
      op<N, run_binary<logical_and, N>, bind_xy_out, infer_binary<R::kBool, N>>("logical_and"),
      op<N, run_binary<logical_or, N>, bind_xy_out, infer_binary<R::kBool, N>>("logical_or"),
      op<N, run_unary<logical_not>, bind_x_out, infer_unary<false, true>>("logical_not"),
      op<N, run_unary<relu>, bind_x_out, infer_unary<false>>("relu"),
      op<N, run_unary<sigmoid>, bind_x_out, infer_unary<true>>("sigmoid"),
      op<N, run_unary<tanh>, bind_x_out, infer_unary<true>>("tanh"),
      op<N, run_unary<softplus>, bind_x_out, infer_unary<true>>("softplus"),
      op<A, run_softmax, bind_x_out, infer_unary<true, false, A>>("softmax"),
      op<ReduceAttrs, run_reduce<sum>, bind_x_out, infer_reduce<false>>("reduce_sum"),
      op<ReduceAttrs, run_reduce<mean>, bind_x_out, infer_reduce<true>>("reduce_mean"),
      op<ArgMaxAttrs, run_arg_max, bind_x_out, infer_arg_max>("arg_max"),
      op<MatmulAttrs, run_matmul, bind_xy_out, infer_matmul>("matmul"),
  };
}

}  // namespace chanflow::exec_detail
