// park.cc — parking and waking green threads and OS threads.
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
};
static_assert(std::is_standard_layout_v<OsParker> && offsetof(OsParker, parker) == 0);

OsParker* os_parker_of(Parker* p) noexcept { return reinterpret_cast<OsParker*>(p); }

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

uint32_t os_park(Parker* p, void (*unlock)(void*), void* arg) {
  OsParker* os = os_parker_of(p);
  // Before the unlock: what it blocks on is read while alive.
  const bool traced = trace_on();
  if (traced) trace_os_block_begin(p, &os->trace_label, &os->trace_wake);
  p->os_word.store(0, std::memory_order_relaxed);
  os_waiter_add(p);
  if (unlock != nullptr) unlock(arg);
  bool check = false;
  bool canceled = false;
  long timeout = kCheckPeriodNs;
  for (;;) {
    const uint32_t w = p->os_word.load(std::memory_order_acquire);
    if (w == 1) break;
    if (w == 2 || check) {
      timeout = 0;
      uint32_t two = 2;
      p->os_word.compare_exchange_strong(two, 0, std::memory_order_acq_rel);
      check = false;
      DeadlockState d = deadlock_check_and_cancel(p, &t_deadlock_report);
      if (d == DeadlockState::kYes) {
        canceled = true;
        break;
      }
      // Plain threads exist that might still wake us: look again now and then.
      if (d == DeadlockState::kForeignThreads) timeout = kCheckPeriodNs;
      if (p->os_word.load(std::memory_order_acquire) != 0) continue;
    }
    futex_wait(&p->os_word, 0, timeout);
    if (timeout != 0) check = true;
  }
  os_waiter_remove(p);
  if (traced) trace_os_block_end(os->trace_wake);
  const uint32_t st = canceled ? Parker::kCanceled : p->state.load(std::memory_order_acquire);
  p->state.store(Parker::kIdle, std::memory_order_relaxed);
  return st;
}

}  // namespace

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
  p->os_word.store(1, std::memory_order_release);
  futex_wake_all(&p->os_word);
}

void throw_park_canceled(Parker* p) {
  if (p->task != nullptr) throw FiberUnwind{};
  std::string report;
  report.swap(t_deadlock_report);
  throw DeadlockError(report);
}

// Only deadlock.cc pokes parked OS threads.
void poke_os_waiter(Parker* p) noexcept {
  uint32_t zero = 0;
  if (p->os_word.compare_exchange_strong(zero, 2, std::memory_order_acq_rel)) {
    futex_wake_all(&p->os_word);
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
