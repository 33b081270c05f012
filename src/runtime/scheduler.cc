// scheduler.cc — workers, run queues, work stealing, idle sleep, spawn and task exit.
#include "chanflow/runtime/scheduler.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "chanflow/core/check.h"
#include "chanflow/core/env.h"
#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/runtime/functions.h"
#include "deadlock.h"
#include "fiber_switch.h"
#include "fork.h"
#include "futex.h"
#include "sanitizer.h"
#include "scheduler_impl.h"
#include "trace_impl.h"

namespace chanflow::detail {
namespace {

thread_local Worker* t_worker = nullptr;

// The largest CHANFLOW_STACK_SIZE accepted: every green thread reserves this much address space.
constexpr int64_t kMaxStackSize = int64_t{1} << 30;
// The usable stack of a green thread unless SchedulerOptions or CHANFLOW_STACK_SIZE say otherwise
// (docs/runtime.md, "Stacks").
constexpr std::size_t kDefaultStackSize = std::size_t{256} * 1024;
// The largest callable go() places on a new green thread's stack, as a fraction of the stack: the
// rest is left for the frames it runs.
constexpr std::size_t kMaxCallableShareOfStack = 4;
// The alignment of a callable on a new stack at least: x86-64's and AArch64's ABIs keep stacks
// 16-byte aligned.
constexpr std::size_t kStackAlign = 16;

// A full fence between a push and the idle check (pusher side) or between announcing idleness and
// the queue re-check (worker side). TSan does not model fences (GCC rejects them under
// -fsanitize=thread), so there both sides do a seq_cst read-modify-write of one shared word,
// which orders them the same way.
#if defined(CHANFLOW_TSAN)
std::atomic<uint32_t> g_fence_word{0};
inline void full_fence() noexcept { g_fence_word.fetch_add(0, std::memory_order_seq_cst); }
#else
inline void full_fence() noexcept { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

// Increments a counter only its owner thread writes: a plain release store, not a locked RMW,
// which is a full barrier, and a park/wake pair bumps two counters (docs/runtime.md, "Design
// notes"). Readers fence first (active_count).
inline void bump(std::atomic<uint64_t>& c) noexcept {
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Every this many dispatches is a fairness turn (Go: 61), on which a worker looks past its runnext
// slot and its newest local task. The turns alternate: the global queue's head first, then the
// oldest local task first. Both must get turns of their own: yield() keeps the global queue
// non-empty, so were the global queue first on every turn, a worker running yield loops would
// never reach its oldest local task (Scheduler.OldestLocalTaskRunsAmongYieldLoops).
constexpr uint32_t kFairnessPeriod = 61;

enum class Turn { kNormal, kGlobalFirst, kOldestLocalFirst };

Turn turn_of(uint32_t tick) noexcept {
  if (tick % kFairnessPeriod != 0) return Turn::kNormal;
  return (tick / kFairnessPeriod) % 2 == 0 ? Turn::kGlobalFirst : Turn::kOldestLocalFirst;
}

// How long a thief leaves a busy worker's runnext alone (Go: 3 µs).
constexpr int64_t kRunnextGraceNs = 3000;

// Pause iterations an idle worker polls for work before it sleeps (tens of microseconds).
constexpr int kIdleSpins = 2048;
// Pauses between an idle worker's looks for work while it spins: a look reads every worker's
// queue, lines their owners write, so looking on every pause would slow the owners down.
constexpr int kIdleSpinsPerLook = 64;
static_assert((kIdleSpinsPerLook & (kIdleSpinsPerLook - 1)) == 0, "a power of two (a mask)");

// Rounds over every other worker an idle worker makes for a task to steal before it spins; only
// the last round may take a busy worker's runnext (after kRunnextGraceNs).
constexpr int kStealRounds = 4;

// Runnext backoff bounds: after a grace steal fails because its victim kept dispatching, an idle
// worker ignores runnext slots for this long, doubling per failure in a row (see steal).
constexpr int64_t kRunnextBackoffMinNs = 4'000;
constexpr int64_t kRunnextBackoffMaxNs = 64'000;

int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

uint64_t next_random(uint64_t& s) noexcept {
  // xorshift64*: fast, good enough to pick steal victims.
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1DULL;
}

// The worker count for options.workers: LimitError above kMaxWorkers (before any thread or
// worker exists), 0 is CHANFLOW_WORKERS, else the hardware threads.
int resolve_workers(int requested) {
  if (requested > kMaxWorkers) {
    throw LimitError("scheduler: " + std::to_string(requested) +
                         " workers requested, more than the limit of " +
                         std::to_string(kMaxWorkers) + " (kMaxWorkers)",
                     "workers");
  }
  if (requested < 0) {
    CHANFLOW_THROW(Error) << "scheduler: " << requested
                          << " workers requested; need 0 (the default) or more";
  }
  if (requested > 0) return requested;
  // 0 in the variable, as in the option, means the hardware threads.
  if (std::optional<int64_t> n = env_int("CHANFLOW_WORKERS", 0, kMaxWorkers); n && *n > 0) {
    return static_cast<int>(*n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxWorkers));
}

// The CPUs workers are pinned to, in order: the process's allowed CPUs when pinning is on
// (options, or CHANFLOW_PIN_WORKERS), else none.
std::vector<int> pin_cpus_for(bool requested) {
  bool on = requested;
  if (std::optional<int64_t> env = env_int("CHANFLOW_PIN_WORKERS", 0, 1)) on = *env != 0;
  std::vector<int> cpus;
  if (!on) return cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::size_t default_stack_size() {
  if (std::optional<int64_t> v =
          env_int("CHANFLOW_STACK_SIZE", 1, kMaxStackSize, /*size_suffix=*/true)) {
    return static_cast<std::size_t>(*v);
  }
  return kDefaultStackSize;
}

[[noreturn]] void die_of_exception(const Task* t, const char* what) {
  std::fprintf(stderr,
               "chanflow: green thread '%s' terminated by an uncaught exception: %s\n"
               "(an exception escaping a go function ends the process; use cf::Group to collect "
               "errors)\n",
               display_name(t).c_str(), what);
  std::fflush(stderr);
  std::abort();
}

void check_canary(const Task* t) noexcept {
  if (t->slot.guard != 0) return;
  if (!canary_intact(t->slot.base)) {
    std::fprintf(stderr,
                 "chanflow: stack overflow in green thread '%s' (compact stack without a guard "
                 "page, detected at a switch; memory below it may be corrupt)\n",
                 display_name(t).c_str());
    std::abort();
  }
}

std::atomic<Scheduler*> g_scoped_default{nullptr};

}  // namespace

void task_body(Task* t) noexcept {
  try {
    t->run(t->fn);
  } catch (const FiberUnwind&) {
    // Unwound at scheduler teardown: the green thread was parked forever.
  } catch (const std::exception& e) {
    die_of_exception(t, e.what());
  } catch (...) {
    die_of_exception(t, "a non-std::exception object");
  }
  t->destroy(t->fn);
  check_canary(t);
}

std::string display_name(const Task* t) {
  if (!t->name.empty()) return t->name;
  return "#" + std::to_string(t->id);
}

__attribute__((noinline)) Worker* current_worker() noexcept {
  Worker* w = t_worker;
  asm volatile("" ::: "memory");
  return w;
}

__attribute__((noinline)) Task* current_task() noexcept {
  Worker* w = t_worker;
  asm volatile("" ::: "memory");
  return w != nullptr ? w->current : nullptr;
}

void switch_out(Task* t) noexcept {
  Worker* w = t->worker;
  check_canary(t);
  if (!trace_on()) {
    leave_task(t, take_hand_off(w, t));
    return;
  }
  trace_run_end(w, t, w->after_is_park ? RunEnd::kPark : RunEnd::kYield);
  Task* next = take_hand_off(w, t);  // its run starts where t's ended (trace_run_end's reading)
  w->trace_switch_ns = 0;
  leave_task(t, next);
}

Task* take_hand_off(Worker* w, Task* from) noexcept {
  Task* next = w->sched->take_local(w);
  if (next == nullptr) return nullptr;
  w->switched_from = from;
  w->sched->begin_run(w, next);
  return next;
}

void settle_switched_out(Worker* w, Task* prev) noexcept { w->sched->settle(w, prev); }

SchedulerImpl::SchedulerImpl(Scheduler* o, const SchedulerOptions& options)
    : owner(o),
      nworkers(resolve_workers(options.workers)),
      pin_cpus(pin_cpus_for(options.pin_workers)),
      pool(options.stack_size > 0 ? options.stack_size : default_stack_size(), options.guard) {
  resolved = SchedulerOptions{.workers = nworkers,
                              .stack_size = pool.usable(),
                              .guard = options.guard,
                              .pin_workers = !pin_cpus.empty()};
  for (int i = 0; i < nworkers; ++i) {
    auto w = std::make_unique<Worker>();
    w->sched = this;
    w->index = i;
    w->rq.set_stealable(nworkers > 1);
    w->rng =
        0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i + 1) ^ reinterpret_cast<uintptr_t>(this);
    workers.push_back(std::move(w));
  }
}

SchedulerImpl::~SchedulerImpl() = default;

void SchedulerImpl::start() {
  os::LockGuard lock(start_mu);
  if (started.load(std::memory_order_relaxed)) return;
  for (auto& w : workers) {
    Worker* wp = w.get();
    wp->thread = std::thread([this, wp] { worker_main(wp); });
  }
  deadlock_register_scheduler(this);
  started.store(true, std::memory_order_release);
}

void SchedulerImpl::stop() {
  if (!started.load(std::memory_order_acquire)) return;  // never used since a fork: no workers
  deadlock_unregister_scheduler(this);
  stopping.store(true, std::memory_order_seq_cst);
  for (auto& w : workers) {
    w->sleep_word.store(0, std::memory_order_seq_cst);
    futex_wake_all(&w->sleep_word);
  }
  for (auto& w : workers) w->thread.join();
}

void SchedulerImpl::worker_main(Worker* w) {
  t_worker = w;
  if (!pin_cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin_cpus[static_cast<std::size_t>(w->index) % pin_cpus.size()], &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
  }
  install_overflow_handler();
  w->tsan_fiber = san::tsan_current();
#if defined(CHANFLOW_ASAN)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    w->stack_bottom = addr;
    w->stack_size = size;
    pthread_attr_destroy(&attr);
  }
#endif
  for (;;) {
    Task* t = find_work(w);
    if (t == nullptr) break;
    run_task(w, t);
  }
  release_alt_stack();
  t_worker = nullptr;
}

namespace {

// Dispatches after which a task's stack lines are assumed to have left the worker's private
// caches (its L1 and L2 hold the lines of a few hundred small green threads).
constexpr uint64_t kWarmDispatches = 64;

// Whether the lines t resumes into are likely cold on w: t parked on another worker, or on w
// longer ago than kWarmDispatches. A ping-pong partner (parked one dispatch ago) is warm.
inline bool resume_cold_on(const Worker* w, const Task* t) noexcept {
  return t->worker != w ||
         w->dispatches.load(std::memory_order_relaxed) - t->park_tick > kWarmDispatches;
}

// Called where a task is picked to run on w soon: as it enters runnext (the waker still finishes
// its step first, which covers the misses), and as a worker takes it from a queue or another
// worker. The misses of a cold stack are then taken together rather than one by one as the
// resumed code reaches each line. Returns t.
inline Task* prefetch_if_cold(const Worker* w, Task* t) noexcept {
  if (resume_cold_on(w, t)) prefetch_lines(resume_lines(t));
  return t;
}

}  // namespace

void SchedulerImpl::begin_run(Worker* w, Task* t) noexcept {
  w->dispatches.store(w->dispatches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  w->current = t;
  t->worker = w;
  if (trace_on()) trace_run_begin(w, t);
}

void SchedulerImpl::run_task(Worker* w, Task* t) {
  begin_run(w, t);
  enter_task(w, t);
  Task* back = w->current;  // t, or the last task of a chain of direct hand-offs
  w->current = nullptr;
  ++w->home_returns;
  settle(w, back);
}

void SchedulerImpl::settle(Worker* w, Task* prev) noexcept {
  if (!prev->ctx) {
    task_finished(w, prev);
    return;
  }
  if (w->after_fn != nullptr) {
    void (*fn)(void*) = w->after_fn;
    w->after_fn = nullptr;
    fn(w->after_arg);
  }
  if (w->after_is_park) {
    w->after_is_park = false;
    // After the unlock: a waker may already have counted the task active again (it is then
    // counted twice for a moment, never zero times). A worker about to sleep checks for deadlock.
    bump(w->counts.parked);
  }
}

Task* SchedulerImpl::take_local(Worker* w) noexcept {
  const Turn turn = turn_of(w->tick + 1);
  // On the global queue's fairness turn, if it has work, return to the worker, whose find_work
  // serves it.
  if (turn == Turn::kGlobalFirst && gq.size() != 0) return nullptr;
  Task* t = take_local_in_order(w, turn != Turn::kNormal);
  if (t != nullptr) ++w->tick;
  return t;
}

Task* SchedulerImpl::take_local_in_order(Worker* w, bool fairness_turn) noexcept {
  Task* t = fairness_turn ? w->rq.pop_oldest() : nullptr;
  if (t == nullptr) t = take_runnext(w);  // prefetched as it entered runnext
  if (t == nullptr) {
    t = w->rq.pop();
    if (t != nullptr) prefetch_if_cold(w, t);
  } else if (fairness_turn) {
    prefetch_if_cold(w, t);
  }
  return t;
}

Task* SchedulerImpl::take_runnext(Worker* w) noexcept {
  if (w->runnext.load(std::memory_order_relaxed) == nullptr) return nullptr;
  if (nworkers == 1) {  // no thieves (see ready)
    Task* t = w->runnext.load(std::memory_order_relaxed);
    w->runnext.store(nullptr, std::memory_order_relaxed);
    return t;
  }
  return w->runnext.exchange(nullptr, std::memory_order_acq_rel);
}

void SchedulerImpl::task_finished(Worker* w, Task* t) {
  if (trace_on()) {
    trace_run_end(w, t, RunEnd::kExit);
    w->trace_switch_ns = 0;  // the worker's next pick starts later
  }
  tsan_fiber_release(t->tsan_fiber);  // after the switch back: no green thread runs on it
  StackSlot slot = t->slot;
  slot.owner->store(nullptr, std::memory_order_relaxed);
  t->~Task();
#if defined(CHANFLOW_ASAN)
  __asan_unpoison_memory_region(slot.bottom(), pool.usable());
#endif
  pool.release(w->stacks, slot);
  w->counts.finished.fetch_add(1, std::memory_order_seq_cst);
  // Paired with drain(): see drain_waiter.
  if (drain_waiter.load(std::memory_order_seq_cst) == nullptr) return;
  Parker* waiter = nullptr;
  {
    os::LockGuard lock(drain_lock);
    Parker* d = drain_waiter.load(std::memory_order_relaxed);
    if (d != nullptr && live_count() == 0) {
      drain_waiter.store(nullptr, std::memory_order_relaxed);
      if (d->try_claim()) waiter = d;
    }
  }
  if (waiter != nullptr) unpark(waiter);
}

int64_t SchedulerImpl::live_count() const noexcept {
  uint64_t finished = external.finished.load(std::memory_order_seq_cst);
  for (const auto& w : workers) finished += w->counts.finished.load(std::memory_order_seq_cst);
  uint64_t spawned = external.spawned.load(std::memory_order_seq_cst);
  for (const auto& w : workers) spawned += w->counts.spawned.load(std::memory_order_seq_cst);
  return static_cast<int64_t>(spawned - finished);
}

SchedulerImpl::Activity SchedulerImpl::activity() const noexcept {
  // Every "off" event (a park, an exit) is preceded by its "on" event (a wake-up, the spawn), so
  // reading all offs first never counts an off without its on. `parked` and `woken` are bumped
  // with plain release stores (see bump); this fence pairs with the one every worker executes
  // between its last bump and falling asleep, so the last worker to fall asleep (the one whose
  // check can find a deadlock) sees every worker's counts.
  full_fence();
  uint64_t off = external.finished.load(std::memory_order_seq_cst) +
                 external.parked.load(std::memory_order_seq_cst);
  for (const auto& w : workers) {
    off += w->counts.finished.load(std::memory_order_seq_cst) +
           w->counts.parked.load(std::memory_order_seq_cst);
  }
  uint64_t on = external.spawned.load(std::memory_order_seq_cst) +
                external.woken.load(std::memory_order_seq_cst);
  for (const auto& w : workers) {
    on += w->counts.spawned.load(std::memory_order_seq_cst) +
          w->counts.woken.load(std::memory_order_seq_cst);
  }
  return Activity{on, off};
}

Worker* SchedulerImpl::worker_here() const noexcept {
  Worker* w = current_worker();
  return w != nullptr && w->sched == this ? w : nullptr;
}

namespace {
// Green-thread ids are unique in the process, not per scheduler: a trace (or an error message)
// that shows threads of two schedulers never shows one id for two of them.
alignas(kCacheLine) std::atomic<uint64_t> next_id{1};
}  // namespace

uint64_t SchedulerImpl::take_id(Worker* w) noexcept {
  constexpr uint64_t kIdBlock = 1024;  // ids a worker takes at once from the shared counter
  if (w == nullptr) return next_id.fetch_add(1, std::memory_order_relaxed);
  if (w->id_next == w->id_end) {
    w->id_next = next_id.fetch_add(kIdBlock, std::memory_order_relaxed);
    w->id_end = w->id_next + kIdBlock;
  }
  return w->id_next++;
}

void SchedulerImpl::ready_from(Worker* w, Task* t, bool is_new) {
  if (w != nullptr) {
    if (!is_new) bump(w->counts.woken);
    // Go's trick: the woken (or new) task runs next on this worker, so a ping-pong pair
    // alternates here without queue traffic; the task it displaces goes to the queue tail.
    if (nworkers == 1) {
      // No thief can touch runnext, and the only worker is this one, awake: no atomic
      // exchange, no wake-up (each was a full barrier on the ping-pong path).
      prefetch_if_cold(w, t);
      Task* old = w->runnext.load(std::memory_order_relaxed);
      w->runnext.store(t, std::memory_order_relaxed);
      if (old != nullptr) local_push(w, old);
      return;
    }
    // seq_cst: when nothing is displaced, this exchange is the pusher's half of the Dekker pair
    // with a worker going idle (its seq_cst nidle increment, fence, then seq_cst read of every
    // runnext in any_work), so no separate fence is needed. A full fence on every wake-up was a
    // third of the 2-worker ping-pong's extra cost over 1 worker. A displaced task goes to the
    // ring, whose tail store is only a release: that case keeps the fence.
    prefetch_if_cold(w, t);
    Task* old = w->runnext.exchange(t, std::memory_order_seq_cst);
    if (old != nullptr) {
      local_push(w, old);
      wake_idle();
    } else {
      wake_idle_ordered();
    }
    return;
  }
  if (!is_new) external.woken.fetch_add(1, std::memory_order_seq_cst);
  // seq_cst increment before the push: whoever later sees the task finished (drain, through the
  // task's own release/acquire chain) also sees this waker registered.
  external_wakers.fetch_add(1, std::memory_order_seq_cst);
  global_push(t);
  (void)is_new;
  wake_idle();
  external_wakers.fetch_sub(1, std::memory_order_release);
}

void SchedulerImpl::local_push(Worker* w, Task* t) {
  if (w->rq.push(t)) return;
  Task* batch[RunQueue::kSize / 2 + 1];
  uint32_t n = w->rq.grab_half(batch);
  batch[n++] = t;
  global_push_batch(batch, n);
}

void SchedulerImpl::global_push(Task* t) { global_push_batch(&t, 1); }

void SchedulerImpl::global_push_batch(Task** ts, uint32_t n) { gq.push(ts, n); }

Task* SchedulerImpl::global_pop(Worker* w) {
  // Take a fair share into the local queue as well (as much as fits).
  Task* batch[RunQueue::kSize / 2 + 1];
  const std::size_t max = std::min<std::size_t>(w->rq.free_slots(), RunQueue::kSize / 2) + 1;
  const std::size_t n = gq.pop(batch, max, [this](std::size_t queued) {
    return queued / static_cast<std::size_t>(nworkers) + 1;
  });
  if (n == 0) return nullptr;
  // Newest-first pops then serve the batch in the global queue's order.
  for (std::size_t i = n - 1; i >= 1; --i) {
    const bool ok = w->rq.push(batch[i]);  // fits: at most free_slots() of them
    CHANFLOW_DCHECK(ok);
    (void)ok;
  }
  return prefetch_if_cold(w, batch[0]);
}

Task* SchedulerImpl::steal(Worker* thief, Worker* victim, bool take_runnext) {
  Task* batch[RunQueue::kSize / 2];
  uint32_t n = victim->rq.steal_half(batch, RunQueue::kSize / 2);
  if (n == 0) {
    if (take_runnext && victim->runnext.load(std::memory_order_relaxed) != nullptr) {
      // The victim readied that task to run next, usually right before parking (a hand-off
      // along a chain, a ping-pong reply). As Go does, give the victim a few microseconds to
      // run it itself: taking it would move every step of the hand-off to another CPU (a
      // cross-CPU wake-up and cold caches each time). Take it only if the victim dispatched
      // nothing meanwhile, i.e. it is busy in a long-running task.
      thief->runnext_grace_waits.store(
          thief->runnext_grace_waits.load(std::memory_order_relaxed) + 1,
          std::memory_order_relaxed);
      const uint64_t seen = victim->dispatches.load(std::memory_order_relaxed);
      // First let the victim have this CPU, should it be waiting for it. With more runnable
      // threads than CPUs (another process busy, or more workers than CPUs), a ready's wake-up of
      // this worker is often scheduled onto the victim's CPU and preempts it, and a preempted
      // victim dispatches nothing: the grace would then take its runnext on every wake-up, moving
      // a ping-pong to the thief at each hand-off, whose next ready preempts the other worker in
      // turn. Yielding, the thief sees the victim dispatch and backs off. When the victim runs on
      // another CPU, this returns at once.
      sched_yield();
      const int64_t until = steady_ns() + kRunnextGraceNs;
      do {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } while (steady_ns() < until);
      if (victim->dispatches.load(std::memory_order_relaxed) != seen) {
        // The victim hands off faster than the grace: a ping-pong, a buffered pipeline, a chain.
        // Stealing would only move the hand-offs to another CPU, and polling its runnext and
        // dispatch count — lines it writes on every hand-off — costs it a cache miss each time
        // (docs/runtime.md, "Scheduler"). So back off from every runnext, doubling up to
        // kRunnextBackoffMaxNs: a victim that switches to a long task gets its runnext taken
        // within about that.
        thief->runnext_backoff_ns =
            std::clamp(thief->runnext_backoff_ns * 2, kRunnextBackoffMinNs, kRunnextBackoffMaxNs);
        thief->runnext_quiet_until = steady_ns() + thief->runnext_backoff_ns;
        return nullptr;
      }
      thief->runnext_backoff_ns = 0;
      Task* t = victim->runnext.exchange(nullptr, std::memory_order_acq_rel);
      if (t != nullptr) {
        thief->runnext_steals.store(thief->runnext_steals.load(std::memory_order_relaxed) + 1,
                                    std::memory_order_relaxed);
      }
      return t != nullptr ? prefetch_if_cold(thief, t) : nullptr;
    }
    return nullptr;
  }
  for (uint32_t i = n - 1; i >= 1; --i) {  // newest-first pops keep the stolen order
    bool ok = thief->rq.push(batch[i]);
    if (!ok) global_push(batch[i]);
  }
  return prefetch_if_cold(thief, batch[0]);
}

bool SchedulerImpl::any_work(bool with_runnext) const noexcept {
  if (gq.size_seq_cst() != 0) return true;
  for (const auto& w : workers) {
    if (!w->rq.empty()) return true;
    if (with_runnext && w->runnext.load(std::memory_order_seq_cst) != nullptr) return true;
  }
  return false;
}

void SchedulerImpl::wake_idle() {
  full_fence();
  wake_idle_ordered();
}

void SchedulerImpl::wake_idle_ordered() {
  if (nidle.load(std::memory_order_seq_cst) == 0) return;
  int expected = 0;
  // Only one waker at a time, and none while a worker spins: a spinning worker finds the work.
  if (!nspinning.compare_exchange_strong(expected, 1, std::memory_order_seq_cst)) return;
  for (auto& v : workers) {
    if (v->sleep_word.load(std::memory_order_relaxed) == 1 &&
        v->sleep_word.exchange(0, std::memory_order_seq_cst) == 1) {
      nidle.fetch_sub(1, std::memory_order_seq_cst);
      futex_wake_all(&v->sleep_word);
      return;  // v now counts as the spinning worker
    }
  }
  nspinning.fetch_sub(1, std::memory_order_seq_cst);
}

void SchedulerImpl::reset_spinning(Worker* w) {
  if (!w->spinning) return;
  w->spinning = false;
  // The last spinner found work: there may be more, so hand spinning on to a sleeper.
  if (nspinning.fetch_sub(1, std::memory_order_seq_cst) == 1) wake_idle();
}

Task* SchedulerImpl::find_work(Worker* w) {
  for (;;) {
    // Fairness turns (turn_of): without them, work readied from outside, and tasks a ping-pong
    // pair (always refilling runnext) pushed out to the local queue, would wait as long as the
    // pair runs; and a newest-first local queue would leave its oldest task waiting.
    const Turn turn = turn_of(++w->tick);
    Task* t = turn == Turn::kGlobalFirst ? global_pop(w) : nullptr;
    if (t == nullptr) t = take_local_in_order(w, turn != Turn::kNormal);
    if (t == nullptr) t = global_pop(w);
    // Backing off (see steal): every runnext slot is left alone — no grace steal, no polling.
    const bool runnext_quiet =
        t == nullptr && w->runnext_backoff_ns != 0 && steady_ns() < w->runnext_quiet_until;
    if (t == nullptr && nworkers > 1) {
      if (!w->spinning) {
        w->spinning = true;
        nspinning.fetch_add(1, std::memory_order_seq_cst);
      }
      for (int round = 0; round < kStealRounds && t == nullptr; ++round) {
        const int start = static_cast<int>(next_random(w->rng) % static_cast<uint64_t>(nworkers));
        for (int i = 0; i < nworkers && t == nullptr; ++i) {
          Worker* v = workers[static_cast<std::size_t>((start + i) % nworkers)].get();
          if (v == w) continue;
          t = steal(w, v, round == kStealRounds - 1 && !runnext_quiet);
        }
      }
    }
    if (t == nullptr && !stopping.load(std::memory_order_relaxed)) {
      // Spin briefly before sleeping: work often arrives within microseconds (a partner's
      // reply, the next spawn), and a futex sleep plus a cross-CPU wake-up costs far more.
      // While we spin, wakers leave the sleepers alone (nspinning > 0).
      if (!w->spinning) {
        w->spinning = true;
        nspinning.fetch_add(1, std::memory_order_seq_cst);
      }
      // A task here just futex-woke an OS thread, which the kernel may have queued on this CPU
      // (the other ones busy): let it run now rather than after the spin (the ping-pong of block
      // 0 or a Python thread with a green thread; docs/runtime.md, "An OS thread spins before it
      // sleeps").
      if (w->woke_os_thread) {
        w->woke_os_thread = false;
        sched_yield();
      }
      bool found = false;
      for (int i = 0; i < kIdleSpins && !found; ++i) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if ((i & (kIdleSpinsPerLook - 1)) == kIdleSpinsPerLook - 1) {
          found = any_work(/*with_runnext=*/!runnext_quiet);
        }
      }
      if (found) continue;
      // Backing off: keep spinning, blind to runnext slots, until the backoff ends; the sleep
      // path's re-check would see the busy runnext and come straight back anyway.
      if (runnext_quiet) continue;
    }
    if (t != nullptr) {
      w->runnext_backoff_ns = 0;
      reset_spinning(w);
      return t;
    }
    w->runnext_backoff_ns = 0;  // a new era after the sleep
    // Nothing to do: sleep. Announce first, then look once more, so a push racing with us either
    // sees us idle (and wakes us) or is seen by the recheck.
    if (w->spinning) {
      w->spinning = false;
      nspinning.fetch_sub(1, std::memory_order_seq_cst);
    }
    if (stopping.load(std::memory_order_acquire) && !any_work()) return nullptr;
    int64_t trim_wait = pool.trim(steady_ns());
    w->sleep_word.store(1, std::memory_order_seq_cst);
    const bool last_to_sleep = nidle.fetch_add(1, std::memory_order_seq_cst) + 1 == nworkers;
    full_fence();
    if (any_work() || stopping.load(std::memory_order_seq_cst)) {
      if (w->sleep_word.exchange(0, std::memory_order_seq_cst) == 1) {
        nidle.fetch_sub(1, std::memory_order_seq_cst);
      } else {
        w->spinning = true;  // a waker picked us and counted us as spinning
      }
      continue;
    }
    // The last worker to fall asleep after every green thread parked is the one that finds a
    // deadlock (if OS threads wait on green threads). Only it checks: the check takes a global
    // lock and reads every worker's counters.
    if (last_to_sleep) deadlock_poke();
    bump(w->idle_sleeps);
    // While idle stacks wait to be given back, wake up when their trim period ends.
    while (w->sleep_word.load(std::memory_order_acquire) == 1) {
      futex_wait(&w->sleep_word, 1, trim_wait);
      if (trim_wait > 0 && w->sleep_word.load(std::memory_order_acquire) == 1) {
        trim_wait = pool.trim(steady_ns());
      }
    }
    if (!stopping.load(std::memory_order_acquire)) {
      w->spinning = true;
    } else if (w->spinning) {
      w->spinning = false;
    }
  }
}

namespace {
// park() with `lock` released by its callback. Annotated as that release, so drain() stays checked;
// not analysed itself: the analysis cannot follow a release through a function pointer.
uint32_t park_releasing(Parker* p, os::SpinLock& lock)
    CHANFLOW_RELEASE(lock) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  return park(
      p,
      [](void* l) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS { static_cast<os::SpinLock*>(l)->unlock(); },
      &lock);
}
}  // namespace

void SchedulerImpl::drain() {
  Parker* p = current_parker();
  CHANFLOW_CHECK(p->task == nullptr || p->task->sched != this)
      << "a Scheduler must not be destroyed by one of its own green threads";
  for (;;) {
    drain_lock.lock();
    drain_waiter.store(p, std::memory_order_seq_cst);
    if (live_count() == 0) {
      drain_waiter.store(nullptr, std::memory_order_relaxed);
      drain_lock.unlock();
      return;
    }
    p->arm(WaitReason::kSchedulerDrain, this);
    const uint32_t st = park_releasing(p, drain_lock);
    if (st != Parker::kCanceled) continue;
    // Every remaining green thread is parked forever: unwind them (Go drops them at exit).
    {
      os::LockGuard lock(drain_lock);
      if (drain_waiter.load(std::memory_order_relaxed) == p) {
        drain_waiter.store(nullptr, std::memory_order_relaxed);
      }
    }
    std::vector<Parker*> victims;
    for_each_live_task([&victims](Task* t) {
      if (t->parker.try_cancel()) victims.push_back(&t->parker);
    });
    for (Parker* v : victims) unpark(v);
  }
}

SpawnSlot spawn_begin(SchedulerImpl* s, std::string&& name, std::size_t fn_size,
                      std::size_t fn_align) {
  s->ensure_started();
  if (fn_size > s->pool.usable() / kMaxCallableShareOfStack) {
    CHANFLOW_THROW(Error) << "go: the callable (" << fn_size << " bytes) does not fit a green "
                          << "thread's stack of " << s->pool.usable() << " bytes";
  }
  Worker* w = s->worker_here();
  StackSlot slot = w != nullptr ? s->pool.acquire(w->stacks) : s->pool.acquire();
  char* top = slot.base + s->pool.slot_size(slot);
  Task* t = ::new (task_at(top)) Task();
  t->slot = slot;
  t->tsan_fiber = tsan_fiber_acquire();
  t->sched = s;
  t->name = std::move(name);
  t->parker.task = t;
  const std::size_t align = std::max<std::size_t>(fn_align, kStackAlign);
  auto fn_addr = (reinterpret_cast<std::uintptr_t>(t) - fn_size) & ~(align - 1);
  t->fn = reinterpret_cast<void*>(fn_addr);  // NOLINT(performance-no-int-to-ptr): aligning down
  return SpawnSlot{t, t->fn};
}

void spawn_abort(Task* t) noexcept {
  SchedulerImpl* s = t->sched;
  StackSlot slot = t->slot;
  tsan_fiber_release(t->tsan_fiber);
  t->~Task();
  Worker* w = s->worker_here();
  if (w != nullptr) {
    s->pool.release(w->stacks, slot);
  } else {
    s->pool.release(slot);
  }
}

void spawn_commit(Task* t, void (*run)(void*), void (*destroy)(void*), bool for_others) noexcept {
  SchedulerImpl* s = t->sched;
  t->run = run;
  t->destroy = destroy;
  t->ctx = make_task_fiber(t, static_cast<char*>(t->fn));
  // Looked up again, not taken from spawn_begin: constructing the callable in between may have
  // parked (a copy constructor taking a cf::Mutex) and moved this green thread to another worker.
  Worker* here = s->worker_here();
  // Where its lines are warm: a worker that takes it soon from here needs no prefetch, a thief
  // does (prefetch_if_cold).
  t->worker = here;
  t->park_tick = here != nullptr ? here->dispatches.load(std::memory_order_relaxed) : 0;
  t->id = s->take_id(here);
  t->slot.owner->store(t, std::memory_order_release);  // listed: reports and teardown find it
  // Counted before it can run (and so finish): live_count never goes below the truth.
  s->counts_of(here).spawned.fetch_add(1, std::memory_order_seq_cst);
#if defined(CHANFLOW_TSAN)
  // The fiber may have served another green thread before: always rename it.
  san::tsan_set_name(t->tsan_fiber, display_name(t).c_str());
#endif
  if (trace_on()) trace_go(t, here != nullptr ? here->current : nullptr);
  if (for_others && here != nullptr && here->current != nullptr && s->nworkers > 1) {
    // Scheduler::go_for_others: the tail of the local ring, where a thief takes it at once, not
    // runnext, which thieves leave to this (busy) worker for kRunnextGraceNs.
    s->local_push(here, t);
    s->wake_idle();
    return;
  }
  s->ready_from(here, t, true);
}

// fork.h. The parent's implementations are left behind (their workers, green threads, queues and
// locks belong to threads that do not exist here): a Scheduler object, the process's default
// one included, goes on in the child with a new, empty implementation of the same options, whose
// workers start at its first go().
void schedulers_after_fork_child(SchedulerImpl* registered) noexcept {
  for (SchedulerImpl* old = registered; old != nullptr; old = old->next_sched) {
    old->owner->impl_ = new SchedulerImpl(old->owner, old->resolved);
  }
}

}  // namespace chanflow::detail

