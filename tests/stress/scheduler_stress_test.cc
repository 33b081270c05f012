// Scheduler stress: spawn trees (over channels and WaitGroups, some spawning "for others"),
// fan-outs that overflow a worker's local queue while thieves steal, yield loops waiting on flags
// set by green threads queued before, after or among them, and spawns from OS threads racing all
// of that — on 1, 2, 4 and 8 workers. Every green thread must run exactly once and every program
// must end. Short by default; CHANFLOW_STRESS_LONG=1 repeats each case 20 times. Written by a
// review of the newest-first local queue (162dc7a), which it found a livelock with.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "chanflow/runtime.h"

namespace cf = chanflow;

namespace {

std::atomic<int> g_progress{-1};  // test-specific progress, printed by the watchdog
std::atomic<int> g_phase{-1};

// Repetitions of each case: 1, or 20 with CHANFLOW_STRESS_LONG set.
int reps() { return std::getenv("CHANFLOW_STRESS_LONG") != nullptr ? 20 : 1; }

// Sanitizer builds run smaller shapes (CHANFLOW_TEST_SHORT=1, set by tests/stress/CMakeLists.txt):
// under TSan every green thread is a TSan fiber, milliseconds to create.
bool short_run() { return std::getenv("CHANFLOW_TEST_SHORT") != nullptr; }
int tree_depth(int full) { return short_run() ? full - 1 : full; }

// Aborts the process, naming the case and its progress, if a case does not finish in time: a hang
// is reported as what it is rather than as a CTest timeout.
class Watchdog {
 public:
  explicit Watchdog(const char* what, int seconds = 600) : what_(what) {
    th_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        std::fprintf(stderr, "WATCHDOG: %s did not finish in %d s (phase %d, progress %d)\n", what_,
                     seconds, g_phase.load(), g_progress.load());
        std::fflush(stderr);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    th_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  const char* what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread th_;
};

struct Counts {
  explicit Counts(std::size_t n) : ran(n) {}
  std::vector<std::atomic<uint32_t>> ran;
  void check(const char* what) const {
    std::size_t missing = 0, twice = 0;
    for (const auto& r : ran) {
      const uint32_t c = r.load();
      missing += c == 0;
      twice += c > 1;
    }
    EXPECT_EQ(missing, 0u) << what;
    EXPECT_EQ(twice, 0u) << what;
  }
};

std::size_t tree_size(int fanout, int depth) {
  std::size_t n = 0, level = 1;
  for (int d = 0; d <= depth; ++d) {
    n += level;
    level *= static_cast<std::size_t>(fanout);
  }
  return n;
}

// Skynet-like: node `id` at `depth` spawns `fanout` children (ids id*fanout+1..), collects their
// sums over an unbuffered channel (mode 0) or waits on a WaitGroup (mode 1). Leaves optionally
// yield; internal nodes optionally spawn "for others" (GoMachine tickets' path).
struct TreeCfg {
  int fanout;
  int depth;
  int mode;
  int leaf_yields;
  bool for_others;
  Counts* counts;
};

// cf::go, or Scheduler::go_for_others on the caller's scheduler when `others`.
template <class F>
void spawn(bool others, F&& fn) {
  if (others) {
    cf::current_scheduler()->go_for_others(std::forward<F>(fn));
  } else {
    cf::go(std::forward<F>(fn));
  }
}

uint64_t tree_node(const TreeCfg& c, uint64_t id, int depth) {
  c.counts->ran[id].fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) {
    for (int k = 0; k < c.leaf_yields; ++k) cf::yield();
    return id;
  }
  const bool others = c.for_others && (id % 2 == 0);
  uint64_t sum = id;
  if (c.mode == 0) {
    auto ch = cf::make_chan<uint64_t>();
    for (int i = 0; i < c.fanout; ++i) {
      const uint64_t child = id * static_cast<uint64_t>(c.fanout) + 1 + static_cast<uint64_t>(i);
      spawn(others, [&c, ch, child, depth] { ch.send(tree_node(c, child, depth - 1)); });
    }
    for (int i = 0; i < c.fanout; ++i) sum += *ch.recv();
  } else {
    cf::WaitGroup wg;
    std::vector<uint64_t> sums(static_cast<std::size_t>(c.fanout));
    wg.add(c.fanout);
    for (int i = 0; i < c.fanout; ++i) {
      const uint64_t child = id * static_cast<uint64_t>(c.fanout) + 1 + static_cast<uint64_t>(i);
      spawn(others, [&c, &wg, &sums, i, child, depth] {
        sums[static_cast<std::size_t>(i)] = tree_node(c, child, depth - 1);
        wg.done();
      });
    }
    wg.wait();
    for (uint64_t s : sums) sum += s;
  }
  return sum;
}

class SchedulerStress : public ::testing::TestWithParam<int> {
 protected:
  int workers() const { return GetParam(); }
};

void run_tree(int workers, int fanout, int depth, int mode, int leaf_yields, bool for_others) {
  const std::size_t n = tree_size(fanout, depth);
  Counts counts(n);
  TreeCfg cfg{fanout, depth, mode, leaf_yields, for_others, &counts};
  uint64_t expect = 0;
  for (uint64_t i = 0; i < n; ++i) expect += i;
  auto result = cf::make_chan<uint64_t>(1);
  {
    cf::Scheduler s({.workers = workers});
    s.go([&cfg, result] { result.send(tree_node(cfg, 0, cfg.depth)); });
    EXPECT_EQ(*result.recv(), expect);
  }
  counts.check("tree");
}

TEST_P(SchedulerStress, SkynetTreeChannel) {
  Watchdog wd("SkynetTreeChannel");
  for (int r = 0; r < reps(); ++r) run_tree(workers(), 10, tree_depth(4), 0, 0, false);
}

TEST_P(SchedulerStress, SkynetTreeWaitGroupYieldingLeaves) {
  Watchdog wd("SkynetTreeWaitGroupYieldingLeaves");
  for (int r = 0; r < reps(); ++r) run_tree(workers(), 8, tree_depth(4), 1, 3, false);
}

TEST_P(SchedulerStress, SkynetTreeGoForOthers) {
  Watchdog wd("SkynetTreeGoForOthers");
  for (int r = 0; r < reps(); ++r) {
    run_tree(workers(), 10, tree_depth(4), 0, 1, true);
    run_tree(workers(), 6, tree_depth(5), 1, 0, true);
  }
}

// Wide fan-out: more children at once than the local ring holds (256): the owner spills the oldest
// half (grab_half) while thieves steal single tasks; children yield (global queue) and park.
TEST_P(SchedulerStress, WideFanOutOverflowsTheRing) {
  Watchdog wd("WideFanOutOverflowsTheRing");
  constexpr int kParents = 4;
  const int kChildren = short_run() ? 300 : 1500;  // 300: still more than the ring holds
  for (int r = 0; r < reps(); ++r) {
    Counts counts(static_cast<std::size_t>(kParents * kChildren));
    {
      cf::Scheduler s({.workers = workers()});
      cf::WaitGroup all;
      all.add(kParents);
      for (int p = 0; p < kParents; ++p) {
        s.go([&counts, &all, p, kChildren] {
          cf::WaitGroup wg;
          wg.add(kChildren);
          auto gate = cf::make_chan<int>(kChildren);
          for (int c = 0; c < kChildren; ++c) {
            cf::go([&counts, &wg, gate, p, c, kChildren] {
              counts.ran[static_cast<std::size_t>(p * kChildren + c)].fetch_add(1);
              if (c % 2 == 0) cf::yield();
              if (c % 5 == 0) gate.send(c);
              wg.done();
            });
          }
          wg.wait();
          all.done();
        });
      }
      all.wait();
    }
    counts.check("wide");
  }
}

// Yield loops that wait on a flag set by another green thread: a chain where green thread i waits
// (yielding) for flag i-1 and then sets flag i. Spawned so that the waiters are queued before,
// after and interleaved with the setters.
TEST_P(SchedulerStress, YieldChainWaitingOnFlags) {
  Watchdog wd("YieldChainWaitingOnFlags");
  constexpr int kN = 64;
  for (int order = 0; order < 3; ++order) {
    g_phase.store(order);
    g_progress.store(0);
    std::vector<std::atomic<bool>> flag(kN);
    Counts counts(kN);
    {
      cf::Scheduler s({.workers = workers()});
      auto done = cf::make_chan<int>(kN);
      s.go([&flag, &counts, done, order] {
        for (int k = 0; k < kN; ++k) {
          const int i = order == 0 ? k : order == 1 ? kN - 1 - k : (k * 37) % kN;
          cf::go([&flag, &counts, done, i] {
            counts.ran[static_cast<std::size_t>(i)].fetch_add(1);
            if (i > 0) {
              while (!flag[static_cast<std::size_t>(i - 1)].load()) cf::yield();
            }
            flag[static_cast<std::size_t>(i)].store(true);
            g_progress++;
            done.send(i);
          });
        }
      });
      for (int k = 0; k < kN; ++k) done.recv();
    }
    counts.check("yield chain");
  }
}

// Yielders waiting for a flag that a green thread sets only after a run of spawns and parks
// (so the setter is deep in a local ring, behind newer work).
TEST_P(SchedulerStress, YieldersWaitForASetterBehindNewerWork) {
  Watchdog wd("YieldersWaitForASetterBehindNewerWork");
  constexpr int kYielders = 8;
  for (int r = 0; r < reps(); ++r) {
    std::atomic<bool> go_on{false};
    std::atomic<int> yielders_done{0};
    Counts counts(200);
    {
      cf::Scheduler s({.workers = workers()});
      s.go([&] {
        for (int y = 0; y < kYielders; ++y) {
          cf::go([&] {
            while (!go_on.load()) cf::yield();
            yielders_done++;
          });
        }
        cf::go([&] { go_on.store(true); });  // the setter
        // Newer work on top of the setter.
        cf::WaitGroup wg;
        wg.add(200);
        for (int i = 0; i < 200; ++i) {
          cf::go([&counts, &wg, i] {
            counts.ran[static_cast<std::size_t>(i)].fetch_add(1);
            cf::yield();
            wg.done();
          });
        }
        wg.wait();
      });
    }
    EXPECT_EQ(yielders_done.load(), kYielders);
    counts.check("behind newer work");
  }
}

// Spawns from several OS threads (global queue) racing green spawn trees and yields.
TEST_P(SchedulerStress, OsThreadSpawnsRaceGreenTrees) {
  Watchdog wd("OsThreadSpawnsRaceGreenTrees");
  constexpr int kThreads = 3;
  const int kPerThread = short_run() ? 300 : 2000;
  Counts counts(static_cast<std::size_t>(kThreads * kPerThread));
  const int depth = tree_depth(4);
  const std::size_t tn = tree_size(6, depth);
  Counts tcounts(tn);
  TreeCfg cfg{6, depth, 0, 1, false, &tcounts};
  {
    cf::Scheduler s({.workers = workers()});
    auto result = cf::make_chan<uint64_t>(1);
    s.go([&cfg, result] { result.send(tree_node(cfg, 0, cfg.depth)); });
    std::vector<std::thread> ths;
    for (int t = 0; t < kThreads; ++t) {
      ths.emplace_back([&s, &counts, t, kPerThread] {
        for (int i = 0; i < kPerThread; ++i) {
          s.go([&counts, t, i, kPerThread] {
            counts.ran[static_cast<std::size_t>(t * kPerThread + i)].fetch_add(1);
            if (i % 3 == 0) cf::yield();
          });
        }
      });
    }
    for (auto& th : ths) th.join();
    result.recv();
  }
  counts.check("os spawns");
  tcounts.check("tree beside os spawns");
}

INSTANTIATE_TEST_SUITE_P(Workers, SchedulerStress, ::testing::Values(1, 2, 4, 8));

}  // namespace
