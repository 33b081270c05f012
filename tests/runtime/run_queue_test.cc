// A worker's local run queue (a Chase–Lev deque): newest-first for the owner, oldest-first for
// thieves, across index wrap-around; and, under concurrent stealing, every task taken exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "run_queue.h"  // white-box: src/runtime

namespace {

using chanflow::detail::RunQueue;
using chanflow::detail::Task;

// Distinct fake task pointers (never dereferenced: the queue must not touch its tasks).
Task* fake(std::uintptr_t i) { return reinterpret_cast<Task*>((i + 1) * 64); }
std::uintptr_t index_of(Task* t) { return reinterpret_cast<std::uintptr_t>(t) / 64 - 1; }

// Starting indices: zero, and just below the uint32_t wrap-around.
class RunQueueOrder : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RunQueueOrder, OwnerPopsNewestFirstAndOthersOldestFirst) {
  RunQueue q(GetParam());
  for (std::uintptr_t i = 0; i < 10; ++i) ASSERT_TRUE(q.push(fake(i)));
  EXPECT_EQ(q.pop(), fake(9));
  EXPECT_EQ(q.pop(), fake(8));
  EXPECT_EQ(q.pop_oldest(), fake(0));
  EXPECT_EQ(q.pop_oldest(), fake(1));
  Task* out[8];
  ASSERT_EQ(q.steal_half(out, 8), 3u);  // 6 left: half, rounded up
  EXPECT_EQ(out[0], fake(2));
  EXPECT_EQ(out[1], fake(3));
  EXPECT_EQ(out[2], fake(4));
  ASSERT_EQ(q.steal_half(out, 1), 1u);  // capped by max
  EXPECT_EQ(out[0], fake(5));
  EXPECT_EQ(q.pop(), fake(7));
  EXPECT_EQ(q.pop(), fake(6));
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.pop_oldest(), nullptr);
  EXPECT_EQ(q.steal_half(out, 8), 0u);
  EXPECT_TRUE(q.empty());
}

TEST_P(RunQueueOrder, FullRingRefusesThenSpillsItsOldestHalf) {
  RunQueue q(GetParam());
  for (std::uintptr_t i = 0; i < RunQueue::kSize; ++i) ASSERT_TRUE(q.push(fake(i)));
  EXPECT_FALSE(q.push(fake(RunQueue::kSize)));
  EXPECT_EQ(q.free_slots(), 0u);
  Task* out[RunQueue::kSize / 2];
  ASSERT_EQ(q.grab_half(out), RunQueue::kSize / 2);
  for (std::uintptr_t i = 0; i < RunQueue::kSize / 2; ++i) EXPECT_EQ(out[i], fake(i));
  EXPECT_EQ(q.free_slots(), RunQueue::kSize / 2);
  EXPECT_EQ(q.pop(), fake(RunQueue::kSize - 1));
  EXPECT_EQ(q.pop_oldest(), fake(RunQueue::kSize / 2));
}

TEST_P(RunQueueOrder, SingleOwnerModeKeepsTheSameOrder) {
  RunQueue q(GetParam());
  q.set_stealable(false);
  // 300 pushes in all: the slots wrap. Net one task more per round, popped newest first.
  std::uintptr_t next = 0;
  std::vector<std::uintptr_t> kept;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.push(fake(next++)));
    ASSERT_EQ(q.pop(), fake(next - 1));
    ASSERT_EQ(q.pop(), fake(next - 2));
    kept.push_back(next - 3);
  }
  EXPECT_EQ(q.pop_oldest(), fake(kept.front()));
  for (std::size_t i = kept.size() - 1; i >= 1; --i) ASSERT_EQ(q.pop(), fake(kept[i]));
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(q.empty());
}

INSTANTIATE_TEST_SUITE_P(Start, RunQueueOrder,
                         ::testing::Values(0u, UINT32_MAX - RunQueue::kSize / 2));

// One owner pushes and pops (often down to the last task, where it races the thieves) while
// thieves steal single tasks and batches. Every task must come out exactly once.
void run_contended(int thieves, uint32_t first_index, bool pairs = false) {
  const bool long_run = std::getenv("CHANFLOW_STRESS_LONG") != nullptr;
  const std::uintptr_t total = long_run ? 50'000'000 : 2'000'000;
  RunQueue q(first_index);
  std::vector<std::atomic<uint8_t>> taken(total);
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  std::atomic<uint64_t> bogus{0};  // pointers never pushed (a slot read at the wrong time)
  auto take = [&taken, &bogus, total](Task* t) {
    const std::uintptr_t i = index_of(t);
    if (t == nullptr || i >= total) {
      bogus.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    taken[i].fetch_add(1, std::memory_order_relaxed);
  };

  std::vector<std::thread> pool;
  for (int k = 0; k < thieves; ++k) {
    pool.emplace_back([&, k] {
      Task* out[RunQueue::kSize / 2];
      started.fetch_add(1, std::memory_order_acq_rel);
      while (!done.load(std::memory_order_acquire)) {
        if (k % 2 == 0) {
          if (Task* t = q.pop_oldest()) take(t);
        } else {
          const uint32_t n = q.steal_half(out, RunQueue::kSize / 2);
          for (uint32_t i = 0; i < n; ++i) take(out[i]);
        }
      }
    });
  }
  while (started.load(std::memory_order_acquire) < thieves) std::this_thread::yield();
  std::uintptr_t next = 0;
  uint64_t rng = 88172645463325252ULL;
  Task* spill[RunQueue::kSize / 2];
  while (next < total) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    // Often 0 or 1: the queue stays near empty. In pairs mode, always two pushes then two pops:
    // the owner's second-to-last pop is where a missing fence lets a thief take the same task.
    const int pushes = pairs ? 2 : static_cast<int>(rng % 4);
    for (int i = 0; i < pushes && next < total; ++i) {
      if (!q.push(fake(next))) {
        const uint32_t n = q.grab_half(spill);
        for (uint32_t j = 0; j < n; ++j) take(spill[j]);
        ASSERT_TRUE(q.push(fake(next)));
      }
      ++next;
    }
    const int pops = pairs ? 2 : static_cast<int>((rng >> 8) % 3);
    for (int i = 0; i < pops; ++i) {
      if (Task* t = q.pop()) take(t);
    }
  }
  while (Task* t = q.pop()) take(t);
  done.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  std::uintptr_t missing = 0;
  std::uintptr_t twice = 0;
  for (std::uintptr_t i = 0; i < total; ++i) {
    const uint8_t c = taken[i].load(std::memory_order_relaxed);
    missing += c == 0;
    twice += c > 1;
  }
  EXPECT_EQ(bogus.load(), 0u);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(twice, 0u);
}

TEST(RunQueueContended, OneThiefTakesEachTaskOnce) { run_contended(1, 0); }
TEST(RunQueueContended, ThreeThievesTakeEachTaskOnce) { run_contended(3, 0); }
TEST(RunQueueContended, PushTwoPopTwoAgainstTwoThieves) { run_contended(2, 0, true); }
TEST(RunQueueContended, AcrossIndexWrapAround) { run_contended(2, UINT32_MAX - 1000); }

}  // namespace
