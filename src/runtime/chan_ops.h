// chan_ops.h — the steps of Go's channel algorithm shared by chan.cc and select.cc (private).
// ChanAlgo is the only code besides the lock-free readiness checks (chan_base.h, where Chan<T>
// inlines them) that touches a channel's state. Every step but lock() runs with the channel's
// lock held.
#pragma once

#include "chanflow/core/check.h"
#include "chanflow/core/thread_annotations.h"
#include "chanflow/runtime/detail/chan_base.h"
#include "trace_impl.h"

namespace chanflow::detail {

// Pops the first waiter whose parker we can claim; waiters of a select that already completed
// elsewhere (or of a canceled wait) are dropped from the queue on the way.
inline Waiter* dequeue_claimable(WaitQueue& q) noexcept {
  while (Waiter* w = q.pop_front()) {
    if (w->parker->try_claim()) {
      w->parker->fired = w;
      return w;
    }
  }
  return nullptr;
}

struct ChanAlgo {
  // c's lock, for annotations outside ChanAlgo (ChanBase's members are private to it).
  static os::SpinLock& mu(ChanBase* c) noexcept CHANFLOW_RETURN_CAPABILITY(c->lock_) {
    return c->lock_;
  }
  static void lock(ChanBase* c) noexcept CHANFLOW_ACQUIRE(c->lock_) { c->lock_.lock(); }
  // Releases the lock; the channel's invariants (chan_base.h, C1-C4) must hold here, and are
  // checked in debug and sanitizer builds.
  static void unlock(ChanBase* c) noexcept CHANFLOW_RELEASE(c->lock_) {
#if CHANFLOW_INVARIANT_CHECKS
    const char* broken = c->broken_invariant();
    CHANFLOW_CHECK(broken == nullptr)
        << "channel invariant broken (chan " << static_cast<const void*>(c) << "): " << broken;
#endif
    c->lock_.unlock();
  }

  // For code whose caller holds c's lock in a way the analysis cannot follow (a select holds every
  // case's lock through one Locks capability): states it, and checks in debug and sanitizer builds
  // that the lock is held (by someone: a spin lock does not record its owner).
  static void assert_held(const ChanBase* c) noexcept CHANFLOW_ASSERT_CAPABILITY(c->lock_) {
    c->lock_.assert_held();
  }

  // The steps below run with c's lock held.
  static WaitQueue& recvq(ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) { return c->recvq_; }
  static WaitQueue& sendq(ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) { return c->sendq_; }
  static bool is_closed(const ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) {
    return c->closed_.load(std::memory_order_relaxed);
  }
  static bool has_buffered(const ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) {
    return c->count_.load(std::memory_order_relaxed) > 0;
  }
  static bool has_room(const ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) {
    return c->count_.load(std::memory_order_relaxed) < c->cap_;
  }
  // Marks the channel closed (its waiters are then released by the caller).
  static void mark_closed(ChanBase* c) noexcept CHANFLOW_REQUIRES(c->lock_) {
    c->closed_.store(true, std::memory_order_release);
  }
  // A receive from a closed, drained channel: leaves `out` (a std::optional<T>) empty. Needs no
  // lock (ops_ never changes): a select calls it after its wait, with every lock released.
  static void reset_out(const ChanBase* c, void* out) noexcept { c->ops_->reset_optional(out); }

  // A sender meets a parked receiver: the value goes straight into the receiver's optional.
  static void hand_to_receiver(ChanBase* c, Waiter* r, void* elem) noexcept
      CHANFLOW_REQUIRES(c->lock_) {
    c->ops_->to_optional(r->elem, elem);
    r->success = true;
  }

  // Takes the buffer's head into `out` (a std::optional<T>); count_ > 0.
  static void take_head(ChanBase* c, void* out) noexcept CHANFLOW_REQUIRES(c->lock_) {
    void* s = c->slot(0);
    c->ops_->to_optional(out, s);
    c->ops_->destroy(s);
    c->head_ = (c->head_ + 1) % c->slots_;
    // release: the lock-free readiness checks rely on it (chan_base.h).
    c->count_.store(c->count_.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    if (trace_on()) trace_chan_counter(c);
  }

  // Appends elem to the buffer; count_ < cap_.
  static void put_tail(ChanBase* c, void* elem) noexcept CHANFLOW_REQUIRES(c->lock_) {
    const std::size_t n = c->count_.load(std::memory_order_relaxed);
    if (n == c->slots_) [[unlikely]]
      c->grow();
    c->ops_->construct(c->slot(n), elem);
    c->count_.store(n + 1, std::memory_order_release);  // see take_head
    if (trace_on()) trace_chan_counter(c);
  }

  // A receiver meets a parked sender. Unbuffered: take its value directly. Buffered (then full):
  // take the head and move the sender's value to the tail, keeping FIFO order.
  static void take_from_sender(ChanBase* c, Waiter* s, void* out) noexcept
      CHANFLOW_REQUIRES(c->lock_) {
    if (c->cap_ == 0) {
      c->ops_->to_optional(out, s->elem);
    } else {
      void* head = c->slot(0);
      c->ops_->to_optional(out, head);
      c->ops_->destroy(head);
      c->ops_->construct(head, s->elem);
      c->head_ = (c->head_ + 1) % c->slots_;  // full: slots_ == cap_
    }
    s->success = true;
  }
};

// A channel's lock as block_in() takes and releases it (block.h): a scoped capability that adopts
// c's lock, held by the caller (ChanAlgo::lock), so block_in()'s release of it is a release of
// c->lock_ to the analysis. lock() and unlock() go through ChanAlgo (the invariant checks). Not
// released at the end of its scope: block_in() has released it by then. The bodies are not
// analysed: they act on c->lock_, which the analysis tracks through the adapter, not inside it.
struct CHANFLOW_SCOPED_CAPABILITY ChanLock {
  explicit ChanLock(ChanBase* ch) noexcept CHANFLOW_REQUIRES(ChanAlgo::mu(ch)) : c(ch) {}
  ~ChanLock() CHANFLOW_RELEASE() {}
  ChanLock(const ChanLock&) = delete;
  ChanLock& operator=(const ChanLock&) = delete;
  void lock() noexcept CHANFLOW_ACQUIRE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS { ChanAlgo::lock(c); }
  void unlock() noexcept CHANFLOW_RELEASE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    ChanAlgo::unlock(c);
  }

  ChanBase* c;
};

// Parks the caller forever (nil channel, empty select); returns only by throwing when canceled.
[[noreturn]] void park_forever();

}  // namespace chanflow::detail
