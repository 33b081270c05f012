// run_block.cc — the dispatch loop, error positioning, the run's shared state, and the small
// helpers kernels share.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>

#include "chanflow/core/error.h"
#include "chanflow/ir/var_type.h"
#include "kernel.h"
#include "run_state.h"

namespace chanflow::exec_detail {
namespace {

// A LimitError whose message already names the op that hit the limit (the innermost one, when a
// nested block hit it). Callers see a LimitError.
class PositionedLimitError : public LimitError {
 public:
  using LimitError::LimitError;
};

[[noreturn]] void throw_positioned(const RunState& rs, const PreparedOp& op) {
  const std::string where = "block " + std::to_string(op.block) + ", op " +
                            std::to_string(op.index) + " ('" + op.type + "'): ";
  auto wrap = [&](const char* what) -> ProgramError {
    return {where + what, op.block, op.index, op.type};
  };
  try {
    throw;
  } catch (const ProgramError& e) {
    if (e.block_index() >= 0) throw;
    throw wrap(e.what());
  } catch (const PositionedLimitError&) {
    throw;
  } catch (const LimitError& e) {
    // Stays a LimitError (callers tell limits from program errors by type), positioned.
    throw PositionedLimitError(where + e.what(), e.limit());
  } catch (const DeadlockError&) {
    throw;
  } catch (const CanceledError& e) {
    if (rs.ctx.err() != nullptr) throw;
    std::throw_with_nested(wrap(e.what()));
  } catch (const std::exception& e) {
    // The op's own error (ShapeError, ChannelClosedError ...) stays reachable as the nested
    // exception (std::rethrow_if_nested), for callers that react to its kind: the Python module
    // raises an exception that is both a ProgramError and that kind.
    std::throw_with_nested(wrap(e.what()));
  }
}

}  // namespace

void throw_if_canceled(const RunState& rs) {
  if (rs.canceled.load(std::memory_order_relaxed)) {
    CHANFLOW_THROW(CanceledError) << "the program run was canceled";
  }
}

void run_block(RunState& rs, int32_t b, ScopeObj* scope, ThreadRecord* thread) {
  const PreparedBlock& blk = rs.prog->blocks[static_cast<size_t>(b)];
  Frame f{scope, &rs, thread};
  const PreparedOp* op = blk.ops.data();
  const PreparedOp* const end = op + blk.ops.size();
  try {
    // Cancellation (an error elsewhere, the caller's context) is polled before every op, so a
    // loop that never blocks stops too. Relaxed: the flag carries no data (fail reads the error
    // under locks).
    if (!trace::enabled()) {
      for (; op != end; ++op) {
        thread->op.store(op, std::memory_order_relaxed);
        if (rs.canceled.load(std::memory_order_relaxed)) throw_if_canceled(rs);
        op->run(*op, f);
      }
    } else {
      for (; op != end; ++op) {
        thread->op.store(op, std::memory_order_relaxed);
        throw_if_canceled(rs);
        const int64_t t0 = trace::now_ns();
        op->run(*op, f);
        RunState::record_op(*thread, *op, t0, trace::now_ns());
      }
    }
  } catch (const std::exception&) {
    // Only std exceptions: the unwinding of a green thread at scheduler teardown is not one and
    // must pass unchanged.
    throw_positioned(rs, *op);
  }
}

void RunState::fail(const std::exception_ptr& e) {
  {
    os::LockGuard lock(mu);
    if (!first) {
      bool consequence = false;
      try {
        std::rethrow_exception(e);
      } catch (const CanceledError&) {
        consequence = ctx.err() != nullptr;
      } catch (...) {
      }
      if (!consequence) {
        first = e;
      } else {
        // The run's context was canceled and no error of the run did it (fail records the error
        // before it cancels): the caller's context did. Name what was running now, before the
        // threads that noticed leave `threads` (each calls fail first).
        const std::string running = "; still running: " + describe_locked();
        try {
          std::rethrow_exception(ctx.err());
        } catch (const DeadlineExceededError&) {
          first = std::make_exception_ptr(DeadlineExceededError(
              "deadline exceeded: the run's context passed its deadline" + running));
        } catch (...) {
          first = std::make_exception_ptr(
              CanceledError("canceled: the run's context was canceled" + running));
        }
      }
    }
  }
  ctx.cancel();
}

ThreadRecord* RunState::add_thread(std::string name) {
  os::LockGuard lock(mu);
  threads.emplace_back();
  ThreadRecord* t = &threads.back();
  t->self = std::prev(threads.end());
  t->name = std::move(name);
  return t;
}

void RunState::remove_thread(ThreadRecord* t) {
  os::LockGuard lock(mu);
  threads.erase(t->self);
}

std::string RunState::describe_waiting() {
  os::LockGuard lock(mu);
  return describe_locked();
}

std::string RunState::describe_locked() {
  // A run may have a million threads: name the first ones and count the rest.
  constexpr int kMaxNamed = 16;
  std::ostringstream os;
  int n = 0;
  for (const ThreadRecord& t : threads) {
    const PreparedOp* op = t.op.load(std::memory_order_relaxed);
    if (op == nullptr) continue;
    if (n++ >= kMaxNamed) continue;
    os << (n == 1 ? "" : "; ") << "block " << op->block << ", op " << op->index << " ('" << op->type
       << "') "
       << (t.name == "main" ? std::string("on the calling thread") : "in green thread " + t.name);
  }
  if (n > kMaxNamed) os << "; and " << (n - kMaxNamed) << " more green threads";
  if (n == 0) os << "no op of the program (the caller waits for its green threads)";
  return os.str();
}

namespace {
// Executor lanes registered so far, and the most there may be: the track registry lives as long
// as the process, so a traced program that starts a million green threads shares one overflow
// lane past this many.
constexpr int64_t kMaxOpLanes = 4096;
std::atomic<int64_t> g_op_lanes{0};
}  // namespace

void RunState::record_op(ThreadRecord& thread, const PreparedOp& op, int64_t t0, int64_t t1) {
  if (thread.trace_track.tid == 0) {
    static const uint32_t kPid = trace::process("executor");
    if (g_op_lanes.fetch_add(1, std::memory_order_relaxed) < kMaxOpLanes) {
      thread.trace_track = trace::thread(kPid, thread.name);
    } else {
      static const trace::Track kOverflow = trace::thread(kPid, "more threads");
      thread.trace_track = kOverflow;
    }
  }
  char args[160];
  const int n =
      std::snprintf(args, sizeof(args), R"({"g":%llu,"block":%d,"op":%d})",
                    static_cast<unsigned long long>(current_green_thread_id()), op.block, op.index);
  trace::slice(thread.trace_track, "op", op.type, t0, t1,
               std::string_view(args, static_cast<size_t>(std::max(n, 0))));
}

// ---- helpers shared by kernels ------------------------------------------------------------

Tensor read_tensor(const PreparedOp& op, const Frame& f, size_t k) {
  ObjectRef v = read_var(f, op.in[k]);
  if (!v.defined()) {
    CHANFLOW_THROW(Error) << "input variable '" << op.in_names[k]
                          << "' is read before anything was written to it";
  }
  if (!v->is_instance<TensorObj>()) {
    CHANFLOW_THROW(TypeError) << "input variable '" << op.in_names[k] << "' holds a "
                              << v->type_key() << ", not a tensor";
  }
  return Tensor(detail::ObjectUnsafe::move_ptr(std::move(v)));
}

Tensor take_output_buffer(const PreparedOp& op, const Frame& f, size_t k) {
  ScopeObj* s = scope_at(f.scope, op.out[k].depth);
  if (s->is_shared()) return {};
  ObjectRef v = s->take(op.out[k].slot);
  if (v.defined() && v->is_instance<TensorObj>() && v.unique()) {
    return Tensor(detail::ObjectUnsafe::move_ptr(std::move(v)));
  }
  s->set(op.out[k].slot, std::move(v));  // not reusable: put it back
  return {};
}

void throw_out_dtype(const PreparedOp& op, size_t k, const TensorObj& value) {
  CHANFLOW_THROW(TypeError) << "output variable '" << op.out_names[k] << "' is declared "
                            << var_type_name(var_type_from_dtype(*op.out_dtypes[k]))
                            << ", but the op computed a "
                            << var_type_name(var_type_from_dtype(value.dtype()))
                            << " tensor (type mismatch)";
  __builtin_unreachable();  // the thrower's destructor throws
}

ObjectRef zero_value(const VarDecl& d) {
  if (d.type != static_cast<int64_t>(VarType::kLoDTensor) || !is_valid_var_type(d.data_type) ||
      !is_element_type(static_cast<VarType>(d.data_type))) {
    return {};
  }
  Shape shape;
  for (int64_t x : d.dims) shape.push_back(x < 0 ? 1 : x);
  if (shape.empty()) shape.push_back(1);
  return Tensor::zeros(shape, dtype_from_var_type(static_cast<VarType>(d.data_type)));
}

bool scalar_true(const Tensor& t, const char* what) {
  if (t.numel() != 1) {
    CHANFLOW_THROW(ShapeError) << what << " must have one element, got shape "
                               << shape_to_string(t.shape());
  }
  if (t.dtype() == DType::kBool) return *static_cast<const uint8_t*>(t->raw_data()) != 0;
  return t.item<double>() != 0.0;
}

Scope scope_ref(ScopeObj* s) { return Scope(detail::ObjectUnsafe::adopt<Object>(s)); }

}  // namespace chanflow::exec_detail
