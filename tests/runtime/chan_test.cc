// Chan<T> semantics on 1, 2, 4 and 8 workers, from green threads and OS threads.
#include <sched.h>

#include <atomic>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "deadlock.h"  // white-box: os_spins
#include "runtime_test_util.h"

namespace {

using Chan = WorkersFixture;

TEST_P(Chan, UnbufferedPingPong) {
  auto ping = cf::make_chan<int>();
  auto pong = cf::make_chan<int>();
  cf::go("echo", [ping, pong] {
    for (std::optional<int> v = ping.recv(); v; v = ping.recv()) pong.send(*v + 1);
    pong.close();
  });
  for (int i = 0; i < 2000; ++i) {
    ping.send(i);
    EXPECT_EQ(pong.recv(), i + 1);
  }
  ping.close();
  EXPECT_EQ(pong.recv(), std::nullopt);
}

// An OS thread that blocks polls its word before it sleeps (os_park), so a wake that comes
// meanwhile costs no futex sleep and wake-up; a spin that fails makes at least the next wait sleep
// at once (the backoff). The waker is another OS thread offering values without blocking
// (try_send succeeds only once the receiver is parked). Whether a spin sees its wake depends on
// both threads having a CPU at that moment (on a quiet host nearly every one does; with two CPU
// hogs beside them, in some runs none of 20,000): that part is measured by BM_OsPingPong, not
// asserted. Without the spin no spin is counted; without the backoff, failed spins could be every
// wait.
TEST(ChanOsThreads, ABlockedReceiverSpinsAndBacksOff) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2) {
    GTEST_SKIP() << "one CPU: a blocking OS thread sleeps at once";
  }
  auto ch = cf::make_chan<int>();
  std::atomic<bool> done{false};
  std::thread sender([ch, &done] {
    for (int i = 0; !done.load(std::memory_order_relaxed);) {
      if (ch.try_send(i)) ++i;
    }
  });
  constexpr uint64_t kReceives = 20'000;
  const cf::detail::OsSpins before = cf::detail::os_spins();
  for (uint64_t i = 0; i < kReceives; ++i) ASSERT_EQ(ch.recv(), static_cast<int>(i));
  done.store(true, std::memory_order_relaxed);
  sender.join();
  const cf::detail::OsSpins after = cf::detail::os_spins();
  const uint64_t spins = after.spins - before.spins;
  const uint64_t failed = spins - (after.wakes - before.wakes);
  EXPECT_GT(spins, 0u);
  EXPECT_LE(after.wakes - before.wakes, spins);
  EXPECT_LE(2 * failed, kReceives + 1) << spins << " spins, " << failed << " failed";
}

TEST_P(Chan, UnbufferedIsRendezvous) {
  auto ch = cf::make_chan<int>();
  EXPECT_FALSE(ch.try_send(1));  // nobody receives
  EXPECT_EQ(ch.try_recv(), std::nullopt);
  std::atomic<bool> sent{false};
  cf::go([&, ch] {
    ch.send(7);
    sent = true;
  });
  wait_until([&] { return parked_senders(ch.base()) == 1; });
  EXPECT_FALSE(sent.load());  // the sender waits for a receiver
  EXPECT_EQ(ch.try_recv(), 7);
  wait_until([&] { return sent.load(); });
}

TEST_P(Chan, BufferedIsFifoAndBounded) {
  auto ch = cf::make_chan<int>(8);
  EXPECT_EQ(ch.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(ch.try_send(i));
  EXPECT_FALSE(ch.try_send(8));
  EXPECT_EQ(ch.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ch.recv(), i);
  EXPECT_EQ(ch.size(), 0u);
}

// A buffer grows as values arrive, not up front: a capacity of 2^40 ints (4 TiB) costs nothing
// until used, and growing keeps FIFO order also when the ring has wrapped (head_ != 0). With the
// whole capacity allocated at creation, make_chan throws std::bad_alloc here.
TEST_P(Chan, HugeCapacityAllocatesAsValuesArrive) {
  auto ch = cf::make_chan<std::string>(std::size_t{1} << 40);
  EXPECT_EQ(ch.capacity(), std::size_t{1} << 40);
  int next_in = 0;
  int next_out = 0;
  // Rounds of 700 in, 500 out: each round grows the buffer past its eager size with the head
  // somewhere in the middle of the ring.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 700; ++i) ASSERT_TRUE(ch.try_send(std::to_string(next_in++)));
    for (int i = 0; i < 500; ++i) ASSERT_EQ(ch.recv(), std::to_string(next_out++));
  }
  EXPECT_EQ(ch.size(), static_cast<std::size_t>(next_in - next_out));
  ch.close();
  while (std::optional<std::string> v = ch.recv()) EXPECT_EQ(*v, std::to_string(next_out++));
  EXPECT_EQ(next_out, next_in);
}

