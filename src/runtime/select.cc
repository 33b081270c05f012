// select.cc — Go's selectgo: random poll order, address-ordered locking, one waiter per case.
#include "chanflow/runtime/select.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <new>
#include <vector>

#include "block.h"
#include "chan_ops.h"
#include "chanflow/core/error.h"

namespace chanflow {
namespace detail {
namespace {

constexpr std::size_t kInline = 16;

thread_local uint64_t t_rng = 0;

uint32_t fast_random(uint32_t n) noexcept {
  // wyrand; seeded per thread from its address and a counter.
  uint64_t s = t_rng;
  if (s == 0) {
    static std::atomic<uint64_t> seeds{0x853c49e6748fea9bULL};
    s = seeds.fetch_add(0x9E3779B97F4A7C15ULL, std::memory_order_relaxed) ^
        reinterpret_cast<uintptr_t>(&t_rng);
  }
  s += 0xa0761d6478bd642fULL;
  t_rng = s;
  __uint128_t m = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbULL);
  const auto r = static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
  // Lemire's multiply-shift: unbiased enough for n <= 2^16 cases.
  return static_cast<uint32_t>((static_cast<uint64_t>(static_cast<uint32_t>(r)) * n) >> 32);
}

// The locks of every channel of a select, taken in address order (no two selects deadlock). One
// capability to the analysis, standing for all of them; lock() and unlock() are not analysed
// inside (a loop over several channels' locks, which the analysis cannot follow).
struct CHANFLOW_CAPABILITY("mutex") Locks {
  ChanBase** chans;  // sorted by address, duplicates removed
  std::size_t n;

  void lock() noexcept CHANFLOW_ACQUIRE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t i = 0; i < n; ++i) ChanAlgo::lock(chans[i]);
  }
  void unlock() noexcept CHANFLOW_RELEASE() CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
    // Copy both before releasing a lock: once the last is released the select may return and
    // its frame (which holds this object and the array) may be gone.
    const std::size_t count = n;
    ChanBase** const cs = chans;
    for (std::size_t i = 0; i < count; ++i) ChanAlgo::unlock(cs[i]);
  }
};

[[noreturn]] void throw_select_send_closed(const ChanBase* c) {
  CHANFLOW_THROW(ChannelClosedError)
      << "select: send on closed channel (chan " << static_cast<const void*>(c) << ", cap "
      << c->capacity() << ")";
  __builtin_unreachable();  // CHANFLOW_THROW throws at the end of the statement
}

// Lock-free "could this case proceed?" (chan_base.h): false is a linearizable "not ready".
bool may_proceed(const SelectCase& cs) noexcept {
  return cs.kind() == SelectCase::Kind::kSend ? send_may_proceed(cs.chan())
                                              : recv_may_proceed(cs.chan());
}

enum class Outcome : uint8_t { kNotReady, kDone, kSendOnClosed };

// With the lock of cs's channel held: performs cs if it can proceed now. *wake receives the parker
// of a party this completed (to unpark once every lock is released).
Outcome attempt(SelectCase& cs, Parker** wake) noexcept {
  ChanBase* c = cs.chan();
  ChanAlgo::assert_held(c);  // held alone or among a select's Locks
  if (cs.kind() == SelectCase::Kind::kSend) {
    if (ChanAlgo::is_closed(c)) return Outcome::kSendOnClosed;
    if (Waiter* r = dequeue_claimable(ChanAlgo::recvq(c))) {
      ChanAlgo::hand_to_receiver(c, r, cs.elem());
      *wake = r->parker;
      return Outcome::kDone;
    }
    if (ChanAlgo::has_room(c)) {
      ChanAlgo::put_tail(c, cs.elem());
      return Outcome::kDone;
    }
  } else {
    if (Waiter* snd = dequeue_claimable(ChanAlgo::sendq(c))) {
      ChanAlgo::take_from_sender(c, snd, cs.elem());
      *wake = snd->parker;
      return Outcome::kDone;
    }
    if (ChanAlgo::has_buffered(c)) {
      ChanAlgo::take_head(c, cs.elem());
      return Outcome::kDone;
    }
    if (ChanAlgo::is_closed(c)) {
      ChanAlgo::reset_out(c, cs.elem());
      return Outcome::kDone;
    }
  }
  return Outcome::kNotReady;
}

// Storage for up to kInline objects on the stack (uninitialised), else on the heap.
template <class T>
struct Scratch {
  // T may be a pointer type (Scratch<Waiter*>): sizeof(T) is then meant.
  alignas(T) unsigned char inline_[sizeof(T) * kInline];  // NOLINT(bugprone-sizeof-expression)
  std::vector<T> heap_;
  T* get(std::size_t n) {
    if (n <= kInline) return reinterpret_cast<T*>(inline_);
    heap_.resize(n);
    return heap_.data();
  }
};

}  // namespace
}  // namespace detail

