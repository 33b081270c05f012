// select: readiness, default, closed and nil channels, fairness, exactly-once completion.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "runtime_test_util.h"

namespace {

using Select = WorkersFixture;

TEST_P(Select, DefaultOnlyWhenNothingReady) {
  auto a = cf::make_chan<int>(1);
  int ran = -1;
  EXPECT_EQ(cf::select(cf::on_recv(a, [&](std::optional<int>) { ran = 0; }),
                       cf::on_default([&] { ran = 1; })),
            1u);
  EXPECT_EQ(ran, 1);
  a.send(3);
  std::optional<int> got;
  EXPECT_EQ(cf::select(cf::on_recv(a, [&](std::optional<int> v) { got = v; }),
                       cf::on_default([&] { ran = 2; })),
            0u);
  EXPECT_EQ(got, 3);
}

TEST_P(Select, ClosedChannelIsReadyWithNullopt) {
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  b.close();
  bool closed_seen = false;
  EXPECT_EQ(cf::select(cf::on_recv(a, [](std::optional<int>) {}),
                       cf::on_recv(b, [&](std::optional<int> v) { closed_seen = !v; })),
            1u);
  EXPECT_TRUE(closed_seen);
}

TEST_P(Select, SendOnClosedThrowsWhenChosen) {
  auto a = cf::make_chan<int>(1);
  a.close();
  EXPECT_THROW(cf::select(cf::on_send(a, 1, [] {})), cf::ChannelClosedError);
}

TEST_P(Select, NilChannelsNeverFire) {
  cf::Chan<int> nil;
  EXPECT_EQ(cf::select(cf::on_recv(nil, [](std::optional<int>) {}), cf::on_send(nil, 1, [] {}),
                       cf::on_default([] {})),
            2u);
}

TEST_P(Select, BlocksUntilACaseIsReady) {
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<std::string>();
  cf::go([b] { b.send("hello"); });
  std::string got;
  const std::size_t i = cf::select(cf::on_recv(a, [](std::optional<int>) {}),
                                   cf::on_recv(b, [&](std::optional<std::string> v) { got = *v; }));
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(got, "hello");
}

TEST_P(Select, BlockedSendCaseDelivers) {
  auto a = cf::make_chan<int>();
  cf::go([a] {
    bool sent = false;
    cf::select(cf::on_send(a, 42, [&] { sent = true; }));
    EXPECT_TRUE(sent);
  });
  EXPECT_EQ(a.recv(), 42);
}

TEST_P(Select, SameChannelInSeveralCases) {
  auto a = cf::make_chan<int>(1);
  a.send(1);
  int which = -1;
  const std::size_t i = cf::select(cf::on_recv(a, [&](std::optional<int>) { which = 0; }),
                                   cf::on_recv(a, [&](std::optional<int>) { which = 1; }),
                                   cf::on_send(a, 2, [&] { which = 2; }));
  EXPECT_EQ(static_cast<int>(i), which);
  // Parked on the same channel twice, then woken once.
  auto u = cf::make_chan<int>();
  auto done = cf::make_chan<std::size_t>(1);
  cf::go([u, done] {
    done.send(cf::select(cf::on_recv(u, [](std::optional<int>) {}),
                         cf::on_recv(u, [](std::optional<int>) {})));
  });
  wait_until([&] { return parked_receivers(u.base()) == 2; });
  u.send(9);
  EXPECT_LT(*done.recv(), 2u);
  EXPECT_EQ(parked_receivers(u.base()), 0u);  // the loser was dequeued
}

TEST_P(Select, UniformAmongReadyCases) {
  auto a = cf::make_chan<int>(1);
  auto b = cf::make_chan<int>(1);
  auto c = cf::make_chan<int>(1);
  constexpr int kTrials = 30000;
  int counts[3] = {0, 0, 0};
  for (int t = 0; t < kTrials; ++t) {
    if (a.size() == 0) a.send(0);
    if (b.size() == 0) b.send(1);
    if (c.size() == 0) c.send(2);
    counts[cf::select(cf::on_recv(a, [](std::optional<int>) {}),
                      cf::on_recv(b, [](std::optional<int>) {}),
                      cf::on_recv(c, [](std::optional<int>) {}))]++;
  }
  // Binomial(30000, 1/3): sd = 81.6; allow 5 sd.
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(counts[k], kTrials / 3.0, 5 * 81.65) << "case " << k;
}

TEST_P(Select, ExactlyOneCaseCompletes) {
  // Many selects race over two channels with receivers on both: every value sent by a select is
  // received exactly once, and a select body ran once per select.
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  constexpr int kSelectors = 16;
  constexpr int kEach = 300;
  std::atomic<int> bodies{0};
  cf::WaitGroup wg;
  for (int s = 0; s < kSelectors; ++s) {
    wg.add();
    cf::go("selector", [&, a, b] {
      for (int i = 0; i < kEach; ++i) {
        cf::select(cf::on_send(a, 1, [&] { bodies++; }), cf::on_send(b, 1, [&] { bodies++; }));
      }
      wg.done();
    });
  }
  std::atomic<int> received{0};
  cf::WaitGroup rx;
  for (auto ch : {a, b}) {
    rx.add();
    cf::go("receiver", [&, ch] {
      for (int v : ch) received += v;
      rx.done();
    });
  }
  wg.wait();
  a.close();
  b.close();
  rx.wait();
  EXPECT_EQ(bodies.load(), kSelectors * kEach);
  EXPECT_EQ(received.load(), kSelectors * kEach);
}

TEST_P(Select, SelectVersusSelect) {
  // Both sides select: a sender select and a receiver select must pair up.
  auto a = cf::make_chan<int>();
  auto b = cf::make_chan<int>();
  constexpr int kN = 2000;
  cf::go([a, b] {
    for (int i = 0; i < kN; ++i) cf::select(cf::on_send(a, i, [] {}), cf::on_send(b, i, [] {}));
  });
  int64_t sum = 0;
  for (int i = 0; i < kN; ++i) {
    cf::select(cf::on_recv(a, [&](std::optional<int> v) { sum += *v; }),
               cf::on_recv(b, [&](std::optional<int> v) { sum += *v; }));
  }
  EXPECT_EQ(sum, int64_t{kN} * (kN - 1) / 2);
}

TEST_P(Select, RuntimeFormManyCases) {
  constexpr int kN = 40;  // beyond the inline scratch space
  std::vector<cf::Chan<int>> chans;
  for (int i = 0; i < kN; ++i) chans.push_back(cf::make_chan<int>(1));
  std::vector<std::optional<int>> outs(kN);
  std::vector<cf::SelectCase> cases;
  for (int i = 0; i < kN; ++i) cases.push_back(cf::SelectCase::recv(chans[i], outs[i]));
  cf::go([&] { chans[33].send(330); });
  EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cases)), 33u);
  EXPECT_EQ(outs[33], 330);
  cases.push_back(cf::SelectCase::default_case());
  EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cases)), static_cast<std::size_t>(kN));
  cases.push_back(cf::SelectCase::default_case());
  EXPECT_THROW(cf::select(std::span<cf::SelectCase>(cases)), cf::Error);
}

