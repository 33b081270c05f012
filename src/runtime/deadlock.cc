// deadlock.cc — "all green threads are asleep": the condition, the poke and the report.
#include "deadlock.h"
#include "fork.h"

#include <pthread.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "chanflow/core/locks.h"
#include "chanflow/runtime/detail/chan_base.h"
#include "chanflow/runtime/external_waiter.h"
#include "chanflow/runtime/mutex.h"
#include "chanflow/runtime/wait_group.h"
#include "scheduler_impl.h"
#include "timer.h"
#include "trace_impl.h"

namespace chanflow::detail {

void poke_os_waiter(Parker* p) noexcept;  // park.cc

namespace {

// The registry of schedulers and OS waiters, and the thread counts of the deadlock condition.
os::Mutex g_mu;
SchedulerImpl* g_scheds CHANFLOW_GUARDED_BY(g_mu) = nullptr;
Parker* g_os_waiters CHANFLOW_GUARDED_BY(g_mu) = nullptr;
std::atomic<int> g_os_waiter_count{0};
long g_total_workers CHANFLOW_GUARDED_BY(g_mu) = 0;
long g_external_waiters CHANFLOW_GUARDED_BY(g_mu) = 0;  // ScopedExternalWaiter threads
std::atomic<void (*)()> g_check_hook{nullptr};

long process_threads() noexcept {
  // /proc/self/stat field 20 is num_threads; the command name (field 2) may contain spaces and
  // parentheses, so parse after the last ')'.
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* p = std::strrchr(buf, ')');
  if (p == nullptr) return -1;
  // Fields after ')': 3 state, 4 ppid, ... 20 num_threads -> the 18th token.
  int field = 2;
  char* save = nullptr;
  for (char* tok = strtok_r(p + 1, " ", &save); tok != nullptr;
       tok = strtok_r(nullptr, " ", &save)) {
    ++field;
    if (field == 20) return std::strtol(tok, nullptr, 10);
  }
  return -1;
}

// Threads that existed before main (main itself excluded): sanitizer or BLAS helpers. They never
// wake a chanflow waiter.
long g_baseline_others CHANFLOW_GUARDED_BY(g_mu) = 0;
#if defined(__SANITIZE_THREAD__)
void* no_op_thread(void* /*arg*/) { return nullptr; }
#endif
__attribute__((constructor)) void record_baseline() {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer starts its background thread lazily, at the process's first pthread_create.
  // Start it now (create and join a no-op thread) so the baseline counts it; otherwise it looks
  // like a foreign thread forever and no deadlock is ever reported under TSan.
  pthread_t t;
  if (pthread_create(&t, nullptr, &no_op_thread, nullptr) == 0) pthread_join(t, nullptr);
#endif
  long n = process_threads();
  {
    os::LockGuard lock(g_mu);  // uncontended (before main), for the analysis
    g_baseline_others = n > 0 ? n - 1 : 0;
  }
  register_fork_handlers();  // with the baseline: fork() may end some of those threads (fork.h)
}

// The process's threads when deadlock_prepare_fork ran (g_mu held from then to the fork).
long g_threads_at_prepare CHANFLOW_GUARDED_BY(g_mu) = 0;

// What can end a deadlock, read at one moment: green-thread activity (all schedulers), pending
// timers, OS threads still asleep. g_mu held (no OS thread starts or stops waiting meanwhile).
struct Snapshot {
  // Sums over every scheduler (the set cannot change: registering takes g_mu). Each counter only
  // grows, so equal sums mean every counter is unchanged.
  uint64_t on = 0;
  uint64_t off = 0;
  long asleep = 0;
  bool operator==(const Snapshot&) const = default;
};

// False as soon as the snapshot shows a green thread runnable or a timer pending. Allocates
// nothing (deadlock_poke is noexcept).
bool take_quiet_snapshot(Snapshot& s) CHANFLOW_REQUIRES(g_mu) {
  s = Snapshot{};
  // Timers are read before and after the green threads: a sleeping green thread adds its timer
  // before its park is counted, and a firing timer counts the wake-up before it stops being
  // pending, so one of the two reads catches a timer racing with the sums.
  if (timers_pending() != 0) return false;
  for (SchedulerImpl* sc = g_scheds; sc != nullptr; sc = sc->next_sched) {
    const SchedulerImpl::Activity a = sc->activity();
    if (a.on != a.off) return false;
    s.on += a.on;
    s.off += a.off;
  }
  if (timers_pending() != 0) return false;
  // Only OS threads still waiting count as asleep: one already woken (claimed) is about to run.
  for (Parker* p = g_os_waiters; p != nullptr; p = p->next_os) {
    if (p->state.load(std::memory_order_seq_cst) == Parker::kWaiting) ++s.asleep;
  }
  return true;
}

// The thread count cannot be read at the same instant as the counters. So the counters are read
// twice, around it, and must not change: the counters only grow, so equal readings mean no green
// thread ran and no OS waiter was woken in between (none can start or stop waiting: g_mu). A
// plain thread that woke something and exited before the count is then caught by the second
// reading; one alive at the count is counted; and nothing that is parked through both readings
// can have started a thread in between. Otherwise a thread that cancels a context and exits
// right after the first reading makes a run that is being woken look deadlocked.
DeadlockState condition_locked() CHANFLOW_REQUIRES(g_mu) {
  if (g_os_waiter_count.load(std::memory_order_seq_cst) == 0) return DeadlockState::kNo;
  Snapshot before;
  if (!take_quiet_snapshot(before)) return DeadlockState::kNo;
  if (void (*hook)() = g_check_hook.load(std::memory_order_acquire)) hook();
  const long threads = process_threads();
  Snapshot after;
  if (!take_quiet_snapshot(after) || after != before) return DeadlockState::kNo;
  const long known = g_baseline_others + g_total_workers + timer_threads() + trace_threads() +
                     g_external_waiters + after.asleep;
  if (threads < 0 || threads > known) return DeadlockState::kForeignThreads;
  return DeadlockState::kYes;
}

const char* op_name(const Waiter& w) { return w.is_send ? "send" : "recv"; }

// A name the program gave, quoted, then a space; nothing for an unnamed object.
void describe_name(std::ostringstream& os, std::string_view name) {
  if (!name.empty()) os << '"' << name << "\" ";
}

void describe_chan(std::ostringstream& os, const ChanBase* c) {
  os << "chan ";
  describe_name(os, c->name());
  os << static_cast<const void*>(c) << " (cap " << c->capacity() << (c->closed() ? ", closed" : "")
     << ")";
}

}  // namespace

std::string describe_wait(const Parker* p) {
  std::ostringstream os;
  switch (p->reason) {
    case WaitReason::kChanSend:
    case WaitReason::kChanRecv:
      os << (p->reason == WaitReason::kChanSend ? "send on " : "recv on ");
      describe_chan(os, static_cast<const ChanBase*>(p->wait_obj));
      break;
    case WaitReason::kSelect:
      os << "select on " << p->nwaiters << " channel case(s) [";
      for (uint32_t i = 0; i < p->nwaiters; ++i) {
        if (i != 0) os << ", ";
        os << op_name(p->waiters[i]) << " ";
        describe_chan(os, p->waiters[i].chan);
      }
      os << "]";
      break;
    case WaitReason::kNilChan:
      os << "send/recv on a nil chan (blocks forever)";
      break;
    case WaitReason::kSleep:
      os << "sleep";
      break;
    case WaitReason::kMutex:
      os << "Mutex::lock on mutex ";
      describe_name(os, static_cast<const Mutex*>(p->wait_obj)->name());
      os << p->wait_obj;
      break;
    case WaitReason::kWaitGroup:
      os << "WaitGroup::wait on wait group ";
      describe_name(os, static_cast<const WaitGroup*>(p->wait_obj)->name());
      os << p->wait_obj;
      break;
    case WaitReason::kSchedulerDrain:
      os << "~Scheduler waiting for its green threads";
      break;
    case WaitReason::kNone:
      os << "park";
      break;
  }
  return os.str();
}

void set_deadlock_check_hook(void (*fn)()) noexcept {
  g_check_hook.store(fn, std::memory_order_release);
}

void deadlock_register_scheduler(SchedulerImpl* s) {
  os::LockGuard lock(g_mu);
  s->next_sched = g_scheds;
  s->prev_sched = nullptr;
  if (g_scheds != nullptr) g_scheds->prev_sched = s;
  g_scheds = s;
  g_total_workers += s->nworkers;
}

void deadlock_unregister_scheduler(SchedulerImpl* s) {
  os::LockGuard lock(g_mu);
  if (s->prev_sched != nullptr) {
    s->prev_sched->next_sched = s->next_sched;
  } else {
    g_scheds = s->next_sched;
  }
  if (s->next_sched != nullptr) s->next_sched->prev_sched = s->prev_sched;
  g_total_workers -= s->nworkers;
}

int os_waiter_count() noexcept { return g_os_waiter_count.load(std::memory_order_seq_cst); }

void os_waiter_add(Parker* p) {
  os::LockGuard lock(g_mu);
  p->prev_os = nullptr;
  p->next_os = g_os_waiters;
  if (g_os_waiters != nullptr) g_os_waiters->prev_os = p;
  g_os_waiters = p;
  g_os_waiter_count.fetch_add(1, std::memory_order_seq_cst);
}

void os_waiter_remove(Parker* p) {
  os::LockGuard lock(g_mu);
  if (p->prev_os != nullptr) {
    p->prev_os->next_os = p->next_os;
  } else {
    g_os_waiters = p->next_os;
  }
  if (p->next_os != nullptr) p->next_os->prev_os = p->prev_os;
  p->next_os = p->prev_os = nullptr;
  g_os_waiter_count.fetch_sub(1, std::memory_order_seq_cst);
}

void deadlock_poke() noexcept {
  if (g_os_waiter_count.load(std::memory_order_seq_cst) == 0) return;
  os::LockGuard lock(g_mu);
  if (condition_locked() == DeadlockState::kNo) return;
  for (Parker* p = g_os_waiters; p != nullptr; p = p->next_os) poke_os_waiter(p);
}

DeadlockState deadlock_check_and_cancel(Parker* p, std::string* report) {
  os::LockGuard lock(g_mu);
  DeadlockState d = condition_locked();
  if (d != DeadlockState::kYes) return d;
  // A scheduler draining is not a user call that can fail: it unwinds what is left instead,
  // and does not need a report.
  if (!p->try_cancel()) return DeadlockState::kNo;
  if (p->reason == WaitReason::kSchedulerDrain) return DeadlockState::kYes;
  std::ostringstream os;
  os << "all green threads are asleep - deadlock! This OS thread waits in " << describe_wait(p)
     << ", and nothing can wake it.";
  int n = 0;
  for (SchedulerImpl* s = g_scheds; s != nullptr; s = s->next_sched) {
    // Every green thread is parked and nothing can wake one (the condition): none can exit.
    s->for_each_live_task([&os, &n](Task* t) {
      if (n == 0) os << " Parked green threads:";
      os << "\n  " << display_name(t) << ": " << describe_wait(&t->parker);
      ++n;
    });
  }
  if (n == 0) os << " No green thread is alive.";
  for (Parker* q = g_os_waiters; q != nullptr; q = q->next_os) {
    if (q == p) continue;
    os << "\n  (OS thread): " << describe_wait(q);
  }
  *report = os.str();
  return DeadlockState::kYes;
}

void deadlock_prepare_fork() noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  g_mu.lock();
  g_threads_at_prepare = process_threads();
}

