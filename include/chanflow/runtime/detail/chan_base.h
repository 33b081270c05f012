// chan_base.h — the untyped core shared by Chan<T>, the type-erased ChannelObj and select
// (private).
//
// A channel is a lock, a ring buffer of `capacity` elements, a closed flag and two FIFO queues of
// parked parties (receivers, senders). The element type is known only through ElemOps, a table of
// move/destroy functions, so the whole algorithm (Go's chansend/chanrecv/closechan/selectgo) lives
// once in src/runtime and every T shares it.
//
//   ChanBase c(8, &kElemOps<int>);  int v = 1;  chan_send(&c, &v);
//   std::optional<int> out;  chan_recv(&c, &out);
#pragma once

#include <atomic>
#include <cstddef>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "chanflow/core/export.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/detail/trace_label.h"
#include "chanflow/runtime/detail/wait.h"

namespace chanflow::detail {

// How to move and destroy one element of a channel's type T.
struct ElemOps {
  void (*construct)(void* dst, void* src) noexcept;    // new (dst) T(std::move(*src))
  void (*to_optional)(void* opt, void* src) noexcept;  // std::optional<T>::emplace(std::move(*src))
  void (*reset_optional)(void* opt) noexcept;          // std::optional<T>::reset()
  void (*destroy)(void* p) noexcept;                   // p->~T()
  std::size_t size;
  std::size_t align;
};

template <class T>
struct ElemOpsOf {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "channel element types must be nothrow move constructible");
  static void construct(void* dst, void* src) noexcept {
    ::new (dst) T(std::move(*static_cast<T*>(src)));
  }
  static void to_optional(void* opt, void* src) noexcept {
    static_cast<std::optional<T>*>(opt)->emplace(std::move(*static_cast<T*>(src)));
  }
  static void reset_optional(void* opt) noexcept { static_cast<std::optional<T>*>(opt)->reset(); }
  static void destroy(void* p) noexcept { static_cast<T*>(p)->~T(); }
  static constexpr ElemOps kOps{&construct, &to_optional, &reset_optional,
                                &destroy,   sizeof(T),    alignof(T)};
};

// The shared state of one channel. Every mutable field is guarded by lock_; count_, closed_ and the
// queues' heads are atomics only so that size(), closed() and the lock-free readiness checks below
// may read them without it. Under the lock, count_ and the queue heads are stored with release
// ordering (free on x86) so that those checks can prove what they report (see recv_may_proceed).
//
// Invariants, true whenever lock_ is free (ChanAlgo::unlock checks them at every release in debug
// and sanitizer builds; broken_invariant names the first that fails):
//  C1  count_ <= slots_ <= cap_, and slots_ == 0 exactly when cap_ == 0.
//  C2  count_ > 0 implies recvq_ is empty: a receiver parks only when nothing is buffered, and a
//      sender hands its value to a parked receiver before it would buffer it.
//  C3  count_ < cap_ implies sendq_ is empty: a sender parks only on a full buffer, and a receiver
//      that frees a slot first refills it from a parked sender.
//  C4  closed_ implies both queues are empty: close claims every waiter, and nothing parks on a
//      closed channel.
// A queue may hold waiters that can no longer be claimed (a select that completed on another
// case, a canceled wait) until their owner unlinks them; a waker that meets one drops it, so the
// invariants hold with them too. Go's "recvq or sendq is empty" holds for an unbuffered channel
// except when one select waits to send and to receive on it; it is not checked.
class CHANFLOW_API ChanBase {
 public:
  ChanBase(std::size_t capacity, const ElemOps* ops);
  ~ChanBase();
  ChanBase(const ChanBase&) = delete;
  ChanBase& operator=(const ChanBase&) = delete;

  std::size_t capacity() const noexcept { return cap_; }
  std::size_t size() const noexcept { return count_.load(std::memory_order_relaxed); }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  // The name traces show for this channel (the program's or caller's name for it; empty: "#<id>").
  // Set it before the channel is shared with other threads; not thread-safe.
  void set_name(std::string name) { label_.set_name(std::move(name)); }
  const std::string& name() const noexcept { return label_.name(); }
  // How traces and deadlock reports name it (trace_label.h).
  const TraceLabel& trace_label() const noexcept { return label_; }
  // Marks this channel as a Context's done channel: traces show a wait on it as a "context" wait
  // and its close as a "cancel". Before the channel is shared.
  void set_context_done() noexcept { context_done_ = true; }
  bool is_context_done() const noexcept { return context_done_; }
  // A process-unique id, allocated on first call (traces show an unnamed channel as "#<id>").
  // Thread-safe.
  uint64_t trace_id() const noexcept { return label_.id(); }

 private:
  // The channel algorithm (src/runtime/chan_ops.h: chan.cc and select.cc use it) and the
  // lock-free readiness checks below; a test peer breaks invariants on purpose.
  friend struct ChanAlgo;
  friend struct ChanBaseTestPeer;
  friend bool recv_may_proceed(const ChanBase* c) noexcept;
  friend bool send_may_proceed(const ChanBase* c) noexcept;