// Seconds of the fastest of 5 selects over `cases` (nothing ready, a default last: each runs the
// lock-free poll, the lock order over every channel, every lock and the locked poll).
double fastest_select_seconds(std::vector<cf::SelectCase>& cases) {
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cases)), cases.size() - 1);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Seconds of the fastest of 5 passes over `chans` in a random order, each channel's lock taken
// and released and its state read: the work a select over them does per case, with nothing to
// sort.
double fastest_lock_pass_seconds(std::vector<cf::detail::ChanBase*> chans) {
  std::shuffle(chans.begin(), chans.end(), std::mt19937(37));
  double best = 1e9;
  std::size_t ready = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (cf::detail::ChanBase* c : chans) {
      ready += cf::detail::recv_may_proceed(c) ? 1 : 0;
      cf::detail::ChanAlgo::lock(c);
      ready += cf::detail::ChanAlgo::has_buffered(c) ? 1 : 0;
      cf::detail::ChanAlgo::unlock(c);
    }
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  EXPECT_EQ(ready, 0u);
  return best;
}

// One select over n cases costs O(n log n): its lock order is sorted, not built by insertion
// (n^2/4 moves: 100,000 cases took seconds a call). Checked against a pass over the same
// channels' locks in a random order (the select's work per case without the sort or its scratch
// arrays), measured alternately, so that a loaded machine or a sanitizer slows both alike: about
// 30x that pass with the sort (16,384 channels: 1.9 ms against 0.066 ms), 1,800x by insertion
// (110 ms), growing with n. n is
// CHANFLOW_TEST_SELECT_CASES (the stress test: 100,000), 32,768 by default.
TEST_P(Select, ManyCasesCostNLogN) {
  std::size_t n = 32768;
  if (const char* env = std::getenv("CHANFLOW_TEST_SELECT_CASES")) n = std::stoul(env);
  std::vector<cf::Chan<int>> chans;
  std::vector<cf::detail::ChanBase*> bases;
  for (std::size_t i = 0; i < n / 2; ++i) {
    chans.push_back(cf::make_chan<int>(1));
    bases.push_back(chans.back().base());
  }
  std::vector<std::optional<int>> outs(n);
  // Each channel twice: the duplicates must still be locked once.
  std::vector<cf::SelectCase> cases;
  for (std::size_t i = 0; i < n; ++i)
    cases.push_back(cf::SelectCase::recv(chans[i % (n / 2)], outs[i]));
  cases.push_back(cf::SelectCase::default_case());
  double t_select = 1e9, t_pass = 1e9;
  for (int round = 0; round < 3; ++round) {
    t_select = std::min(t_select, fastest_select_seconds(cases));
    t_pass = std::min(t_pass, fastest_lock_pass_seconds(bases));
  }
  std::printf(
      "select over %zu cases (%zu channels): %.3f ms; a pass over their locks: %.3f ms "
      "(x%.1f)\n",
      n, n / 2, t_select * 1e3, t_pass * 1e3, t_select / t_pass);
  EXPECT_LT(t_select, 250 * t_pass) << "n = " << n;
  // Still a working select: a ready case among the many is found and performed.
  chans[n / 2 - 1].try_send(7);
  EXPECT_EQ(cf::select(std::span<cf::SelectCase>(cases.data(), n)) % (n / 2), n / 2 - 1);
}

