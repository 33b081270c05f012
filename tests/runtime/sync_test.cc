// WaitGroup, Group (error group) and Mutex.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_util.h"

namespace {

using WaitGroup = WorkersFixture;
using Group = WorkersFixture;
using Mutex = WorkersFixture;

TEST_P(WaitGroup, WaitsForAll) {
  cf::WaitGroup wg;
  std::atomic<int> done{0};
  for (int i = 0; i < 500; ++i) {
    wg.add();
    cf::go([&] {
      cf::yield();
      done++;
      wg.done();
    });
  }
  wg.wait();
  EXPECT_EQ(done.load(), 500);
  EXPECT_EQ(wg.count(), 0);
  wg.wait();  // zero: returns at once
}

TEST_P(WaitGroup, ManyWaitersGreenAndOs) {
  cf::WaitGroup wg;
  wg.add();
  cf::WaitGroup waiters;
  std::atomic<int> released{0};
  for (int i = 0; i < 10; ++i) {
    waiters.add();
    cf::go([&] {
      wg.wait();
      released++;
      waiters.done();
    });
  }
  std::thread os([&] {
    wg.wait();
    released++;
  });
  wg.done();
  waiters.wait();
  os.join();
  EXPECT_EQ(released.load(), 11);
}

// The waiter may free the group as soon as wait() returns, while the done() that released it is
// still returning (the executor frees a run's state so): under ASan a done() that touched the
// group after releasing the waiter is a heap-use-after-free. The waiter is a green thread and an
// OS thread in turn.
TEST_P(WaitGroup, MayBeDestroyedAsSoonAsWaitReturns) {
  for (int i = 0; i < 2000; ++i) {
    auto* wg = new cf::WaitGroup();
    wg->add(1);
    cf::go([wg] { wg->done(); });
    if (i % 2 == 0) {
      wg->wait();
      delete wg;
    } else {
      cf::WaitGroup outer;
      outer.add(1);
      cf::go([wg, &outer] {
        wg->wait();
        delete wg;
        outer.done();
      });
      outer.wait();
    }
  }
}

TEST_P(WaitGroup, NegativeCounterIsAnError) {
  cf::WaitGroup wg;
  EXPECT_THROW(wg.done(), cf::Error);
  wg.add(2);
  EXPECT_THROW(wg.add(-3), cf::Error);
  EXPECT_EQ(wg.count(), 2);
  wg.add(-2);
}

TEST_P(Group, FirstExceptionWinsAndCancelsContext) {
  cf::Group g;
  std::atomic<int> saw_cancel{0};
  for (int i = 0; i < 8; ++i) {
    g.go("waiter", [&](cf::Context ctx) {
      ctx.done().recv();  // until the failure cancels the group
      saw_cancel++;
    });
  }
  g.go("failer", [] { throw std::runtime_error("part 3 failed"); });
  try {
    g.wait();
    FAIL() << "wait() must rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 3 failed");
  }
  EXPECT_EQ(saw_cancel.load(), 8);
  EXPECT_TRUE(g.context().err() != nullptr);
}

TEST_P(Group, SuccessCancelsContextOnWait) {
  cf::Group g(cf::with_cancel(cf::background()));
  std::atomic<int> sum{0};
  for (int i = 1; i <= 10; ++i) g.go([&, i] { sum += i; });
  g.wait();
  EXPECT_EQ(sum.load(), 55);
  EXPECT_TRUE(g.context().done().closed());
}

TEST_P(Group, ParentCancellationReachesTasks) {
  cf::Context parent = cf::with_cancel(cf::background());
  cf::Group g(parent);
  g.go([](cf::Context ctx) {
    ctx.done().recv();
    ctx.throw_if_done();
  });
  parent.cancel();
  EXPECT_THROW(g.wait(), cf::CanceledError);
}

TEST_P(Group, RunsOnItsOwnScheduler) {
  // The group's green threads start on the scheduler it was given, not on the default one (the
  // fixture makes sched() the default for this OS thread).
  cf::Scheduler other({.workers = 1});
  cf::Group g(other);
  auto release = cf::make_chan<int>();
  auto started = cf::make_chan<int>();
  g.go("on-other", [&] {
    started.send(1);
    release.recv();
  });
  started.recv();
  EXPECT_EQ(other.live(), 1u);
  EXPECT_EQ(sched().live(), 0u);
  release.close();
  // wait() returns once the green thread's body is done; it may still be finishing on `other`
  // (live() counts it until then), so no live() check here.
  g.wait();
}