TEST_P(Chan, BlockedSenderKeepsFifoOrder) {
  auto ch = cf::make_chan<int>(2);
  ch.send(0);
  ch.send(1);
  cf::go([ch] { ch.send(2); });
  wait_until([&] { return parked_senders(ch.base()) == 1; });
  EXPECT_EQ(ch.recv(), 0);
  EXPECT_EQ(ch.recv(), 1);
  EXPECT_EQ(ch.recv(), 2);
}

TEST_P(Chan, CloseDrainsThenReportsClosed) {
  auto ch = cf::make_chan<std::string>(3);
  ch.send("a");
  ch.send("b");
  ch.close();
  EXPECT_TRUE(ch.closed());
  EXPECT_EQ(ch.recv(), "a");
  EXPECT_EQ(ch.try_recv(), "b");
  EXPECT_EQ(ch.recv(), std::nullopt);
  EXPECT_EQ(ch.try_recv(), std::nullopt);
}

TEST_P(Chan, CloseWakesEveryReceiver) {
  auto ch = cf::make_chan<int>();
  constexpr int kN = 16;
  cf::WaitGroup wg;
  std::atomic<int> saw_closed{0};
  for (int i = 0; i < kN; ++i) {
    wg.add();
    cf::go([&, ch] {
      if (!ch.recv()) saw_closed++;
      wg.done();
    });
  }
  wait_until([&] { return parked_receivers(ch.base()) == kN; });
  ch.close();
  wg.wait();
  EXPECT_EQ(saw_closed.load(), kN);
}

TEST_P(Chan, CloseMakesBlockedSendersThrow) {
  auto ch = cf::make_chan<int>();
  constexpr int kN = 8;
  cf::WaitGroup wg;
  std::atomic<int> threw{0};
  for (int i = 0; i < kN; ++i) {
    wg.add();
    cf::go([&, ch, i] {
      try {
        ch.send(i);
      } catch (const cf::ChannelClosedError& e) {
        if (std::string(e.what()).find("closed while the sender waited") != std::string::npos) {
          threw++;
        }
      }
      wg.done();
    });
  }
  wait_until([&] { return parked_senders(ch.base()) == kN; });
  ch.close();
  wg.wait();
  EXPECT_EQ(threw.load(), kN);
}

TEST_P(Chan, MisuseThrowsChannelClosedError) {
  auto ch = cf::make_chan<int>(1);
  ch.close();
  EXPECT_THROW(ch.send(1), cf::ChannelClosedError);
  EXPECT_THROW(ch.try_send(1), cf::ChannelClosedError);
  EXPECT_THROW(ch.close(), cf::ChannelClosedError);
  cf::Chan<int> nil;
  EXPECT_TRUE(nil.is_nil());
  EXPECT_THROW(nil.close(), cf::ChannelClosedError);
  EXPECT_FALSE(nil.try_send(1));
  EXPECT_EQ(nil.try_recv(), std::nullopt);
  EXPECT_EQ(nil.size(), 0u);
  EXPECT_FALSE(nil.closed());
}

TEST_P(Chan, MoveOnlyAndEmptyTypes) {
  auto ch = cf::make_chan<std::unique_ptr<int>>();
  cf::go([ch] {
    for (int i = 0; i < 100; ++i) ch.send(std::make_unique<int>(i));
    ch.close();
  });
  int expect = 0;
  for (std::unique_ptr<int>& p : ch) EXPECT_EQ(*p, expect++);
  EXPECT_EQ(expect, 100);

  struct Empty {};
  auto e = cf::make_chan<Empty>(4);
  e.send(Empty{});
  EXPECT_TRUE(e.recv().has_value());
  auto u = cf::make_chan<cf::Unit>();
  cf::go([u] { u.close(); });
  EXPECT_EQ(u.recv(), std::nullopt);
}

