// The trace of executor runs (cf::trace, docs/runtime.md "Tracing"): example programs run with
// tracing on give run slices whose park reasons name the program's channels, wake flows whose
// ends land at the start of the woken green thread's next run slice, counters of the buffered
// channels, and op slices; the --trace-limit style bound drops and counts. On 1, 2, 4 and 8
// workers.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/runtime/trace.h"

namespace cf = chanflow;
using cf::DType;
using nlohmann::json;

namespace {

// The names of the channel variables a program creates (any block).
std::set<std::string> channel_names(const cf::Program& p) {
  std::set<std::string> names;
  for (size_t b = 0; b < p.num_blocks(); ++b) {
    for (const cf::OpDesc& op : p.block(static_cast<int64_t>(b))->ops) {
      if (op.type() == "channel_create") names.insert(op.output("Out").at(0));
    }
  }
  return names;
}

json traced_run(const cf::Program& p, int workers) {
  cf::Executor ex({.workers = workers});
  cf::trace::start({.max_events = 0});
  ex.run(p);
  // run() returns once the program's green threads are done; the last one's run slice ends as
  // it switches back to its worker, just after.
  while (ex.scheduler().live() != 0) std::this_thread::yield();
  cf::trace::stop();
  return json::parse(cf::trace::to_json());
}

class ExecutorTrace : public testing::TestWithParam<int> {};

TEST_P(ExecutorTrace, FibonacciParksOnItsChannelsAndWakeFlowsLandOnRunStarts) {
  const cf::Program p =
      cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/fibonacci.pbtxt");
  const std::set<std::string> chans = channel_names(p);
  ASSERT_FALSE(chans.empty());
  const json doc = traced_run(p, GetParam());
  ASSERT_TRUE(doc["otherData"]["complete"].get<bool>());
  EXPECT_EQ(doc["otherData"]["chanflow_trace"], 1);

  std::set<std::string> parked_on;  // channel names in park reasons
  std::set<std::string> woken_by;   // channel names in wake flows
  // Run slices by where they start: (pid, tid, ts) -> g.
  std::map<std::tuple<int, int, double>, int64_t> run_starts;
  // The calling thread's blocking waits (block 0 runs there) by where they end: (pid, tid, µs).
  std::set<std::tuple<int, int, int64_t>> blocked_ends;
  // The channels a park reason names (a select's by its cases).
  const auto note_wait = [&parked_on](const json& w) {
    const std::string kind = w["kind"];
    if (kind == "chan.send" || kind == "chan.recv") parked_on.insert(w["obj"].get<std::string>());
    if (kind == "select") {
      for (const json& c : w["cases"]) {
        if (c["kind"] != "context") parked_on.insert(c["obj"].get<std::string>());
      }
    }
  };
  const auto us_key = [](const json& v) { return std::llround(v.get<double>() * 1000); };
  std::map<int64_t, json> flow_s, flow_f;
  std::set<std::string> op_types;
  for (const json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "run") {
      ASSERT_EQ(e["ph"], "X");
      run_starts[{e["pid"], e["tid"], e["ts"]}] = e["args"]["g"];
      if (e["args"]["end"] == "park") {
        note_wait(e["args"]["wait"]);
      } else {
        EXPECT_FALSE(e["args"].contains("wait"));
      }
    } else if (cat == "wait") {
      ASSERT_EQ(e["ph"], "X");
      EXPECT_EQ(e["name"], "blocked");
      note_wait(e["args"]["wait"]);
      blocked_ends.insert({e["pid"], e["tid"], us_key(e["ts"]) + us_key(e["dur"])});
    } else if (cat == "wake") {
      const int64_t id = e["id"];
      if (e["ph"] == "s") {
        EXPECT_TRUE(flow_s.emplace(id, e).second) << "flow id used twice: " << id;
        woken_by.insert(e["args"]["obj"].get<std::string>());
      } else {
        ASSERT_EQ(e["ph"], "f");
        EXPECT_EQ(e["bp"], "e");
        EXPECT_TRUE(flow_f.emplace(id, e).second) << "flow id used twice: " << id;
      }
    } else if (cat == "op") {
      ASSERT_EQ(e["ph"], "X");
      EXPECT_TRUE(e["args"].contains("g") && e["args"].contains("block") &&
                  e["args"].contains("op"));
      op_types.insert(e["name"].get<std::string>());
    }
  }
  // Its go block and block 0 wait for each other on the program's channels, by their variable
  // names: every value crosses an unbuffered channel, so one of them waits for it, whichever
  // comes first (a green thread's park, or the calling thread's blocking wait).
  for (const std::string& c : parked_on) EXPECT_TRUE(chans.count(c)) << c;
  std::set<std::string> named;
  for (const std::string& c : chans) {
    if (parked_on.count(c)) named.insert(c);
  }
  EXPECT_FALSE(named.empty()) << "no park reason names a channel of the program";
  bool woken_by_channel = false;
  for (const std::string& c : woken_by) woken_by_channel |= chans.count(c) > 0;
  EXPECT_TRUE(woken_by_channel);
  // Every wake flow pairs up, and its end is the start of a run slice of the green thread it woke,
  // or for the calling thread the end of its blocking wait.
  ASSERT_FALSE(flow_s.empty());
  EXPECT_EQ(flow_s.size(), flow_f.size());
  for (const auto& [id, s] : flow_s) {
    auto f = flow_f.find(id);
    ASSERT_NE(f, flow_f.end()) << "flow " << id << " has no end";
    if (!s["args"].contains("g")) {
      EXPECT_TRUE(blocked_ends.count({f->second["pid"], f->second["tid"], us_key(f->second["ts"])}))
          << "flow " << id << " of the calling thread does not land on a blocked slice's end";
      EXPECT_LE(s["ts"].get<double>(), f->second["ts"].get<double>());
      continue;
    }
    auto run = run_starts.find({f->second["pid"], f->second["tid"], f->second["ts"]});
    ASSERT_NE(run, run_starts.end()) << "flow " << id << " does not land on a run slice's start";
    EXPECT_EQ(run->second, s["args"]["g"].get<int64_t>());
    EXPECT_LE(s["ts"].get<double>(), f->second["ts"].get<double>());
  }
  EXPECT_TRUE(op_types.count("channel_create"));
  EXPECT_TRUE(op_types.count("go"));
}

