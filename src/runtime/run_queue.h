// run_queue.h — a worker's local run queue: a bounded Chase–Lev work-stealing deque (private).
//
// The owning worker pushes and pops at the bottom, newest first, so a green thread that spawns or
// wakes others has them run depth-first, on stacks still warm in cache. Thieves take from the top,
// oldest first, one compare-and-swap per task; so does the owner's periodic fairness turn, which
// bounds how long the oldest task can wait (docs/runtime.md, *Local run queue*). A full ring hands
// its oldest half to the scheduler's global queue.
//
// Protocol (Chase and Lev 2005): the owner's pop lowers bottom, then reads top; a thief reads top,
// then bottom, then CASes top. All of these are seq_cst, so either the thief sees the lowered
// bottom or the owner sees the thief's top, and only the last task is contested, through the CAS.
// On x86 that costs the owner one xchg per pop (the lowering) and a thief plain loads plus its CAS;
// the Lê et al. (2013) form with relaxed operations and fences needs an mfence on both sides. A
// thief takes a batch as a series of such single steals: one CAS covering many tasks could claim a
// task the owner has just popped without noticing. Indices grow and wrap as uint32_t; differences
// are read as int32_t (at most kSize apart). Slots are atomics because a thief may read a slot the
// owner is rewriting; its CAS then fails. The bottom's release store publishes a pushed task to the
// thief's acquire load.
#pragma once

#include <atomic>
#include <cstdint>

#include "chanflow/core/cache_line.h"
#include "task.h"

namespace chanflow::detail {

class RunQueue {
 public:
  static constexpr uint32_t kSize = 256;

  // first_index lets tests start the indices just below their wrap-around.
  explicit RunQueue(uint32_t first_index = 0) noexcept : top_(first_index), bottom_(first_index) {}
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // Before any use: whether other threads may steal. With one worker nobody does, and the owner's
  // pop is a plain store.
  void set_stealable(bool on) noexcept { stealable_ = on; }

  // Any thread. A snapshot: may be stale, never reports empty while the queue held a task
  // throughout the call.
  bool empty() const noexcept {
    const uint32_t t = top_.load(std::memory_order_seq_cst);
    const uint32_t b = bottom_.load(std::memory_order_seq_cst);
    return static_cast<int32_t>(b - t) <= 0;
  }

  // Any thread: how many tasks it holds, a snapshot that may be stale (the trace's run-queue
  // counter). Relaxed: a count, read for display only.
  uint32_t size_approx() const noexcept {
    const uint32_t t = top_.load(std::memory_order_relaxed);
    const uint32_t b = bottom_.load(std::memory_order_relaxed);
    const auto n = static_cast<int32_t>(b - t);
    return n > 0 ? static_cast<uint32_t>(n) : 0;
  }

  // Owner only: how many pushes would succeed now (thieves may only make it more).
  uint32_t free_slots() const noexcept {
    const uint32_t b = bottom_.load(std::memory_order_relaxed);
    return kSize - (b - top_.load(std::memory_order_acquire));
  }

  // Owner only: adds t at the bottom. Returns false when full (the caller then spills).
  bool push(Task* t) noexcept {
    const uint32_t b = bottom_.load(std::memory_order_relaxed);
    if (b - top_.load(std::memory_order_acquire) >= kSize) return false;
    buf_[b % kSize].store(t, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only: removes the newest task, or returns nullptr if there is none.
  Task* pop() noexcept {
    const uint32_t b = bottom_.load(std::memory_order_relaxed);
    if (top_.load(std::memory_order_acquire) == b) return nullptr;  // top never passes bottom
    const uint32_t nb = b - 1;
    if (!stealable_) {
      bottom_.store(nb, std::memory_order_relaxed);
      return buf_[nb % kSize].load(std::memory_order_relaxed);
    }
    (void)bottom_.exchange(nb,
                           std::memory_order_seq_cst);  // xchg: GCC's seq_cst store is mov+mfence
    uint32_t t = top_.load(std::memory_order_seq_cst);
    const int32_t left = static_cast<int32_t>(nb - t);
    if (left < 0) {  // a thief took the last one first
      bottom_.store(b, std::memory_order_relaxed);
      return nullptr;
    }
    Task* task = buf_[nb % kSize].load(std::memory_order_relaxed);
    if (left > 0) return task;
    // The last task: race the thieves for it on top. Empty afterwards either way.
    const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                  std::memory_order_acquire);
    // release (and the acquire above): a thief that reads this bottom also sees what our CAS saw
    // of top. Relaxed left a formal load-buffering case; the instructions are the same on x86.
    bottom_.store(b, std::memory_order_release);
    return won ? task : nullptr;
  }

  // Any thread (a thief, or the owner on its fairness turn): removes the oldest task, or returns
  // nullptr if the queue is empty. Retries a lost race: some other taker made progress.
  Task* pop_oldest() noexcept {
    for (;;) {
      uint32_t t = top_.load(std::memory_order_seq_cst);
      const uint32_t b = bottom_.load(std::memory_order_seq_cst);
      if (static_cast<int32_t>(b - t) <= 0) return nullptr;
      Task* task = buf_[t % kSize].load(std::memory_order_relaxed);
      if (top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
        return task;
      }
    }
  }

  // Thief: takes about half the queue (rounded up, at most max), oldest first, into out. Returns
  // the count.
  uint32_t steal_half(Task** out, uint32_t max) noexcept {
    const uint32_t t = top_.load(std::memory_order_seq_cst);
    const int32_t n = static_cast<int32_t>(bottom_.load(std::memory_order_seq_cst) - t);
    if (n <= 0) return 0;
    uint32_t want = static_cast<uint32_t>(n - n / 2);
    if (want > max) want = max;
    uint32_t got = 0;
    while (got < want) {
      Task* task = pop_oldest();
      if (task == nullptr) break;
      out[got++] = task;
    }
    return got;
  }

  // Owner only: removes the oldest half (for spilling to the global queue) with one CAS: the
  // owner is not popping meanwhile, and a thief's single steal conflicts only through top.
  // Returns how many were written to out (at most kSize / 2).
  uint32_t grab_half(Task** out) noexcept {
    for (;;) {
      uint32_t t = top_.load(std::memory_order_acquire);
      const uint32_t b = bottom_.load(std::memory_order_relaxed);
      const uint32_t n = (b - t) / 2;
      if (n == 0) return 0;
      for (uint32_t i = 0; i < n; ++i) {
        out[i] = buf_[(t + i) % kSize].load(std::memory_order_relaxed);
      }
      if (top_.compare_exchange_strong(t, t + n, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
        return n;
      }
    }
  }

 private:
  alignas(kCacheLine) std::atomic<uint32_t> top_;
  alignas(kCacheLine) std::atomic<uint32_t> bottom_;
  bool stealable_ = true;
  alignas(kCacheLine) std::atomic<Task*> buf_[kSize] = {};
};

}  // namespace chanflow::detail
