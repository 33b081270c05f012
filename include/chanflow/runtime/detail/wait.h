// wait.h — parking and waking: the one mechanism under every blocking call (private).
//
// Whoever blocks (a green thread or a plain OS thread) owns a Parker. To wait, it takes the lock of
// the thing it waits on, enqueues one Waiter per thing (a select enqueues one per case), arms its
// Parker and calls park() with a function that releases the lock(s). A green thread releases them
// only after it has switched out, an OS thread before sleeping on a futex — so a waker, which needs
// the same lock to find the Waiter, can never wake a thread that is not parked yet (no lost
// wake-ups). Exactly one waker wins Parker::try_claim(), records which Waiter fired and calls
// unpark().
//
//   Parker* p = current_parker();
//   lock.lock(); queue.push_back(&w); p->arm(WaitReason::kMutex, this);
//   if (park(p, unlock_fn, &lock) == Parker::kCanceled) { ...dequeue, throw_park_canceled(p); }
#pragma once

#include <atomic>
#include <cstdint>

#include "chanflow/core/check.h"
#include "chanflow/core/export.h"

namespace chanflow::detail {

class ChanBase;
struct Task;
struct Parker;

// What a parked thread waits on; deadlock reports and traces print it, and read the Parker's
// wait_obj as the type noted (they ask it for its name).
enum class WaitReason : uint8_t {
  kNone,
  kChanSend,  // wait_obj: the ChanBase
  kChanRecv,  // wait_obj: the ChanBase
  kSelect,    // the cases are the Parker's waiters
  kNilChan,
  kSleep,
  kMutex,      // wait_obj: the Mutex
  kWaitGroup,  // wait_obj: the WaitGroup
  kSchedulerDrain,
};

// One wait record: a party blocked on one channel (or one queue). Lives on the stack of the blocked
// thread; linked into the queue of the channel while it waits. Guarded by that channel's lock.
struct Waiter {
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  Parker* parker = nullptr;
  ChanBase* chan = nullptr;
  // Send: the T to move from. Receive: the std::optional<T> to emplace into.
  void* elem = nullptr;
  uint32_t case_index = 0;
  bool is_send = false;
  bool queued = false;
  // Set by the waker that claimed the parker: true when a value moved, false when the channel
  // closed.
  bool success = false;
};

// An intrusive FIFO of Waiters. Guarded by its owner's lock; only empty_unlocked() may be called
// without it: a snapshot for lock-free fast paths (chan_base.h), hence the atomic head, stored with
// release under the lock and loaded with acquire there.
//
// Invariants (under the lock; checked in push_back and remove, CHANFLOW_INVARIANT):
//  Q1  head and tail are both null (empty) or both non-null.
//  Q2  a waiter is linked into at most one queue, exactly while its `queued` is true; an unlinked
//      waiter has null prev and next.
//  Q3  the links agree: a queued waiter's prev (or the head, for the first) points at it, and its
//      next (or the tail, for the last) likewise.
// The checks are O(1) (the neighbours of the waiter at hand), so they cost nothing asymptotically
// on queues of any length.
class WaitQueue {
 public:
  bool empty() const noexcept { return head() == nullptr; }
  bool empty_unlocked() const noexcept { return head_.load(std::memory_order_acquire) == nullptr; }
  Waiter* front() const noexcept { return head(); }
  void push_back(Waiter* w) noexcept {
    CHANFLOW_INVARIANT((head() == nullptr) == (tail_ == nullptr)) << "wait queue: Q1";
    CHANFLOW_INVARIANT(!w->queued && w->prev == nullptr && w->next == nullptr)
        << "wait queue: Q2 (a waiter linked twice)";
    w->next = nullptr;
    w->prev = tail_;
    if (tail_ != nullptr) {
      tail_->next = w;
    } else {
      head_.store(w, std::memory_order_release);
    }
    tail_ = w;
    w->queued = true;
  }
  // Removes w if it is still queued (idempotent).
  void remove(Waiter* w) noexcept {
    if (!w->queued) return;
    CHANFLOW_INVARIANT(w->prev != nullptr ? w->prev->next == w : head() == w)
        << "wait queue: Q3 (prev link)";
    CHANFLOW_INVARIANT(w->next != nullptr ? w->next->prev == w : tail_ == w)
        << "wait queue: Q3 (next link)";
    if (w->prev != nullptr) {
      w->prev->next = w->next;
    } else {
      head_.store(w->next, std::memory_order_release);
    }
    if (w->next != nullptr) {
      w->next->prev = w->prev;
    } else {
      tail_ = w->prev;
    }
    w->prev = w->next = nullptr;
    w->queued = false;
  }
  Waiter* pop_front() noexcept {
    Waiter* w = head();
    if (w != nullptr) remove(w);
    return w;
  }