std::size_t select(std::span<SelectCase> cases) {
  using namespace detail;
  const std::size_t ncases = cases.size();
  std::size_t default_index = SIZE_MAX;
  Scratch<uint32_t> order_buf;
  uint32_t* order = order_buf.get(ncases);
  std::size_t n = 0;
  // Poll order: a uniformly random permutation of the live cases (inside-out Fisher-Yates).
  for (std::size_t i = 0; i < ncases; ++i) {
    const SelectCase& c = cases[i];
    if (c.kind() == SelectCase::Kind::kDefault) {
      if (default_index != SIZE_MAX) {
        CHANFLOW_THROW(Error) << "select: more than one default case (cases " << default_index
                              << " and " << i << ")";
      }
      default_index = i;
      continue;
    }
    if (c.chan() == nullptr) continue;  // nil channel: never ready
    const uint32_t j = fast_random(static_cast<uint32_t>(n + 1));
    order[n] = order[j];
    order[j] = static_cast<uint32_t>(i);
    ++n;
  }
  if (n == 0) {
    if (default_index != SIZE_MAX) return default_index;
    park_forever();
  }
  // Pass 0, without the all-channel lock: in poll order, skip the cases that the lock-free check
  // proves not ready, and try a case that may proceed under its own channel's lock only. A case
  // done here is a valid choice: it was ready when performed, under its lock, and every case
  // polled before it was not ready at an instant during this call (linearizable "not ready",
  // chan_base.h). An earlier case may have become ready since; then both were ready at that
  // moment, and an all-locks select whose random order put this case first chooses it too. When
  // readiness does not change during the call, the choice is exactly the all-locks one (the first
  // ready case in a uniformly random order). Choosing the default or parking needs
  // "nothing ready" at one instant, which only the full pass below (every lock held) establishes
  // — except with a single live case, where its own check is that instant (Go's selectnbrecv).
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    SelectCase& cs = cases[i];
    if (!may_proceed(cs)) continue;
    ChanBase* c = cs.chan();
    Parker* wake = nullptr;
    ChanAlgo::lock(c);
    const Outcome o = attempt(cs, &wake);
    ChanAlgo::unlock(c);
    if (o == Outcome::kSendOnClosed) throw_select_send_closed(c);
    if (o == Outcome::kDone) {
      if (wake != nullptr) unpark(wake);
      return i;
    }
  }
  if (n == 1 && default_index != SIZE_MAX) return default_index;
  // Lock order: by channel address, each channel once. Sorted in O(n log n) (n may be 100,000:
  // an insertion sort's n^2/4 moves took seconds), in place: std::sort allocates nothing and
  // recurses at most 2 log2(n) deep, and for n <= 16 it is an insertion sort.
  Scratch<ChanBase*> chans_buf;
  ChanBase** chans = chans_buf.get(n);
  for (std::size_t k = 0; k < n; ++k) chans[k] = cases[order[k]].chan();
  std::sort(chans, chans + n, std::less<>());
  const auto nlocks = static_cast<std::size_t>(std::unique(chans, chans + n) - chans);
  Locks locks{chans, nlocks};
  locks.lock();

  // Pass 1: the first ready case in poll order wins.
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    Parker* wake = nullptr;
    const Outcome o = attempt(cases[i], &wake);
    if (o == Outcome::kNotReady) continue;
    locks.unlock();
    if (o == Outcome::kSendOnClosed) throw_select_send_closed(cases[i].chan());
    if (wake != nullptr) unpark(wake);
    return i;
  }
  if (default_index != SIZE_MAX) {
    locks.unlock();
    return default_index;
  }

  // Pass 2: one waiter per case, in every channel's queue at once, until one fires.
  Scratch<Waiter> waiters_buf;
  Waiter* ws = waiters_buf.get(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    Waiter& w = *::new (&ws[k]) Waiter();
    w.chan = cases[i].chan();
    w.elem = cases[i].elem();
    w.case_index = static_cast<uint32_t>(i);
    w.is_send = cases[i].kind() == SelectCase::Kind::kSend;
  }
  const Waiter* fired =
      block_in_all(locks, ws, static_cast<uint32_t>(n), [](Waiter& w) -> WaitQueue& {
        ChanAlgo::assert_held(w.chan);  // one of `locks`
        return w.is_send ? ChanAlgo::sendq(w.chan) : ChanAlgo::recvq(w.chan);
      });
  const std::size_t i = fired->case_index;
  if (!fired->success) {
    if (fired->is_send) throw_select_send_closed(fired->chan);
    ChanAlgo::reset_out(fired->chan, fired->elem);
  }
  return i;
}

}  // namespace chanflow
