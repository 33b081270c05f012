// Port of Go's src/runtime/chan_test.go (Go 1.19): the behaviour of channels and select,
// re-expressed against chanflow's Chan<T> and select, run with 1, 2 and 4 workers. Sizes are Go's
// (the -short sizes under sanitizers, see go_test_util.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;
using cf::testing::give_others_a_chance;
using cf::testing::go_size;

namespace {

class GoChan : public cf::testing::WorkersTest {};

// TestChan, first block: a receive from an empty channel blocks, and a non-blocking receive
// (try_recv, select with default) does not.
void check_recv_from_empty_blocks(int cap) {
  auto c = cf::make_chan<int>(cap);
  std::atomic<bool> recv1{false};
  std::atomic<bool> recv2{false};
  cf::WaitGroup wg;
  wg.add(2);
  cf::go([c, &recv1, &wg]() mutable {
    (void)c.recv();
    recv1.store(true);
    wg.done();
  });
  cf::go([c, &recv2, &wg]() mutable {
    auto v = cf::select(cf::on_recv(c, [](std::optional<int>) {}));
    (void)v;
    recv2.store(true);
    wg.done();
  });
  give_others_a_chance();
  EXPECT_FALSE(recv1.load() || recv2.load()) << "chan[" << cap << "]: receive from empty chan";
  EXPECT_FALSE(c.try_recv().has_value()) << "chan[" << cap << "]: receive from empty chan";
  bool got = false;
  std::size_t idx =
      cf::select(cf::on_recv(c, [&](std::optional<int>) { got = true; }), cf::on_default([] {}));
  EXPECT_EQ(idx, 1u) << "chan[" << cap << "]: receive from empty chan";
  EXPECT_FALSE(got);
  c.send(0);
  c.send(0);
  wg.wait();
  EXPECT_TRUE(recv1.load() && recv2.load());
}

// TestChan, second block: a send to a full channel blocks; a non-blocking send does not.
void check_send_to_full_blocks(int cap) {
  auto c = cf::make_chan<int>(cap);
  for (int i = 0; i < cap; ++i) c.send(i);
  std::atomic<bool> sent{false};
  cf::WaitGroup wg;
  wg.add(1);
  cf::go([c, &sent, &wg]() mutable {
    c.send(0);
    sent.store(true);
    wg.done();
  });
  give_others_a_chance();
  EXPECT_FALSE(sent.load()) << "chan[" << cap << "]: send to full chan";
  EXPECT_FALSE(c.try_send(0)) << "chan[" << cap << "]: send to full chan";
  std::size_t idx = cf::select(cf::on_send(c, 0, [] {}), cf::on_default([] {}));
  EXPECT_EQ(idx, 1u) << "chan[" << cap << "]: send to full chan";
  (void)c.recv();
  wg.wait();
}

// TestChan, third block: a closed channel yields its buffered values, then reports closed.
void check_recv_from_closed(int cap) {
  auto c = cf::make_chan<int>(cap);
  for (int i = 0; i < cap; ++i) c.send(i);
  c.close();
  for (int i = 0; i < cap; ++i) {
    auto v = c.recv();
    ASSERT_TRUE(v.has_value()) << "chan[" << cap << "]: buffered value " << i << " lost on close";
    EXPECT_EQ(*v, i) << "chan[" << cap << "]";
  }
  EXPECT_FALSE(c.recv().has_value()) << "chan[" << cap << "]: value from closed, drained chan";
  EXPECT_FALSE(c.recv().has_value()) << "chan[" << cap << "]: value from closed, drained chan";
  EXPECT_FALSE(c.try_recv().has_value());
  EXPECT_TRUE(c.closed());
}

// TestChan, fourth block: close unblocks a blocked receiver, which sees "closed".
void check_close_unblocks_recv(int cap) {
  auto c = cf::make_chan<int>(cap);
  auto done = cf::make_chan<bool>();
  cf::go([c, done]() mutable {
    auto v = c.recv();
    done.send(!v.has_value());
  });
  give_others_a_chance();
  c.close();
  auto ok = done.recv();
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(*ok) << "chan[" << cap << "]: received a value from a closed chan";
}

// TestChan, fifth block: 100 values arrive in FIFO order (twice), then 4 senders x 1000 values
// received by 4 receivers: every value arrives exactly 4 times.
void check_fifo_and_many(int cap) {
  auto c = cf::make_chan<int>(cap);
  cf::go([c]() mutable {
    for (int i = 0; i < 100; ++i) c.send(i);
  });
  for (int i = 0; i < 100; ++i) {
    auto v = c.recv();
    ASSERT_TRUE(v.has_value());
    ASSERT_EQ(*v, i) << "chan[" << cap << "]";
  }
  cf::go([c]() mutable {
    for (int i = 0; i < 100; ++i) c.send(i);
  });
  for (int i = 0; i < 100; ++i) {
    std::optional<int> v;
    cf::select(cf::on_recv(c, [&](std::optional<int> x) { v = x; }));
    ASSERT_TRUE(v.has_value()) << "chan[" << cap << "]: receive failed, expected " << i;
    ASSERT_EQ(*v, i) << "chan[" << cap << "]";
  }

  constexpr int kP = 4;
  constexpr int kL = 1000;
  for (int p = 0; p < kP; ++p) {
    cf::go([c]() mutable {
      for (int i = 0; i < kL; ++i) c.send(i);
    });
  }
  auto done = cf::make_chan<std::map<int, int>>();
  for (int p = 0; p < kP; ++p) {
    cf::go([c, done]() mutable {
      std::map<int, int> recv;
      for (int i = 0; i < kL; ++i) {
        auto v = c.recv();
        if (v) recv[*v] += 1;
      }
      done.send(std::move(recv));
    });
  }
  std::map<int, int> recv;
  for (int p = 0; p < kP; ++p) {
    auto m = done.recv();
    ASSERT_TRUE(m.has_value());
    for (auto [k, v] : *m) recv[k] += v;
  }
  ASSERT_EQ(recv.size(), static_cast<std::size_t>(kL)) << "chan[" << cap << "]";
  for (auto [k, v] : recv) EXPECT_EQ(v, kP) << "chan[" << cap << "]: value " << k;
}

// TestChan, last block: size and capacity.
void check_len_cap(int cap) {
  auto c = cf::make_chan<int>(cap);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.capacity(), static_cast<std::size_t>(cap));
  for (int i = 0; i < cap; ++i) c.send(i);
  EXPECT_EQ(c.size(), static_cast<std::size_t>(cap));
  EXPECT_EQ(c.capacity(), static_cast<std::size_t>(cap));
}