 private:
  Waiter* head() const noexcept { return head_.load(std::memory_order_relaxed); }
  std::atomic<Waiter*> head_{nullptr};
  Waiter* tail_ = nullptr;
};

// The parking state of one green thread or one OS thread.
struct Parker {
  static constexpr uint32_t kIdle = 0;      // not waiting
  static constexpr uint32_t kWaiting = 1;   // armed: waiters are queued, a waker may claim
  static constexpr uint32_t kClaimed = 2;   // a waker won; `fired` says which waiter
  static constexpr uint32_t kCanceled = 3;  // the wait was canceled (deadlock, scheduler teardown)

  // Arms the parker before park(). Call with the lock(s) of everything it waits on held.
  void arm(WaitReason r, const void* obj, const Waiter* ws = nullptr, uint32_t n = 0) noexcept {
    reason = r;
    wait_obj = obj;
    waiters = ws;
    nwaiters = n;
    fired = nullptr;
    state.store(kWaiting, std::memory_order_relaxed);
  }
  // Wins the right to wake this parker. acq_rel: the winner sees the parker's armed state and its
  // later writes (the value, `fired`) are published to the parked thread by unpark().
  bool try_claim() noexcept {
    uint32_t expected = kWaiting;
    return state.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }
  bool try_cancel() noexcept {
    uint32_t expected = kWaiting;
    return state.compare_exchange_strong(expected, kCanceled, std::memory_order_acq_rel,
                                         std::memory_order_relaxed);
  }

  std::atomic<uint32_t> state{kIdle};
  Waiter* fired = nullptr;
  Task* task = nullptr;  // null for an OS thread
  // An OS thread's wait (os_park): kOsWaiting while it spins or decides to sleep, kOsAsleep once
  // it announced its futex sleep (only then must a waker or a poke call futex wake), kOsWoken when
  // unparked, kOsCheck when asked to check for a deadlock. Only the thread itself moves the word
  // back to kOsWaiting (from kOsAsleep or kOsCheck); wakers and pokes move it away from there.
  static constexpr uint32_t kOsWaiting = 0;
  static constexpr uint32_t kOsWoken = 1;
  static constexpr uint32_t kOsCheck = 2;
  static constexpr uint32_t kOsAsleep = 3;
  std::atomic<uint32_t> os_word{kOsWaiting};
  // Diagnostics: set as the park is armed; read by deadlock reports while everything is parked,
  // and by traces on the parking thread and on the one that claims it.
  WaitReason reason = WaitReason::kNone;
  const void* wait_obj = nullptr;
  const Waiter* waiters = nullptr;
  uint32_t nwaiters = 0;
  Parker* next_os = nullptr;  // registry of parked OS threads
  Parker* prev_os = nullptr;
};

// The parker of the calling green thread, or of the calling OS thread. Never null.
CHANFLOW_API Parker* current_parker() noexcept;

// Parks the caller until another party claims and unparks `p` (returns kClaimed) or the wait is
// canceled (returns kCanceled: the caller must dequeue its waiters, then call
// throw_park_canceled). `p` must be armed and `unlock(arg)` must release every lock taken to
// enqueue its waiters; it runs once the caller can safely be woken. Blocks.
CHANFLOW_API uint32_t park(Parker* p, void (*unlock)(void*), void* arg);

// Wakes a parker whose claim the caller won. Thread-safe, never blocks. Release ordering: every
// write before it is visible to the woken thread.
CHANFLOW_API void unpark(Parker* p) noexcept;

// After park() returned kCanceled and the caller cleaned up: throws DeadlockError (OS thread, the
// report) or unwinds the green thread (scheduler teardown: throws FiberUnwind, scheduler.h).
[[noreturn]] CHANFLOW_API void throw_park_canceled(Parker* p);

}  // namespace chanflow::detail
