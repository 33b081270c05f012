// timer.cc — the timer heap and its thread; sleep_for and after().
#include "timer.h"
#include "trace_impl.h"

#include <mutex>
#include <thread>
#include <vector>

#include "block.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/timer.h"
#include "deadlock.h"
#include "fork.h"
#include "scheduler_impl.h"

namespace chanflow::detail {
namespace {

// The heap is guarded by a SpinLock because a parking green thread keeps it across its switch-out
// (sleep_for); the timer thread sleeps on a condition variable of its own.
class TimerService {
 public:
  static TimerService& get() {
    static auto* const kService = new TimerService();  // lives until exit
    return *kService;
  }

  os::SpinLock& lock() noexcept CHANFLOW_RETURN_CAPABILITY(lock_) { return lock_; }

  // lock() held. Returns whether the entry is the earliest: then call notify() after unlocking.
  bool add_locked(TimerEntry* e) CHANFLOW_REQUIRES(lock_) {
    e->seq = seq_++;
    e->index = static_cast<std::ptrdiff_t>(heap_.size());
    heap_.push_back(e);
    sift_up(e->index);
    pending_.fetch_add(1, std::memory_order_seq_cst);
    return e->index == 0 || !started_.load(std::memory_order_acquire);
  }
  // Starts the timer thread or tells it about an earlier deadline. Call without lock().
  void notify() {
    {
      os::LockGuard g(cv_mu_);
      if (!started_.load(std::memory_order_relaxed)) {
        threads_.store(1, std::memory_order_seq_cst);
        std::thread([this] { loop(); }).detach();
        started_.store(true, std::memory_order_release);
      }
      changed_ = true;
    }
    cv_.notify_one();
  }

  // fork.h: the heap's lock and the thread's are held across fork(), so the child gets a
  // consistent heap. The child has no timer thread: its entries (the sleeps of green threads and
  // the waits of OS threads that do not exist there, deadlines of the parent's runs) are dropped,
  // and the thread starts again at the child's first timer.
  void prepare_fork() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    lock_.lock();
    cv_mu_.lock();
  }
  void after_fork(bool child) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    if (child) {
      for (TimerEntry* e : heap_) e->index = -1;  // timer_remove then finds it fired
      heap_.clear();
      firing_ = nullptr;  // the timer thread's callback does not exist here
      pending_.store(0, std::memory_order_seq_cst);
      threads_.store(0, std::memory_order_seq_cst);
      started_.store(false, std::memory_order_relaxed);
      changed_ = false;
      new (&cv_) os::CondVar();  // its waiter, the timer thread, is gone
    }
    cv_mu_.unlock();
    lock_.unlock();
  }

  bool remove(TimerEntry* e) CHANFLOW_EXCLUDES(lock_) {
    lock_.lock();
    if (e->index >= 0) {
      erase(e->index);
      pending_.fetch_sub(1, std::memory_order_seq_cst);
      lock_.unlock();
      return true;
    }
    // Fired or firing: wait until its callback returned (it may touch the entry's owner).
    while (firing_ == e) {
      lock_.unlock();
      std::this_thread::yield();
      lock_.lock();
    }
    lock_.unlock();
    return false;
  }

  std::size_t pending() const noexcept { return pending_.load(std::memory_order_seq_cst); }
  int threads() const noexcept { return threads_.load(std::memory_order_seq_cst); }

 private:
  void loop() CHANFLOW_EXCLUDES(lock_) {
    trace_set_timer_thread();
    for (;;) {
      Clock::time_point next = Clock::time_point::max();
      lock_.lock();
      const auto now = Clock::now();
      while (!heap_.empty() && heap_[0]->when <= now) {
        TimerEntry* e = heap_[0];
        erase(0);
        firing_ = e;
        lock_.unlock();
        e->fire(e);
        lock_.lock();
        firing_ = nullptr;
        const bool last = pending_.fetch_sub(1, std::memory_order_seq_cst) == 1;
        if (last) {
          lock_.unlock();
          deadlock_poke();
          lock_.lock();
        }
      }
      if (!heap_.empty()) next = heap_[0]->when;
      lock_.unlock();
      os::LockGuard g(cv_mu_);
      while (!changed_) {
        if (next == Clock::time_point::max()) {
          cv_.wait(cv_mu_);
        } else {
          cv_.wait_until(cv_mu_, next);
          if (Clock::now() >= next) break;  // the earliest timer is due
        }
      }
      changed_ = false;
    }
  }