TEST_P(GoChan, Chan) {
  const int n = go_size(200, 20);
  for (int cap = 0; cap < n; ++cap) {
    check_recv_from_empty_blocks(cap);
    check_send_to_full_blocks(cap);
    check_recv_from_closed(cap);
    check_close_unblocks_recv(cap);
    check_fifo_and_many(cap);
    check_len_cap(cap);
    if (HasFailure()) return;
  }
}

// TestNonblockRecvRace: a buffered value that is ready before the receiver starts is never missed
// by a non-blocking receive, even while the channel is being closed.
TEST_P(GoChan, NonblockRecvRace) {
  const int n = go_size(100000, 1000);
  std::atomic<int> not_ready{0};
  cf::WaitGroup wg;
  for (int i = 0; i < n && not_ready.load() == 0; ++i) {
    auto c = cf::make_chan<int>(1);
    c.send(1);
    wg.add(1);
    cf::go([c, &not_ready, &wg]() mutable {
      std::size_t idx =
          cf::select(cf::on_recv(c, [](std::optional<int>) {}), cf::on_default([] {}));
      if (idx == 1) not_ready.fetch_add(1);
      wg.done();
    });
    c.close();
    (void)c.recv();
  }
  wg.wait();
  EXPECT_EQ(not_ready.load(), 0) << "chan is not ready";
}

