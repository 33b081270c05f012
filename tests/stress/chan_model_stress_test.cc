// Randomised stress of channels, select, close and cancellation across 64 green threads, checked
// against a model of what must have happened.
//
// 64 green threads share 8 channel slots (capacities 0, 1, 3, 8). Each thread performs random
// steps: a blocking send or receive (always in a select with its context's done channel, so it can
// be cancelled), try_send / try_recv, a run-time-sized select over several slots mixing sends and
// receives (sometimes with a default), closing a slot's channel (which then gets a fresh channel),
// and cancelling a peer's context. Every value sent is unique (thread id, sequence number). Each
// thread logs what it did; at the end every channel is closed and drained, and the logs must agree:
//   - every value that was sent successfully is received exactly once (received or drained), none
//     is received that was not sent, none twice, and on the channel it was sent to;
//   - per (receiver, channel, sender) values arrive in the sender's order (FIFO);
//   - an operation reports "closed" only on a channel whose close had begun; once a thread saw a
//     channel closed, no later send of its succeeds there; every closed channel reports closed at
//     the end, closing twice throws;
//   - cancellation is observed (blocked selects wake on done()).
// Short by default (~a few seconds); CHANFLOW_STRESS_LONG=1 runs 25x more steps.
// CHANFLOW_STRESS_SEED=<n> replays a seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;

namespace {

constexpr int kThreads = 64;
constexpr int kSlots = 8;
constexpr std::array<std::size_t, 4> kCaps = {0, 1, 3, 8};

uint64_t make_value(int thread, uint64_t seq) { return (uint64_t(thread) << 40) | seq; }
int value_thread(uint64_t v) { return int(v >> 40); }
uint64_t value_seq(uint64_t v) { return v & ((uint64_t(1) << 40) - 1); }

// One channel ever made for a slot.
struct Generation {
  int id;
  cf::Chan<uint64_t> ch;
  std::atomic<bool> closing{false};  // set (once, by the closer) before close() is called
};

struct Event {
  int chan_id;
  uint64_t value;
};

struct ThreadLog {
  std::vector<Event> sent;
  std::vector<Event> received;
  std::vector<std::string> errors;
  int closes = 0;
  int closed_observed = 0;
  int cancels_observed = 0;
  int defaults = 0;
};

class World {
 public:
  explicit World(uint64_t seed) : seed_(seed), root_(cf::with_cancel(cf::background())) {
    for (int s = 0; s < kSlots; ++s) slots_[s] = fresh(kCaps[s % kCaps.size()]);
    for (int t = 0; t < kThreads; ++t) ctxs_[t] = new_context(t, 0);
  }

  std::shared_ptr<Generation> slot(int s) {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_[s];
  }

  // Closes the slot's current channel (if nobody else is closing it) and installs a fresh one.
  bool close_slot(int s, ThreadLog& log) {
    std::shared_ptr<Generation> g = slot(s);
    bool expected = false;
    if (!g->closing.compare_exchange_strong(expected, true)) return false;
    g->ch.close();
    try {
      g->ch.close();
      log.errors.push_back("closing twice did not throw (chan " + std::to_string(g->id) + ")");
    } catch (const cf::ChannelClosedError&) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (slots_[s] == g) slots_[s] = fresh_locked(g->ch.capacity());
    return true;
  }

  cf::Context context(int t) {
    std::lock_guard<std::mutex> lock(mu_);
    return ctxs_[t];
  }
  void renew_context(int t, uint64_t salt) {
    cf::Context c = new_context(t, salt);
    std::lock_guard<std::mutex> lock(mu_);
    ctxs_[t] = c;
  }
  void cancel_peer(int t) { context(t).cancel(); }

  std::vector<std::shared_ptr<Generation>> all() {
    std::lock_guard<std::mutex> lock(mu_);
    return all_;
  }
  uint64_t seed() const { return seed_; }
  void stop() { root_.cancel(); }

 private:
  std::shared_ptr<Generation> fresh(std::size_t cap) {
    std::lock_guard<std::mutex> lock(mu_);
    return fresh_locked(cap);
  }
  std::shared_ptr<Generation> fresh_locked(std::size_t cap) {
    auto g = std::make_shared<Generation>();
    g->id = int(all_.size());
    g->ch = cf::make_chan<uint64_t>(cap);
    all_.push_back(g);
    return g;
  }
  cf::Context new_context(int t, uint64_t salt) {
    // Every context times out after 0.2–2 ms, so no blocking step waits forever even when no
    // partner will ever come; peers may cancel it sooner.
    std::mt19937_64 rng(seed_ ^ (uint64_t(t) * 7919) ^ (salt * 104729));
    auto d = std::chrono::microseconds(200 + rng() % 1800);
    return cf::with_timeout(root_, d);
  }

