// Work sharing (work_sharing.h): ScopedParkCallback on every kind of park, its nesting and its
// absence on OS threads; Scheduler::go_for_others' placement; current_scheduler and
// scheduler_for_go.
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/runtime/work_sharing.h"
#include "runtime_test_util.h"

namespace {

using WorkSharing = WorkersFixture;

// Generous: only a broken implementation gets near it (then the test fails instead of hanging).
constexpr auto kPatience = std::chrono::seconds(20);

// Waits, yielding, until pred() holds or kPatience passed; whether it holds.
template <class P>
bool wait_bounded(P pred) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    cf::yield();
  }
  return true;
}

// What the callbacks of one test saw. `calls` is read by other green threads (the releaser);
// the rest only by the parking green thread itself.
struct Seen {
  std::atomic<int> calls{0};
  std::string expect_name;
  bool foreign_thread = false;  // a call on another green thread than the parking one
};

void count_park(void* arg) {
  auto* seen = static_cast<Seen*>(arg);
  if (cf::current_green_thread_name() != seen->expect_name) seen->foreign_thread = true;
  seen->calls.fetch_add(1, std::memory_order_release);
}

// Runs block() on a green thread named "parker" under a ScopedParkCallback, while another green
// thread waits for the callback's first call and then runs release() (which lets block() return).
// Returns how many calls block() caused; -1 if the parker saw a call that was not on it.
int calls_while(const std::function<void()>& block, const std::function<void()>& release) {
  Seen seen;
  seen.expect_name = "parker";
  auto finished = cf::make_chan<int>(2);
  cf::go("parker", [&, finished]() mutable {
    {
      cf::ScopedParkCallback on_park(&count_park, &seen);
      block();
    }
    finished.send(seen.foreign_thread ? -1 : seen.calls.load(std::memory_order_acquire));
  });
  cf::go("releaser", [&, finished]() mutable {
    // Without the callback the parker stays parked until kPatience: release it anyway, so the
    // test reports 0 calls instead of hanging.
    wait_bounded([&] { return seen.calls.load(std::memory_order_acquire) > 0; });
    release();
    finished.send(0);
  });
  int result = 0;
  for (int i = 0; i < 2; ++i) result += *finished.recv();
  return result;
}

TEST_P(WorkSharing, CallbackRunsWhenAChannelReceiveParks) {
  auto ch = cf::make_chan<int>();
  std::optional<int> got;
  EXPECT_EQ(calls_while([&] { got = ch.recv(); }, [&] { ch.send(7); }), 1);
  EXPECT_EQ(got, 7);
}

TEST_P(WorkSharing, CallbackRunsWhenAChannelSendParks) {
  auto ch = cf::make_chan<int>();
  std::optional<int> got;
  EXPECT_EQ(calls_while([&] { ch.send(7); }, [&] { got = ch.recv(); }), 1);
  EXPECT_EQ(got, 7);
}

TEST_P(WorkSharing, CallbackRunsWhenASelectParks) {
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  std::optional<int> got;
  EXPECT_EQ(calls_while(
                [&] {
                  cf::select(cf::on_recv(a, [&](std::optional<int> v) { got = v; }),
                             cf::on_recv(b, [&](std::optional<int> v) { got = v; }));
                },
                [&] { b.send(9); }),
            1);
  EXPECT_EQ(got, 9);
}

TEST_P(WorkSharing, CallbackRunsWhenAMutexLockParks) {
  cf::Mutex mu;
  mu.lock();  // held by the test's OS thread, released by the releaser (not owner-bound, as Go's)
  EXPECT_EQ(calls_while([&] { mu.lock(); }, [&] { mu.unlock(); }), 1);
  mu.unlock();  // the parker's
}

TEST_P(WorkSharing, CallbackRunsWhenAWaitGroupWaitParks) {
  cf::WaitGroup wg;
  wg.add(1);
  EXPECT_EQ(calls_while([&] { wg.wait(); }, [&] { wg.done(); }), 1);
}

