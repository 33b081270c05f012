// eval.cc — the forward computation of one node, shared by both machines: the node's row's
// kernel, split into chunks that check the run's context when the work is large.
#include <sstream>

#include "chanflow/core/error.h"
#include "chanflow/runtime/context.h"
#include "graph_impl.h"
#include "op_table.h"

namespace chanflow::detail {

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
  const OpRow& row = op_row(n.op);
  // Fast paths first: sources pass their value through and custom ops need no kernel options
  // (building KernelOptions and sizing the work cost more than a trivial op itself).
  if (row.form == Form::kSource) {
    if (in[0].dtype() == n.dtype && in[0].shape() == n.shape) return in[0];
  } else if (row.form == Form::kCustom) {
    return eval_custom(n, in, ctx);
  } else if (row.form == Form::kTable) {
    return eval_table(n, in, ctx);
  }
  KernelOptions o;
  if (ctx != nullptr) {
    int64_t work = 0;
    if (row.work == Work::kMultiplyAdds) {
      work = shape_numel(n.shape) *
             (n.operands.size() == 2 && !in[0].shape().empty() ? in[0].shape().back() : 1);
    } else {
      for (std::size_t i = 0; i < n.operands.size(); ++i) work += in[i].numel();
    }
    // Large kernels are split so a cancelled run stops between chunks instead of finishing the
    // op (the tensor layer's chunking policy, shared with the executor).
    const WorkKind kind =
        row.work == Work::kMultiplyAdds ? WorkKind::kMultiplyAdds : WorkKind::kElements;
    if (chunk_by_policy(o, work, kind, [ctx] { check_context(*ctx); })) check_context(*ctx);
  }
  if (reuse.defined()) o.out = std::move(reuse);
  Tensor r = row.eval(n, in, o);
  if (r.dtype() != n.dtype) r = cast(r, n.dtype);
  if (r.shape() != n.shape) {
    CHANFLOW_THROW(ShapeError) << describe(n) << ": inferred shape " << shape_to_string(n.shape)
                               << " but the kernel gave " << shape_to_string(r.shape());
  }
  return r;
}

}  // namespace chanflow::detail
