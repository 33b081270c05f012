// scheduler.h — green threads: go(), yield(), sleep_for() and the M:N Scheduler that runs them.
//
// A green thread is a stackful fiber (Boost.Context) run by one of a scheduler's worker OS threads.
// Workers keep a local run queue, steal from each other when idle and sleep on a futex when there
// is nothing to do. A blocking chanflow call parks only the green thread; its worker runs others.
//
//   cf::go("producer", [ch] { ch.send(1); });      // on the default scheduler
//
//   cf::Scheduler s({.workers = 2});                // or an explicit one
//   cf::ScopedDefaultScheduler use(s);               // cf::go from OS threads now uses s
//   cf::go([] { ... });
//   // ~Scheduler waits for every green thread it runs, then joins its workers.
//
// An exception escaping a green thread's function prints the green thread's name and the error and
// aborts the process, like an unrecovered Go panic; use Group to collect errors instead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "chanflow/core/export.h"

namespace chanflow {

class Scheduler;

// How green-thread stacks are protected against overflow.
enum class StackGuard : uint8_t {
  // A guard page below every stack. On Linux 6.13+ (madvise guard markers) that holds for any
  // number of stacks; on older kernels while the process-wide mapping budget allows (each
  // guarded stack costs two kernel mappings out of vm.max_map_count), and compact stacks beyond.
  kAuto,
  // Always a guard page; on kernels before 6.13 spawning fails with Error when the mapping
  // budget is exhausted.
  kAlways,
  // Compact: stacks carved back to back from big mappings, no guard page. An overflow is caught
  // late, by a canary word checked at every switch (see docs/runtime.md).
  kCompact,
};

// The most worker threads a scheduler may have. Each worker is an OS thread with its own stack,
// run queue and sleep word; thousands of them cost seconds and gigabytes to start while the
// machine still has only its cores to run them on.
inline constexpr int kMaxWorkers = 1024;

// The environment variables below are read when a Scheduler is constructed; a value that does not
// parse or is out of range is an Error naming the variable and the value (the constructor throws),
// never silently replaced by the default.
struct SchedulerOptions {
  // Worker OS threads, at most kMaxWorkers (LimitError, thrown before any thread starts; negative:
  // Error). 0: the CHANFLOW_WORKERS environment variable (0 .. kMaxWorkers; 0 as unset), else the
  // hardware threads (at most kMaxWorkers).
  int workers = 0;
  // Usable stack bytes per green thread, rounded up to pages. 0: CHANFLOW_STACK_SIZE (bytes, 1 ..
  // 1 GiB, an optional k/K or m/M suffix), else 256 KiB. Untouched stack pages cost no memory.
  std::size_t stack_size = 0;
  StackGuard guard = StackGuard::kAuto;
  // Pins worker i to the i-th CPU this process may run on (its affinity mask), wrapping around
  // when there are more workers than CPUs. Off by default (the OS places threads; right on a shared
  // machine). On a machine the program has to itself it keeps Linux from stacking two busy
  // workers on one CPU, which it does often when workers sleep and wake many times per millisecond
  // (docs/benchmarks.md: train_digits on 2 workers, pinned and unpinned). Best effort: a worker
  // that cannot be pinned runs unpinned. The CHANFLOW_PIN_WORKERS environment variable (1 or 0)
  // overrides this.
  bool pin_workers = false;
};

namespace detail {
struct SchedulerImpl;
struct Task;
struct SpawnSlot {
  Task* task;
  void* fn_storage;
};
CHANFLOW_API SpawnSlot spawn_begin(SchedulerImpl* s, std::string&& name, std::size_t fn_size,
                                   std::size_t fn_align);
// for_others: Scheduler::go_for_others' placement (work_sharing.h).
CHANFLOW_API void spawn_commit(Task* t, void (*run)(void*), void (*destroy)(void*),
                               bool for_others) noexcept;
CHANFLOW_API void spawn_abort(Task* t) noexcept;
void schedulers_after_fork_child(SchedulerImpl* registered) noexcept;  // fork.h
}  // namespace detail

// Thrown through the stack of a green thread that ~Scheduler unwinds because it is parked
// forever (nothing can wake it), so that its destructors run. Not a std::exception: a
// `catch (const std::exception&)` lets it pass. Code on a green thread that catches everything
// must rethrow it, as code on a cancelled pthread must rethrow abi::__forced_unwind: a green
// thread that swallows it runs on after its scheduler decided it was dead. Group does this for
// the functions it runs.
struct FiberUnwind {};

// An M:N scheduler of green threads. Thread-safe: any thread (green or not) may call go().
class CHANFLOW_API Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options = {});
  // Waits for every green thread this scheduler runs to finish, then joins the workers. Green
  // threads that are parked forever (nothing can wake them: the deadlock condition) are unwound,
  // as Go drops goroutines when main returns. Must not be called from one of its green threads.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts a green thread running fn() (moved or copied onto its stack). Never blocks.
  template <class F>
  void go(F&& fn) {
    spawn(std::string(), std::forward<F>(fn), false);
  }
  // Same, named: the name appears in deadlock reports, crash messages and traces.
  template <class F>
  void go(std::string name, F&& fn) {
    spawn(std::move(name), std::forward<F>(fn), false);
  }

  // Like go(), for a green thread meant to run on another worker than the caller's: called from a
  // green thread of this scheduler with more than one worker, it is placed where an idle worker
  // steals it at once (the tail of the caller's run queue) rather than in the caller's runnext
  // slot, which thieves leave to a busy caller for a few microseconds. Elsewhere (a plain OS
  // thread, another scheduler's green thread, one worker) exactly go(). See work_sharing.h.
  template <class F>
  void go_for_others(F&& fn) {
    spawn(std::string(), std::forward<F>(fn), true);
  }
  template <class F>
  void go_for_others(std::string name, F&& fn) {
    spawn(std::move(name), std::forward<F>(fn), true);
  }

  // The number of worker threads.
  int workers() const noexcept;
  // Usable bytes of each green thread's stack.
  std::size_t stack_size() const noexcept;
  // Green threads started and not yet finished (a snapshot).
  std::size_t live() const noexcept;

  detail::SchedulerImpl* impl() const noexcept { return impl_; }

 private:
  template <class F>
  void spawn(std::string name, F&& fn, bool for_others) {
    using Fn = std::decay_t<F>;
    detail::SpawnSlot slot = detail::spawn_begin(impl_, std::move(name), sizeof(Fn), alignof(Fn));
    try {
      ::new (slot.fn_storage) Fn(std::forward<F>(fn));
    } catch (...) {
      detail::spawn_abort(slot.task);
      throw;
    }
    detail::spawn_commit(
        slot.task, [](void* p) { (*static_cast<Fn*>(p))(); },
        [](void* p) { static_cast<Fn*>(p)->~Fn(); }, for_others);
  }

  // Replaced in a fork()ed child (the parent's workers do not exist there; docs/runtime.md).
  friend void detail::schedulers_after_fork_child(detail::SchedulerImpl* registered) noexcept;
  detail::SchedulerImpl* impl_;
};

