// executor.h — Executor: runs a Program's block 0, with go blocks on green threads.
//
//   cf::Executor ex({.workers = 4});                    // its own 4-worker scheduler
//   std::map<std::string, cf::Tensor> out =
//       ex.run(program, /*feed=*/{{"x", x}}, /*fetch=*/{"result"});
//   cf::Channel batches = cf::Channel::make<cf::TensorObj>(4);   // shared with the program:
//   ex.run(program, {}, {"accuracy"}, /*channels=*/{{"batches", batches}});  // C++ sends, it
//   receives
//
// A run verifies the program (ProgramError naming block, op index and op type), prepares it once
// (kernels, attributes and variable slots resolved; cached per program object), feeds block 0's
// variables, runs block 0 on the calling thread and returns the fetched tensors.
//
// Semantics (docs/exec.md has the full rules):
//   - `go` starts its sub-block on a green thread named "go@block<i>" in a child scope that keeps
//     every enclosing scope alive. The variables listed in the go op's X are bound when the op
//     runs (Go's function-call arguments): later writes by the enclosing block are not seen.
//   - `select` performs exactly one ready case (random among ready ones, a closed channel is
//     ready, default only when none is), writes its index to case_to_execute and runs sub_block.
//   - Structured concurrency: run() returns when block 0 and every green thread it started have
//     finished. The first error anywhere cancels the rest (blocked channel operations wake up)
//     and is rethrown as a ProgramError positioned at the failing op (the op's own error, e.g. a
//     ShapeError, nested in it: std::rethrow_if_nested); a deadlock (everything
//     blocked, nothing can wake it) is rethrown as a DeadlockError naming every waiting op.
//     Deadlock detection needs the caller to be an OS thread (not a green thread), as in the
//     runtime.
//   - Stopping: run(ctx, ...) is stopped by a Context (cancel, deadline) like an error is: the
//     run's error is then the context's, naming what was still running.
//
// Thread-safety: one Executor may run any number of programs at once from any threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/core/locks.h"
#include "chanflow/exec/persistent_scope.h"
#include "chanflow/exec/scope.h"
#include "chanflow/ir/program.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

namespace exec_detail {
struct PreparedProgram;
}  // namespace exec_detail

struct ExecutorOptions {
  // Worker threads of a scheduler the executor owns. 0: no own scheduler — use `scheduler`, or
  // else the scheduler cf::go would use from the calling thread.
  int workers = 0;
  // A scheduler to run green threads on (not owned; must outlive the executor). Ignored when
  // workers > 0.
  Scheduler* scheduler = nullptr;

  // Limits. max_threads and max_memory_bytes: a run that hits one throws LimitError naming the
  // limit, its value and the op (block, op index, op type).
  // Live green threads started by one run's go ops.
  int64_t max_threads = 1'000'000;
  // Live tensor bytes a run may hold; -1 = half the physical memory, 0 = unlimited.
  int64_t max_memory_bytes = -1;
};

class CHANFLOW_API Executor {
 public:
  explicit Executor(ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `program` (see the top of this file). `feed` sets block 0 variables before the run
  // (each must be a declared tensor variable of the declared element type: TypeError otherwise);
  // `fetch` names block 0 tensor variables to return (Error when one is unknown or unset).
  // `channels` binds block 0 CHANNEL variables to channels the caller holds, so C++ green threads
  // (or OS threads) and the program exchange values while it runs. A variable that a
  // channel_create of the program makes (in any block) cannot be bound: ProgramError naming the
  // variable and that op (its block, index and type), before anything runs, since the op would
  // replace the bound channel. A bound channel must be defined and carry what the
  // declaration says: a LOD_TENSOR declaration needs a tensor channel
  // (Channel::make<TensorObj>), an element type (FP32 ...) a tensor channel too (the program's
  // ops check dtypes as they use the values), CHANNEL a channel of channels
  // (Channel::make<ChannelObj>); otherwise TypeError naming the variable. A program blocked on a
  // bound channel waits for the caller's side like any channel operation (a run that fails or is
  // canceled wakes it); closing the channel is how the caller says "no more values".
  // Blocks until the program and all its green threads finished. Thread-safe.
  std::map<std::string, Tensor> run(const Program& program,
                                    const std::map<std::string, Tensor>& feed = {},
                                    const std::vector<std::string>& fetch = {},
                                    const std::map<std::string, Channel>& channels = {});
  // The same, stopped by `ctx` (the overload above runs with background()). Canceling `ctx` or
  // its deadline passing stops the run: every blocked channel operation, select and go block
  // wakes, loops stop before their next op, and run() returns once all the run's green threads
  // ended, throwing the context's error — CanceledError or DeadlineExceededError — whose message
  // names each thread that was still running and the op it was at ("still running: block 0, op 4
  // ('while') on the calling thread; block 1, op 0 ('channel_recv') in green thread
  // go@block1#1"). A context already done when run() is called runs nothing. A run that
  // completes before it notices the cancellation returns normally.
  std::map<std::string, Tensor> run(const Context& ctx, const Program& program,
                                    const std::map<std::string, Tensor>& feed = {},
                                    const std::vector<std::string>& fetch = {},
                                    const std::map<std::string, Channel>& channels = {});

  // The same, in `scope`: the program's persistable block 0 variables (parameters, optimiser
  // state) start as the scope holds them and go back to it when the run ends, also when it fails
  // (see persistent_scope.h). A feed of a persistable variable overrides the scope's value.
  // Throws Error when another run uses the scope.
  std::map<std::string, Tensor> run(const Context& ctx, const Program& program,
                                    PersistentScope& scope,
                                    const std::map<std::string, Tensor>& feed = {},
                                    const std::vector<std::string>& fetch = {},
                                    const std::map<std::string, Channel>& channels = {});
  std::map<std::string, Tensor> run(const Program& program, PersistentScope& scope,
                                    const std::map<std::string, Tensor>& feed = {},
                                    const std::vector<std::string>& fetch = {});

  // Like run(), and also returns block 0's scope (every block 0 variable, channels too).
  Scope run_scope(const Program& program, const std::map<std::string, Tensor>& feed = {},
                  const std::map<std::string, Channel>& channels = {});
  Scope run_scope(const Context& ctx, const Program& program,
                  const std::map<std::string, Tensor>& feed = {},
                  const std::map<std::string, Channel>& channels = {});

  // run_scope in a PersistentScope (see the run overload taking one).
  Scope run_scope(const Context& ctx, const Program& program, PersistentScope& scope,
                  const std::map<std::string, Tensor>& feed = {},
                  const std::map<std::string, Channel>& channels = {});

  // Verifies and prepares `program` now (run() does it on first use). Throws ProgramError.
  void prepare(const Program& program);

  // The scheduler green threads run on.
  Scheduler& scheduler() const;

 private:
  std::shared_ptr<const exec_detail::PreparedProgram> prepared(const Program& program);
  Scope run_impl(const Context& ctx, const Program& program,
                 const std::map<std::string, Tensor>& feed,
                 const std::map<std::string, Channel>& channels,
                 PersistentScope* persistent = nullptr);
  std::map<std::string, Tensor> fetch_from(const Scope& root,
                                           const std::vector<std::string>& fetch) const;

  ExecutorOptions options_;
  std::unique_ptr<Scheduler> own_scheduler_;
  os::Mutex mu_;
  std::map<const Object*, std::pair<Program, std::shared_ptr<const exec_detail::PreparedProgram>>>
      cache_ CHANFLOW_GUARDED_BY(mu_);
};

}  // namespace chanflow