// In the child the only thread is the forking one, which waits on nothing: no OS waiter, no
// external waiter, no worker (the schedulers get new implementations that register when their
// workers start), and the threads there now are the baseline (sanitizer helpers; normally none).
//
// The parent may lose baseline threads too: a library's own fork handler may stop its helper
// threads around fork() (OpenBLAS, which NumPy loads, ends its thread pool before every fork and
// starts it again at its next call). Counted still, they would hide as many plain threads — a
// Python thread, a Python-callback thread running a callable — and a wait that such a thread can
// end would be reported as a deadlock. So the baseline shrinks by the threads that vanished
// during the fork, and never exceeds the threads that are neither this one nor the runtime's own
// (a helper started again later counts as a plain thread: detection waits for it, never guesses).
SchedulerImpl* deadlock_after_fork(bool child) noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  SchedulerImpl* registered = nullptr;
  if (!child) {
    const long now = process_threads();
    if (now > 0) {
      const long vanished = std::max(0L, g_threads_at_prepare - now);
      const long runtime_threads = g_total_workers + timer_threads() + trace_threads() +
                                   g_external_waiters + g_os_waiter_count.load();
      g_baseline_others =
          std::max(0L, std::min(g_baseline_others - vanished, now - 1 - runtime_threads));
    }
  } else {
    registered = g_scheds;
    g_scheds = nullptr;
    g_os_waiters = nullptr;
    g_os_waiter_count.store(0, std::memory_order_seq_cst);
    g_total_workers = 0;
    g_external_waiters = 0;
    const long n = process_threads();
    g_baseline_others = n > 0 ? n - 1 : 0;
  }
  g_mu.unlock();
  return registered;
}

}  // namespace chanflow::detail

namespace chanflow {

ScopedExternalWaiter::ScopedExternalWaiter() {
  {
    os::LockGuard lock(detail::g_mu);
    ++detail::g_external_waiters;
  }
  // Waiters that saw this thread as a foreign one recheck now instead of at their next poll.
  detail::deadlock_poke();
}

ScopedExternalWaiter::~ScopedExternalWaiter() {
  os::LockGuard lock(detail::g_mu);
  --detail::g_external_waiters;
}

void count_preexisting_threads_as_plain(long n) noexcept {
  os::LockGuard lock(detail::g_mu);
  detail::g_baseline_others = std::max(0L, detail::g_baseline_others - std::max(0L, n));
}

}  // namespace chanflow
