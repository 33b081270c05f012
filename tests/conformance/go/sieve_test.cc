// Ports of Go's test/chan/sieve1.go (a chain of filter green threads) and sieve2.go (a heap of
// prime-multiple channels merged into a stream of composites, with a proxy green thread buffering
// the feedback loop). Both must produce the first 25 primes, 2 … 97.
//
// Go's programs simply exit with their generators still running. Here every stage is torn down so
// the scheduler can finish: the consumer closes its input when it has enough, and each stage, when
// one of its channels reports closed (a receive returns nullopt, a send throws), closes every
// channel it uses. Closing thus spreads through the whole network and every green thread returns.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;
using cf::testing::close_quietly;
using cf::testing::run_go_main;

namespace {

constexpr int kPrimes[] = {2,  3,  5,  7,  11, 13, 17, 19, 23, 29, 31, 37, 41,
                           43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97};

class GoSieve : public cf::testing::WorkersTest {};

// Receives a value or, once `ch` is closed and drained, throws ChannelClosedError (the sieves'
// stages treat both ends of a closed channel alike: time to shut down).
int recv_or_stop(cf::Chan<int>& ch) {
  auto v = ch.recv();
  if (!v) throw cf::ChannelClosedError("sieve: input channel closed");
  return *v;
}

// --- sieve1 -------------------------------------------------------------------------------------

void sieve1(cf::Chan<int> primes) {
  auto ch = cf::make_chan<int>();
  cf::go("generate", [ch]() mutable {
    try {
      for (int i = 2;; ++i) ch.send(i);
    } catch (const cf::ChannelClosedError&) {
    }
  });
  try {
    for (;;) {
      int prime = recv_or_stop(ch);
      primes.send(prime);
      auto ch1 = cf::make_chan<int>();
      cf::go("filter", [in = ch, out = ch1, prime]() mutable {
        try {
          for (int i : in) {
            if (i % prime != 0) out.send(i);
          }
        } catch (const cf::ChannelClosedError&) {
        }
        close_quietly(in);
        close_quietly(out);
      });
      ch = ch1;
    }
  } catch (const cf::ChannelClosedError&) {
  }
  close_quietly(ch);
  close_quietly(primes);
}

TEST_P(GoSieve, Sieve1) {
  run_go_main([] {
    auto primes = cf::make_chan<int>();
    cf::go("sieve", [primes] { sieve1(primes); });
    for (int want : kPrimes) {
      auto x = primes.recv();
      EXPECT_EQ(x, std::optional<int>(want));
      if (x != std::optional<int>(want)) break;
    }
    primes.close();
  });
}

// --- sieve2 -------------------------------------------------------------------------------------

cf::Chan<int> odds() {
  auto out = cf::make_chan<int>(50);
  cf::go("odds", [out]() mutable {
    try {
      for (int n = 5;; n += 2) out.send(n);
    } catch (const cf::ChannelClosedError&) {
    }
  });
  return out;
}

cf::Chan<int> multiples(int p) {
  auto out = cf::make_chan<int>(10);
  cf::go("multiples", [out, p]() mutable {
    try {
      for (int n = p * p;; n += 2 * p) out.send(n);
    } catch (const cf::ChannelClosedError&) {
    }
  });
  return out;
}

// An unbounded FIFO between a producer that must never block and `out`: receives into a queue and
// offers its head, with the send case disabled (nil channel) while the queue is empty.
cf::Chan<int> send_proxy(cf::Chan<int> out) {
  auto proxy = cf::make_chan<int>(10);
  cf::go("sendproxy", [proxy, out]() mutable {
    std::deque<int> queue;
    try {
      for (;;) {
        cf::Chan<int> c = queue.empty() ? cf::Chan<int>{} : out;
        int e = queue.empty() ? 0 : queue.front();
        cf::select(cf::on_recv(proxy,
                               [&](std::optional<int> v) {
                                 if (!v) throw cf::ChannelClosedError("sendproxy: input closed");
                                 queue.push_back(*v);
                               }),
                   cf::on_send(c, e, [&] { queue.pop_front(); }));
      }
    } catch (const cf::ChannelClosedError&) {
    }
    close_quietly(proxy);
    close_quietly(out);
  });
  return proxy;
}

struct PeekCh {
  int head;
  cf::Chan<int> ch;
};
struct HeadGreater {
  bool operator()(const PeekCh& a, const PeekCh& b) const { return a.head > b.head; }
};

cf::Chan<int> sieve2() {
  auto out = cf::make_chan<int>(10);
  out.send(2);
  out.send(3);
  auto composites = cf::make_chan<int>(50);  // all composites, in increasing order
  auto primes = cf::make_chan<int>(10);      // the feedback loop
  primes.send(3);

  // Merge the channels of multiples of `primes` into `composites`.
  cf::go("merge", [primes, composites]() mutable {
    std::priority_queue<PeekCh, std::vector<PeekCh>, HeadGreater> h;
    std::vector<cf::Chan<int>> all;
    try {
      int min = 15;
      auto advance = [&] {
        PeekCh minchan = h.top();
        h.pop();
        min = minchan.head;
        minchan.head = recv_or_stop(minchan.ch);
        h.push(minchan);
      };
      for (;;) {
        auto m = multiples(recv_or_stop(primes));
        all.push_back(m);
        int head = recv_or_stop(m);
        while (min < head) {
          composites.send(min);
          advance();
        }
        while (min == head) advance();
        composites.send(head);
        h.push(PeekCh{recv_or_stop(m), m});
      }
    } catch (const cf::ChannelClosedError&) {
    }
    close_quietly(primes);
    close_quietly(composites);
    for (auto& m : all) close_quietly(m);
  });

  // Sieve the composites out of the odd candidates.
  cf::go("sieve", [primes, composites, out]() mutable {
    // The merger reads `primes` far more slowly than this sends to it; the proxy buffers without
    // bound so this never blocks on the feedback loop (which would deadlock).
    auto proxy = send_proxy(primes);
    auto candidates = odds();
    try {
      int p = recv_or_stop(candidates);
      for (;;) {
        int c = recv_or_stop(composites);
        while (p < c) {
          proxy.send(p);
          out.send(p);
          p = recv_or_stop(candidates);
        }
        if (p == c) p = recv_or_stop(candidates);
      }
    } catch (const cf::ChannelClosedError&) {
    }
    close_quietly(proxy);
    close_quietly(candidates);
    close_quietly(composites);
    close_quietly(out);
  });
  return out;
}

TEST_P(GoSieve, Sieve2) {
  run_go_main([] {
    auto primes = sieve2();
    for (int want : kPrimes) {
      auto x = primes.recv();
      EXPECT_EQ(x, std::optional<int>(want));
      if (x != std::optional<int>(want)) break;
    }
    primes.close();
  });
}

CHANFLOW_INSTANTIATE_WORKERS(GoSieve);

}  // namespace
