// The tensor buffer cache: reuse within a size class, the limit, release, and buffers handed
// between threads (runs under TSan in CI).
#include "chanflow/tensor/buffer_cache.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;

namespace {

// Restores the cache's limit (the process default) when a test ends.
class BufferCache : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = cf::tensor_cache_stats().limit;
    cf::release_cached_tensor_memory();
    cf::set_tensor_cache_limit(int64_t{64} << 20);
  }
  void TearDown() override {
    cf::release_cached_tensor_memory();
    cf::set_tensor_cache_limit(saved_);
  }
  int64_t saved_ = 0;
};

const void* data_of(const cf::Tensor& t) { return t->dl_tensor().data; }

}  // namespace

TEST_F(BufferCache, SameClassReusesTheFreedBuffer) {
  const void* first = nullptr;
  {
    cf::Tensor a = cf::Tensor::empty({1250}, cf::DType::kFloat32);  // 5000 bytes: class 5120
    first = data_of(a);
  }
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 5120);
  const cf::TensorCacheStats before = cf::tensor_cache_stats();
  cf::Tensor b = cf::Tensor::empty({1275}, cf::DType::kFloat32);  // 5100 bytes: the same class
  EXPECT_EQ(data_of(b), first);
  const cf::TensorCacheStats after = cf::tensor_cache_stats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.cached_bytes, 0);
}

TEST_F(BufferCache, AnotherClassDoesNotTakeIt) {
  { cf::Tensor a = cf::Tensor::empty({1250}, cf::DType::kFloat32); }  // class 5120
  const cf::TensorCacheStats before = cf::tensor_cache_stats();
  cf::Tensor b = cf::Tensor::empty({1500}, cf::DType::kFloat32);  // 6000 bytes: class 6144
  const cf::TensorCacheStats after = cf::tensor_cache_stats();
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.cached_bytes, 5120);
}

TEST_F(BufferCache, SmallAndHugeBuffersBypassIt) {
  const cf::TensorCacheStats before = cf::tensor_cache_stats();
  { cf::Tensor small = cf::Tensor::empty({1024}, cf::DType::kFloat32); }            // 4 KiB: malloc
  { cf::Tensor big = cf::Tensor::empty({int64_t{9} << 20}, cf::DType::kFloat32); }  // 36 MiB
  const cf::TensorCacheStats after = cf::tensor_cache_stats();
  EXPECT_EQ(after.hits + after.misses, before.hits + before.misses);
  EXPECT_EQ(after.cached_bytes, 0);
}

TEST_F(BufferCache, ReusedMemoryIsNotAssumedZero) {
  { cf::Tensor a = cf::Tensor::full({4096}, 7.0, cf::DType::kFloat32); }
  cf::Tensor z = cf::Tensor::zeros({4096}, cf::DType::kFloat32);
  const float* p = z.data<float>();
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(p[i], 0.0f) << "element " << i;
}

TEST_F(BufferCache, LimitBoundsTheIdleBytes) {
  cf::set_tensor_cache_limit(3 * 8192);
  {
    std::vector<cf::Tensor> held;
    for (int i = 0; i < 8; ++i) held.push_back(cf::Tensor::empty({2048}, cf::DType::kFloat32));
  }  // eight 8 KiB buffers freed; three fit
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 3 * 8192);
  cf::set_tensor_cache_limit(8192);  // shrinking frees the surplus at once
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 8192);
  cf::set_tensor_cache_limit(0);
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 0);
  { cf::Tensor a = cf::Tensor::empty({2048}, cf::DType::kFloat32); }
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 0);
}

TEST_F(BufferCache, ReleaseFreesEverythingIdle) {
  { cf::Tensor a = cf::Tensor::empty({100000}, cf::DType::kFloat32); }
  EXPECT_GT(cf::tensor_cache_stats().cached_bytes, 0);
  cf::release_cached_tensor_memory();
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 0);
}

TEST_F(BufferCache, NegativeLimitIsAnError) {
  EXPECT_THROW(cf::set_tensor_cache_limit(-1), cf::Error);
}

// Buffers freed on one thread and reused on another keep their contents private: each thread
// fills its tensors with its own pattern and checks it before dropping them.
TEST_F(BufferCache, ThreadsShareTheCacheSafely) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &bad] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t n = 1100 + (r * 37 + t * 11) % 3000;  // several classes
        const auto value = static_cast<float>(t * 100000 + r);
        cf::Tensor x = cf::Tensor::full({n}, value, cf::DType::kFloat32);
        const float* p = x.data<float>();
        for (int64_t i = 0; i < n; ++i) bad[static_cast<size_t>(t)] += p[i] != value;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[static_cast<size_t>(t)], 0) << "thread " << t;
  EXPECT_LE(cf::tensor_cache_stats().cached_bytes, int64_t{64} << 20);
}

TEST_F(BufferCache, EachThreadReusesItsOwnBuffersFirst) {
  // A buffer freed on one thread goes to that thread's cache: the next allocation there gets it
  // back (warm in that CPU's caches), another thread's allocation does not take it.
  const void* mine = nullptr;
  {
    cf::Tensor a = cf::Tensor::empty({2048}, cf::DType::kFloat32);  // 8 KiB
    mine = data_of(a);
  }
  const void* theirs = nullptr;
  std::thread other([&] {
    cf::Tensor b = cf::Tensor::empty({2048}, cf::DType::kFloat32);
    theirs = data_of(b);
  });
  other.join();
  EXPECT_NE(theirs, mine);
  cf::Tensor again = cf::Tensor::empty({2048}, cf::DType::kFloat32);
  EXPECT_EQ(data_of(again), mine);
}

TEST_F(BufferCache, AnExitingThreadHandsItsBuffersToTheOthers) {
  const void* freed_there = nullptr;
  std::thread other([&] {
    cf::Tensor b = cf::Tensor::empty({4096}, cf::DType::kFloat32);  // 16 KiB
    freed_there = data_of(b);
  });
  other.join();  // its cache went to the shared lists when it exited
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 16384);
  const cf::TensorCacheStats before = cf::tensor_cache_stats();
  cf::Tensor here = cf::Tensor::empty({4096}, cf::DType::kFloat32);
  EXPECT_EQ(data_of(here), freed_there);
  EXPECT_EQ(cf::tensor_cache_stats().hits, before.hits + 1);
}

TEST_F(BufferCache, ReleaseAndLimitReachOtherThreadsCaches) {
  // A thread keeps idle buffers in its own cache; release and a lower limit free those too.
  std::mutex mu;
  std::condition_variable cv;
  bool filled = false, done = false;
  std::thread other([&] {
    { cf::Tensor b = cf::Tensor::empty({2048}, cf::DType::kFloat32); }  // 8 KiB, kept there
    std::unique_lock<std::mutex> lock(mu);
    filled = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return filled; });
  }
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 8192);
  cf::release_cached_tensor_memory();
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  other.join();
  EXPECT_EQ(cf::tensor_cache_stats().cached_bytes, 0);
}