namespace chanflow {

Scheduler& scheduler_for_go() {
  if (detail::Task* t = detail::current_task()) return *t->sched->owner;
  if (Scheduler* s = detail::g_scoped_default.load(std::memory_order_acquire)) return *s;
  // The process-wide default lives until exit (like Go's runtime): never destroyed, so green
  // threads still parked at exit are simply dropped.
  static auto* const kDefault = new Scheduler();
  return *kDefault;
}

Scheduler* current_scheduler() noexcept {
  const detail::Task* t = detail::current_task();
  return t != nullptr ? t->sched->owner : nullptr;
}

Scheduler::Scheduler(SchedulerOptions options) : impl_(new detail::SchedulerImpl(this, options)) {
  impl_->start();
}

Scheduler::~Scheduler() {
  impl_->drain();
  // A waker from outside may still be inside ready() for the task that finished last.
  while (impl_->external_wakers.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  impl_->stop();
  delete impl_;
}

int Scheduler::workers() const noexcept { return impl_->nworkers; }
std::size_t Scheduler::stack_size() const noexcept { return impl_->pool.usable(); }
std::size_t Scheduler::live() const noexcept {
  return static_cast<std::size_t>(impl_->live_count());
}

ScopedDefaultScheduler::ScopedDefaultScheduler(Scheduler& s)
    : previous_(detail::g_scoped_default.exchange(&s, std::memory_order_acq_rel)) {}
ScopedDefaultScheduler::~ScopedDefaultScheduler() {
  detail::g_scoped_default.store(previous_, std::memory_order_release);
}

void yield() {
  detail::Task* t = detail::current_task();
  if (t == nullptr) {
    std::this_thread::yield();
    return;
  }
  detail::Worker* w = t->worker;
  // To the back of the global queue (Go's Gosched does the same), not the local ring: the ring
  // pops newest first, so a yielder pushed there would run again before the tasks it yields to.
  w->after_fn = [](void* arg) {
    auto* task = static_cast<detail::Task*>(arg);
    task->sched->global_push(task);
  };
  w->after_arg = t;
  detail::switch_out(t);
}

bool in_green_thread() noexcept { return detail::current_task() != nullptr; }

uint64_t current_green_thread_id() noexcept {
  const detail::Task* t = detail::current_task();
  return t != nullptr ? t->id : 0;
}

std::string current_green_thread_name() {
  detail::Task* t = detail::current_task();
  return t != nullptr ? detail::display_name(t) : std::string();
}

namespace {
// The runtime's global functions (functions.cc) are registered while the program loads whenever
// the scheduler is linked, which every use of the runtime links. Nobody can catch an error here.
[[maybe_unused]] const bool kRuntimeFunctionsRegistered = [] {
  try {
    register_runtime_functions();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chanflow: registering the runtime's global functions failed: %s\n",
                 e.what());
    std::abort();
  }
  return true;
}();
}  // namespace

}  // namespace chanflow