// TestNonblockSelectRace: select acts on the channels' state at one instant; from the moment the
// goroutine starts one of c1, c2 is always ready, so default must never run.
TEST_P(GoChan, NonblockSelectRace) {
  const int n = go_size(100000, 1000);
  auto done = cf::make_chan<bool>(1);
  for (int i = 0; i < n; ++i) {
    auto c1 = cf::make_chan<int>(1);
    auto c2 = cf::make_chan<int>(1);
    c1.send(1);
    cf::go([c1, c2, done]() mutable {
      std::size_t idx =
          cf::select(cf::on_recv(c1, [](std::optional<int>) {}),
                     cf::on_recv(c2, [](std::optional<int>) {}), cf::on_default([] {}));
      done.send(idx != 2);
    });
    c2.send(1);
    cf::select(cf::on_recv(c1, [](std::optional<int>) {}), cf::on_default([] {}));
    auto ok = done.recv();
    ASSERT_TRUE(ok.has_value());
    ASSERT_TRUE(*ok) << "no chan is ready (iteration " << i << ")";
  }
}

// TestNonblockSelectRace2: the same with close(c2) instead of a send.
TEST_P(GoChan, NonblockSelectRace2) {
  const int n = go_size(100000, 1000);
  auto done = cf::make_chan<bool>(1);
  for (int i = 0; i < n; ++i) {
    auto c1 = cf::make_chan<int>(1);
    auto c2 = cf::make_chan<int>();
    c1.send(1);
    cf::go([c1, c2, done]() mutable {
      std::size_t idx =
          cf::select(cf::on_recv(c1, [](std::optional<int>) {}),
                     cf::on_recv(c2, [](std::optional<int>) {}), cf::on_default([] {}));
      done.send(idx != 2);
    });
    c2.close();
    cf::select(cf::on_recv(c1, [](std::optional<int>) {}), cf::on_default([] {}));
    auto ok = done.recv();
    ASSERT_TRUE(ok.has_value());
    ASSERT_TRUE(*ok) << "no chan is ready (iteration " << i << ")";
  }
}

// TestSelfSelect: two green threads each select {send c; recv c} on one channel; no deadlock, and
// on an unbuffered channel a select never receives its own value.
TEST_P(GoChan, SelfSelect) {
  for (int cap : {0, 10}) {
    cf::WaitGroup wg;
    wg.add(2);
    auto c = cf::make_chan<int>(cap);
    std::atomic<int> self_receives{0};
    for (int p = 0; p < 2; ++p) {
      cf::go([c, p, cap, &wg, &self_receives]() mutable {
        auto on_value = [&](std::optional<int> v) {
          if (cap == 0 && v && *v == p) self_receives.fetch_add(1);
        };
        for (int i = 0; i < 1000; ++i) {
          if (p == 0 || i % 2 == 0) {
            cf::select(cf::on_send(c, p, [] {}), cf::on_recv(c, on_value));
          } else {
            cf::select(cf::on_recv(c, on_value), cf::on_send(c, p, [] {}));
          }
        }
        wg.done();
      });
    }
    wg.wait();
    EXPECT_EQ(self_receives.load(), 0) << "self receive (cap " << cap << ")";
  }
}