TEST_P(Chan, HandlesShareOneChannel) {
  auto a = cf::make_chan<int>(1);
  cf::Chan<int> b = a;
  EXPECT_TRUE(a == b);
  b.send(5);
  EXPECT_EQ(a.recv(), 5);
  EXPECT_FALSE(a == cf::make_chan<int>(1));
}

TEST_P(Chan, ManyProducersManyConsumersExactSum) {
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}, std::size_t{64}}) {
    auto ch = cf::make_chan<int64_t>(cap);
    auto sums = cf::make_chan<int64_t>(8);
    constexpr int kProducers = 8;
    constexpr int kConsumers = 4;
    constexpr int kPer = 2000;
    cf::WaitGroup producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.add();
      cf::go("producer", [&, ch, p] {
        for (int i = 0; i < kPer; ++i) ch.send(static_cast<int64_t>(p) * kPer + i);
        producers.done();
      });
    }
    for (int c = 0; c < kConsumers; ++c) {
      cf::go("consumer", [ch, sums] {
        int64_t s = 0;
        for (int64_t v : ch) s += v;
        sums.send(s);
      });
    }
    producers.wait();
    ch.close();
    int64_t total = 0;
    for (int c = 0; c < kConsumers; ++c) total += *sums.recv();
    const int64_t n = int64_t{kProducers} * kPer;
    EXPECT_EQ(total, n * (n - 1) / 2) << "cap " << cap;
  }
}

TEST_P(Chan, PlainOsThreadsOnly) {
  auto ch = cf::make_chan<int>();
  std::thread t([ch] {
    for (int i = 0; i < 500; ++i) ch.send(i);
    ch.close();
  });
  int n = 0;
  for (int v : ch) EXPECT_EQ(v, n++);
  t.join();
  EXPECT_EQ(n, 500);
}

TEST_P(Chan, ValuesAreVisibleToReceiver) {
  // Memory ordering: what the sender wrote before send is visible after recv.
  struct Box {
    int64_t payload[8];
  };
  auto ch = cf::make_chan<Box*>();
  std::vector<Box> boxes(1000);
  cf::go([&, ch] {
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      for (auto& x : boxes[i].payload) x = static_cast<int64_t>(i);
      ch.send(&boxes[i]);
    }
    ch.close();
  });
  std::size_t i = 0;
  for (Box* b : ch) {
    for (int64_t x : b->payload) ASSERT_EQ(x, static_cast<int64_t>(i));
    ++i;
  }
  EXPECT_EQ(i, boxes.size());
}

TEST_P(Chan, NonblockingSeesParkedPartiesAndClose) {
  // The lock-free "not ready" check must not hide a parked sender, a parked receiver, a buffered
  // value or a close.
  auto u = cf::make_chan<int>();
  cf::go([u] { u.send(41); });
  wait_until([&] { return parked_senders(u.base()) == 1; });
  EXPECT_EQ(u.try_recv(), 41);
  EXPECT_EQ(u.try_recv(), std::nullopt);
  EXPECT_FALSE(u.try_send(1));  // no receiver
  auto got = cf::make_chan<std::optional<int>>(1);
  cf::go([u, got] { got.send(u.recv()); });
  wait_until([&] { return parked_receivers(u.base()) == 1; });
  EXPECT_TRUE(u.try_send(42));
  EXPECT_EQ(got.recv(), std::optional<int>(42));
  u.close();
  EXPECT_EQ(u.try_recv(), std::nullopt);
  EXPECT_TRUE(u.closed());
  EXPECT_THROW(u.try_send(1), cf::ChannelClosedError);

  auto b = cf::make_chan<int>(2);
  EXPECT_TRUE(b.try_send(1));
  EXPECT_TRUE(b.try_send(2));
  EXPECT_FALSE(b.try_send(3));  // full
  b.close();
  EXPECT_THROW(b.try_send(3), cf::ChannelClosedError);  // full and closed: closed wins
  EXPECT_EQ(b.try_recv(), 1);
  EXPECT_EQ(b.try_recv(), 2);
  EXPECT_EQ(b.try_recv(), std::nullopt);
}

