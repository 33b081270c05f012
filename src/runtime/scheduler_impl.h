// scheduler_impl.h — the scheduler's private state: workers, queues, accounting (private).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "chanflow/core/cache_line.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/trace.h"
#include "global_queue.h"
#include "run_queue.h"
#include "stack_pool.h"
#include "task.h"

namespace chanflow::detail {

// A share of the scheduler-wide accounting. Each worker owns one (only its OS thread writes it);
// threads outside the scheduler share `SchedulerImpl::external`. The counters only grow: a total
// such as "live green threads" is a sum over all shards (SchedulerImpl::live_count), so spawning,
// parking, waking and exiting touch only the calling worker's cache lines — a single shared
// counter cost a cross-CPU cache-line transfer on each of those with 2+ workers.
// `spawned` and `finished` change by seq_cst read-modify-writes (live_count and ~Scheduler's
// Dekker pair need them); a worker's `woken` and `parked`, on every park and wake-up, by plain
// release stores of its own thread (SchedulerImpl::active_count explains why that suffices).
struct alignas(kCacheLine) TaskCounts {
  std::atomic<uint64_t> spawned{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<uint64_t> woken{0};   // made runnable again after a park
  std::atomic<uint64_t> parked{0};  // switched out to wait
};

struct Worker {
  SchedulerImpl* sched = nullptr;
  int index = 0;
  std::thread thread;
  RunQueue rq;
  // The task to run next (Go's runnext): a green thread woken by the running one, so ping-pong
  // partners alternate on one worker without touching the queues. Thieves take it only last.
  alignas(kCacheLine) std::atomic<Task*> runnext{nullptr};
  // 1 while the worker sleeps; a waker exchanges it to 0 and futex-wakes.
  alignas(kCacheLine) std::atomic<uint32_t> sleep_word{0};
  // Tasks this worker dispatched (written by the owner only): a thief about to take runnext waits
  // briefly for this to move, which says the owner got to run it itself.
  alignas(kCacheLine) std::atomic<uint64_t> dispatches{0};
  alignas(kCacheLine) Task* current = nullptr;
  // The worker's own context (its scheduling loop), suspended while a task runs; the task
  // switches back to it when it finds no local task to hand off to (fiber_switch.h).
  boost::context::fiber home;
  // A task switched out by a direct hand-off, not yet settled: the task landing next settles it.
  Task* switched_from = nullptr;
  // Times a task switched back to `home` (owner-only; tests check hand-offs skip it).
  uint64_t home_returns = 0;
  // Runs right after the current task switched out (releases the park's locks): on the worker's
  // own stack, or, after a direct hand-off, on the stack of the task that lands (settle).
  void (*after_fn)(void*) = nullptr;
  void* after_arg = nullptr;
  bool after_is_park = false;
  bool spinning = false;
  // A task on this worker futex-woke a sleeping OS thread (unpark; owner-only): before it spins
  // idle, the worker yields its CPU once, where the kernel may have queued that thread.
  bool woke_os_thread = false;
  // Runnext backoff (owner-only; scheduler.cc, steal): after a grace steal failed because the
  // victim kept dispatching, this idle worker leaves every runnext alone until runnext_quiet_until
  // (steady-clock ns); runnext_backoff_ns doubles with each such failure in a row.
  int64_t runnext_quiet_until = 0;
  int64_t runnext_backoff_ns = 0;
  // Grace waits this worker started as a thief (written by the owner only; tests read it).
  std::atomic<uint64_t> runnext_grace_waits{0};
  // Runnext tasks this worker took as a thief after the grace (owner-written; tests read it).
  std::atomic<uint64_t> runnext_steals{0};
  // Times this worker went to sleep for lack of work (owner-written; tests read it).
  std::atomic<uint64_t> idle_sleeps{0};
  uint32_t tick = 0;
  uint64_t rng = 0;
  void* tsan_fiber = nullptr;
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
  // Task ids handed out here next: [id_next, id_end), taken from the process's counter in blocks.
  uint64_t id_next = 0;
  uint64_t id_end = 0;
  StackPool::Cache stacks;
  // Tracing (owner-only): this worker's lane (registered on its first traced run), the run-queue
  // length it last recorded and when it last sampled it.
  trace::Track trace_track;
  int64_t trace_last_runnable = -1;
  int64_t trace_runnable_ns = 0;  // when it last sampled the run-queue length
  // The clock reading that ended the run slice of the task switching out, for the run slice of
  // the task it hands off to (0: none; a direct hand-off starts at once).
  int64_t trace_switch_ns = 0;
  TaskCounts counts;
};

struct SchedulerImpl {
  SchedulerImpl(Scheduler* owner, const SchedulerOptions& options);
  ~SchedulerImpl();

  // Starts the workers and registers with deadlock detection: once, by the constructor of its
  // Scheduler, or, for the implementation a fork()ed child gives a Scheduler of its parent
  // (fork.h), by the first spawn (ensure_started). Thread-safe.
  void start();
  void ensure_started() {
    if (!started.load(std::memory_order_acquire)) start();
  }
  // Makes a parked (or new) task runnable. Thread-safe.
  void ready(Task* t, bool is_new) { ready_from(worker_here(), t, is_new); }
  // ready() for a caller that already looked up worker_here().
  void ready_from(Worker* here, Task* t, bool is_new);
  // Waits until every task finished; unwinds tasks parked forever. Blocks.
  void drain();
  void stop();

