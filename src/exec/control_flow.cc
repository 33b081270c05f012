// control_flow.cc — while, conditional_block, go and select: one row each in
// control_flow_kernels() (kernel.h). Their bind functions fill PreparedOp's structural fields:
// sub_block (all four); while: in = {Condition}; conditional_block: in = X (all); go: binds (outer
// variable -> slot of the go block's scope), escapes; select: in = {case_to_execute}, cases.
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/select.h"
#include "kernel.h"
#include "run_state.h"

namespace chanflow::exec_detail {
namespace {

void bind_sub_block(PrepareCtx& c) {
  c.op().sub_block = static_cast<int32_t>(c.attr("sub_block").as_block());
}

// ---- while ---------------------------------------------------------------------------------
void run_while(const PreparedOp& op, const NoAttrs&, Frame& f) {
  if (!scalar_true(read_tensor(op, f, 0), "while: Condition")) return;
  // One scope for the body, reused by every iteration (like a Go loop body's variables).
  Scope body =
      Scope::make(scope_ref(f.scope), f.rs->prog->blocks[static_cast<size_t>(op.sub_block)].names);
  do {
    run_block(*f.rs, op.sub_block, body.get(), f.thread);
  } while (scalar_true(read_tensor(op, f, 0), "while: Condition"));
}
void bind_while(PrepareCtx& c) {
  c.in("Condition");
  bind_sub_block(c);
}

// ---- conditional_block -----------------------------------------------------------------------
struct ConditionalBlockAttrs {
  bool is_scalar_condition = false;
  static constexpr auto kFields =
      std::tuple{field("is_scalar_condition", &ConditionalBlockAttrs::is_scalar_condition)};
};

void run_conditional_block(const PreparedOp& op, const ConditionalBlockAttrs& a, Frame& f) {
  bool go_on = true;
  if (a.is_scalar_condition) {
    go_on = scalar_true(read_tensor(op, f, 0), "conditional_block: X");
  } else {
    for (size_t k = 0; k < op.in.size() && go_on; ++k) go_on = read_tensor(op, f, k).numel() > 0;
  }
  if (!go_on) return;
  Scope body =
      Scope::make(scope_ref(f.scope), f.rs->prog->blocks[static_cast<size_t>(op.sub_block)].names);
  run_block(*f.rs, op.sub_block, body.get(), f.thread);
}
void bind_conditional_block(PrepareCtx& c) {
  for (const std::string& x : c.desc().input("X")) {
    c.op().in.push_back(c.resolve(x));
    c.op().in_names.push_back(x);
  }
  bind_sub_block(c);
}

// ---- go --------------------------------------------------------------------------------------
void run_go(const PreparedOp& op, const NoAttrs&, Frame& f) {
  RunState& rs = *f.rs;
  // Reserve a place among the run's live green threads first (given back in finish, or below
  // when the spawn fails). Relaxed: a count that only bounds, publishing nothing; concurrent go
  // ops reserve before they compare, so together they never pass the limit.
  const int64_t live = rs.live_go.fetch_add(1, std::memory_order_relaxed) + 1;
  if (rs.max_threads > 0 && live > rs.max_threads) {
    rs.live_go.fetch_sub(1, std::memory_order_relaxed);
    throw LimitError("go: the run already has " + std::to_string(rs.max_threads) +
                         " live green threads, its limit (max_threads; `chanflow` sets it with "
                         "--max-threads)",
                     "max_threads");
  }
  struct Unreserve {  // until the green thread owns the reservation
    RunState* rs;
    ~Unreserve() {
      if (rs != nullptr) rs->live_go.fetch_sub(1, std::memory_order_relaxed);
    }
  } unreserve{&rs};
  const PreparedBlock& g = rs.prog->blocks[static_cast<size_t>(op.sub_block)];
  Scope child = Scope::make(scope_ref(f.scope), g.names);
  // Bind X now, like the arguments of a Go function call.
  for (const auto& [ref, slot] : op.binds) child->set(slot, read_var(f, ref));
  if (op.escapes) {
    // The block reads or writes enclosing scopes directly: from now on they are shared.
    for (ScopeObj* s = f.scope; s != nullptr; s = s->parent()) s->mark_shared();
  }
  const int64_t n = rs.go_count.fetch_add(1, std::memory_order_relaxed) + 1;
  std::string name = "go@block" + std::to_string(op.sub_block) + "#" + std::to_string(n);
  std::shared_ptr<RunState> keep = rs.shared_from_this();
  const int32_t block = op.sub_block;
  rs.group.go(name, [keep = std::move(keep), child = std::move(child), block, name]() mutable {
    RunState& st = *keep;
    ThreadRecord* tr = st.add_thread(name);
    // Runs however the body ends: returning, failing, or unwound at scheduler teardown.
    struct Finish {
      std::shared_ptr<RunState>& keep;
      Scope& child;
      ThreadRecord* tr;
      ~Finish() {
        keep->remove_thread(tr);
        child = Scope();
        keep->live_go.fetch_sub(1, std::memory_order_relaxed);
        // Let go of the run before the group counts this green thread done: run() frees the
        // RunState as soon as its wait returns, so this is never the last reference, and the
        // state is freed on the caller's thread, never by a go thread after run() returned.
        keep.reset();
      }
    } finish{keep, child, tr};
    try {
      const MemoryBudget::Use charge_run(st.budget.get());  // as the calling thread does
      run_block(st, block, child.get(), tr);
    } catch (const std::exception&) {
      // Failed here, while this thread still counts as running: fail() may name it among what
      // was running when the run was canceled. (Teardown's unwinding is not a std::exception
      // and passes on to the group; so do other exceptions, which reach fail() through the
      // group's handler.)
      st.fail(std::current_exception());
    }
  });
  unreserve.rs = nullptr;
}

void bind_go(PrepareCtx& c) {
  bind_sub_block(c);
  const int32_t sub = c.op().sub_block;
  const size_t declared = c.program().program.block(sub)->vars.size();
  for (const std::string& x : c.desc().input("X")) {
    // The slot the go block's scope has for x: its own declaration (the first slots) wins, then
    // the argument; a variable it only shares has none.
    const VarRef own = c.resolve(x, sub);
    if (own.depth != 0) continue;
    if (static_cast<size_t>(own.slot) < declared) continue;  // its own x: nothing to bind
    const int32_t slot = own.slot;
    c.op().binds.emplace_back(c.resolve(x), slot);
    c.op().in.push_back(c.op().binds.back().first);
    c.op().in_names.push_back(x);
  }
}

// ---- select ----------------------------------------------------------------------------------
Channel read_channel(const Frame& f, VarRef r, const std::string& name) {
  ObjectRef v = read_var(f, r);
  if (v.defined() && !v->is_instance<ChannelObj>()) {
    CHANFLOW_THROW(TypeError) << "variable '" << name << "' holds a " << v->type_key()
                              << ", not a channel";
  }
  return Channel(detail::ObjectUnsafe::move_ptr(std::move(v)));
}

void run_select(const PreparedOp& op, const NoAttrs&, Frame& f) {
  const size_t n = op.cases.size();
  std::vector<Channel> chans(n);
  std::vector<ObjectRef> sends(n);
  std::vector<std::optional<ObjectRef>> recvs(n);
  std::vector<SelectCase> sc;
  sc.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    const PreparedCase& c = op.cases[i];
    switch (c.kind) {
      case PreparedCase::kDefault:
        sc.push_back(SelectCase::default_case());
        break;
      case PreparedCase::kSend:
        chans[i] = read_channel(f, c.channel, c.channel_name);
        sends[i] = read_var(f, c.var);
        if (!sends[i].defined()) {
          CHANFLOW_THROW(Error) << "case " << c.index << " sends variable '" << c.var_name
                                << "', which was never written";
        }
        sc.push_back(chans[i].select_send(sends[i]));
        break;
      case PreparedCase::kRecv:
        chans[i] = read_channel(f, c.channel, c.channel_name);
        sc.push_back(chans[i].select_recv(recvs[i]));
        break;
    }
  }
  Chan<Unit> done = f.rs->ctx.done();
  std::optional<Unit> canceled;
  sc.push_back(SelectCase::recv(done, canceled));
  size_t k = 0;
  try {
    k = select(std::span<SelectCase>(sc));
  } catch (const ChannelClosedError&) {
    // The runtime's message starts "select: ...", and the executor names this op already.
    // Name the case instead: the first send case whose channel is closed (channels never
    // reopen, so it is closed; with several, select chose one of them).
    for (size_t i = 0; i < n; ++i) {
      const PreparedCase& c = op.cases[i];
      if (c.kind == PreparedCase::kSend && chans[i]->closed()) {
        throw ChannelClosedError(
            "case " + std::to_string(c.index) + " sends on closed channel '" + c.channel_name + "'",
            c.channel_name);
      }
    }
    throw;
  }
  if (k == n) {
    throw_if_canceled(*f.rs);
    CHANFLOW_THROW(CanceledError) << "select canceled";
  }
  const PreparedCase& c = op.cases[k];
  if (c.kind == PreparedCase::kRecv) {
    write_var(f, c.var, recvs[k] ? std::move(*recvs[k]) : zero_value(c.decl));
  }
  Tensor old = read_tensor(op, f, 0);
  write_var(f, op.in[0], Tensor::full({1}, static_cast<double>(c.index), old.dtype()));
  Scope body =
      Scope::make(scope_ref(f.scope), f.rs->prog->blocks[static_cast<size_t>(op.sub_block)].names);
  run_block(*f.rs, op.sub_block, body.get(), f.thread);
}
}  // namespace

void prep_select_cases(PrepareCtx& c);  // select_prepare.cc

namespace {
void bind_select(PrepareCtx& c) {
  c.in("case_to_execute");
  bind_sub_block(c);
  prep_select_cases(c);
}

}  // namespace

std::vector<KernelRow> control_flow_kernels() {
  using N = NoAttrs;
  using CondA = ConditionalBlockAttrs;
  return {
      op<N, run_while, bind_while>("while"),
      op<CondA, run_conditional_block, bind_conditional_block>("conditional_block"),
      op<N, run_go, bind_go>("go"),
      op<N, run_select, bind_select>("select"),
  };
}

}  // namespace chanflow::exec_detail