TEST_P(WorkSharing, CallbackRunsWhenSleepingAndOnATimer) {
  // Both end by themselves: the releaser has nothing to do.
  EXPECT_EQ(calls_while([] { cf::sleep_for(std::chrono::milliseconds(1)); }, [] {}), 1);
  // The receive parks only if it comes before the timer fires: 200 ms leaves room for a worker
  // that waits for a core on a loaded host (1 ms did not).
  EXPECT_EQ(calls_while([] { (void)cf::after(std::chrono::milliseconds(200)).recv(); }, [] {}), 1);
}

TEST_P(WorkSharing, NoCallbackWhenNothingParks) {
  auto result = cf::make_chan<int>(1);
  cf::go("parker", [result]() mutable {
    Seen seen;
    seen.expect_name = "parker";
    auto ch = cf::make_chan<int>(1);
    cf::Mutex mu;
    cf::WaitGroup wg;
    {
      cf::ScopedParkCallback on_park(&count_park, &seen);
      ch.send(1);  // a free slot
      (void)ch.recv();
      mu.lock();  // uncontended
      mu.unlock();
      wg.wait();    // count 0
      cf::yield();  // stays runnable: not a park
    }
    result.send(seen.calls.load());
  });
  EXPECT_EQ(*result.recv(), 0);
}

// Parks once on a fresh channel: a helper sends once the caller is parked on it (white-box).
void park_once() {
  auto ch = cf::make_chan<int>();
  cf::go([ch]() mutable {
    if (wait_bounded([&] { return parked_receivers(ch.base()) == 1; })) ch.send(1);
  });
  (void)ch.recv();
}

struct Order {
  std::string* log;
  char mark;
};

void log_mark(void* arg) {
  auto* o = static_cast<Order*>(arg);
  o->log->push_back(o->mark);
}

TEST_P(WorkSharing, NestedCallbacksRunInnermostFirstAndUnwindWithTheirScopes) {
  auto result = cf::make_chan<std::string>(1);
  cf::go([result]() mutable {
    std::string log;
    Order outer{&log, 'o'};
    Order inner{&log, 'i'};
    {
      cf::ScopedParkCallback a(&log_mark, &outer);
      {
        cf::ScopedParkCallback b(&log_mark, &inner);
        park_once();
        log += '|';
      }
      park_once();  // the inner one is gone
      log += '|';
    }
    park_once();  // none left
    log += '|';
    result.send(log);
  });
  EXPECT_EQ(*result.recv(), "io|o||");
}

TEST_P(WorkSharing, CallbacksBelongToTheirGreenThread) {
  // A callback of one green thread is not called when another green thread parks.
  Seen seen;
  seen.expect_name = "owner";
  auto owner_done = cf::make_chan<int>(1);
  auto go_on = cf::make_chan<int>();
  cf::go("owner", [&, owner_done, go_on]() mutable {
    cf::ScopedParkCallback on_park(&count_park, &seen);
    (void)go_on.recv();  // parks: one call
    owner_done.send(seen.calls.load(std::memory_order_acquire));
  });
  auto other_done = cf::make_chan<int>(1);
  cf::go("other", [&, other_done]() mutable {
    park_once();  // not the owner: no call
    other_done.send(0);
  });
  (void)other_done.recv();
  // The owner's receive must park (a sender already waiting would let it go on without parking).
  ASSERT_TRUE(wait_bounded([&] { return parked_receivers(go_on.base()) == 1; }));
  go_on.send(1);
  EXPECT_EQ(*owner_done.recv(), 1);
  EXPECT_FALSE(seen.foreign_thread);
}

TEST_P(WorkSharing, NoCallbackOnAnOsThread) {
  Seen seen;
  auto ch = cf::make_chan<int>();
  {
    cf::ScopedParkCallback on_park(&count_park, &seen);
    cf::go([ch]() mutable {
      if (wait_bounded([&] { return parked_receivers(ch.base()) == 1; })) ch.send(1);
    });
    EXPECT_EQ(ch.recv(), 1);  // the OS thread parked
  }
  EXPECT_EQ(seen.calls.load(), 0);
}