TEST_P(Select, BodyMayUseTheSameChannel) {
  auto a = cf::make_chan<int>(1);
  a.send(1);
  cf::select(cf::on_recv(a, [&](std::optional<int> v) { a.send(*v + 1); }));
  EXPECT_EQ(a.recv(), 2);
}

TEST_P(Select, DefaultNeverHidesAParkedPartyOrAClose) {
  // Readiness that is only a parked party (unbuffered) or a close must win over default, in the
  // one-case form (the non-blocking operation) and in the multi-case form alike.
  auto u = cf::make_chan<int>();
  cf::go([u] { u.send(5); });
  wait_until([&] { return parked_senders(u.base()) == 1; });
  std::optional<int> got;
  EXPECT_EQ(
      cf::select(cf::on_recv(u, [&](std::optional<int> v) { got = v; }), cf::on_default([] {})),
      0u);
  EXPECT_EQ(got, 5);
  cf::go([u] { u.send(6); });
  wait_until([&] { return parked_senders(u.base()) == 1; });
  EXPECT_EQ(cf::select(cf::on_default([] {}), cf::on_recv(cf::Chan<int>(), [](auto) {}),
                       cf::on_recv(u, [&](std::optional<int> v) { got = v; })),
            2u);
  EXPECT_EQ(got, 6);

  auto back = cf::make_chan<std::optional<int>>(1);
  cf::go([u, back] { back.send(u.recv()); });
  wait_until([&] { return parked_receivers(u.base()) == 1; });
  EXPECT_EQ(cf::select(cf::on_default([] {}), cf::on_send(u, 7, [] {})), 1u);
  EXPECT_EQ(back.recv(), std::optional<int>(7));

  // A parked select is a parked party too.
  cf::go([u] { cf::select(cf::on_send(u, 8, [] {}), cf::on_recv(cf::Chan<int>(), [](auto) {})); });
  wait_until([&] { return parked_senders(u.base()) == 1; });
  EXPECT_EQ(
      cf::select(cf::on_recv(u, [&](std::optional<int> v) { got = v; }), cf::on_default([] {})),
      0u);
  EXPECT_EQ(got, 8);

  u.close();
  bool closed_seen = false;
  EXPECT_EQ(cf::select(cf::on_recv(u, [&](std::optional<int> v) { closed_seen = !v; }),
                       cf::on_default([] {})),
            0u);
  EXPECT_TRUE(closed_seen);
  EXPECT_THROW(cf::select(cf::on_send(u, 1, [] {}), cf::on_default([] {})), cf::ChannelClosedError);
  cf::Chan<int> nil;
  EXPECT_EQ(cf::select(cf::on_send(nil, 1, [] {}), cf::on_default([] {})), 1u);
  EXPECT_EQ(cf::select(cf::on_default([] {}), cf::on_recv(nil, [](auto) {})), 0u);
}

