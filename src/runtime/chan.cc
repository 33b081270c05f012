// chan.cc — send, receive and close: Go's chansend / chanrecv / closechan.
#include <algorithm>
#include <new>

#include "block.h"
#include "chan_ops.h"
#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/runtime/detail/chan_base.h"

namespace chanflow::detail {
namespace {

[[noreturn]] void throw_send_on_closed(const ChanBase* c, bool while_waiting) {
  CHANFLOW_THROW(ChannelClosedError)
      << "send on closed channel (chan " << static_cast<const void*>(c) << ", cap " << c->capacity()
      << ")" << (while_waiting ? ": it was closed while the sender waited" : "");
  __builtin_unreachable();  // CHANFLOW_THROW throws at the end of the statement
}

// [[noreturn]], unlike a bare CHANFLOW_THROW statement: the lock analysis then knows the path ends.
[[noreturn]] void throw_close_of_closed(const ChanBase* c) {
  CHANFLOW_THROW(ChannelClosedError)
      << "close of closed channel (chan " << static_cast<const void*>(c) << ")";
  __builtin_unreachable();  // CHANFLOW_THROW throws at the end of the statement
}

}  // namespace

ChanBase::ChanBase(std::size_t capacity, const ElemOps* ops)
    : cap_(capacity), slots_(std::min(capacity, kEagerSlots)), ops_(ops) {
  if (slots_ > 0) {
    buf_ = static_cast<unsigned char*>(
        ::operator new(slots_ * ops_->size, std::align_val_t(ops_->align)));
  }
}

void ChanBase::grow() noexcept {
  CHANFLOW_DCHECK(count_.load(std::memory_order_relaxed) == slots_ && slots_ < cap_);
  const std::size_t bigger = slots_ > cap_ / 2 ? cap_ : slots_ * 2;
  auto* fresh = static_cast<unsigned char*>(
      ::operator new(bigger * ops_->size, std::align_val_t(ops_->align)));
  for (std::size_t i = 0; i < slots_; ++i) {
    void* from = slot(i);
    ops_->construct(fresh + i * ops_->size, from);
    ops_->destroy(from);
  }
  ::operator delete(buf_, std::align_val_t(ops_->align));
  buf_ = fresh;
  slots_ = bigger;
  head_ = 0;
}

ChanBase::~ChanBase() {
  if (buf_ == nullptr) return;
  const std::size_t n = count_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) ops_->destroy(slot(i));
  ::operator delete(buf_, std::align_val_t(ops_->align));
}

void park_forever() {
  NoLock none;
  none.lock();  // nothing taken; block() "releases" it
  block(none, current_parker(), WaitReason::kNilChan, nullptr, nullptr, 0, NoCleanup{});
  // Only a cancel ends the wait (nothing can claim it), and a canceled block() throws.
  CHANFLOW_CHECK(false) << "a wait on a nil channel was woken";
  __builtin_unreachable();
}

namespace {

// With c's lock held: sends now if a receiver is parked or a slot is free, and then releases the
// lock (and wakes the receiver) and returns true; else returns false with the lock still held.
// On a closed channel releases the lock and throws. To the analysis: releases c's lock and holds
// it again exactly when it returns false. Its own body is not analysed (whether it releases
// depends on the value it returns); its callers are checked against that annotation.
bool send_now(ChanBase* c, void* elem) CHANFLOW_RELEASE(ChanAlgo::mu(c))
    CHANFLOW_TRY_ACQUIRE(false, ChanAlgo::mu(c)) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  if (ChanAlgo::is_closed(c)) {
    ChanAlgo::unlock(c);
    throw_send_on_closed(c, false);
  }
  if (Waiter* r = dequeue_claimable(ChanAlgo::recvq(c))) {
    ChanAlgo::hand_to_receiver(c, r, elem);
    ChanAlgo::unlock(c);
    unpark(r->parker);
    return true;
  }
  if (ChanAlgo::has_room(c)) {
    ChanAlgo::put_tail(c, elem);
    ChanAlgo::unlock(c);
    return true;
  }
  return false;
}