  uint64_t seed_;
  cf::Context root_;
  std::mutex mu_;
  std::array<std::shared_ptr<Generation>, kSlots> slots_;
  std::array<cf::Context, kThreads> ctxs_;
  std::vector<std::shared_ptr<Generation>> all_;
};

void run_thread(World& w, int t, int steps, ThreadLog& log) {
  std::mt19937_64 rng(w.seed() * 1000003 + uint64_t(t));
  uint64_t seq = 0;
  uint64_t renewals = 0;
  std::set<int> seen_closed;
  auto note_closed = [&](const Generation& g, const char* op) {
    ++log.closed_observed;
    seen_closed.insert(g.id);
    if (!g.closing.load()) {
      log.errors.push_back(std::string(op) + " reported closed on chan " + std::to_string(g.id) +
                           " before anyone closed it");
    }
  };
  auto note_sent = [&](const Generation& g, uint64_t v) {
    log.sent.push_back({g.id, v});
    if (seen_closed.count(g.id) != 0) {
      log.errors.push_back("send succeeded on chan " + std::to_string(g.id) +
                           " after this thread saw it closed");
    }
  };
  auto on_cancel = [&] {
    ++log.cancels_observed;
    w.renew_context(t, ++renewals);
  };

  for (int step = 0; step < steps; ++step) {
    const int op = int(rng() % 100);
    const int s = int(rng() % kSlots);
    std::shared_ptr<Generation> g = w.slot(s);
    cf::Context ctx = w.context(t);
    if (ctx.err() != nullptr) {
      on_cancel();
      continue;
    }
    try {
      if (op < 25) {  // blocking send, cancellable
        const uint64_t v = make_value(t, ++seq);
        std::size_t i = cf::select(cf::on_send(g->ch, v, [&] { note_sent(*g, v); }),
                                   cf::on_recv(ctx.done(), [&](auto) { on_cancel(); }));
        (void)i;
      } else if (op < 50) {  // blocking receive, cancellable
        cf::select(cf::on_recv(g->ch,
                               [&](std::optional<uint64_t> v) {
                                 if (v) {
                                   log.received.push_back({g->id, *v});
                                 } else {
                                   note_closed(*g, "recv");
                                 }
                               }),
                   cf::on_recv(ctx.done(), [&](auto) { on_cancel(); }));
      } else if (op < 60) {  // non-blocking
        if (rng() % 2 == 0) {
          const uint64_t v = make_value(t, ++seq);
          if (g->ch.try_send(v)) note_sent(*g, v);
        } else {
          auto v = g->ch.try_recv();
          if (v) {
            log.received.push_back({g->id, *v});
          } else if (g->ch.closed()) {
            note_closed(*g, "try_recv");
          }
        }
      } else if (op < 97) {  // run-time select over 2–4 slots, sends and receives mixed
        const int n = 2 + int(rng() % 3);
        std::vector<std::shared_ptr<Generation>> gens;
        std::vector<bool> is_send;
        std::vector<uint64_t> values(n);
        std::vector<std::optional<uint64_t>> outs(n);
        std::vector<cf::SelectCase> cases;
        for (int k = 0; k < n; ++k) {
          gens.push_back(w.slot(int(rng() % kSlots)));
          is_send.push_back(rng() % 2 == 0);
        }
        for (int k = 0; k < n; ++k) {
          if (is_send[k]) {
            values[k] = make_value(t, ++seq);
            cases.push_back(cf::SelectCase::send(gens[k]->ch, values[k]));
          } else {
            cases.push_back(cf::SelectCase::recv(gens[k]->ch, outs[k]));
          }
        }
        std::optional<cf::Unit> done_out;
        cf::Chan<cf::Unit> done = ctx.done();
        cases.push_back(cf::SelectCase::recv(done, done_out));
        const bool with_default = rng() % 4 == 0;
        if (with_default) cases.push_back(cf::SelectCase::default_case());
        std::size_t chosen = 0;
        try {
          chosen = cf::select(std::span<cf::SelectCase>(cases));
        } catch (const cf::ChannelClosedError&) {
          // A send case on a closed channel was chosen: which one is not reported, but at least
          // one send case's channel must be closing.
          bool any = false;
          for (int k = 0; k < n; ++k) any = any || (is_send[k] && gens[k]->closing.load());
          if (!any)
            log.errors.push_back("select threw ChannelClosedError with no closed send case");
          ++log.closed_observed;
          continue;
        }
        if (chosen < std::size_t(n)) {
          const Generation& cg = *gens[chosen];
          if (is_send[chosen]) {
            note_sent(cg, values[chosen]);
          } else if (outs[chosen]) {
            log.received.push_back({cg.id, *outs[chosen]});
          } else {
            note_closed(cg, "select recv");
          }
        } else if (chosen == std::size_t(n)) {
          on_cancel();
        } else {
          ++log.defaults;
        }
      } else if (op < 99) {  // close
        if (w.close_slot(s, log)) ++log.closes;
      } else {  // cancel a peer
        w.cancel_peer(int(rng() % kThreads));
      }
    } catch (const cf::ChannelClosedError&) {
      note_closed(*g, "send");
    }
  }
}

TEST(ChanModelStress, RandomOpsAgreeWithModel) {
  const bool long_run = cf::testing::stress_long();
  const int steps = long_run ? 50000 : 2000;
  uint64_t seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("CHANFLOW_STRESS_SEED")) seed = std::strtoull(s, nullptr, 10);
  RecordProperty("seed", std::to_string(seed));
  std::printf("ChanModelStress: seed %llu, %d green threads x %d steps\n",
              static_cast<unsigned long long>(seed), kThreads, steps);

