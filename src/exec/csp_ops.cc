// csp_ops.cc — channel_create, channel_send, channel_recv, channel_close on the runtime's
// type-erased Channel. Every blocking operation also waits on the run's cancellation, so a
// failure elsewhere (or a detected deadlock) wakes it. One row each in csp_kernels() (kernel.h).
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "chanflow/exec/channels.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/select.h"
#include "kernel.h"
#include "run_state.h"

namespace chanflow::exec_detail {
namespace {

Channel make_channel(int64_t data_type, int64_t capacity) {
  const auto cap = static_cast<std::size_t>(capacity);
  if (data_type == static_cast<int64_t>(VarType::kChannel)) return Channel::make<ChannelObj>(cap);
  if (data_type == static_cast<int64_t>(VarType::kLoDTensor)) return Channel::make<TensorObj>(cap);
  return make_tensor_channel(dtype_of_var_type_number(data_type), cap);
}

Channel channel_in(const PreparedOp& op, const Frame& f) {
  ObjectRef v = read_var(f, op.in[0]);
  if (v.defined() && !v->is_instance<ChannelObj>()) {
    CHANFLOW_THROW(TypeError) << "input 'Channel' is variable '" << op.in_names[0]
                              << "', which holds a " << v->type_key() << ", not a channel";
  }
  return Channel(detail::ObjectUnsafe::move_ptr(std::move(v)));
}

// Selects between `c` and the run's cancellation; throws CanceledError if canceled.
void wait_or_cancel(const Frame& f, SelectCase c) {
  Chan<Unit> done = f.rs->ctx.done();
  std::optional<Unit> canceled;
  SelectCase cs[] = {c, SelectCase::recv(done, canceled)};
  if (select(std::span<SelectCase>(cs)) == 1) {
    throw_if_canceled(*f.rs);
    CHANFLOW_THROW(CanceledError) << "the program run was canceled";
  }
}

struct ChannelCreateAttrs {
  int64_t data_type = -1;  // an element VarType, LOD_TENSOR or CHANNEL (the schema checks it)
  int64_t capacity = 0;
  static constexpr auto kFields = std::tuple{field("data_type", &ChannelCreateAttrs::data_type),
                                             field("capacity", &ChannelCreateAttrs::capacity)};
};

void run_channel_create(const PreparedOp& op, const ChannelCreateAttrs& a, Frame& f) {
  Channel ch = make_channel(a.data_type, a.capacity);
  // Traces name the channel by its variable (not shared yet: set_name's precondition).
  if (!op.out_names.empty()) ch.base()->set_name(op.out_names[0]);
  write_out(op, f, 0, std::move(ch));
}
void bind_channel_create(PrepareCtx& c) { c.out("Out"); }

void run_channel_send(const PreparedOp& op, const NoAttrs&, Frame& f) {
  Channel ch = channel_in(op, f);
  ObjectRef v = read_var(f, op.in[1]);
  if (!v.defined()) {
    CHANFLOW_THROW(Error) << "input 'X' is variable '" << op.in_names[1]
                          << "', which was never written";
  }
  try {
    wait_or_cancel(f, ch.select_send(v));
  } catch (const ChannelClosedError&) {
    // The wait is a runtime select (the send or the run's cancellation) and its error says
    // "select: ...", but this op is a plain send: say so. Only the send case can throw this.
    throw ChannelClosedError("send on closed channel '" + op.in_names[0] +
                                 "' (an error, as in Go: Fluid's send returned without sending, "
                                 "so the value was lost)",
                             op.in_names[0]);
  }
  if (op.out[0].valid()) write_out(op, f, 0, Tensor::full({1}, 1.0, DType::kBool));
}
void bind_channel_send(PrepareCtx& c) {
  c.in("Channel");
  c.in("X");
  c.out("Status");
}

void run_channel_recv(const PreparedOp& op, const NoAttrs&, Frame& f) {
  Channel ch = channel_in(op, f);
  std::optional<ObjectRef> got;
  wait_or_cancel(f, ch.select_recv(got));
  const bool ok = got.has_value();
  write_out(op, f, 0, ok ? std::move(*got) : zero_value(op.out_decl));
  if (op.out[1].valid()) write_out(op, f, 1, Tensor::full({1}, ok ? 1.0 : 0.0, DType::kBool));
}
void bind_channel_recv(PrepareCtx& c) {
  c.in("Channel");
  c.out("Out");
  c.out("Status");
  c.op().out_decl = find_decl(c, c.op().out_names[0]);
}

void run_channel_close(const PreparedOp& op, const NoAttrs&, Frame& f) {
  Channel ch = channel_in(op, f);
  if (!ch.defined()) {
    throw ChannelClosedError("close of nil channel '" + op.in_names[0] +
                                 "' (no channel_create or assign has written it)",
                             op.in_names[0]);
  }
  try {
    ch.close();
  } catch (const ChannelClosedError&) {
    throw ChannelClosedError("close of closed channel '" + op.in_names[0] +
                                 "' (an error, as in Go: Fluid ignored a second close, which "
                                 "hides two owners that each believe they end the stream)",
                             op.in_names[0]);
  }
}
void bind_channel_close(PrepareCtx& c) { c.in("Channel"); }

}  // namespace

std::vector<KernelRow> csp_kernels() {
  using N = NoAttrs;
  return {
      op<ChannelCreateAttrs, run_channel_create, bind_channel_create>("channel_create"),
      op<N, run_channel_send, bind_channel_send>("channel_send"),
      op<N, run_channel_recv, bind_channel_recv>("channel_recv"),
      op<N, run_channel_close, bind_channel_close>("channel_close"),
  };
}

}  // namespace chanflow::exec_detail