TEST_P(Chan, TryRecvRacingSendersLosesNothing) {
  // Pollers spin on try_recv while blocked and buffered senders race them: every value arrives
  // exactly once, and a parked sender is always found (else the pollers never finish).
  for (std::size_t cap : {std::size_t{0}, std::size_t{1}, std::size_t{16}}) {
    auto ch = cf::make_chan<int64_t>(cap);
    constexpr int kSenders = 4;
    constexpr int kPollers = 3;
    constexpr int64_t kPer = 2000;
    constexpr int64_t kN = kSenders * kPer;
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> sum{0};
    cf::WaitGroup wg;
    for (int p = 0; p < kSenders; ++p) {
      wg.add();
      cf::go("sender", [&, ch, p] {
        for (int64_t i = 0; i < kPer; ++i) ch.send(p * kPer + i);
        wg.done();
      });
    }
    for (int q = 0; q < kPollers; ++q) {
      wg.add();
      cf::go("poller", [&, ch] {
        while (count.load() < kN) {
          if (std::optional<int64_t> v = ch.try_recv()) {
            sum += *v;
            count++;
          } else {
            cf::yield();
          }
        }
        wg.done();
      });
    }
    wg.wait();
    EXPECT_EQ(count.load(), kN) << "cap " << cap;
    EXPECT_EQ(sum.load(), kN * (kN - 1) / 2) << "cap " << cap;
    EXPECT_EQ(ch.try_recv(), std::nullopt);
    EXPECT_EQ(ch.size(), 0u);
  }
}

TEST_P(Chan, NonblockingNeverNotReadyWhileReadyUntilClose) {
  // A buffered channel that stays non-empty (or non-full) until it is closed is never "empty and
  // open" (or "full and open"): a non-blocking receive (send) racing the close must never say
  // "not ready". This is what fails when the fast path reads `closed` before emptiness: it can see
  // "open" before the close and "empty" after the drain. A round counts when the buffer was still
  // non-empty (non-full) at the close, which the closer checks afterwards; the pollers start
  // polling together with the close, so that most rounds count.
  constexpr int kRounds = 20;
  constexpr int kPollers = 3;
  constexpr std::size_t kCap = 64;
  int recv_conclusive = 0;
  int send_conclusive = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Receives: the closer closes, then drains; values left at the close prove the round.
    {
      auto ch = cf::make_chan<int>(kCap);
      for (std::size_t i = 0; i < kCap; ++i) ch.send(1);
      std::atomic<int> started{0};
      std::atomic<bool> go{false};
      std::atomic<int> not_ready{0};
      cf::WaitGroup wg;
      for (int q = 0; q < kPollers; ++q) {
        wg.add();
        cf::go("recv poller", [&, ch, q] {
          started++;
          while (!go.load()) {
          }  // start polling together with the close, not long before it
          for (int i = 0;; ++i) {
            if ((i + q) % 3 == 0) {
              std::optional<int> v = ch.try_recv();
              // nullopt may only mean "closed and drained": then closed() is true afterwards.
              if (!v) {
                if (!ch.closed()) not_ready++;
                break;
              }
            } else {
              bool closed_seen = false;
              bool deflt = false;
              auto body = [&](std::optional<int> v) { closed_seen = !v; };
              if ((i + q) % 3 == 1) {
                cf::select(cf::on_recv(ch, body), cf::on_default([&] { deflt = true; }));
              } else {  // the multi-case path (all locks) with a nil case
                cf::select(cf::on_recv(ch, body), cf::on_recv(cf::Chan<int>(), body),
                           cf::on_default([&] { deflt = true; }));
              }
              if (deflt) not_ready++;
              if (deflt || closed_seen) break;
            }
          }
          wg.done();
        });
      }
      wait_until([&] { return started.load() > 0; });
      go = true;
      ch.close();
      int left = 0;
      while (ch.recv()) ++left;
      wg.wait();
      if (left > 0) {
        ++recv_conclusive;
        EXPECT_EQ(not_ready.load(), 0) << "round " << round << ": receive said not ready";
      }
    }
    // Sends: room left at the close proves the round (nobody receives).
    {
      auto ch = cf::make_chan<int>(kCap);
      std::atomic<int> started{0};
      std::atomic<bool> go{false};
      std::atomic<int> not_ready{0};
      cf::WaitGroup wg;
      for (int q = 0; q < kPollers; ++q) {
        wg.add();
        cf::go("send poller", [&, ch, q] {
          started++;
          while (!go.load()) {
          }  // start polling together with the close, not long before it
          try {
            for (int i = 0;; ++i) {
              if ((i + q) % 2 == 0) {
                if (!ch.try_send(1)) {
                  not_ready++;
                  break;
                }
              } else if (cf::select(cf::on_send(ch, 1, [] {}), cf::on_default([] {})) == 1) {
                not_ready++;
                break;
              }
            }
          } catch (const cf::ChannelClosedError&) {
          }
          wg.done();
        });
      }
      wait_until([&] { return started.load() > 0; });
      go = true;
      ch.close();
      const std::size_t filled = ch.size();  // exact: a closed channel takes no more values
      wg.wait();
      if (filled < kCap) {
        ++send_conclusive;
        EXPECT_EQ(not_ready.load(), 0) << "round " << round << ": send said not ready";
      }
    }
  }
  EXPECT_GT(recv_conclusive, 0) << "no round closed before the pollers drained the buffer";
  EXPECT_GT(send_conclusive, 0) << "no round closed before the pollers filled the buffer";
}