// With c's lock held: receives now if a sender is parked or a value is buffered (1), or reports a
// closed, drained channel (-1, `out` left as it is), releasing the lock either way; else returns 0
// with the lock still held. Annotated as send_now: released, and held again exactly on 0.
int recv_now(ChanBase* c, void* out) CHANFLOW_RELEASE(ChanAlgo::mu(c))
    CHANFLOW_TRY_ACQUIRE(0, ChanAlgo::mu(c)) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  if (Waiter* s = dequeue_claimable(ChanAlgo::sendq(c))) {
    ChanAlgo::take_from_sender(c, s, out);
    ChanAlgo::unlock(c);
    unpark(s->parker);
    return 1;
  }
  if (ChanAlgo::has_buffered(c)) {
    ChanAlgo::take_head(c, out);
    ChanAlgo::unlock(c);
    return 1;
  }
  if (ChanAlgo::is_closed(c)) {
    ChanAlgo::unlock(c);
    return -1;
  }
  return 0;
}

// With c's lock held: parks the caller on c's send or receive queue until a partner or close()
// completes the operation (the lock is released while parked and on return). Returns the waiter's
// success: false when close() woke it (a sender must then throw, a receiver got the zero value).
bool park_on(ChanBase* c, void* elem, bool is_send) CHANFLOW_RELEASE(ChanAlgo::mu(c)) {
  Waiter w;
  w.chan = c;
  w.elem = elem;
  w.is_send = is_send;
  ChanLock lock{c};
  block_in(lock, is_send ? ChanAlgo::sendq(c) : ChanAlgo::recvq(c), w,
           is_send ? WaitReason::kChanSend : WaitReason::kChanRecv, c);
  return w.success;
}

}  // namespace

void chan_send(ChanBase* c, void* elem) {
  if (c == nullptr) park_forever();
  ChanAlgo::lock(c);
  if (send_now(c, elem)) return;
  if (!park_on(c, elem, /*is_send=*/true)) throw_send_on_closed(c, true);
}

bool chan_recv(ChanBase* c, void* out) {
  if (c == nullptr) park_forever();
  ChanAlgo::lock(c);
  if (const int got = recv_now(c, out); got != 0) return got > 0;
  return park_on(c, out, /*is_send=*/false);
}

bool chan_try_send(ChanBase* c, void* elem) {
  if (c == nullptr) return false;
  if (!send_may_proceed(c)) return false;  // Go's fast path: no lock when it cannot succeed
  ChanAlgo::lock(c);
  if (send_now(c, elem)) return true;
  ChanAlgo::unlock(c);
  return false;
}

int chan_try_recv(ChanBase* c, void* out) {
  if (c == nullptr) return 0;
  if (!recv_may_proceed(c)) return 0;  // Go's fast path: no lock when it cannot succeed
  ChanAlgo::lock(c);
  const int got = recv_now(c, out);
  if (got == 0) ChanAlgo::unlock(c);
  return got;
}

void chan_close(ChanBase* c) {
  if (c == nullptr) CHANFLOW_THROW(ChannelClosedError) << "close of nil channel";
  ChanAlgo::lock(c);
  if (ChanAlgo::is_closed(c)) {
    ChanAlgo::unlock(c);
    throw_close_of_closed(c);
  }
  ChanAlgo::mark_closed(c);
  // Claim every waiter under the lock, wake them after releasing it. The claimed waiters are
  // ours now; chain them through `next` (they left the queue).
  Waiter* wake = nullptr;
  for (WaitQueue* q : {&ChanAlgo::recvq(c), &ChanAlgo::sendq(c)}) {
    while (Waiter* w = dequeue_claimable(*q)) {
      w->success = false;
      w->next = wake;
      wake = w;
    }
  }
  ChanAlgo::unlock(c);
  while (wake != nullptr) {
    Waiter* next = wake->next;  // read before the owner may run and pop its frame
    unpark(wake->parker);
    wake = next;
  }
}

const char* ChanBase::broken_invariant() const noexcept {
  const std::size_t n = count_.load(std::memory_order_relaxed);
  if (!(n <= slots_ && slots_ <= cap_ && (slots_ == 0) == (cap_ == 0))) {
    return "C1: count <= slots <= capacity, no slots exactly when unbuffered";
  }
  if (n > 0 && !recvq_.empty()) return "C2: a buffered value while a receiver is parked";
  if (n < cap_ && !sendq_.empty()) return "C3: a free slot while a sender is parked";
  if (closed_.load(std::memory_order_relaxed) && !(recvq_.empty() && sendq_.empty())) {
    return "C4: a waiter parked on a closed channel";
  }
  return nullptr;
}

}  // namespace chanflow::detail
