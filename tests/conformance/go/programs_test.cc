// Ports of Go's small channel programs: test/chan/fifo.go, goroutines.go, nonblock.go,
// zerosize.go and doubleselect.go. Each Go `main` runs as a green thread named "main" while the
// test's OS thread waits for it. Run with 1, 2 and 4 workers (doubleselect: 2, as Go's).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;
using cf::testing::run_go_main;

#if defined(__SANITIZE_THREAD__)
#define CHANFLOW_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHANFLOW_TEST_TSAN 1
#endif
#endif

namespace {

class GoPrograms : public cf::testing::WorkersTest {};

// fifo.go: a buffered channel is FIFO; an unbuffered channel delivers to its waiting receivers in
// the order they queued, enforced by a chain of 10 green threads that each wait for their turn.
TEST_P(GoPrograms, Fifo) {
  constexpr int kN = 10;
  run_go_main([] {
    // AsynchFifo
    auto ch = cf::make_chan<int>(kN);
    for (int i = 0; i < kN; ++i) ch.send(i);
    for (int i = 0; i < kN; ++i) EXPECT_EQ(ch.recv(), std::optional<int>(i)) << "bad receive";

    // SynchFifo
    auto sch = cf::make_chan<int>();
    auto in = cf::make_chan<int>();
    auto start = in;
    std::atomic<int> bad{-1};
    for (int i = 0; i < kN; ++i) {
      auto out = cf::make_chan<int>();
      cf::go([sch, i, in, out, &bad]() mutable {
        (void)in.recv();
        if (sch.recv() != std::optional<int>(i)) bad = i;
        out.send(1);
      });
      in = out;
    }
    start.send(0);
    for (int i = 0; i < kN; ++i) sch.send(i);
    (void)in.recv();
    EXPECT_EQ(bad.load(), -1) << "chain stage received out of order";
  });
}

// goroutines.go: a daisy chain of 10,000 green threads each doing `left <- <-right`; the value fed
// at the right end arrives at the left, and every stage finishes.
TEST_P(GoPrograms, Goroutines) {
#if defined(CHANFLOW_TEST_TSAN)
  // ThreadSanitizer tracks every green thread as a TSan fiber, and libtsan allows at most 8128
  // threads and fibers alive at once ("ThreadSanitizer: Thread limit (8128 threads) exceeded.
  // Dying."), each holding ~0.8 MB of its state: all 10,000 stages are alive together, so under
  // TSan the chain has 1,000.
  constexpr int kN = 1000;
#else
  constexpr int kN = 10000;
#endif
  run_go_main([] {
    auto leftmost = cf::make_chan<int>();
    auto right = leftmost;
    auto left = leftmost;
    for (int i = 0; i < kN; ++i) {
      right = cf::make_chan<int>();
      cf::go([left, right]() mutable { left.send(right.recv().value()); });
      left = right;
    }
    cf::go([right]() mutable { right.send(1); });
    EXPECT_EQ(leftmost.recv(), std::optional<int>(1));
  });
}

// nonblock.go, for one element type: a non-blocking receive on an empty channel never blocks and
// never succeeds; with a peer ready to receive (send), a non-blocking send (receive) eventually
// succeeds. Go retries up to 10,000 times with a short pause between tries; so does this.
template <class T>
void nonblock_round(int buffer, T to_receiver, T from_sender) {
  constexpr int kMaxTries = 10000;
  auto pause = [] {
    cf::yield();
    cf::sleep_for(std::chrono::microseconds(10));
    cf::yield();
  };
  auto c = cf::make_chan<T>(buffer);
  auto sync = cf::make_chan<bool>();

  EXPECT_EQ(cf::select(cf::on_recv(c, [](std::optional<T>) { ADD_FAILURE() << "blocked sender"; }),
                       cf::on_default([] {})),
            1u);

  // A receiver appears: a non-blocking send eventually succeeds.
  cf::go([c, sync, to_receiver]() mutable {
    EXPECT_EQ(c.recv(), std::optional<T>(to_receiver)) << "receiver value";
    sync.send(true);
  });
  int tries = 0;
  while (cf::select(cf::on_send(c, to_receiver, [] {}), cf::on_default([] {})) != 0) {
    ASSERT_LE(++tries, kMaxTries) << "receiver buffer=" << buffer;
    pause();
  }
  (void)sync.recv();

  // A sender appears: a non-blocking receive eventually succeeds.
  cf::go([c, sync, from_sender]() mutable {
    c.send(from_sender);
    sync.send(true);
  });
  if (buffer > 0) (void)sync.recv();
  tries = 0;
  std::optional<T> got;
  while (cf::select(cf::on_recv(c, [&](std::optional<T> v) { got = v; }), cf::on_default([] {})) !=
         0) {
    ASSERT_LE(++tries, kMaxTries) << "sender buffer=" << buffer;
    pause();
  }
  EXPECT_EQ(got, std::optional<T>(from_sender)) << "sender value";
  if (buffer == 0) (void)sync.recv();
}

TEST_P(GoPrograms, Nonblock) {
  run_go_main([] {
    for (int buffer = 0; buffer < 2; ++buffer) {
      nonblock_round<int32_t>(buffer, 123, 234);
      nonblock_round<int64_t>(buffer, 123456, 234567);
      nonblock_round<bool>(buffer, true, true);
      nonblock_round<std::string>(buffer, "hello", "hello again");
    }
  });
}

// zerosize.go: channels of empty types, buffered and unbuffered, carry values (and close).
struct Empty {};

template <class T>
void zero_size_round(std::size_t cap) {
  auto c = cf::make_chan<T>(cap);
  EXPECT_EQ(c.capacity(), cap);
  cf::go([c]() mutable {
    for (int i = 0; i < 3; ++i) c.send(T{});
    c.close();
  });
  int n = 0;
  for (T v : c) {
    (void)v;
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_TRUE(c.closed());
}

TEST_P(GoPrograms, ZeroSize) {
  static_assert(std::is_empty_v<Empty>);
  run_go_main([] {
    zero_size_round<std::array<std::byte, 0>>(0);
    zero_size_round<std::array<std::byte, 0>>(1);
    zero_size_round<Empty>(0);
    zero_size_round<Empty>(1);
    // And in a select, beside a non-empty type.
    auto e = cf::make_chan<Empty>(1);
    EXPECT_EQ(cf::select(cf::on_send(e, Empty{}, [] {}), cf::on_default([] {})), 0u);
    bool got = false;
    EXPECT_EQ(cf::select(cf::on_recv(e, [&](std::optional<Empty> v) { got = v.has_value(); }),
                         cf::on_default([] {})),
              0u);
    EXPECT_TRUE(got);
  });
}

CHANFLOW_INSTANTIATE_WORKERS(GoPrograms);

constexpr int kIterations = 100000;

// doubleselect.go: one sender selects over 4 unbuffered channels for n = 100,000 values; 4
// forwarders multiplex them into one channel; no value is seen twice (and, stronger than Go, every
// value is seen). GOMAXPROCS(2) in Go: 2 workers here.
TEST(GoDoubleSelect, NoValueSeenTwice) {
  cf::Scheduler scheduler(cf::SchedulerOptions{.workers = 2});
  cf::ScopedDefaultScheduler use(scheduler);
  run_go_main([] {
    std::array<cf::Chan<int>, 4> c = {cf::make_chan<int>(), cf::make_chan<int>(),
                                      cf::make_chan<int>(), cf::make_chan<int>()};
    auto done = cf::make_chan<bool>();
    auto cmux = cf::make_chan<int>();
    cf::go("sender", [c]() mutable {
      for (int i = 0; i < kIterations; ++i) {
        cf::select(cf::on_send(c[0], i, [] {}), cf::on_send(c[1], i, [] {}),
                   cf::on_send(c[2], i, [] {}), cf::on_send(c[3], i, [] {}));
      }
      for (auto& ch : c) ch.close();
    });
    for (int k = 0; k < 4; ++k) {
      cf::go("mux", [out = cmux, in = c[k], done]() mutable {
        for (int v : in) out.send(v);
        done.send(true);
      });
    }
    cf::go("closer", [done, cmux]() mutable {
      for (int k = 0; k < 4; ++k) (void)done.recv();
      cmux.close();
    });
    std::vector<bool> seen(kIterations, false);
    int duplicates = 0;
    int out_of_range = 0;
    int count = 0;
    for (int v : cmux) {
      if (v < 0 || v >= kIterations) {
        ++out_of_range;
        continue;
      }
      if (seen[v]) ++duplicates;
      seen[v] = true;
      ++count;
    }
    EXPECT_EQ(duplicates, 0) << "got duplicate values";
    EXPECT_EQ(out_of_range, 0) << "got values never sent";
    EXPECT_EQ(count, kIterations);
  });
}

}  // namespace