  // The buffer holds `slots_` elements, between min(cap_, kEagerSlots) and cap_: it grows
  // (doubling, in put_tail) only as values are buffered, so a channel's capacity costs no memory
  // until it is used (make(chan T, 1<<31) then sending five values allocates five-ish slots, not 16
  // GiB).
  static constexpr std::size_t kEagerSlots = 256;
  void* slot(std::size_t i) const noexcept CHANFLOW_REQUIRES(lock_) {
    return buf_ + ((head_ + i) % slots_) * ops_->size;
  }
  // Makes room for one more buffered value (count_ == slots_ < cap_): a buffer twice the size (at
  // most cap_) with the values moved to its front in order. Out-of-memory ends the process, like
  // any allocation in a noexcept path.
  void grow() noexcept CHANFLOW_REQUIRES(lock_);
  // The first of C1-C4 that does not hold ("C2: ..."), or nullptr. lock_ held.
  const char* broken_invariant() const noexcept CHANFLOW_REQUIRES(lock_);

  // Mutable state is guarded by lock_ (checked by Clang's analysis). closed_ and count_ are written
  // only under lock_ too, but are atomics read without it (size(), closed(), the readiness checks),
  // so they carry no GUARDED_BY. cap_ and ops_ never change; label_'s name and context_done_ are
  // set before the channel is shared (set_name, set_context_done).
  mutable os::SpinLock lock_;
  std::atomic<bool> closed_{false};
  std::atomic<std::size_t> count_{0};
  const std::size_t cap_;
  std::size_t slots_ CHANFLOW_GUARDED_BY(lock_) = 0;
  std::size_t head_ CHANFLOW_GUARDED_BY(lock_) = 0;
  unsigned char* buf_ CHANFLOW_GUARDED_BY(lock_) = nullptr;
  const ElemOps* const ops_;
  WaitQueue recvq_ CHANFLOW_GUARDED_BY(lock_);
  WaitQueue sendq_ CHANFLOW_GUARDED_BY(lock_);
  TraceLabel label_;
  bool context_done_ = false;
};

// Lock-free "could a receive proceed?" — Go's `empty(c)` fast path of a non-blocking receive. Never
// blocks, takes no lock, thread-safe. true only means "take the lock and look"; false is a
// linearizable "not ready": at some instant during the call the channel was empty (no buffered
// value; unbuffered: no parked sender) and not closed. Why:
//  - Every change of emptiness is a release store (of count_, or of sendq_'s head) made under the
//    lock, and close() stores closed_ under the lock before it empties the queues. The first load
//    (acquire) reads one such store W, made in some critical section E (or the initial state), and
//    no later one (coherence: a later store that happened before this call would be read instead).
//  - If a close happened in E or in a critical section before E, the closed_ store happens before
//    W, W synchronizes with our acquire load, so the second load (ordered after the first by
//    acquire) must see closed_ == true — it cannot return false for "not closed".
//  - So when it does see false, the close (if any) comes after E in the lock order: just after E
//    the channel was empty and open, and that state lasts until a store we did not observe, i.e.
//    into our call. A closed channel cannot reopen, so reading "open" later cannot undo the first
//    fact.
// Loading closed_ first instead would be wrong: open, [value arrives, close, drained], empty reads
// as "open and empty" though the channel was never both at once while we looked.
inline bool recv_may_proceed(const ChanBase* c) noexcept;
// The same for a send (Go's `full(c)`): false means that at some instant during the call the
// buffer was full (unbuffered: no parked receiver) and the channel was not closed (a send on a
// closed channel must take the lock, to throw). Same argument, with the receivers' queue.
inline bool send_may_proceed(const ChanBase* c) noexcept;

// Sends *elem (moving from it). c == nullptr: the nil channel, blocks forever. Blocks until a
// receiver takes the value or buffer space frees. Throws ChannelClosedError.
CHANFLOW_API void chan_send(ChanBase* c, void* elem);
// Receives into *out (a std::optional<T>, left empty when the channel is closed and drained).
// Returns whether a value arrived. Blocks; c == nullptr blocks forever.
CHANFLOW_API bool chan_recv(ChanBase* c, void* out);
// Non-blocking forms: try_send returns whether the value was taken (throws when closed);
// try_recv returns 1 (value), 0 (not ready) or -1 (closed and drained).
CHANFLOW_API bool chan_try_send(ChanBase* c, void* elem);
CHANFLOW_API int chan_try_recv(ChanBase* c, void* out);
// Closes; wakes every waiter. Throws ChannelClosedError for nil or already closed.
CHANFLOW_API void chan_close(ChanBase* c);

// Not analysed: reading the queue head without the lock is the point (the argument above is why
// it is sound); empty_unlocked() is the queue's one lock-free read.
inline bool recv_may_proceed(const ChanBase* c) noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  const bool empty =
      c->cap_ == 0 ? c->sendq_.empty_unlocked() : c->count_.load(std::memory_order_acquire) == 0;
  return !empty || c->closed_.load(std::memory_order_acquire);
}

// Not analysed, as recv_may_proceed.
inline bool send_may_proceed(const ChanBase* c) noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  const bool full = c->cap_ == 0 ? c->recvq_.empty_unlocked()
                                 : c->count_.load(std::memory_order_acquire) == c->cap_;
  return !full || c->closed_.load(std::memory_order_acquire);
}

}  // namespace chanflow::detail