// The callback may spawn: the GoMachine hands its ready nodes to a new green thread from it.
struct SpawnOnPark {
  cf::Chan<int> out;
};

void spawn_on_park(void* arg) {
  auto* s = static_cast<SpawnOnPark*>(arg);
  cf::current_scheduler()->go_for_others([out = s->out]() mutable { out.send(5); });
}

TEST_P(WorkSharing, CallbackMayStartGreenThreads) {
  auto out = cf::make_chan<int>();
  auto result = cf::make_chan<int>(1);
  cf::go([out, result]() mutable {
    SpawnOnPark s{out};
    cf::ScopedParkCallback on_park(&spawn_on_park, &s);
    result.send(*out.recv());  // parks; the callback's green thread sends
  });
  EXPECT_EQ(*result.recv(), 5);
}

// go_for_others: the child skips the spawner's runnext slot, and an idle worker takes it while the
// spawner keeps its own worker busy (it spins, never parks or yields). On one worker nobody else
// can: the child runs once the spawner parks.
TEST_P(WorkSharing, GoForOthersRunsOnAnIdleWorker) {
  auto result = cf::make_chan<int>(1);
  cf::go([&, result]() mutable {
    cf::Scheduler* s = cf::current_scheduler();
    const cf::detail::Worker* mine = cf::detail::current_worker();
    std::atomic<const cf::detail::Worker*> child_ran_on{nullptr};
    auto child_done = cf::make_chan<int>(1);
    s->go_for_others("for-others", [&child_ran_on, child_done]() mutable {
      child_ran_on.store(cf::detail::current_worker(), std::memory_order_release);
      child_done.send(1);
    });
    // Not in runnext (white-box), which thieves would leave to this busy worker for a while.
    const bool in_runnext = cf::detail::current_worker()->runnext.load() != nullptr;
    if (s->workers() == 1) {
      (void)child_done.recv();
      result.send(child_ran_on.load(std::memory_order_acquire) == mine ? 1 : 0);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (child_ran_on.load(std::memory_order_acquire) == nullptr &&
           std::chrono::steady_clock::now() < deadline) {
    }
    const cf::detail::Worker* where = child_ran_on.load(std::memory_order_acquire);
    (void)child_done.recv();  // the child is done with this frame's atomics
    result.send(!in_runnext && where != nullptr && where != mine ? 1 : 0);
  });
  EXPECT_EQ(*result.recv(), 1);
}

TEST_P(WorkSharing, GoForOthersFromAnOsThreadIsGo) {
  auto result = cf::make_chan<std::string>(1);
  sched().go_for_others("named",
                        [result]() mutable { result.send(cf::current_green_thread_name()); });
  EXPECT_EQ(*result.recv(), "named");
  auto unnamed = cf::make_chan<bool>(1);
  sched().go_for_others([unnamed]() mutable { unnamed.send(cf::in_green_thread()); });
  EXPECT_TRUE(*unnamed.recv());
}

TEST_P(WorkSharing, CurrentSchedulerIsTheGreenThreadsOwn) {
  EXPECT_EQ(cf::current_scheduler(), nullptr);
  EXPECT_EQ(&cf::scheduler_for_go(), &sched());  // the fixture's ScopedDefaultScheduler
  cf::Scheduler other({.workers = 1});
  auto seen = cf::make_chan<std::pair<cf::Scheduler*, cf::Scheduler*>>(2);
  sched().go([seen]() mutable { seen.send({cf::current_scheduler(), &cf::scheduler_for_go()}); });
  auto a = *seen.recv();
  EXPECT_EQ(a.first, &sched());
  EXPECT_EQ(a.second, &sched());
  other.go([seen]() mutable { seen.send({cf::current_scheduler(), &cf::scheduler_for_go()}); });
  auto b = *seen.recv();
  EXPECT_EQ(b.first, &other);
  EXPECT_EQ(b.second, &other);
  EXPECT_EQ(b.first->workers(), 1);
}

INSTANTIATE_TEST_SUITE_P(Workers, WorkSharing, CHANFLOW_WORKER_COUNTS);

}  // namespace