TEST_P(Select, CasesBorrowLvaluesAndOwnTemporaries) {
  // A case built from a temporary handle owns it: the channel outlives the expression that made
  // it (ASan would see a use after free otherwise).
  auto make_ready = [] {
    auto c = cf::make_chan<std::string>(1);
    c.send("kept alive");
    return c;
  };
  std::string got;
  EXPECT_EQ(cf::select(cf::on_recv(make_ready(), [&](std::optional<std::string> v) { got = *v; }),
                       cf::on_default([] {})),
            0u);
  EXPECT_EQ(got, "kept alive");
  got.clear();
  EXPECT_EQ(cf::select(cf::on_recv(cf::Chan<int>(), [](auto) {}),
                       cf::on_recv(make_ready(), [&](std::optional<std::string> v) { got = *v; })),
            1u);
  EXPECT_EQ(got, "kept alive");
  // A stored case (an lvalue) is copied by select, so it can run again; a temporary case's
  // handle is moved, not copied (the owned handle keeps one reference).
  auto a = cf::make_chan<int>(2);
  a.send(1);
  a.send(2);
  int sum = 0;
  auto stored = cf::on_recv(a, [&](std::optional<int> v) { sum += *v; });
  EXPECT_EQ(cf::select(stored, cf::on_default([] {})), 0u);
  EXPECT_EQ(cf::select(stored), 0u);
  EXPECT_EQ(sum, 3);
  // The body may drop the caller's handle to the chosen case's channel (nil it for later rounds).
  auto b = cf::make_chan<int>(1);
  b.send(4);
  cf::select(cf::on_recv(b,
                         [&](std::optional<int> v) {
                           sum += *v;
                           b = cf::Chan<int>();
                         }),
             cf::on_default([] {}));
  EXPECT_EQ(sum, 7);
  EXPECT_TRUE(b.is_nil());
}

TEST_P(Select, LockFreePollRacingSendersAndClose) {
  // Multi-case selects whose first pass locks only the channel it takes from race senders on
  // both channels and the closes: every value is received exactly once, closes are seen.
  auto a = cf::make_chan<int64_t>(4);
  auto b = cf::make_chan<int64_t>();
  constexpr int64_t kPer = 3000;
  cf::WaitGroup senders;
  for (auto ch : {a, b}) {
    senders.add();
    cf::go("sender", [&, ch] {
      for (int64_t i = 1; i <= kPer; ++i) ch.send(i);
      ch.close();
      senders.done();
    });
  }
  std::atomic<int64_t> sum{0};
  cf::WaitGroup rx;
  for (int r = 0; r < 3; ++r) {
    rx.add();
    cf::go("receiver", [&, a, b] {
      cf::Chan<int64_t> ca = a;
      cf::Chan<int64_t> cb = b;
      while (true) {
        auto take = [&](cf::Chan<int64_t>& self) {
          return [&](std::optional<int64_t> v) {
            if (v) {
              sum += *v;
            } else {
              self = cf::Chan<int64_t>();  // closed: never fires again
            }
          };
        };
        if (ca.is_nil() && cb.is_nil()) break;
        cf::select(cf::on_recv(ca, take(ca)), cf::on_recv(cb, take(cb)));
      }
      rx.done();
    });
  }
  senders.wait();
  rx.wait();
  EXPECT_EQ(sum.load(), 2 * kPer * (kPer + 1) / 2);
}

INSTANTIATE_TEST_SUITE_P(Workers, Select, CHANFLOW_WORKER_COUNTS);

}  // namespace