  bool less(std::size_t a, std::size_t b) const noexcept CHANFLOW_REQUIRES(lock_) {
    if (heap_[a]->when != heap_[b]->when) return heap_[a]->when < heap_[b]->when;
    return heap_[a]->seq < heap_[b]->seq;
  }
  void swap_at(std::size_t a, std::size_t b) noexcept CHANFLOW_REQUIRES(lock_) {
    std::swap(heap_[a], heap_[b]);
    heap_[a]->index = static_cast<std::ptrdiff_t>(a);
    heap_[b]->index = static_cast<std::ptrdiff_t>(b);
  }
  void sift_up(std::ptrdiff_t i) noexcept CHANFLOW_REQUIRES(lock_) {
    auto k = static_cast<std::size_t>(i);
    while (k > 0 && less(k, (k - 1) / 2)) {
      swap_at(k, (k - 1) / 2);
      k = (k - 1) / 2;
    }
  }
  void sift_down(std::size_t k) noexcept CHANFLOW_REQUIRES(lock_) {
    for (;;) {
      std::size_t m = k;
      const std::size_t l = 2 * k + 1;
      const std::size_t r = l + 1;
      if (l < heap_.size() && less(l, m)) m = l;
      if (r < heap_.size() && less(r, m)) m = r;
      if (m == k) return;
      swap_at(k, m);
      k = m;
    }
  }
  void erase(std::ptrdiff_t i) noexcept CHANFLOW_REQUIRES(lock_) {
    const auto k = static_cast<std::size_t>(i);
    heap_[k]->index = -1;
    const std::size_t last = heap_.size() - 1;
    if (k != last) {
      heap_[k] = heap_[last];
      heap_[k]->index = static_cast<std::ptrdiff_t>(k);
      heap_.pop_back();
      sift_down(k);
      sift_up(heap_[k]->index);
    } else {
      heap_.pop_back();
    }
  }

  // An entry's `index` (its heap position, -1 when not queued) is guarded by lock_ as well.
  os::SpinLock lock_;
  std::vector<TimerEntry*> heap_ CHANFLOW_GUARDED_BY(lock_);
  uint64_t seq_ CHANFLOW_GUARDED_BY(lock_) = 0;
  TimerEntry* firing_ CHANFLOW_GUARDED_BY(lock_) = nullptr;
  std::atomic<std::size_t> pending_{0};
  std::atomic<int> threads_{0};
  // Whether the timer thread was started (in this process): set under cv_mu_, read by
  // add_locked, which then asks for notify() (that starts it) whatever the deadline.
  std::atomic<bool> started_{false};
  // The timer thread sleeps on cv_ until notify() reports a change of the earliest deadline.
  os::Mutex cv_mu_;
  os::CondVar cv_;
  bool changed_ CHANFLOW_GUARDED_BY(cv_mu_) = false;
};

}  // namespace

void timer_add(TimerEntry* e) {
  TimerService& ts = TimerService::get();
  bool earliest = false;
  {
    os::LockGuard g(ts.lock());
    earliest = ts.add_locked(e);
  }
  if (earliest) ts.notify();
}

bool timer_remove(TimerEntry* e) { return TimerService::get().remove(e); }
void timer_prepare_fork() noexcept { TimerService::get().prepare_fork(); }
void timer_after_fork(bool child) noexcept { TimerService::get().after_fork(child); }
std::size_t timers_pending() noexcept { return TimerService::get().pending(); }
int timer_threads() noexcept { return TimerService::get().threads(); }

namespace {

struct SleepTimer : TimerEntry {
  Parker* parker = nullptr;
};

// The timer heap's lock, as a sleeper releases it when it parks: then tells the timer thread about
// its deadline if it is the earliest. A scoped capability adopting the heap's lock (held by the
// caller), so block()'s release of it is a release of that lock to the analysis; not released at
// the end of its scope (block() has released it). unlock() is not analysed inside: it acts on the
// adopted lock, which the analysis tracks through the adapter.
struct CHANFLOW_SCOPED_CAPABILITY SleepUnlock {
  SleepUnlock(TimerService* service, bool first) CHANFLOW_REQUIRES(service->lock())
      : ts(service), earliest(first) {}
  ~SleepUnlock() CHANFLOW_RELEASE() {}
  SleepUnlock(const SleepUnlock&) = delete;
  SleepUnlock& operator=(const SleepUnlock&) = delete;

  TimerService* ts;
  bool earliest;
  void unlock() CHANFLOW_RELEASE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    TimerService* const service = ts;
    const bool first = earliest;  // read before the unlock lets the sleeper go
    service->lock().unlock();
    if (first) service->notify();
  }
};

struct AfterTimer : TimerEntry {
  Chan<Clock::time_point> ch;
};

}  // namespace

void green_sleep(Clock::time_point until) {
  Parker* p = current_parker();
  SleepTimer st;
  st.when = until;
  st.parker = p;
  st.fire = [](TimerEntry* e) {
    Parker* q = static_cast<SleepTimer*>(e)->parker;
    if (q->try_claim()) unpark(q);
  };
  TimerService& ts = TimerService::get();
  ts.lock().lock();
  SleepUnlock u{&ts, ts.add_locked(&st)};
  // The heap's lock is released after the switch: the timer thread cannot claim us earlier.
  block(u, p, WaitReason::kSleep, nullptr, nullptr, 0, [&st] { timer_remove(&st); });
}

}  // namespace chanflow::detail

namespace chanflow {

void sleep_for(std::chrono::nanoseconds d) {
  if (!in_green_thread()) {
    if (d.count() > 0) std::this_thread::sleep_for(d);
    return;
  }
  if (d.count() <= 0) {
    yield();
    return;
  }
  detail::green_sleep(Clock::now() + d);
}

Chan<Clock::time_point> after(std::chrono::nanoseconds d) {
  auto* t = new detail::AfterTimer();
  t->ch = make_chan<Clock::time_point>(1);
  Chan<Clock::time_point> result = t->ch;
  t->when = Clock::now() + d;
  t->fire = [](detail::TimerEntry* e) {
    auto* at = static_cast<detail::AfterTimer*>(e);
    at->ch.try_send(Clock::now());
    delete at;
  };
  detail::timer_add(t);
  return result;
}

}  // namespace chanflow
