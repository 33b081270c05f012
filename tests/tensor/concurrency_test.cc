// Kernels run from many threads at once on the same (shared) input tensors: results equal the
// single-threaded ones and inputs never change. Runs under TSan in CI (label `concurrent`).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "chanflow/tensor.h"

namespace cf = chanflow;

TEST(TensorConcurrency, KernelsOnSharedInputsFromManyThreads) {
  const cf::Tensor a = cf::uniform({64, 48}, -1, 1, 11);
  const cf::Tensor b = cf::uniform({48, 32}, -1, 1, 12);
  const cf::Tensor a_copy = a.clone();
  const cf::Tensor want_mm = cf::matmul(a, b);
  const cf::Tensor want_sm = cf::softmax(a, -1);
  const cf::Tensor want_sum = cf::sum(a.transpose(), {1});
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        cf::Tensor mine = a;  // a shared handle, as if received on a channel
        if (!cf::matmul(mine, b).equal_to(want_mm)) ++mismatches;
        if (!cf::softmax(mine, -1).equal_to(want_sm)) ++mismatches;
        if (!cf::sum(mine.transpose(), {1}).equal_to(want_sum)) ++mismatches;
        // Copy on write: writing through a shared handle copies first.
        float* p = mine.data<float>();
        p[0] = static_cast<float>(t * 100 + i);
        if (mine.at<float>({0, 0}) != static_cast<float>(t * 100 + i)) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_TRUE(a.equal_to(a_copy)) << "no thread changed the shared input";
}