// TestSelectStress: 4 channels (cap 0, 0, 2, 3); per channel one sender and one receiver of N
// values; plus one green thread sending N values on each through a single select and one receiving
// N from each through a single select, disabling (nil-ing) a case once its N are done.
TEST_P(GoChan, SelectStress) {
  const int n = go_size(100000, 10000);
  std::array<cf::Chan<int>, 4> c = {cf::make_chan<int>(0), cf::make_chan<int>(0),
                                    cf::make_chan<int>(2), cf::make_chan<int>(3)};
  cf::WaitGroup wg;
  wg.add(10);
  for (int k = 0; k < 4; ++k) {
    cf::go([ch = c[k], n, &wg]() mutable {
      for (int i = 0; i < n; ++i) ch.send(0);
      wg.done();
    });
    cf::go([ch = c[k], n, &wg]() mutable {
      for (int i = 0; i < n; ++i) (void)ch.recv();
      wg.done();
    });
  }
  cf::go([c, n, &wg]() {
    std::array<int, 4> cnt{};
    auto c1 = c;
    for (int i = 0; i < 4 * n; ++i) {
      auto bump = [&](int k) {
        return [&, k] {
          if (++cnt[k] == n) c1[k] = cf::Chan<int>{};
        };
      };
      cf::select(cf::on_send(c1[3], 0, bump(3)), cf::on_send(c1[2], 0, bump(2)),
                 cf::on_send(c1[0], 0, bump(0)), cf::on_send(c1[1], 0, bump(1)));
    }
    wg.done();
  });
  cf::go([c, n, &wg]() {
    std::array<int, 4> cnt{};
    auto c1 = c;
    for (int i = 0; i < 4 * n; ++i) {
      auto bump = [&](int k) {
        return [&, k](std::optional<int>) {
          if (++cnt[k] == n) c1[k] = cf::Chan<int>{};
        };
      };
      cf::select(cf::on_recv(c1[0], bump(0)), cf::on_recv(c1[1], bump(1)),
                 cf::on_recv(c1[2], bump(2)), cf::on_recv(c1[3], bump(3)));
    }
    wg.done();
  });
  wg.wait();
}

// TestSelectFairness: with two always-ready buffered channels among four cases, each is chosen
// half the time, within Go's six-nines margin 4.891676 / (2 sqrt(trials)) = 2.446 %.
TEST_P(GoChan, SelectFairness) {
  constexpr int kTrials = 10000;
  auto c1 = cf::make_chan<uint8_t>(kTrials + 1);
  auto c2 = cf::make_chan<uint8_t>(kTrials + 1);
  for (int i = 0; i < kTrials + 1; ++i) {
    c1.send(1);
    c2.send(2);
  }
  auto c3 = cf::make_chan<uint8_t>();
  auto c4 = cf::make_chan<uint8_t>();
  auto out = cf::make_chan<uint8_t>();
  auto done = cf::make_chan<uint8_t>();
  cf::WaitGroup wg;
  wg.add(1);
  cf::go([=, &wg]() mutable {
    for (;;) {
      uint8_t b = 0;
      auto take = [&](std::optional<uint8_t> v) { b = v.value_or(0); };
      cf::select(cf::on_recv(c3, take), cf::on_recv(c4, take), cf::on_recv(c1, take),
                 cf::on_recv(c2, take));
      bool stop = false;
      cf::select(cf::on_send(out, b, [] {}),
                 cf::on_recv(done, [&](std::optional<uint8_t>) { stop = true; }));
      if (stop) break;
    }
    wg.done();
  });
  int cnt1 = 0;
  int cnt2 = 0;
  for (int i = 0; i < kTrials; ++i) {
    auto b = out.recv();
    ASSERT_TRUE(b.has_value());
    if (*b == 1) {
      ++cnt1;
    } else if (*b == 2) {
      ++cnt2;
    } else {
      FAIL() << "unexpected value " << int(*b) << " on channel";
    }
  }
  const double r = static_cast<double>(cnt1) / kTrials;
  const double e = std::abs(r - 0.5);
  const double bound = 4.891676 / (2 * std::sqrt(static_cast<double>(kTrials)));
  RecordProperty("cnt1", cnt1);
  RecordProperty("cnt2", cnt2);
  EXPECT_LE(e, bound) << "unfair select: in " << kTrials << " trials, results were " << cnt1 << ", "
                      << cnt2;
  done.close();
  wg.wait();
}

