// Go's deadlock detection ("fatal error: all goroutines are asleep - deadlock!"), as chanflow
// reports it: when every green thread is parked on chanflow primitives, no timer is pending and an
// OS thread waits in a chanflow call, that call throws DeadlockError listing each parked green
// thread by name and what it waits on. Each case provokes a real deadlock, checks the report, then
// releases the parked green threads (closing their channels) so the scheduler ends cleanly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;

namespace {

class GoDeadlock : public cf::testing::WorkersTest {};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The simplest one: main sends on an unbuffered channel nobody will ever receive from.
TEST_P(GoDeadlock, UnbufferedSendFromMainWithNoReceiver) {
  auto c = cf::make_chan<int>();
  try {
    c.send(1);
    ADD_FAILURE() << "send with no receiver returned";
  } catch (const cf::DeadlockError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    RecordProperty("report", e.what());
  }
  // And a receive on an empty channel, for good measure.
  EXPECT_THROW((void)c.recv(), cf::DeadlockError);
}

// Two green threads each wait for the other; main waits for both. The report names both and says
// what each waits on.
TEST_P(GoDeadlock, TwoGreenThreadsWaitingOnEachOther) {
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  cf::WaitGroup wg;
  wg.add(2);
  cf::go("alice", [a, b, &wg] {
    if (auto v = a.recv()) {
      try {
        b.send(*v);
      } catch (const cf::ChannelClosedError&) {
      }
    }
    wg.done();
  });
  cf::go("bob", [a, b, &wg] {
    if (auto v = b.recv()) {
      try {
        a.send(*v);
      } catch (const cf::ChannelClosedError&) {
      }
    }
    wg.done();
  });
  try {
    wg.wait();
    ADD_FAILURE() << "wait returned although alice and bob wait on each other";
  } catch (const cf::DeadlockError& e) {
    const std::string report = e.what();
    if (GetParam() == 1) std::printf("deadlock report: %s\n", report.c_str());
    EXPECT_TRUE(contains(report, "alice")) << report;
    EXPECT_TRUE(contains(report, "bob")) << report;
    EXPECT_TRUE(contains(report, "recv")) << "the report should say what they wait on: " << report;
  }
  // Release them: each sees its channel closed and returns.
  a.close();
  b.close();
  wg.wait();
}

// A producer blocked sending on an unbuffered channel while main waits on a different channel:
// the report says "send" and names the producer.
TEST_P(GoDeadlock, ReportNamesBlockedSender) {
  auto data = cf::make_chan<int>();
  auto other = cf::make_chan<int>();
  auto finished = cf::make_chan<bool>(1);
  cf::go("producer", [data, finished] {
    try {
      data.send(42);
    } catch (const cf::ChannelClosedError&) {
    }
    finished.send(true);
  });
  try {
    (void)other.recv();
    ADD_FAILURE() << "recv returned on a channel nobody sends to";
  } catch (const cf::DeadlockError& e) {
    const std::string report = e.what();
    EXPECT_TRUE(contains(report, "producer")) << report;
    EXPECT_TRUE(contains(report, "send")) << report;
  }
  data.close();
  EXPECT_EQ(finished.recv(), std::optional<bool>(true));
}

// A green thread parked in a select on channels nobody uses.
TEST_P(GoDeadlock, ReportNamesParkedSelect) {
  auto x = cf::make_chan<int>();
  auto y = cf::make_chan<int>();
  auto finished = cf::make_chan<bool>(1);
  cf::go("selector", [x, y, finished] {
    cf::select(cf::on_recv(x, [](std::optional<int>) {}), cf::on_send(y, 1, [] {}));
    finished.send(true);
  });
  try {
    (void)finished.recv();
    ADD_FAILURE() << "the select returned although nothing is ready";
  } catch (const cf::DeadlockError& e) {
    EXPECT_TRUE(contains(e.what(), "selector")) << e.what();
  }
  x.close();
  EXPECT_EQ(finished.recv(), std::optional<bool>(true));
}

// Not a deadlock: a green thread sleeping (a pending timer) will send. The detector must not fire
// while a timer can still wake someone.
TEST_P(GoDeadlock, PendingTimerIsNotADeadlock) {
  auto c = cf::make_chan<int>();
  cf::go("sleeper", [c] {
    cf::sleep_for(std::chrono::milliseconds(20));
    c.send(7);
  });
  EXPECT_EQ(c.recv(), std::optional<int>(7));
  // The same through after(): a select whose only other case can never fire.
  auto never = cf::make_chan<int>();
  bool fired = false;
  cf::select(cf::on_recv(never, [](std::optional<int>) {}),
             cf::on_recv(cf::after(std::chrono::milliseconds(5)), [&](auto) { fired = true; }));
  EXPECT_TRUE(fired);
}

// A deadlock among green threads while another green thread still runs is not reported until that
// one parks too; here it finishes the work, so no report at all.
TEST_P(GoDeadlock, RunningGreenThreadIsNotADeadlock) {
  auto c = cf::make_chan<long>();
  cf::go("worker", [c] {
    long sum = 0;
    for (long i = 0; i < 20'000'000; ++i) sum += i % 7;
    c.send(sum);
  });
  auto v = c.recv();
  ASSERT_TRUE(v.has_value());
  EXPECT_GT(*v, 0);
}

CHANFLOW_INSTANTIATE_WORKERS(GoDeadlock);

}  // namespace
