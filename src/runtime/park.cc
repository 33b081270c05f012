// park.cc — parking and waking green threads and OS threads.
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <type_traits>

#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/runtime/detail/wait.h"
#include "chanflow/runtime/work_sharing.h"
#include "deadlock.h"
#include "futex.h"
#include "scheduler_impl.h"
#include "trace_impl.h"

namespace chanflow::detail {

// The one door into ScopedParkCallback's links (the class befriends it).
struct ParkCallbackAccess {
  // Innermost first. noexcept: a callback runs inside a park, possibly under the primitive's lock;
  // an exception escaping it has nowhere sound to go and terminates.
  static void run_all(const ScopedParkCallback* c) noexcept {
    for (; c != nullptr; c = c->previous_) c->fn_(c->arg_);
  }
  static void push(ScopedParkCallback* c) noexcept {
    CHANFLOW_CHECK(c->fn_ != nullptr) << "ScopedParkCallback: fn is null";
    Task* t = current_task();
    c->task_ = t;
    c->previous_ = nullptr;
    if (t == nullptr) return;
    c->previous_ = t->park_callbacks;
    t->park_callbacks = c;
  }
  static void pop(ScopedParkCallback* c) {
    auto* t = static_cast<Task*>(c->task_);
    if (t == nullptr) return;
    CHANFLOW_CHECK(current_task() == t && t->park_callbacks == c)
        << "ScopedParkCallback: destroyed out of order or on another green thread than the one "
           "that created it";
    t->park_callbacks = c->previous_;
  }
};

namespace {

// An OS thread's parker and what the trace keeps with it. Every Parker that is not a Task's is
// the `parker` of one of these (current_parker), so os_parker_of() finds the rest from it.
struct OsParker {
  Parker parker;
  // The label of the named mutex or wait group the thread blocks on, left by
  // trace_os_block_begin under the object's lock for the waker, which takes that lock since.
  TraceWaitLabel trace_label;
  // What woke it: written by the waker before it sets os_word (release), read by the thread
  // after it saw os_word set (acquire).
  TraceWake trace_wake;
  // The spin's backoff (os_park), owned by the thread: spins that failed in a row, and waits
  // left that sleep at once.
  int failed_spins = 0;
  int spins_to_skip = 0;
  // Whether the thread may run on more than one CPU (on one, a spin only delays the thread that
  // would wake the spinner), read again when the countdown reaches 0.
  bool many_cpus = false;
  int affinity_check_in = 0;
  OsSpins spins;  // os_spins()
};
static_assert(std::is_standard_layout_v<OsParker> && offsetof(OsParker, parker) == 0);

OsParker* os_parker_of(Parker* p) noexcept { return reinterpret_cast<OsParker*>(p); }

// Waits between an OS thread's readings of its CPU affinity (may_spin): the reading is a system
// call, and the affinity may change (a test, taskset on a running process).
constexpr int kWaitsPerAffinityCheck = 1024;

// Whether os's thread may run on more than one CPU now (read every kWaitsPerAffinityCheck waits).
bool may_spin(OsParker* os) noexcept {
  if (--os->affinity_check_in <= 0) {
    os->affinity_check_in = kWaitsPerAffinityCheck;
    cpu_set_t set;
    os->many_cpus = sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) > 1;
  }
  return os->many_cpus;
}

thread_local OsParker t_os_parker;
thread_local std::string t_deadlock_report;

// How long a parked OS thread sleeps before it runs its own deadlock check; also the period of
// the checks while plain threads exist that might still wake it. The check reads /proc/self/stat
// (three system calls and the kernel formatting the whole record) whenever no green thread is
// active, which is exactly when OS threads exchange values among themselves (Python threads
// ping-ponging over a channel): answered within this time, a wait costs no check, and a deadlock
// involving this thread is reported this much later (a poke, see deadlock_poke, still checks at
// once). Not shorter: a futex timeout that expires before the next scheduler tick makes the
// kernel reprogram the timer hardware at every wait, which on a virtual machine costs more than
// the check saves (docs/runtime.md, "Design notes").
constexpr long kCheckPeriodNs = 50L * 1000 * 1000;  // 50 ms

// Pause iterations a blocking OS thread polls its word before it sleeps in the futex: about 5 us
// at 10 ns a pause (tens of microseconds where a pause takes 140 cycles). A green thread's answer
// (the echo of a ping-pong, a go block's result for block 0) comes within a microsecond when a
// worker is awake, while a futex sleep and a wake-up on an idle CPU cost 5-10 us each on a
// virtual machine (docs/runtime.md, "An OS thread spins before it sleeps").
constexpr int kOsSpins = 512;
// After a spin that found nothing, the next 2^n - 1 waits (n spins failed in a row, at most this)
// sleep at once. On a host whose CPUs are taken, a spin mostly fails and its CPU time delays the
// worker that would answer; a spin that succeeds resets the backoff.
constexpr int kMaxSpinBackoffShift = 6;

// Polls p's word for up to kOsSpins pauses; whether it changed (woken or poked).
bool spin_for_word(const Parker* p) noexcept {
  for (int i = 0; i < kOsSpins; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (p->os_word.load(std::memory_order_acquire) != Parker::kOsWaiting) return true;
  }
  return false;
}

uint32_t os_park(Parker* p, void (*unlock)(void*), void* arg) {
  OsParker* os = os_parker_of(p);
  // Before the unlock: what it blocks on is read while alive.
  const bool traced = trace_on();
  if (traced) trace_os_block_begin(p, &os->trace_label, &os->trace_wake);
  p->os_word.store(Parker::kOsWaiting, std::memory_order_relaxed);
  os_waiter_add(p);
  if (unlock != nullptr) unlock(arg);
  bool spin = may_spin(os);
  bool check = false;
  bool canceled = false;
  long timeout = kCheckPeriodNs;
  for (;;) {
    const uint32_t w = p->os_word.load(std::memory_order_acquire);
    if (w == Parker::kOsWoken) break;
    if (w == Parker::kOsCheck || check) {
      timeout = 0;
      uint32_t poked = Parker::kOsCheck;
      p->os_word.compare_exchange_strong(poked, Parker::kOsWaiting, std::memory_order_acq_rel);
      check = false;
      DeadlockState d = deadlock_check_and_cancel(p, &t_deadlock_report);
      if (d == DeadlockState::kYes) {
        canceled = true;
        break;
      }
      // Plain threads exist that might still wake us: look again now and then.
      if (d == DeadlockState::kForeignThreads) timeout = kCheckPeriodNs;
      continue;
    }
    if (spin) {
      spin = false;
      if (os->spins_to_skip > 0) {
        --os->spins_to_skip;
      } else {
        ++os->spins.spins;
        if (spin_for_word(p)) {
          os->failed_spins = 0;
          if (p->os_word.load(std::memory_order_relaxed) == Parker::kOsWoken) ++os->spins.wakes;
          continue;
        }
        os->failed_spins = std::min(os->failed_spins + 1, kMaxSpinBackoffShift);
        os->spins_to_skip = (1 << os->failed_spins) - 1;
      }
    }
    // Announce the sleep: from here a waker must wake the futex. Fails when woken or poked since.
    uint32_t waiting = Parker::kOsWaiting;
    if (!p->os_word.compare_exchange_strong(waiting, Parker::kOsAsleep,
                                            std::memory_order_acq_rel)) {
      continue;
    }
    futex_wait(&p->os_word, Parker::kOsAsleep, timeout);
    // Awake again (woken, poked, timed out or spuriously): back to waiting unless a waker or a
    // poke changed the word, which the next round reads.
    uint32_t asleep = Parker::kOsAsleep;
    p->os_word.compare_exchange_strong(asleep, Parker::kOsWaiting, std::memory_order_acq_rel);
    if (timeout != 0) check = true;
  }
  os_waiter_remove(p);
  if (traced) trace_os_block_end(os->trace_wake);
  const uint32_t st = canceled ? Parker::kCanceled : p->state.load(std::memory_order_acquire);
  p->state.store(Parker::kIdle, std::memory_order_relaxed);
  return st;
}

}  // namespace

