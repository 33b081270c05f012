// Deadlock detection: real deadlocks are reported with every parked green thread; live
// situations (timers, plain threads) are not.
#include <atomic>
#include <filesystem>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "deadlock.h"
#include "runtime_test_util.h"

namespace {

using namespace std::chrono_literals;
using Deadlock = WorkersFixture;

std::string deadlock_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const cf::DeadlockError& e) {
    return e.what();
  }
  return "(no DeadlockError)";
}

TEST_P(Deadlock, RecvWithNoSenderAndNoGreenThreads) {
  auto ch = cf::make_chan<int>();
  const std::string msg = deadlock_message([&] { ch.recv(); });
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("recv on chan 0x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No green thread is alive"), std::string::npos) << msg;
}

TEST_P(Deadlock, ReportsEachParkedGreenThread) {
  auto ch = cf::make_chan<int>();
  auto other = cf::make_chan<std::string>(2);
  auto done = cf::make_chan<int>();
  cf::go("producer", [ch] {
    ch.send(1);
    ch.send(2);
  });
  cf::go("consumer", [ch] { ch.recv(); });
  auto x = cf::make_chan<int>();
  auto y = cf::make_chan<int>(1);
  y.send(0);  // full: a send case on y cannot proceed
  cf::go("selector", [other, x, y] {
    cf::select(cf::on_recv(x, [](std::optional<int>) {}), cf::on_send(y, 5, [] {}));
    other.send("never");
  });
  const std::string msg = deadlock_message([&] { done.recv(); });
  std::ostringstream chan;
  chan << static_cast<const void*>(ch.base());
  EXPECT_NE(msg.find("producer: send on chan " + chan.str() + " (cap 0)"), std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("consumer:"), std::string::npos) << msg;  // it finished
  EXPECT_NE(msg.find("selector: select on 2 channel case(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("This OS thread waits in recv on chan"), std::string::npos) << msg;
}

// A report names what each green thread waits on by the name the program gave it.
TEST_P(Deadlock, ReportsNamesOfNamedChannelsMutexesAndWaitGroups) {
  cf::Mutex mu("cache");
  mu.lock();
  auto jobs = cf::make_chan<int>(0, "jobs");
  auto locker_done = cf::make_chan<cf::Unit>(1);
  cf::go("locker", [&mu, locker_done] {
    { std::lock_guard<cf::Mutex> g(mu); }
    locker_done.send(cf::Unit{});
  });
  cf::go("receiver", [jobs]() mutable { jobs.recv(); });
  cf::WaitGroup wg("workers");
  wg.add();
  const std::string msg = deadlock_message([&] { wg.wait(); });
  std::ostringstream mu_at, wg_at;
  mu_at << &mu;
  wg_at << &wg;
  EXPECT_NE(msg.find("locker: Mutex::lock on mutex \"cache\" " + mu_at.str()), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("receiver: recv on chan \"jobs\" 0x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WaitGroup::wait on wait group \"workers\" " + wg_at.str()), std::string::npos)
      << msg;
  EXPECT_EQ(mu.name(), "cache");
  EXPECT_EQ(wg.name(), "workers");
  EXPECT_EQ(cf::Mutex().name(), "");
  mu.unlock();
  locker_done.recv();
  jobs.close();  // the receiver ends
}

TEST_P(Deadlock, NilChannelAndMutexAndWaitGroup) {
  cf::Mutex mu;
  mu.lock();
  cf::go("nil-receiver", [] { cf::Chan<int>().recv(); });
  auto locker_done = cf::make_chan<cf::Unit>(1);
  cf::go("locker", [&mu, locker_done] {
    { std::lock_guard<cf::Mutex> g(mu); }
    locker_done.send(cf::Unit{});
  });
  cf::WaitGroup wg;
  wg.add();
  const std::string msg = deadlock_message([&] { wg.wait(); });
  EXPECT_NE(msg.find("nil-receiver: send/recv on a nil chan"), std::string::npos) << msg;
  EXPECT_NE(msg.find("locker: Mutex::lock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("WaitGroup::wait"), std::string::npos) << msg;
  mu.unlock();  // the locker can finish; the nil receiver is unwound at teardown
  // `mu` lives in this frame: the locker must be done with it (its lock_guard unlocks it) before
  // the test returns, or it would unlock a destroyed Mutex.
  locker_done.recv();
}

TEST_P(Deadlock, MainSelectWithEveryoneAsleep) {
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  cf::go("stuck", [a] { a.recv(); });
  const std::string msg = deadlock_message(
      [&] { cf::select(cf::on_recv(b, [](std::optional<int>) {}), cf::on_send(b, 1, [] {})); });
  EXPECT_NE(msg.find("This OS thread waits in select on 2 channel case(s)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("stuck: recv on chan"), std::string::npos) << msg;
  // After the error the channel is usable: the failed select left no waiter behind.
  EXPECT_EQ(parked_receivers(b.base()), 0u);
  EXPECT_EQ(parked_senders(b.base()), 0u);
  a.send(1);
}

TEST_P(Deadlock, PendingTimerIsNotADeadlock) {
  auto ch = cf::make_chan<int>();
  cf::go("late-sender", [ch] {
    cf::sleep_for(30ms);
    ch.send(7);
  });
  EXPECT_EQ(ch.recv(), 7);
}

TEST_P(Deadlock, PlainThreadThatWillSendIsNotADeadlock) {
  auto ch = cf::make_chan<int>();
  std::thread t([ch] {
    std::this_thread::sleep_for(120ms);  // the scenario: a slow plain thread, not a sync
    ch.send(8);
  });
  EXPECT_EQ(ch.recv(), 8);
  t.join();
}

TEST_P(Deadlock, BusyGreenThreadIsNotADeadlock) {
  auto ch = cf::make_chan<int>();
  cf::go("busy", [ch] {
    volatile uint64_t x = 0;
    for (int i = 0; i < 2000000; ++i) x = x + static_cast<uint64_t>(i);
    ch.send(1);
  });
  EXPECT_EQ(ch.recv(), 1);
}

TEST_P(Deadlock, DeadlockAfterActivity) {
  auto ch = cf::make_chan<int>(1);
  auto never = cf::make_chan<int>();
  cf::WaitGroup wg;
  for (int i = 0; i < 50; ++i) {
    wg.add();
    cf::go("churn", [&, ch] {
      ch.send(1);
      ch.recv();
      wg.done();
    });
  }
  wg.wait();
  cf::go("last", [never] { never.recv(); });
  const std::string msg = deadlock_message([&] { never.recv(); });
  EXPECT_NE(msg.find("last: recv on chan"), std::string::npos) << msg;
}

// A plain OS thread holds detection back (it might wake the waiter), unless it declares that only
// the outside world wakes it (ScopedExternalWaiter, as the chanflow command's signal thread
// does): then a real deadlock is still reported. Should detection never fire, the thread closes
// the channel after 20 s, so the test fails instead of hanging.
TEST_P(Deadlock, ExternalWaiterThreadDoesNotHoldDetectionBack) {
  auto ch = cf::make_chan<int>();
  std::promise<void> finished;
  std::thread external([ch, done = finished.get_future()] {
    cf::ScopedExternalWaiter scope;
    if (done.wait_for(20s) == std::future_status::timeout) ch.close();
  });
  const std::string msg = deadlock_message([&] { ch.recv(); });
  finished.set_value();
  external.join();
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
}

// The deadlock check cannot count threads at the same instant as it reads the green threads'
// state. A plain thread that wakes the last parked green thread and exits between those two
// readings must not make a live program look deadlocked (the check's hook starts such a thread
// exactly there, once).
cf::Chan<int> g_wake_mid_check;
std::atomic<bool> g_woken_mid_check{false};
std::thread::id g_waiting_thread;
long process_threads() {
  long n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}
void wake_from_a_thread_that_exits() {
  // The waiting thread's own check (a worker's check only pokes it).
  if (std::this_thread::get_id() != g_waiting_thread || g_woken_mid_check.exchange(true)) return;
  const long threads = process_threads();
  std::thread([] { g_wake_mid_check.close(); }).join();
  // join() returns once the thread is done, a little before the kernel stops counting it; the
  // race is with a thread the count no longer includes.
  while (process_threads() > threads) std::this_thread::yield();
}

TEST_P(Deadlock, ThreadThatWakesAndExitsMidCheckIsNotADeadlock) {
  g_wake_mid_check = cf::make_chan<int>();
  g_woken_mid_check = false;
  g_waiting_thread = std::this_thread::get_id();
  cf::WaitGroup wg;
  wg.add();
  cf::go("sleeper", [&wg, ch = g_wake_mid_check] {
    ch.recv();
    // Busy a while before it wakes the main thread: the check must not take the moment for a
    // deadlock (a check that did would cancel the wait well before this ends).
    volatile uint64_t x = 0;
    for (int i = 0; i < 5000000; ++i) x = x + static_cast<uint64_t>(i);
    wg.done();
  });
  cf::detail::set_deadlock_check_hook(&wake_from_a_thread_that_exits);
  std::string error;
  try {
    wg.wait();  // the sleeper parks; the check runs; its hook wakes the sleeper
  } catch (const cf::DeadlockError& e) {
    error = e.what();
  }
  cf::detail::set_deadlock_check_hook(nullptr);
  EXPECT_TRUE(g_woken_mid_check.load()) << "the check never ran with everything parked";
  EXPECT_EQ(error, "");
  g_wake_mid_check = cf::Chan<int>();
}

INSTANTIATE_TEST_SUITE_P(Workers, Deadlock, CHANFLOW_WORKER_COUNTS);

}  // namespace