// TestPseudoRandomSend: select {c <- 1; c <- 0} picks both cases (each more than 10% of 100).
TEST_P(GoChan, PseudoRandomSend) {
  constexpr int kN = 100;
  for (int cap : {0, kN}) {
    auto c = cf::make_chan<int>(cap);
    std::vector<int> l(kN);
    auto finished = cf::make_chan<bool>();
    cf::go([c, &l, finished]() mutable {
      for (int i = 0; i < kN; ++i) {
        cf::yield();
        l[i] = c.recv().value_or(-1);
      }
      finished.send(true);
    });
    for (int i = 0; i < kN; ++i) {
      cf::select(cf::on_send(c, 1, [] {}), cf::on_send(c, 0, [] {}));
    }
    ASSERT_TRUE(finished.recv().has_value());
    int n0 = 0;
    int n1 = 0;
    for (int v : l) {
      n0 += (v + 1) % 2;
      n1 += v;
    }
    EXPECT_TRUE(n0 > kN / 10 && n1 > kN / 10) << "want pseudorandom, got " << n0 << " zeros and "
                                              << n1 << " ones (chan cap " << cap << ")";
  }
}

// TestMultiConsumer: 23 workers range over q and forward to r; the feeder closes q, waits for the
// workers, closes r. The count and the sum are exact. `expect` is written by the feeder and read
// here after r is drained: the close/receive pair must order them (TSan checks it).
TEST_P(GoChan, MultiConsumer) {
  constexpr int kWork = 23;
  constexpr int kIter = 271828;
  static constexpr std::array<int, 10> kPn = {2, 3, 7, 11, 13, 17, 19, 23, 27, 31};
  auto q = cf::make_chan<int>(kWork * 3);
  auto r = cf::make_chan<int>(kWork * 3);
  auto wg = std::make_shared<cf::WaitGroup>();
  for (int w = 0; w < kWork; ++w) {
    wg->add(1);
    cf::go([q, r, w, wg]() mutable {
      for (int v : q) {
        if (kPn[w % kPn.size()] == v) cf::yield();  // mess with the FIFO-ish nature of range
        r.send(v);
      }
      wg->done();
    });
  }
  int64_t expect = 0;
  cf::go([q, r, wg, &expect]() mutable {
    for (int i = 0; i < kIter; ++i) {
      int v = kPn[i % kPn.size()];
      expect += v;
      q.send(v);
    }
    q.close();
    wg->wait();
    r.close();
  });
  int n = 0;
  int64_t s = 0;
  for (int v : r) {
    ++n;
    s += v;
  }
  EXPECT_EQ(n, kIter);
  EXPECT_EQ(s, expect);
}

// TestSelectDuplicateChannel: a select may queue one green thread on the same channel twice. A
// selects {<-c, <-c, <-d}; B blocks on <-c; waking A through d dequeues both of A's records from c;
// then c <- 8 must wake B (an earlier Go bug woke the already-running A instead).
// Go sleeps 1 ms so that A queues on c before B; here the same short pause only makes that order
// likely: the property (B wakes) must hold in either order.
TEST_P(GoChan, SelectDuplicateChannel) {
  auto c = cf::make_chan<int>();
  auto d = cf::make_chan<int>();
  auto e = cf::make_chan<int>();
  cf::go("A", [c, d, e]() mutable {
    cf::select(cf::on_recv(c, [](std::optional<int>) {}), cf::on_recv(c, [](std::optional<int>) {}),
               cf::on_recv(d, [](std::optional<int>) {}));
    e.send(9);
  });
  give_others_a_chance();
  auto b_done = cf::make_chan<int>(1);
  cf::go("B", [c, b_done]() mutable { b_done.send(c.recv().value_or(-1)); });
  give_others_a_chance();
  d.send(7);
  EXPECT_EQ(e.recv(), std::optional<int>(9));
  c.send(8);
  EXPECT_EQ(b_done.recv(), std::optional<int>(8));
}

CHANFLOW_INSTANTIATE_WORKERS(GoChan);

}  // namespace