  for (int workers : {1, 2, 4}) {
    SCOPED_TRACE("workers " + std::to_string(workers) + ", seed " + std::to_string(seed));
    cf::Scheduler scheduler(cf::SchedulerOptions{.workers = workers});
    cf::ScopedDefaultScheduler use(scheduler);
    World world(seed + uint64_t(workers));
    std::vector<ThreadLog> logs(kThreads);
    cf::WaitGroup wg;
    wg.add(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      cf::go("stress-" + std::to_string(t), [&world, &logs, &wg, t, steps] {
        run_thread(world, t, steps, logs[t]);
        wg.done();
      });
    }
    wg.wait();
    world.stop();

    // Close and drain every channel ever made.
    std::vector<Event> drained;
    for (auto& g : world.all()) {
      bool expected = false;
      if (g->closing.compare_exchange_strong(expected, true)) g->ch.close();
      while (auto v = g->ch.recv()) drained.push_back({g->id, *v});
      EXPECT_TRUE(g->ch.closed()) << "chan " << g->id;
      EXPECT_FALSE(g->ch.try_recv().has_value()) << "chan " << g->id;
    }

    // The model.
    std::map<uint64_t, int> sent_on;  // value -> channel id
    int closes = 0, closed_observed = 0, cancels = 0, defaults = 0;
    std::size_t received_count = 0;
    for (auto& log : logs) {
      for (auto& e : log.errors) ADD_FAILURE() << e;
      for (auto& e : log.sent) {
        EXPECT_TRUE(sent_on.emplace(e.value, e.chan_id).second) << "value sent twice: " << e.value;
      }
      closes += log.closes;
      closed_observed += log.closed_observed;
      cancels += log.cancels_observed;
      defaults += log.defaults;
      received_count += log.received.size();
    }
    std::set<uint64_t> got;
    // (receiver, channel, sender) -> last sequence number seen
    std::map<std::tuple<int, int, int>, uint64_t> last_seq;
    auto account = [&](int receiver, const Event& e) {
      auto it = sent_on.find(e.value);
      if (it == sent_on.end()) {
        ADD_FAILURE() << "received a value never sent: " << e.value << " on chan " << e.chan_id;
        return;
      }
      EXPECT_EQ(it->second, e.chan_id) << "value " << e.value << " crossed channels";
      EXPECT_TRUE(got.insert(e.value).second) << "value received twice: " << e.value;
      auto key = std::make_tuple(receiver, e.chan_id, value_thread(e.value));
      auto [pos, fresh] = last_seq.emplace(key, value_seq(e.value));
      if (!fresh) {
        EXPECT_LT(pos->second, value_seq(e.value))
            << "FIFO violated on chan " << e.chan_id << " from sender " << value_thread(e.value);
        pos->second = value_seq(e.value);
      }
    };
    for (int t = 0; t < kThreads; ++t) {
      for (auto& e : logs[t].received) account(t, e);
    }
    for (auto& e : drained) account(-1, e);
    EXPECT_EQ(got.size(), sent_on.size())
        << "values lost: sent " << sent_on.size() << ", received " << got.size();
    std::printf(
        "  workers %d: %zu values sent, %zu received, %zu drained, %d closes, %d closed "
        "observed, %d cancels observed, %d defaults\n",
        workers, sent_on.size(), received_count, drained.size(), closes, closed_observed, cancels,
        defaults);
    EXPECT_GT(closes, 0);
    EXPECT_GT(closed_observed, 0);
    EXPECT_GT(cancels, 0);
    EXPECT_GT(received_count, 0u);
    if (HasFailure()) return;
  }
}

}  // namespace