// Makes `s` the scheduler cf::go uses from plain OS threads (process-wide) for this object's
// lifetime; restores the previous one on destruction. Guards nest (LIFO). Not for green threads,
// which always spawn on their own scheduler.
class CHANFLOW_API ScopedDefaultScheduler {
 public:
  explicit ScopedDefaultScheduler(Scheduler& s);
  ~ScopedDefaultScheduler();
  ScopedDefaultScheduler(const ScopedDefaultScheduler&) = delete;
  ScopedDefaultScheduler& operator=(const ScopedDefaultScheduler&) = delete;

 private:
  Scheduler* previous_;
};

// The scheduler cf::go starts green threads on when called here: the calling green thread's own
// scheduler; on a plain OS thread, the innermost live ScopedDefaultScheduler's, else the
// process-wide default (created with default SchedulerOptions on first use, never destroyed:
// green threads still parked at exit are dropped, as Go's are). Layers that take an optional
// Scheduler* (GoMachineOptions::scheduler, ExecutorOptions) fall back to this. Thread-safe; the
// first call may start the default scheduler's workers.
CHANFLOW_API Scheduler& scheduler_for_go();

// The scheduler of the calling green thread; nullptr on a plain OS thread. Never blocks.
// (Unlike scheduler_for_go(), it never falls back to a default: a DAG runner asks it how many
// workers could share its work, current_scheduler()->workers().)
CHANFLOW_API Scheduler* current_scheduler() noexcept;

// Starts a green thread on scheduler_for_go(). Never blocks. Thread-safe.
template <class F>
void go(F&& fn) {
  scheduler_for_go().go(std::forward<F>(fn));
}
template <class F>
void go(std::string name, F&& fn) {
  scheduler_for_go().go(std::move(name), std::forward<F>(fn));
}

// Lets other green threads run: the caller goes to the back of the scheduler's shared queue (Go's
// Gosched), so the green threads ready on its worker usually run first (a periodic fairness turn
// may serve the shared queue sooner). On an OS thread, yields the OS thread.
CHANFLOW_API void yield();
// Parks the calling green thread (only it, not its worker) for at least d; sleeps an OS thread.
CHANFLOW_API void sleep_for(std::chrono::nanoseconds d);
// Whether the caller runs on a green thread.
CHANFLOW_API bool in_green_thread() noexcept;
// The calling green thread's name ("" on an OS thread; "#<id>" for unnamed green threads).
CHANFLOW_API std::string current_green_thread_name();
// The calling green thread's id (the trace's "g"; unique in the process), or 0 outside one.
CHANFLOW_API uint64_t current_green_thread_id() noexcept;

}  // namespace chanflow
