// The scheduler's global run queue: FIFO across growth and wrap-around, fair-share pops.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "global_queue.h"  // white-box: src/runtime

namespace {

using chanflow::detail::GlobalQueue;
using chanflow::detail::Task;

// Distinct fake task pointers (never dereferenced: the queue must not touch its tasks).
Task* fake(std::uintptr_t i) { return reinterpret_cast<Task*>((i + 1) * 64); }

std::size_t all(std::size_t queued) { return queued; }

TEST(GlobalQueue, FifoAcrossGrowthAndWrapAround) {
  GlobalQueue q;
  std::uintptr_t pushed = 0;
  std::uintptr_t popped = 0;
  Task* out[100];
  // Interleave pushes and pops so the ring wraps, then grows several times past 1024.
  for (int round = 0; round < 200; ++round) {
    std::vector<Task*> batch;
    for (int i = 0; i < 37; ++i) batch.push_back(fake(pushed++));
    q.push(batch.data(), batch.size());
    const std::size_t n = q.pop(out, round % 5 == 0 ? 60 : 10, all);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], fake(popped++));
    ASSERT_EQ(q.size(), pushed - popped);
  }
  ASSERT_GT(q.size(), 2048u);  // it grew past its initial capacity while wrapped
  for (;;) {
    const std::size_t n = q.pop(out, 100, all);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], fake(popped++));
  }
  EXPECT_EQ(popped, pushed);
  EXPECT_EQ(q.size(), 0u);
}

TEST(GlobalQueue, PopTakesAtMostTheShareAndTheMax) {
  GlobalQueue q;
  std::vector<Task*> ts;
  for (std::uintptr_t i = 0; i < 10; ++i) ts.push_back(fake(i));
  q.push(ts.data(), ts.size());
  Task* out[10];
  EXPECT_EQ(q.pop(out, 10, [](std::size_t queued) { return queued / 2 + 1; }), 6u);
  EXPECT_EQ(q.pop(out, 3, all), 3u);
  EXPECT_EQ(out[0], fake(6));
  EXPECT_EQ(q.pop(out, 10, all), 1u);
  EXPECT_EQ(q.pop(out, 10, all), 0u);
}

}  // namespace
