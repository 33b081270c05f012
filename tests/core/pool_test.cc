#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {
std::atomic<int> g_alive{0};
class MsgObj : public cf::Object {
 public:
  explicit MsgObj(int64_t v, bool fail = false) : value(v) {
    if (fail) throw std::invalid_argument("bad message");
    g_alive.fetch_add(1);
  }
  ~MsgObj() { g_alive.fetch_sub(1); }
  int64_t value;
  static constexpr const char* kTypeKey = "test.Msg";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(MsgObj, cf::Object);
};
}  // namespace

TEST(ObjectPool, ReleasedMemoryIsReused) {
  cf::ObjectPool<MsgObj> pool;
  const MsgObj* first_address = nullptr;
  {
    auto m = pool.make(1);
    first_address = m.get();
    EXPECT_TRUE(m->is_instance<MsgObj>());
    EXPECT_EQ(pool.cached(), 0u);
  }
  EXPECT_EQ(pool.cached(), 1u) << "the deleter returned the chunk to the pool";
  EXPECT_EQ(g_alive.load(), 0) << "and ran the destructor";
  auto again = pool.make(2);
  EXPECT_EQ(again.get(), first_address) << "the next make reuses it";
  EXPECT_EQ(again->value, 2);
  EXPECT_EQ(pool.cached(), 0u);
}

TEST(ObjectPool, ThrowingConstructorReturnsTheChunk) {
  cf::ObjectPool<MsgObj> pool;
  EXPECT_THROW((void)pool.make(1, true), std::invalid_argument);
  EXPECT_EQ(pool.cached(), 1u);
  EXPECT_EQ(g_alive.load(), 0);
}

TEST(ObjectPool, ObjectsMayOutliveTheirPool) {
  cf::ObjectPtr<MsgObj> survivor;
  {
    cf::ObjectPool<MsgObj> pool;
    survivor = pool.make(7);
    auto cached = pool.make(8);
  }
  EXPECT_EQ(survivor->value, 7);
  survivor.reset();  // frees its memory directly (ASan checks use-after-free and leaks)
  EXPECT_EQ(g_alive.load(), 0);
}

TEST(ObjectPool, ConcurrentMakeAndReleaseAcrossThreads) {
  cf::ObjectPool<MsgObj> pool(256);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  std::atomic<int64_t> sum{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<cf::ObjectPtr<MsgObj>> held;
      for (int i = 0; i < kPerThread; ++i) {
        held.push_back(pool.make(t * kPerThread + i));
        if (held.size() > 16) {
          sum.fetch_add(held.front()->value);
          held.erase(held.begin());  // released on this thread, allocated maybe elsewhere
        }
      }
      for (auto& h : held) sum.fetch_add(h->value);
    });
  }
  for (auto& th : threads) th.join();
  const int64_t n = static_cast<int64_t>(kThreads) * kPerThread;
  EXPECT_EQ(sum.load(), n * (n - 1) / 2) << "every object seen exactly once";
  EXPECT_EQ(g_alive.load(), 0);
  EXPECT_LE(pool.cached(), 256u + 8u);
}