TEST_P(ExecutorTrace, BufferedChannelsAreCounters) {
  // ping_pong's two channels have room for one value each, and its values are buffered.
  const cf::Program p =
      cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/ping_pong.pbtxt");
  const std::set<std::string> chans = channel_names(p);
  const json doc = traced_run(p, GetParam());
  std::map<std::string, int> samples;
  for (const json& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "chan") continue;
    ASSERT_EQ(e["ph"], "C");
    const std::string name = e["name"];
    ASSERT_EQ(name.rfind("chan ", 0), 0u) << name;
    EXPECT_TRUE(chans.count(name.substr(5))) << name;
    EXPECT_GT(e["args"]["cap"].get<int>(), 0);
    EXPECT_LE(e["args"]["len"].get<int>(), e["args"]["cap"].get<int>());
    ++samples[name];
  }
  ASSERT_FALSE(samples.empty());
  for (const auto& [name, n] : samples) EXPECT_GE(n, 2) << name;  // filled, then drained
}

INSTANTIATE_TEST_SUITE_P(Workers, ExecutorTrace, testing::Values(1, 2, 4, 8));

// A counting loop of `n` iterations (2 ops each).
cf::Program counting_loop(int64_t n) {
  cf::ProgramBuilder b;
  cf::Var i = b.fill_constant({1}, DType::kInt64, 0);
  cf::Var limit = b.fill_constant({1}, DType::kInt64, static_cast<double>(n));
  cf::Var cond = b.less_than(i, limit);
  {
    auto w = b.while_loop(cond);
    b.increment(i, 1, i);
    b.less_than(i, limit, cond);
  }
  return b.build();
}

int64_t op_slices(const json& doc) {
  int64_t n = 0;
  for (const json& e : doc["traceEvents"]) n += e.value("cat", "") == "op" ? 1 : 0;
  return n;
}

// Past max_events, events are counted, not written: every op slice is either in the file or
// counted as dropped, and the file says so (otherData and a "dropped" mark).
TEST(ExecutorTraceBound, OpSlicesPastTheBoundAreDroppedAndCounted) {
  const cf::Program p = counting_loop(2000);
  cf::Executor ex({.workers = 1});
  cf::trace::start({.max_events = 0});
  ex.run(p);
  cf::trace::stop();
  const int64_t all = op_slices(json::parse(cf::trace::to_json()));
  EXPECT_GT(all, 4000);
  EXPECT_EQ(cf::trace::dropped_count(), 0u);

  constexpr std::size_t kBound = 100;
  cf::trace::start({.max_events = kBound});
  ex.run(p);
  cf::trace::stop();
  const json doc = json::parse(cf::trace::to_json());
  const int64_t kept = op_slices(doc);
  EXPECT_LE(kept, static_cast<int64_t>(kBound));
  EXPECT_EQ(static_cast<std::size_t>(kept) + cf::trace::dropped_count(),
            static_cast<std::size_t>(all));
  EXPECT_EQ(doc["otherData"]["dropped_events"].get<std::size_t>(), cf::trace::dropped_count());
  EXPECT_EQ(doc["otherData"]["max_events"].get<std::size_t>(), kBound);
  int marks = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e.value("cat", "") == "mark" && e["name"] == "dropped") ++marks;
  }
  EXPECT_EQ(marks, 1);
}

}  // namespace
