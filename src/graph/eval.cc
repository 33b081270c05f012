// eval.cc — the forward computation of one node, shared by both machines.
#include <sstream>

#include "chanflow/core/error.h"
#include "chanflow/runtime/context.h"
#include "graph_impl.h"

namespace chanflow::detail {
namespace {

Tensor sum_to_kernel(const Tensor& a, const Shape& target, DType dtype, const KernelOptions& o) {
  const Shape& s = a.shape();
  const std::size_t lead = s.size() - target.size();
  Axes axes;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i < lead || (target[i - lead] == 1 && s[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  }
  Tensor r = axes.empty() ? a : sum(a, axes, /*keepdims=*/true, o);
  r = r.reshape(target);
  if (r.dtype() != dtype) r = cast(r, dtype);
  return r;
}

}  // namespace

void check_context(const Context& ctx) {
  ctx.throw_if_done();
  // The deadline is also checked against the clock: the timer that ends the context runs on a
  // scheduler worker, which may itself be busy in a long kernel.
  if (std::optional<Clock::time_point> d = ctx.deadline(); d && Clock::now() >= *d) {
    CHANFLOW_THROW(DeadlineExceededError) << "context deadline exceeded";
  }
}

namespace {

// A custom op: the user's function, its result checked against the declared shape and dtype.
Tensor eval_custom(const NodeData& n, const Tensor* in, const Context* ctx) {
  static const Context kBackground = background();
  Tensor r = (*n.fn)(std::span<const Tensor>(in, n.operands.size()),
                     OpContext(ctx != nullptr ? ctx : &kBackground));
  if (!r.defined()) {
    CHANFLOW_THROW(Error) << describe(n) << ": the function returned an undefined tensor";
  }
  if (r.shape() != n.shape) {
    CHANFLOW_THROW(ShapeError) << describe(n) << ": declared shape " << shape_to_string(n.shape)
                               << ", the function returned " << shape_to_string(r.shape());
  }
  if (r.dtype() != n.dtype) {
    CHANFLOW_THROW(TypeError) << describe(n) << ": declared dtype " << n.dtype
                              << ", the function returned " << r.dtype();
  }
  return r;
}

}  // namespace

Tensor eval_node(const NodeData& n, const Tensor* in, const Context* ctx, Tensor reuse) {
  // Fast paths first: sources pass their value through and custom ops need no kernel options
  // (building KernelOptions and sizing the work cost more than a trivial op itself).
  switch (n.op) {
    case OpKind::kInput:
    case OpKind::kConstant:
      if (in[0].dtype() == n.dtype && in[0].shape() == n.shape) return in[0];
      break;
    case OpKind::kCustom:
      return eval_custom(n, in, ctx);
    default:
      break;
  }
  KernelOptions o;
  if (ctx != nullptr) {
    int64_t work = 0;
    for (std::size_t i = 0; i < n.operands.size(); ++i) work += in[i].numel();
    if (n.op == OpKind::kMatmul) {
      work = shape_numel(n.shape) *
             (n.operands.size() == 2 && !in[0].shape().empty() ? in[0].shape().back() : 1);
    }
    // Large kernels are split so a cancelled run stops between chunks instead of finishing the
    // op (the tensor layer's chunking policy, shared with the executor).
    const WorkKind kind = n.op == OpKind::kMatmul ? WorkKind::kMultiplyAdds : WorkKind::kElements;
    if (chunk_by_policy(o, work, kind, [ctx] { check_context(*ctx); })) check_context(*ctx);
  }
  if (reuse.defined()) o.out = std::move(reuse);
  Tensor r;
  switch (n.op) {
    case OpKind::kInput:
    case OpKind::kConstant:
      r = in[0];
      break;
    case OpKind::kAdd:
      r = add(in[0], in[1], o);
      break;
    case OpKind::kSub:
      r = sub(in[0], in[1], o);
      break;
    case OpKind::kMul:
      r = mul(in[0], in[1], o);
      break;
    case OpKind::kDiv:
      r = div(in[0], in[1], o);
      break;
    case OpKind::kPow:
      r = pow(in[0], in[1], o);
      break;
    case OpKind::kMaximum:
      r = maximum(in[0], in[1], o);
      break;
    case OpKind::kMinimum:
      r = minimum(in[0], in[1], o);
      break;
    case OpKind::kEqual:
      r = equal(in[0], in[1], o);
      break;
    case OpKind::kNotEqual:
      r = not_equal(in[0], in[1], o);
      break;
    case OpKind::kLess:
      r = less(in[0], in[1], o);
      break;
    case OpKind::kLessEqual:
      r = less_equal(in[0], in[1], o);
      break;
    case OpKind::kGreater:
      r = greater(in[0], in[1], o);
      break;
    case OpKind::kGreaterEqual:
      r = greater_equal(in[0], in[1], o);
      break;
    case OpKind::kNeg:
      r = neg(in[0], o);
      break;
    case OpKind::kAbs:
      r = abs(in[0], o);
      break;
    case OpKind::kExp:
      r = exp(in[0], o);
      break;
    case OpKind::kLog:
      r = log(in[0], o);
      break;
    case OpKind::kSqrt:
      r = sqrt(in[0], o);
      break;
    case OpKind::kTanh:
      r = tanh(in[0], o);
      break;
    case OpKind::kSigmoid:
      r = sigmoid(in[0], o);
      break;
    case OpKind::kRelu:
      r = relu(in[0], o);
      break;
    case OpKind::kSum:
      r = sum(in[0], n.axes, n.keepdims, o);
      break;
    case OpKind::kMean:
      r = mean(in[0], n.axes, n.keepdims, o);
      break;
    case OpKind::kMax:
      r = max(in[0], n.axes, n.keepdims, o);
      break;
    case OpKind::kMin:
      r = min(in[0], n.axes, n.keepdims, o);
      break;
    case OpKind::kArgmax:
      r = argmax(in[0], n.axis, n.keepdims, o);
      break;
    case OpKind::kSoftmax:
      r = softmax(in[0], *n.axis, o);
      break;
    case OpKind::kLogSoftmax:
      r = log_softmax(in[0], *n.axis, o);
      break;
    case OpKind::kMatmul:
      r = matmul(in[0], in[1], o);
      break;
    case OpKind::kReshape:
      r = in[0].reshape(n.target);
      break;
    case OpKind::kTranspose:
      r = in[0].transpose(n.perm);
      break;
    case OpKind::kCast:
      r = cast(in[0], n.to, o);
      break;
    case OpKind::kBroadcastTo: {
      r = Tensor::empty(n.shape, n.dtype);
      r.assign(in[0]);
      break;
    }
    case OpKind::kSumTo:
      r = sum_to_kernel(in[0], n.target, n.dtype, o);
      break;
    case OpKind::kCustom:
      return eval_custom(n, in, ctx);
  }
  if (r.dtype() != n.dtype) r = cast(r, n.dtype);
  if (r.shape() != n.shape) {
    CHANFLOW_THROW(ShapeError) << describe(n) << ": inferred shape " << shape_to_string(n.shape)
                               << " but the kernel gave " << shape_to_string(r.shape());
  }
  return r;
}

}  // namespace chanflow::detail
