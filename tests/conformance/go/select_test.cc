// Ports of Go's test/chan/select.go, select2.go, select3.go, select6.go and select7.go: select's
// evaluation of send cases, its memory footprint, its blocking table, waiter-queue integrity and
// the nine send/recv × plain/select combinations. Run with 1, 2 and 4 workers.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;
using cf::testing::run_go_main;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHANFLOW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHANFLOW_TEST_SANITIZED 1
#endif
#endif

namespace {

class GoSelect : public cf::testing::WorkersTest {};

// select.go: every send case's value is evaluated once per select (also on nil channels), a case
// disabled (nil-ed) after it fires never fires again, default runs once none is ready.
TEST_P(GoSelect, Select) {
  run_go_main([] {
    unsigned counter = 0;
    unsigned shift = 0;
    auto get_value = [&]() -> unsigned {
      ++counter;
      return 1u << shift;
    };
    auto send = [&](cf::Chan<unsigned> a, cf::Chan<unsigned> b) {
      int i = 0;
      for (;;) {
        bool stop = false;
        cf::select(cf::on_send(a, get_value(),
                               [&] {
                                 ++i;
                                 a = cf::Chan<unsigned>{};
                               }),
                   cf::on_send(b, get_value(),
                               [&] {
                                 ++i;
                                 b = cf::Chan<unsigned>{};
                               }),
                   cf::on_default([&] { stop = true; }));
        if (stop) break;
        ++shift;
      }
      return i;
    };
    auto a = cf::make_chan<unsigned>(1);
    auto b = cf::make_chan<unsigned>(1);
    EXPECT_EQ(send(a, b), 2);
    auto av = a.recv();
    auto bv = b.recv();
    ASSERT_TRUE(av && bv);
    EXPECT_EQ(*av | *bv, 3u) << "bad values " << *av << " " << *bv;
    EXPECT_EQ(send(a, cf::Chan<unsigned>{}), 1);
    EXPECT_EQ(counter, 10u);
  });
}

// Bytes the allocator has handed out and not taken back (all arenas, mmapped chunks included).
[[maybe_unused]] std::size_t heap_in_use() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// select2.go: 100,000 two-case selects, twice; the second round must not grow the heap by more
// than 110,000 bytes (no per-select leak, waiter records reused or freed).
TEST_P(GoSelect, Select2NoMemoryGrowth) {
#ifdef CHANFLOW_TEST_SANITIZED
  GTEST_SKIP() << "the sanitizer's allocator replaces malloc; mallinfo2 does not see it";
#else
  constexpr int kN = 100000;
  auto c = cf::make_chan<int>();
  auto dummy = cf::make_chan<int>();
  auto round = [&] {
    cf::WaitGroup wg;
    wg.add(1);
    cf::go([c, &wg]() mutable {
      for (int i = 0; i < kN; ++i) c.send(1);
      wg.done();
    });
    int dummies = 0;
    for (int i = 0; i < kN; ++i) {
      cf::select(cf::on_recv(c, [](std::optional<int>) {}),
                 cf::on_recv(dummy, [&](std::optional<int>) { ++dummies; }));
    }
    wg.wait();
    EXPECT_EQ(dummies, 0) << "dummy";
  };
  round();  // warm up
  malloc_trim(0);
  const std::size_t before = heap_in_use();
  round();
  malloc_trim(0);
  const std::size_t after = heap_in_use();
  const long long growth = static_cast<long long>(after) - static_cast<long long>(before);
  RecordProperty("heap_growth_bytes", std::to_string(growth));
  if (GetParam() == 1)
    std::printf("select2: heap growth over 100,000 selects: %lld bytes\n", growth);
  EXPECT_LE(growth, 110000) << "too much memory for 100,000 selects: " << growth << " bytes";
#endif
}

// --- select3.go -------------------------------------------------------------------------------

// Runs `f` in a green thread and checks that it has not completed after 10 ms (Go's window for
// "blocks"), then calls `release`, which must make `f` return (e.g. close the channel it waits on),
// and waits for it so that no green thread outlives the test.
void expect_blocks(const std::string& what, std::function<void()> f,
                   std::function<void()> release) {
  auto done = cf::make_chan<bool>(1);
  cf::go("select3-blocker", [f, done]() mutable {
    try {
      f();
    } catch (const cf::ChannelClosedError&) {
    }
    done.send(true);
  });
  bool completed = false;
  cf::select(cf::on_recv(done, [&](std::optional<bool>) { completed = true; }),
             cf::on_recv(cf::after(std::chrono::milliseconds(10)), [](auto) {}));
  EXPECT_FALSE(completed) << what << ": did not block";
  release();
  if (!completed) (void)done.recv();
}

// Runs `f` in a green thread and waits for it: it must complete without help. Where Go waits ten
// seconds to decide, waiting here is decisive: if `f` blocked forever the runtime reports a
// deadlock (nothing else can wake it) and the test fails with that report.
void expect_never_blocks(const std::string& what, std::function<void()> f) {
  auto done = cf::make_chan<bool>(1);
  cf::go("select3-runner", [f, done]() mutable {
    f();
    done.send(true);
  });
  try {
    EXPECT_TRUE(done.recv().has_value()) << what;
  } catch (const cf::DeadlockError& e) {
    ADD_FAILURE() << what << ": blocked: " << e.what();
  }
}

template <class F>
void expect_throws_closed(const std::string& what, F f) {
  EXPECT_THROW(f(), cf::ChannelClosedError) << what;
}

template <class F>
void expect_no_throw(const std::string& what, F f) {
  EXPECT_NO_THROW(f()) << what;
}

// The table of select3.go, case by case. Blocking operations are checked to block, then released by
// the test's own channel so the scheduler can be torn down.
TEST_P(GoSelect, Select3) {
  cf::Chan<int> nilch;
  auto closedch = cf::make_chan<int>();
  closedch.close();
  constexpr int kAsync = 1;

  // Sending to / receiving from a nil channel blocks. A plain nil op can never be woken, so here
  // the nil op is a select case beside a quit channel nothing else touches; the plain ops are
  // checked through the deadlock detector (GoSelect.Select3ForeverBlockingOps below).
  {
    auto quit = cf::make_chan<int>();
    bool nil_fired = false;
    expect_blocks(
        "send on nil chan",
        [=, &nil_fired]() mutable {
          cf::select(cf::on_send(nilch, 7, [&] { nil_fired = true; }),
                     cf::on_recv(quit, [](std::optional<int>) {}));
        },
        [=]() mutable { quit.close(); });
    EXPECT_FALSE(nil_fired);
  }
  {
    auto quit = cf::make_chan<int>();
    bool nil_fired = false;
    expect_blocks(
        "recv on nil chan",
        [=, &nil_fired]() mutable {
          cf::select(cf::on_recv(nilch, [&](std::optional<int>) { nil_fired = true; }),
                     cf::on_recv(quit, [](std::optional<int>) {}));
        },
        [=]() mutable { quit.close(); });
    EXPECT_FALSE(nil_fired);
  }

  // Nil cases inside a select are never selected.
  expect_no_throw("nil send case with default", [&] {
    std::size_t i = cf::select(cf::on_send(nilch, 7, [] { ADD_FAILURE() << "unreachable"; }),
                               cf::on_default([] {}));
    EXPECT_EQ(i, 1u);
  });
  expect_no_throw("nil recv case with default", [&] {
    std::size_t i =
        cf::select(cf::on_recv(nilch, [](std::optional<int>) { ADD_FAILURE() << "unreachable"; }),
                   cf::on_default([] {}));
    EXPECT_EQ(i, 1u);
  });

  // Sending to a channel with free buffer space never blocks.
  expect_never_blocks("send with free buffer space", [] {
    auto ch = cf::make_chan<int>(kAsync);
    ch.send(7);
  });

  // Receiving from a closed channel never blocks: it yields "closed" every time.
  expect_never_blocks("recv from closed chan", [closedch]() mutable {
    for (int i = 0; i < 10; ++i) {
      EXPECT_FALSE(closedch.recv().has_value()) << "value from a closed channel";
      EXPECT_FALSE(closedch.try_recv().has_value()) << "value from a closed channel";
    }
  });

  // Sending to a closed channel fails.
  expect_throws_closed("send on closed chan", [&] { closedch.send(7); });
  expect_throws_closed("try_send on closed chan", [&] { (void)closedch.try_send(7); });

  // Receiving from a non-ready channel blocks.
  {
    auto ch = cf::make_chan<int>();
    expect_blocks(
        "recv from a non-ready chan", [ch]() mutable { (void)ch.recv(); },
        [ch]() mutable { ch.close(); });
  }

  // Selects with only nil channels block (as select{} does: see Select3ForeverBlockingOps).
  {
    auto quit = cf::make_chan<int>();
    expect_blocks(
        "select on nil recv + nil send",
        [=]() mutable {
          cf::select(cf::on_recv(nilch, [](std::optional<int>) { ADD_FAILURE() << "nil"; }),
                     cf::on_send(nilch, 7, [] { ADD_FAILURE() << "nil"; }),
                     cf::on_recv(quit, [](std::optional<int>) {}));
        },
        [=]() mutable { quit.close(); });
  }

  // Selects with non-ready non-nil channels block.
  {
    auto ch = cf::make_chan<int>();
    bool fired_value = false;
    expect_blocks(
        "select on a non-ready chan",
        [ch, &fired_value]() mutable {
          cf::select(cf::on_recv(ch, [&](std::optional<int> v) { fired_value = v.has_value(); }));
        },
        [ch]() mutable { ch.close(); });
    EXPECT_FALSE(fired_value);
  }

  // Selects with default never block.
  expect_never_blocks("select with only default",
                      [] { EXPECT_EQ(cf::select(cf::on_default([] {})), 0u); });
  expect_never_blocks("select on nil recv with default", [nilch] {
    EXPECT_EQ(cf::select(cf::on_recv(nilch, [](std::optional<int>) { ADD_FAILURE(); }),
                         cf::on_default([] {})),
              1u);
  });
  expect_never_blocks("select on nil send with default", [nilch] {
    EXPECT_EQ(cf::select(cf::on_send(nilch, 7, [] { ADD_FAILURE(); }), cf::on_default([] {})), 1u);
  });

  // Selects with ready channels don't block (and don't take default).
  expect_never_blocks("select send on free buffer", [] {
    auto ch = cf::make_chan<int>(kAsync);
    EXPECT_EQ(cf::select(cf::on_send(ch, 7, [] {}), cf::on_default([] { ADD_FAILURE(); })), 0u);
  });
  expect_never_blocks("select recv on full buffer", [] {
    auto ch = cf::make_chan<int>(kAsync);
    ch.send(7);
    std::optional<int> got;
    EXPECT_EQ(cf::select(cf::on_recv(ch, [&](std::optional<int> v) { got = v; }),
                         cf::on_default([] { ADD_FAILURE(); })),
              0u);
    EXPECT_EQ(got, std::optional<int>(7));
  });

  // Selects with closed channels behave like ordinary operations.
  expect_never_blocks("select recv on closed chan", [closedch] {
    std::optional<int> got = 42;
    cf::select(cf::on_recv(closedch, [&](std::optional<int> v) { got = v; }));
    EXPECT_FALSE(got.has_value());
  });
  expect_throws_closed("select send on closed chan", [&] {
    cf::select(cf::on_send(closedch, 7, [] { ADD_FAILURE() << "send on closed succeeded"; }));
  });

  // A select must not get confused if it sees itself: send and receive on one unbuffered channel.
  {
    auto c = cf::make_chan<int>();
    std::atomic<bool> fired{false};
    expect_blocks(
        "select {c <- 1; <-c} on one unbuffered chan",
        [c, &fired]() mutable {
          cf::select(cf::on_send(c, 1, [&] { fired = true; }),
                     cf::on_recv(c, [&](std::optional<int> v) {
                       if (v) fired = true;
                     }));
        },
        [c]() mutable { c.close(); });
    EXPECT_FALSE(fired.load());
  }
}

// select3.go's "blocks forever" rows that no channel of the test can release: a plain send and a
// plain receive on a nil channel, an empty select, a select of nil cases only. Each is run as the
// only green thread while the test's OS thread waits for it: the runtime must report the deadlock
// (Go: "all goroutines are asleep"), naming the parked green thread. The parked green threads are
// unwound by the scheduler's destructor (as Go drops goroutines when main returns).
TEST_P(GoSelect, Select3ForeverBlockingOps) {
  struct Row {
    const char* name;
    std::function<void()> op;
  };
  cf::Chan<int> nilch;
  const Row rows[] = {
      {"nil-send", [nilch]() mutable { nilch.send(7); }},
      {"nil-recv", [nilch]() mutable { (void)nilch.recv(); }},
      {"empty-select", [] { cf::select(); }},
      {"nil-cases-select",
       [nilch] {
         cf::select(cf::on_recv(nilch, [](std::optional<int>) {}), cf::on_send(nilch, 7, [] {}));
       }},
  };
  for (const Row& row : rows) {
    auto done = cf::make_chan<bool>(1);
    cf::go(row.name, [op = row.op, done]() mutable {
      op();
      done.send(true);
    });
    try {
      (void)done.recv();
      ADD_FAILURE() << row.name << ": did not block";
    } catch (const cf::DeadlockError& e) {
      EXPECT_NE(std::string(e.what()).find(row.name), std::string::npos)
          << "the deadlock report should name the parked green thread '" << row.name
          << "': " << e.what();
    }
    // Each row leaves its green thread parked forever: later rows' reports name it too, which is
    // right (it is parked), so the check above looks only for the new row's name.
  }
}

// select6.go: a select case that lost (its channel c1) must not leave a stale record in c1's
// receive queue that steals a later send.
TEST_P(GoSelect, Select6) {
  run_go_main([] {
    auto c1 = cf::make_chan<bool>();
    auto c2 = cf::make_chan<bool>();
    auto c3 = cf::make_chan<bool>();
    std::atomic<bool> dummy{false};
    cf::go([c1]() mutable { (void)c1.recv(); });
    cf::go([c1, c2, c3, &dummy]() mutable {
      cf::select(cf::on_recv(c1, [&](std::optional<bool>) { dummy = true; }),
                 cf::on_recv(c2, [&](std::optional<bool>) { c3.send(true); }));
      (void)c1.recv();
    });
    cf::go([c2]() mutable { c2.send(true); });
    (void)c3.recv();
    c1.send(true);
    c1.send(true);
    EXPECT_FALSE(dummy.load()) << "dummy";
  });
}

// select7.go: send1/2/3 × recv1/2/3 — plain operation, one-case select, two-case select — meet.
TEST_P(GoSelect, Select7) {
  using Recv = std::function<void(cf::Chan<int>)>;
  const Recv recv1 = [](cf::Chan<int> c) { (void)c.recv(); };
  const Recv recv2 = [](cf::Chan<int> c) { cf::select(cf::on_recv(c, [](std::optional<int>) {})); };
  const Recv recv3 = [](cf::Chan<int> c) {
    auto c2 = cf::make_chan<int>();
    cf::select(cf::on_recv(c, [](std::optional<int>) {}),
               cf::on_recv(c2, [](std::optional<int>) {}));
  };
  auto send1 = [](const Recv& recv) {
    auto c = cf::make_chan<int>();
    cf::go([c, recv] { recv(c); });
    cf::yield();
    c.send(1);
  };
  auto send2 = [](const Recv& recv) {
    auto c = cf::make_chan<int>();
    cf::go([c, recv] { recv(c); });
    cf::yield();
    cf::select(cf::on_send(c, 1, [] {}));
  };
  auto send3 = [](const Recv& recv) {
    auto c = cf::make_chan<int>();
    cf::go([c, recv] { recv(c); });
    cf::yield();
    auto c2 = cf::make_chan<int>();
    cf::select(cf::on_send(c, 1, [] {}), cf::on_send(c2, 1, [] {}));
  };
  run_go_main([&] {
    for (const Recv* r : {&recv1, &recv2, &recv3}) {
      send1(*r);
      send2(*r);
      send3(*r);
    }
  });
}

CHANFLOW_INSTANTIATE_WORKERS(GoSelect);

}  // namespace