OsSpins os_spins() noexcept { return t_os_parker.spins; }

Parker* current_parker() noexcept {
  Task* t = current_task();
  if (t != nullptr) return &t->parker;
  return &t_os_parker.parker;
}

uint32_t park(Parker* p, void (*unlock)(void*), void* arg) {
  Task* t = p->task;
  if (t == nullptr) return os_park(p, unlock, arg);
  if (t->park_callbacks != nullptr) ParkCallbackAccess::run_all(t->park_callbacks);
  Worker* w = t->worker;
  w->after_fn = unlock;
  w->after_arg = arg;
  w->after_is_park = true;
  switch_out(t);
  // Resumed: the claim (or cancel) and the waker's writes happened-before the run queue handed
  // us to a worker (release push, acquire pop).
  const uint32_t st = p->state.load(std::memory_order_acquire);
  p->state.store(Parker::kIdle, std::memory_order_relaxed);
  return st;
}

void unpark(Parker* p) noexcept {
  if (Task* t = p->task) {
    if (trace_on()) trace_wake(p);
    t->sched->ready(t, false);
    return;
  }
  if (trace_on()) {
    OsParker* os = os_parker_of(p);
    trace_os_wake(p, os->trace_label, &os->trace_wake);
  }
  // Release: the claim's writes (the value, `fired`) and trace_wake reach the thread with the
  // word. The futex only when the thread sleeps in it: one spinning sees the word.
  if (p->os_word.exchange(Parker::kOsWoken, std::memory_order_release) == Parker::kOsAsleep) {
    futex_wake_all(&p->os_word);
    if (Task* self = current_task()) self->worker->woke_os_thread = true;
  }
}

void throw_park_canceled(Parker* p) {
  if (p->task != nullptr) throw FiberUnwind{};
  std::string report;
  report.swap(t_deadlock_report);
  throw DeadlockError(report);
}

// Only deadlock.cc pokes parked OS threads.
void poke_os_waiter(Parker* p) noexcept {
  uint32_t w = p->os_word.load(std::memory_order_acquire);
  while (w == Parker::kOsWaiting || w == Parker::kOsAsleep) {
    if (p->os_word.compare_exchange_weak(w, Parker::kOsCheck, std::memory_order_acq_rel)) {
      if (w == Parker::kOsAsleep) futex_wake_all(&p->os_word);
      return;
    }
  }
}

}  // namespace chanflow::detail

namespace chanflow {

ScopedParkCallback::ScopedParkCallback(void (*fn)(void*), void* arg) noexcept
    : fn_(fn), arg_(arg), task_(nullptr), previous_(nullptr) {
  detail::ParkCallbackAccess::push(this);
}

ScopedParkCallback::~ScopedParkCallback() { detail::ParkCallbackAccess::pop(this); }

}  // namespace chanflow