TEST_P(Group, AnErrorHandlerGetsEveryFailureAndTheGroupKeepsNone) {
  std::mutex mu;
  std::vector<std::string> seen;
  cf::WaitGroup handled;
  handled.add(3);
  cf::Group g(sched(), cf::background(), [&](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& err) {
      const std::lock_guard lock(mu);
      seen.emplace_back(err.what());
    }
    handled.done();
  });
  auto release = cf::make_chan<int>();
  std::atomic<bool> waiter_canceled{false};
  g.go("waiter", [&](cf::Context ctx) {
    // Released by the test, not by a failure: the handler did not cancel the context.
    (void)cf::select(cf::on_recv(release, [](auto) {}),
                     cf::on_recv(ctx.done(), [&](auto) { waiter_canceled = true; }));
  });
  g.go("failer 1", [] { throw std::runtime_error("one"); });
  g.go("failer 2", [] { throw std::runtime_error("two"); });
  g.fail(std::make_exception_ptr(std::runtime_error("from outside")));
  handled.wait();
  EXPECT_EQ(g.context().err(), nullptr);
  release.close();
  EXPECT_NO_THROW(g.wait());
  EXPECT_FALSE(waiter_canceled.load());
  EXPECT_NE(g.context().err(), nullptr);  // wait() still cancels it
  const std::lock_guard lock(mu);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"from outside", "one", "two"}));
}

TEST_P(Group, FailFromOutsideIsTheFirstErrorAndCancels) {
  cf::Group g(sched());
  std::atomic<bool> saw_cancel{false};
  g.go([&](cf::Context ctx) {
    ctx.done().recv();
    saw_cancel = true;
    throw std::runtime_error("later");
  });
  g.fail(std::make_exception_ptr(std::logic_error("the caller's part failed")));
  EXPECT_THROW(g.wait(), std::logic_error);
  EXPECT_TRUE(saw_cancel.load());
}

TEST(GroupTeardown, GreenThreadsUnwoundAtSchedulerTeardownAreNotFailures) {
  std::atomic<int> errors{0};
  auto orphan = cf::make_chan<int>();
  std::optional<cf::Group> g;
  {
    cf::Scheduler s({.workers = 2});
    g.emplace(s, cf::background(), [&](const std::exception_ptr&) { errors++; });
    g->go("orphan-receiver", [orphan] { orphan.recv(); });
    wait_until([&] { return parked_receivers(orphan.base()) == 1; });
  }  // unwinds the parked receiver
  EXPECT_EQ(parked_receivers(orphan.base()), 0u);
  g->wait();  // the unwound green thread counted as done
  EXPECT_EQ(errors.load(), 0);
}

TEST_P(Mutex, ProtectsACounter) {
  cf::Mutex mu;
  int64_t counter = 0;
  constexpr int kThreads = 16;
  constexpr int kIters = 2000;
  cf::WaitGroup wg;
  for (int t = 0; t < kThreads; ++t) {
    wg.add();
    cf::go("incrementer", [&] {
      for (int i = 0; i < kIters; ++i) {
        std::lock_guard<cf::Mutex> g(mu);
        ++counter;
        if (i % 64 == 0) cf::yield();  // hold it across a switch sometimes
      }
      wg.done();
    });
  }
  for (int i = 0; i < kIters; ++i) {
    std::lock_guard<cf::Mutex> g(mu);  // an OS thread contends too
    ++counter;
  }
  wg.wait();
  EXPECT_EQ(counter, int64_t{kThreads + 1} * kIters);
}

TEST_P(Mutex, TryLockAndHandOff) {
  cf::Mutex mu;
  EXPECT_TRUE(mu.try_lock());
  EXPECT_FALSE(mu.try_lock());
  auto got = cf::make_chan<int>();
  cf::go([&, got] {
    {
      std::unique_lock<cf::Mutex> g(mu);  // parks until unlock hands it over
    }
    got.send(1);
  });
  cf::sleep_for(std::chrono::milliseconds(2));  // give it a chance to (wrongly) get in
  EXPECT_EQ(got.try_recv(), std::nullopt);
  mu.unlock();
  EXPECT_EQ(got.recv(), 1);
  EXPECT_TRUE(mu.try_lock());
  mu.unlock();
}

INSTANTIATE_TEST_SUITE_P(Workers, WaitGroup, CHANFLOW_WORKER_COUNTS);
INSTANTIATE_TEST_SUITE_P(Workers, Group, CHANFLOW_WORKER_COUNTS);
INSTANTIATE_TEST_SUITE_P(Workers, Mutex, CHANFLOW_WORKER_COUNTS);

}  // namespace