  // Worker side.
  void worker_main(Worker* w);
  Task* find_work(Worker* w);
  // Whether any queue holds a task; with_runnext = false leaves out the runnext slots (which a
  // busy worker writes on every hand-off).
  bool any_work(bool with_runnext = true) const noexcept;
  void run_task(Worker* w, Task* t);
  // Makes t w's current task (counted as dispatched); the switch to it follows.
  void begin_run(Worker* w, Task* t) noexcept;
  // After `prev` switched out: its park's after-step and count, or its exit (fiber_switch.h).
  void settle(Worker* w, Task* prev) noexcept;
  // A task of w's own to switch to directly, or nullptr (fiber_switch.h: take_hand_off).
  Task* take_local(Worker* w) noexcept;
  // The local part of the dispatch order, shared by find_work and take_local: on a fairness
  // turn the oldest local task, then runnext, then the newest local task. Owner only.
  Task* take_local_in_order(Worker* w, bool fairness_turn) noexcept;
  // Empties w's runnext slot; returns what it held. Owner only.
  Task* take_runnext(Worker* w) noexcept;
  void task_finished(Worker* w, Task* t);
  void local_push(Worker* w, Task* t);
  // Wakes a sleeping worker if none spins. Call after making work visible (a push); it fences
  // so that either the sleeper's re-check sees the work or this sees the sleeper.
  void wake_idle();
  // wake_idle() for a caller whose push was itself a seq_cst read-modify-write of a word the
  // sleeper's re-check reads with seq_cst (a runnext exchange): that orders like the fence.
  void wake_idle_ordered();
  void reset_spinning(Worker* w);
  Task* steal(Worker* thief, Worker* victim, bool take_runnext);

  void global_push(Task* t);
  void global_push_batch(Task** ts, uint32_t n);
  Task* global_pop(Worker* w);

  Scheduler* owner;
  // The options resolved (worker count, stack size, pinning as the environment decided them):
  // what a fork()ed child's new implementation is made with.
  SchedulerOptions resolved;
  int nworkers;
  std::vector<int> pin_cpus;  // worker i runs on pin_cpus[i % size] (empty: not pinned)
  std::vector<std::unique_ptr<Worker>> workers;
  StackPool pool;

  // start() ran (workers exist). start_mu serialises a lazy start (ensure_started).
  std::atomic<bool> started{false};
  os::Mutex start_mu;

  GlobalQueue gq;

  alignas(kCacheLine) std::atomic<int> nspinning{0};
  std::atomic<int> nidle{0};
  std::atomic<bool> stopping{false};

  // Threads outside this scheduler (OS threads, the timer thread, other schedulers' workers)
  // currently inside ready(). The task such a waker readies may run and finish before the waker
  // returns, so ~Scheduler waits for this to reach 0 before freeing the workers wake_idle reads.
  alignas(kCacheLine) std::atomic<int> external_wakers{0};

  // Accounting for threads that are not this scheduler's workers.
  TaskCounts external;

  // Green threads spawned and not finished. A consistent total: it reads every shard's `finished`
  // before any `spawned`, so a 0 means that at one instant no green thread was alive (never an
  // undercount). Thread-safe.
  int64_t live_count() const noexcept;
  // The totals of "on" events (spawns, wake-ups) and "off" events (parks, exits) over every
  // shard. Both only grow: two equal readings mean no green thread of this scheduler was
  // spawned, woken, parked or finished in between (deadlock.cc relies on that).
  struct Activity {
    uint64_t on = 0;
    uint64_t off = 0;
    bool operator==(const Activity&) const = default;
  };
  Activity activity() const noexcept;
  // Green threads runnable or running (not parked); 0 with live > 0: all parked. Same reading.
  int64_t active_count() const noexcept {
    const Activity a = activity();
    return static_cast<int64_t>(a.on - a.off);
  }
  // The calling thread's worker if it is one of this scheduler's, else nullptr. Not cached
  // across a park: a green thread may resume on another worker.
  Worker* worker_here() const noexcept;
  // The shard of `here` (from worker_here): its worker's, or `external`.
  TaskCounts& counts_of(Worker* here) noexcept { return here != nullptr ? here->counts : external; }
  // A fresh task id; `here` as for counts_of.
  uint64_t take_id(Worker* here) noexcept;
  // Calls fn(Task*) for every live green thread (the stack pool's owner table). Only where no
  // green thread can start or exit meanwhile: every one is parked (deadlock reports, teardown).
  template <typename F>
  void for_each_live_task(F&& fn) {
    pool.for_each_owner([&fn](void* t) { fn(static_cast<Task*>(t)); });
  }

  // ~Scheduler's wait for the last green thread: drain() publishes its parker here (seq_cst) and
  // then reads live_count(); a finishing task bumps its `finished` (seq_cst) and then reads this.
  // One of the two sees the other, so the last exit is never missed.
  alignas(kCacheLine) os::SpinLock drain_lock;
  std::atomic<Parker*> drain_waiter{nullptr};

  SchedulerImpl* next_sched = nullptr;  // deadlock registry
  SchedulerImpl* prev_sched = nullptr;
};

// The worker the calling OS thread runs as (nullptr on other threads). Not inlined: the address of
// a thread_local must be recomputed after every fiber switch, which may change the OS thread.
Worker* current_worker() noexcept;
Task* current_task() noexcept;
// Switches the running task out to its worker; returns when it is resumed (maybe elsewhere).
void switch_out(Task* t) noexcept;

}  // namespace chanflow::detail
