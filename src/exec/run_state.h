// run_state.h — the shared state of one Executor::run: its green threads, first error,
// cancellation and op slices (private to the exec layer).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/core/locks.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/group.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/trace.h"
#include "chanflow/tensor/memory_budget.h"
#include "prepared.h"

namespace chanflow::exec_detail {

// One thread of control of a run (the caller or a go block): what op it is at, for deadlock
// and cancellation reports and traces.
struct ThreadRecord {
  std::string name;
  std::atomic<const PreparedOp*> op{nullptr};
  std::list<ThreadRecord>::iterator self;  // its place in RunState::threads (O(1) removal)
  // Its lane in the trace's "executor" process, registered at its first traced op (tid 0: not
  // yet). Touched by this thread only.
  trace::Track trace_track;
};

// The run's green threads are a Group on the executor's scheduler whose error handler is fail():
// the group counts them, lets teardown unwind them and waits for them by parking; the run
// chooses which error is its own.
struct RunState : std::enable_shared_from_this<RunState> {
  // A run of `p` on `s`, canceled when `parent` is.
  RunState(std::shared_ptr<const PreparedProgram> p, Scheduler* s, const Context& parent)
      : prog(p.get()),
        prog_owner(std::move(p)),
        sched(s),
        group(*s, parent, [this](const std::exception_ptr& e) { fail(e); }),
        ctx(group.context()),
        canceled(detail::context_done_flag(ctx)) {}

  const PreparedProgram* prog;
  std::shared_ptr<const PreparedProgram> prog_owner;
  Scheduler* sched;
  // The run's go green threads. Its handler calls fail(), which needs the members below: they
  // are constructed after it and destroyed before it, which is safe because the handler runs
  // only while one of the group's green threads runs, and run() waits for all of them.
  Group group;
  // The run's own context (the group's): canceled by the run's first error (fail) and, as its
  // child, by the caller's context. Every blocking op waits on its done(); the dispatch loop
  // polls `canceled`.
  Context ctx;
  const std::atomic<bool>& canceled;
  std::atomic<int64_t> go_count{0};
  // Limits (ExecutorOptions): max_threads 0 is unlimited; budget is null when max_memory_bytes
  // is unlimited. live_go counts the run's go green threads started and not yet ended.
  int64_t max_threads = 0;
  std::atomic<int64_t> live_go{0};
  std::unique_ptr<MemoryBudget> budget;

  os::Mutex mu;
  std::exception_ptr first CHANFLOW_GUARDED_BY(mu);
  // Live threads of control (stable addresses).
  std::list<ThreadRecord> threads CHANFLOW_GUARDED_BY(mu);

  // Records e as the run's error if it is the first, then cancels every other thread. A
  // CanceledError that follows from the run's context being canceled is a consequence, not an
  // error of its own: when nothing failed first, the caller's context was canceled, and the
  // run's error becomes that context's (CanceledError or DeadlineExceededError) naming what was
  // still running.
  void fail(const std::exception_ptr& e);
  ThreadRecord* add_thread(std::string name);
  void remove_thread(ThreadRecord* t);
  // "block 0, op 5 ('channel_recv') on the calling thread; ..." for every live thread.
  std::string describe_waiting();
  // Records `op`, run by `thread` from t0 to t1 (trace::now_ns), as an op slice in the trace.
  static void record_op(ThreadRecord& thread, const PreparedOp& op, int64_t t0, int64_t t1);

 private:
  std::string describe_locked() CHANFLOW_REQUIRES(mu);
};

// Runs block `b` in `scope` on the calling thread. Throws ProgramError positioned at the failing
// op (errors of nested blocks keep their own position), CanceledError when the run was canceled,
// DeadlockError unchanged.
void run_block(RunState& rs, int32_t b, ScopeObj* scope, ThreadRecord* thread);

// Throws CanceledError when the run has been canceled (by an error or by the caller's context).
void throw_if_canceled(const RunState& rs);

}  // namespace chanflow::exec_detail
