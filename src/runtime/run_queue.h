// run_queue.h — a worker's local run queue: Go's bounded ring, lock-free (private).
//
// Only the owning worker pushes (at the tail); the owner and thieves pop from the head with a CAS.
// A thief grabs half of a victim's queue in one CAS. When the ring is full the owner moves half of
// it to the scheduler's global queue. Elements are atomics so slots can be read racily by a thief
// whose CAS then fails; the tail's release store publishes a pushed task to the acquiring popper.
#pragma once

#include <atomic>
#include <cstdint>

#include "task.h"

namespace chanflow::detail {

class RunQueue {
 public:
  static constexpr uint32_t kSize = 256;

  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

  // Owner only: how many pushes would succeed now (thieves may only make it more).
  uint32_t free_slots() const noexcept {
    return kSize - (tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire));
  }

  // Owner only. Returns false when full (the caller then spills).
  bool push(Task* t) noexcept {
    const uint32_t h = head_.load(std::memory_order_acquire);
    const uint32_t tl = tail_.load(std::memory_order_relaxed);
    if (tl - h >= kSize) return false;
    buf_[tl % kSize].store(t, std::memory_order_relaxed);
    tail_.store(tl + 1, std::memory_order_release);
    return true;
  }

  // Owner only: removes up to half the queue (for spilling to the global queue). Returns how many
  // were written to out (at most kSize / 2).
  uint32_t grab_half(Task** out) noexcept { return grab(out, kSize / 2); }

  // Owner or thief.
  Task* pop() noexcept {
    for (;;) {
      uint32_t h = head_.load(std::memory_order_acquire);
      const uint32_t tl = tail_.load(std::memory_order_acquire);
      if (h == tl) return nullptr;
      Task* t = buf_[h % kSize].load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return t;
      }
    }
  }

  // Thief: takes half (rounded up) of this queue into out. Returns the count.
  uint32_t steal_half(Task** out) noexcept { return grab(out, kSize / 2); }

 private:
  uint32_t grab(Task** out, uint32_t max) noexcept {
    for (;;) {
      uint32_t h = head_.load(std::memory_order_acquire);
      const uint32_t tl = tail_.load(std::memory_order_acquire);
      uint32_t n = tl - h;
      n = n - n / 2;
      if (n == 0) return 0;
      if (n > kSize / 2) continue;  // inconsistent snapshot (head moved): retry
      if (n > max) n = max;
      for (uint32_t i = 0; i < n; ++i) {
        out[i] = buf_[(h + i) % kSize].load(std::memory_order_relaxed);
      }
      if (head_.compare_exchange_weak(h, h + n, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return n;
      }
    }
  }

  alignas(64) std::atomic<uint32_t> head_{0};
  alignas(64) std::atomic<uint32_t> tail_{0};
  alignas(64) std::atomic<Task*> buf_[kSize] = {};
};

}  // namespace chanflow::detail