INSTANTIATE_TEST_SUITE_P(Workers, Chan, CHANFLOW_WORKER_COUNTS);

struct FooObj : cf::Object {
  int value = 0;
  static constexpr const char* kTypeKey = "test.Foo";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(FooObj, cf::Object);
};

TEST(Channel, TypeErasedChecksElementType) {
  cf::Channel ch = cf::Channel::make<cf::ChannelObj>(2);
  EXPECT_EQ(ch->elem_type(), "Channel");
  EXPECT_EQ(std::string(ch->type_key()), "Channel");
  cf::Channel inner = cf::Channel::make(1);
  ch.send(inner);
  try {
    ch.send(cf::make_object<FooObj>());
    FAIL() << "expected TypeError";
  } catch (const cf::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("carries Channel, got test.Foo"), std::string::npos)
        << e.what();
  }
  ch.send(cf::ObjectRef());  // nil values are allowed, as in Go
  std::optional<cf::ObjectRef> got = ch.recv();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->same_as(inner));
  got = ch.recv();
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->defined());
  ch.close();
  EXPECT_EQ(ch.recv(), std::nullopt);
  EXPECT_THROW(ch.send(inner), cf::ChannelClosedError);
}

TEST(Channel, AnyTypeAndNil) {
  cf::Channel any = cf::Channel::make(1);
  auto foo = cf::make_object<FooObj>();
  foo->value = 3;
  EXPECT_TRUE(any.try_send(foo));
  EXPECT_FALSE(any.try_send(foo));
  auto v = any.try_recv();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->as<FooObj>()->value, 3);
  cf::Channel nil;
  EXPECT_FALSE(nil.try_send(foo));
  EXPECT_EQ(nil.try_recv(), std::nullopt);
  EXPECT_THROW(nil.close(), cf::ChannelClosedError);
}

TEST(Channel, SelectMixesTypedAndErased) {
  cf::Channel erased = cf::Channel::make(1);
  auto typed = cf::make_chan<int>(1);
  erased.send(cf::make_object<FooObj>());
  std::optional<cf::ObjectRef> obj;
  std::optional<int> num;
  cf::SelectCase cs[] = {erased.select_recv(obj), cf::SelectCase::recv(typed, num)};
  EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cs)), 0u);
  ASSERT_TRUE(obj.has_value());
  EXPECT_NE(obj->as<FooObj>(), nullptr);
  typed.send(4);
  EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cs)), 1u);
  EXPECT_EQ(num, 4);
  auto wrong = cf::Channel::make<cf::ChannelObj>(1);
  cf::ObjectRef foo = cf::make_object<FooObj>();
  EXPECT_THROW(wrong.select_send(foo), cf::TypeError);
}

}  // namespace
