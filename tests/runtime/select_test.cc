// select: readiness, default, closed and nil channels, fairness, exactly-once completion.
#include <atomic>
#include <cmath>
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

TEST_P(Select, BodyMayUseTheSameChannel) {
  auto a = cf::make_chan<int>(1);
  a.send(1);
  cf::select(cf::on_recv(a, [&](std::optional<int> v) { a.send(*v + 1); }));
  EXPECT_EQ(a.recv(), 2);
}

INSTANTIATE_TEST_SUITE_P(Workers, Select, CHANFLOW_WORKER_COUNTS);

}  // namespace
