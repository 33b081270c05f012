// The trace summary (trace_summary.h) on hand-written traces in testdata/traces, whose expected
// numbers are worked out from the events in the comments, and the reader's bad inputs.
#include "trace_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "trace_html.h"

namespace chanflow::tools {
namespace {

constexpr int64_t kUs = 1000;  // ns

std::string fixture(const std::string& name) {
  return std::string(CHANFLOW_TRACE_FIXTURES) + "/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

const GreenThreadSummary& gthread(const Summary& s, const std::string& name) {
  for (const GreenThreadSummary& g : s.gthreads) {
    if (g.name == name) return g;
  }
  ADD_FAILURE() << "no green thread " << name;
  static const GreenThreadSummary kNone;
  return kNone;
}

void expect_fits_100_columns(const std::string& text) {
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    EXPECT_LE(nl - at, 100u) << "line wider than 100 columns: " << text.substr(at, nl - at);
  }
}

// What a bad input throws: the TraceError, checked to name the file first.
TraceError parse_error(const std::string& text) {
  try {
    parse_trace(text, "bad.json");
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(std::string(e.what()).rfind("bad.json: ", 0), 0u) << e.what();
    return e;
  }
  ADD_FAILURE() << "no TraceError for: " << text;
  return TraceError("none", "");
}

// A valid document around `events` (the text of the traceEvents members).
std::string doc(const std::string& events) {
  return R"({"traceEvents":[)" + events +
         R"(],"otherData":{"chanflow_trace":1,"dropped_events":0,"complete":true}})";
}

TEST(TraceSummary, WaitLabels) {
  EXPECT_EQ(wait_label("chan.recv", "jobs"), "chan.recv jobs");
  EXPECT_EQ(wait_label("select", "select"), "select");
  EXPECT_EQ(wait_label("context", "context"), "context");
  EXPECT_EQ(wait_label("timer", ""), "timer");
}

TEST(TraceSummary, HumanDurations) {
  EXPECT_EQ(human_duration(0), "0ns");
  EXPECT_EQ(human_duration(850), "850ns");
  EXPECT_EQ(human_duration(45 * kUs), "45.0us");
  EXPECT_EQ(human_duration(1250 * kUs), "1.25ms");
  EXPECT_EQ(human_duration(999600), "1.00ms");  // not "1000us"
  EXPECT_EQ(human_duration(2500 * 1000 * kUs), "2.50s");
  EXPECT_EQ(human_duration(-3 * kUs), "-3.00us");
}

// producer_consumer.json: main (g1) spawns producer (g2) at 5us and consumer (g3) at 8us and
// waits on wg; the consumer parks on a receive from jobs at 15us, the producer's send wakes it at
// 45.25us and it runs again at 50us; its wg.done at 58us wakes main, which runs at 62us.
TEST(TraceSummary, ProducerConsumer) {
  const Summary s = summarize(read_trace(fixture("producer_consumer.json")));
  EXPECT_TRUE(s.complete);
  EXPECT_FALSE(s.truncated);
  EXPECT_EQ(s.events, 19);
  EXPECT_EQ(s.dropped_events, 0);
  EXPECT_EQ(s.start_ns, 0);
  EXPECT_EQ(s.end_ns, 70 * kUs);  // main's last slice ends at 62 + 8
  EXPECT_EQ(s.events_by_cat.at("run"), 5);
  EXPECT_EQ(s.events_by_cat.at("wake"), 4);
  EXPECT_EQ(s.events_by_cat.at(""), 3);  // metadata
  ASSERT_EQ(s.gthreads.size(), 3u);

  const GreenThreadSummary& main = gthread(s, "main");
  EXPECT_EQ(main.g, 1);
  EXPECT_EQ(main.running_ns, 18 * kUs);  // 10 + 8
  EXPECT_EQ(main.blocked_ns, 48 * kUs);  // 10 -> 58
  EXPECT_EQ(main.runnable_ns, 4 * kUs);  // 58 -> 62
  EXPECT_TRUE(main.exited);
  ASSERT_EQ(main.blocked_on.size(), 1u);
  EXPECT_EQ(main.blocked_on[0].kind, "waitgroup");
  EXPECT_EQ(main.blocked_on[0].obj, "wg");
  EXPECT_EQ(main.blocked_on[0].count, 1);

  const GreenThreadSummary& producer = gthread(s, "producer");
  EXPECT_EQ(producer.parent, 1);
  EXPECT_EQ(producer.running_ns, 35 * kUs);
  EXPECT_EQ(producer.runnable_ns, 7 * kUs);  // created 5, ran 12
  EXPECT_EQ(producer.blocked_ns, 0);
  EXPECT_TRUE(producer.blocked_on.empty());

  const GreenThreadSummary& consumer = gthread(s, "consumer");
  EXPECT_EQ(consumer.running_ns, 15 * kUs);
  EXPECT_EQ(consumer.blocked_ns, 30250);         // 15 -> 45.25
  EXPECT_EQ(consumer.runnable_ns, 2000 + 4750);  // 8 -> 10, 45.25 -> 50
  ASSERT_EQ(consumer.blocked_on.size(), 1u);
  EXPECT_EQ(consumer.blocked_on[0].kind, "chan.recv");
  EXPECT_EQ(consumer.blocked_on[0].obj, "jobs");
  EXPECT_EQ(consumer.blocked_on[0].ns, 30250);

  ASSERT_EQ(s.channels.size(), 1u);  // a wait group is not a channel
  EXPECT_EQ(s.channels[0].name, "jobs");
  EXPECT_EQ(s.channels[0].recv_ns, 30250);
  EXPECT_EQ(s.channels[0].send_ns, 0);
  EXPECT_EQ(s.channels[0].total_ns(), 30250);
  EXPECT_TRUE(s.critical_paths.empty());

  const std::string text = format_summary(s);
  EXPECT_NE(text.find("complete"), std::string::npos) << text;
  EXPECT_NE(text.find("blocked on chan.recv jobs"), std::string::npos) << text;
  EXPECT_NE(text.find("48.0us"), std::string::npos) << text;
  EXPECT_NE(text.find("19 events, 0 dropped"), std::string::npos) << text;
  expect_fits_100_columns(text);

  const nlohmann::json j = summary_to_json(s);
  EXPECT_EQ(j["green_threads"][2]["name"], "consumer");
  EXPECT_EQ(j["green_threads"][2]["blocked_ns"], 30250);
  EXPECT_EQ(j["green_threads"][2]["blocked_on"][0]["obj"], "jobs");
  EXPECT_EQ(j["channels"][0]["recv_ns"], 30250);
  EXPECT_EQ(j["span"]["dur_ns"], 70000);
  EXPECT_EQ(j["complete"], true);
}

// os_threads.json: "thread 1" (tid 3, an OS thread such as the executor's block 0) blocks on a
// receive from result (2 -> 40: the producer's send at 38), in a select on b and a (50 -> 60) and
// on result again (62 -> 66); an unnamed OS thread (tid 4) waits on mutex mu (1 -> 3). The green
// thread waiter parks on a receive from a (10 -> 25). OS threads' waits count for the channels.
TEST(TraceSummary, OsThreadsBlockedTime) {
  const Summary s = summarize(read_trace(fixture("os_threads.json")));
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.end_ns, 66 * kUs);
  ASSERT_EQ(s.gthreads.size(), 2u);
  EXPECT_EQ(gthread(s, "waiter").blocked_ns, 15 * kUs);
  EXPECT_EQ(gthread(s, "producer").blocked_ns, 0);

  ASSERT_EQ(s.os_threads.size(), 2u);
  const OsThreadSummary& t1 = s.os_threads[0];
  EXPECT_EQ(t1.pid, 1);
  EXPECT_EQ(t1.tid, 3);
  EXPECT_EQ(t1.name, "thread 1");
  EXPECT_EQ(t1.blocked_ns, 52 * kUs);  // 38 + 10 + 4
  EXPECT_EQ(t1.waits, 3);
  ASSERT_EQ(t1.blocked_on.size(), 2u);
  EXPECT_EQ(t1.blocked_on[0].kind, "chan.recv");
  EXPECT_EQ(t1.blocked_on[0].obj, "result");
  EXPECT_EQ(t1.blocked_on[0].ns, 42 * kUs);
  EXPECT_EQ(t1.blocked_on[0].count, 2);
  EXPECT_EQ(t1.blocked_on[1].kind, "select");
  EXPECT_EQ(t1.blocked_on[1].ns, 10 * kUs);
  EXPECT_EQ(t1.blocked_on[1].cases, (std::vector<std::string>{"chan.recv a", "chan.recv b"}));
  const OsThreadSummary& t2 = s.os_threads[1];
  EXPECT_EQ(t2.tid, 4);
  EXPECT_EQ(t2.name, "tid 4");  // no thread_name event for it
  EXPECT_EQ(t2.blocked_ns, 2 * kUs);
  ASSERT_EQ(t2.blocked_on.size(), 1u);
  EXPECT_EQ(t2.blocked_on[0].kind, "mutex");

  ASSERT_EQ(s.channels.size(), 3u);  // the mutex is not a channel
  EXPECT_EQ(s.channels[0].name, "result");
  EXPECT_EQ(s.channels[0].recv_ns, 42 * kUs);
  EXPECT_EQ(s.channels[1].name, "a");
  EXPECT_EQ(s.channels[1].recv_ns, 15 * kUs);  // the green thread's park
  EXPECT_EQ(s.channels[1].select_ns, 10 * kUs);
  EXPECT_EQ(s.channels[2].name, "b");
  EXPECT_EQ(s.channels[2].total_ns(), 10 * kUs);

  const std::string text = format_summary(s);
  EXPECT_NE(text.find("OS threads that blocked (2)"), std::string::npos) << text;
  EXPECT_NE(text.find("thread 1                             52.0us       3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("blocked on chan.recv result"), std::string::npos) << text;
  EXPECT_NE(text.find("42.0us  2 waits"), std::string::npos) << text;
  EXPECT_NE(text.find("cases: chan.recv a, chan.recv b"), std::string::npos) << text;
  expect_fits_100_columns(text);

  const nlohmann::json j = summary_to_json(s);
  ASSERT_EQ(j["os_threads"].size(), 2u);
  EXPECT_EQ(j["os_threads"][0]["name"], "thread 1");
  EXPECT_EQ(j["os_threads"][0]["blocked_ns"], 52000);
  EXPECT_EQ(j["os_threads"][0]["blocked_on"][0]["waits"], 2);
  EXPECT_EQ(j["os_threads"][1]["blocked_on"][0]["obj"], "mu");

  const std::string html = trace_to_html(read_trace(fixture("os_threads.json")), s, 10);
  EXPECT_NE(html.find("<table id=osthreads>"), std::string::npos);
  EXPECT_NE(html.find("chan.recv result: 42.0us (2 waits)"), std::string::npos);
}

// A trace without OS-thread waits has no such section.
TEST(TraceSummary, NoOsThreadSectionWithoutWaits) {
  const Summary s = summarize(read_trace(fixture("producer_consumer.json")));
  EXPECT_TRUE(s.os_threads.empty());
  EXPECT_EQ(format_summary(s).find("OS threads"), std::string::npos);
  EXPECT_TRUE(summary_to_json(s)["os_threads"].empty());
}

// select.json: sel (g1) parks in a select on recv a, recv b, send out (5 -> 25: the writer's send
// on b), yields (30 -> 32), parks on a send to out (40 -> 50: the reader's receive); reader (g3)
// parks on mutex mu (28 -> 45); stuck (g4) parks on a receive from never at 14 that nothing
// wakes: blocked to the trace's end at 53.
TEST(TraceSummary, SelectYieldAndUnwokenPark) {
  const Summary s = summarize(read_trace(fixture("select.json")));
  EXPECT_EQ(s.dropped_events, 7);
  EXPECT_EQ(s.events, 22);
  EXPECT_EQ(s.end_ns, 53 * kUs);

  const GreenThreadSummary& sel = gthread(s, "sel");
  EXPECT_EQ(sel.running_ns, 18 * kUs);  // 5 + 3 + 8 + 2
  EXPECT_EQ(sel.blocked_ns, 30 * kUs);  // 20 in the select, 10 on the send
  EXPECT_EQ(sel.runnable_ns, 5 * kUs);  // 25 -> 27, yield 30 -> 32, 50 -> 51
  EXPECT_EQ(sel.slices, 4);
  ASSERT_EQ(sel.blocked_on.size(), 2u);
  EXPECT_EQ(sel.blocked_on[0].kind, "select");
  EXPECT_EQ(sel.blocked_on[0].obj, "select@b0.3");
  EXPECT_EQ(sel.blocked_on[0].ns, 20 * kUs);
  EXPECT_EQ(sel.blocked_on[0].cases,
            (std::vector<std::string>{"chan.recv a", "chan.recv b", "chan.send out"}));
  EXPECT_EQ(sel.blocked_on[1].kind, "chan.send");
  EXPECT_EQ(sel.blocked_on[1].ns, 10 * kUs);

  const GreenThreadSummary& reader = gthread(s, "reader");
  EXPECT_EQ(reader.running_ns, 6500);
  EXPECT_EQ(reader.blocked_ns, 17 * kUs);
  EXPECT_EQ(reader.runnable_ns, 25 * kUs);  // created 2, ran 26; 45 -> 46
  EXPECT_EQ(reader.blocked_on[0].kind, "mutex");

  const GreenThreadSummary& stuck = gthread(s, "stuck");
  EXPECT_EQ(stuck.blocked_ns, 39 * kUs);  // 14 -> 53
  EXPECT_FALSE(stuck.exited);

  // never (recv 39), out (send 10 + select 20), a and b (select 20 each).
  ASSERT_EQ(s.channels.size(), 4u);
  EXPECT_EQ(s.channels[0].name, "never");
  EXPECT_EQ(s.channels[0].recv_ns, 39 * kUs);
  EXPECT_EQ(s.channels[1].name, "out");
  EXPECT_EQ(s.channels[1].send_ns, 10 * kUs);
  EXPECT_EQ(s.channels[1].select_ns, 20 * kUs);
  EXPECT_EQ(s.channels[2].name, "a");
  EXPECT_EQ(s.channels[2].select_ns, 20 * kUs);
  EXPECT_EQ(s.channels[3].name, "b");

  const std::string text = format_summary(s);
  EXPECT_NE(text.find("blocked on select select@b0.3"), std::string::npos) << text;
  EXPECT_NE(text.find("cases: chan.recv a, chan.recv b, chan.send out\n"), std::string::npos)
      << text;
  expect_fits_100_columns(text);

  const nlohmann::json j = summary_to_json(s, 2);
  EXPECT_EQ(j["channels"].size(), 2u);
  EXPECT_EQ(j["channels_total"], 4);
  EXPECT_NE(format_summary(s, 2).find("top channels by blocked time (2 of 4)"), std::string::npos);
}

// gomachine.json: out (ends 65) <- mul (inputs add, b: add ends later) <- add (inputs a, b: b
// ends later) <- b.
TEST(TraceSummary, GoMachineCriticalPath) {
  const Summary s = summarize(read_trace(fixture("gomachine.json")));
  ASSERT_EQ(s.critical_paths.size(), 1u);
  const CriticalPath& p = s.critical_paths[0];
  EXPECT_EQ(p.process, "gomachine");
  EXPECT_EQ(p.pid, 3);
  EXPECT_EQ(p.run, -1);  // the slices carry no args.run: one run
  ASSERT_EQ(p.steps.size(), 4u);
  const std::vector<std::string> names = {"b", "add", "mul", "out"};
  const std::vector<int64_t> nodes = {2, 3, 4, 5};
  const std::vector<int64_t> durs = {25, 13, 19, 5};
  const std::vector<int64_t> waits = {0, 2, 1, 0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.steps[i].name, names[i]);
    EXPECT_EQ(p.steps[i].node, nodes[i]);
    EXPECT_EQ(p.steps[i].dur_ns, durs[i] * kUs);
    EXPECT_EQ(p.steps[i].wait_ns, waits[i] * kUs);
  }
  EXPECT_EQ(p.total_ns, 65 * kUs);
  const std::string text = format_summary(s);
  EXPECT_NE(text.find("critical path of gomachine (pid 3): 4 nodes, 65.0us"), std::string::npos)
      << text;
  EXPECT_EQ(summary_to_json(s)["critical_paths"][0]["nodes"][1]["wait_ns"], 2000);
}

// gomachine_runs.json: three runs of one machine on one process (args.run), node ids repeated.
// Run 2's b (ends 50) must step to run 2's a (ends 5), not to run 1's a (ends 40, later).
TEST(TraceSummary, GoMachineCriticalPathPerRun) {
  const Summary s = summarize(read_trace(fixture("gomachine_runs.json")));
  ASSERT_EQ(s.critical_paths.size(), 3u);
  const CriticalPath& p = s.critical_paths[0];  // the longest first
  EXPECT_EQ(p.run, 2);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].dur_ns, 5 * kUs);
  EXPECT_EQ(p.steps[1].wait_ns, 1 * kUs);
  EXPECT_EQ(p.total_ns, 50 * kUs);
  EXPECT_EQ(s.critical_paths[1].run, 1);
  EXPECT_EQ(s.critical_paths[1].total_ns, 45 * kUs);
  EXPECT_EQ(s.critical_paths[2].run, 3);
  EXPECT_EQ(s.critical_paths[2].total_ns, 1 * kUs);
  const std::string text = format_summary(s);
  EXPECT_NE(text.find("critical path of gomachine (pid 3), run 2 (the longest of 3 runs): 2 "
                      "nodes, 50.0us\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  other runs: run 1 45.0us, run 3 1.00us\n"), std::string::npos) << text;
  EXPECT_EQ(summary_to_json(s)["critical_paths"][1]["run"], 1);
}

// The critical path by its definition, in the quadratic form the summary once used: from the
// slice that ends last, at each step every slice of every input is scanned for the one that ends
// last by the current one's end, is not on the path (ties: lower node id, then trace order).
// Returns the path's slices, first to last.
std::vector<const TraceEvent*> reference_path(const std::vector<const TraceEvent*>& slices) {
  std::map<int64_t, std::vector<const TraceEvent*>> by_node;
  for (const TraceEvent* e : slices) by_node[e->args["node"].get<int64_t>()].push_back(e);
  auto end_of = [](const TraceEvent* e) { return e->ts + e->dur; };
  const TraceEvent* cur = nullptr;
  for (const TraceEvent* e : slices) {
    if (cur == nullptr || end_of(e) > end_of(cur)) cur = e;
  }
  std::vector<const TraceEvent*> chain;
  std::set<const TraceEvent*> visited;
  while (cur != nullptr && visited.insert(cur).second) {
    chain.push_back(cur);
    const TraceEvent* best = nullptr;
    int64_t best_node = 0;
    for (const nlohmann::json& in : cur->args["inputs"]) {
      const int64_t n = in.get<int64_t>();
      auto it = by_node.find(n);
      if (it == by_node.end()) continue;
      for (const TraceEvent* e : it->second) {
        if (e == cur || visited.count(e) != 0 || end_of(e) > end_of(cur)) continue;
        if (best == nullptr || end_of(e) > end_of(best) ||
            (end_of(e) == end_of(best) && n < best_node)) {
          best = e;
          best_node = n;
        }
      }
    }
    cur = best;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

// A node slice's event text (times in us).
std::string node_slice(int64_t node, int64_t ts, int64_t dur, const std::vector<int64_t>& inputs) {
  std::string in;
  for (int64_t i : inputs) in += (in.empty() ? "" : ",") + std::to_string(i);
  return R"({"ph":"X","cat":"node","name":"n)" + std::to_string(node) + R"(","ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"pid":3,"tid":1,)" +
         R"("args":{"node":)" + std::to_string(node) + R"(,"inputs":[)" + in + "]}}";
}

// The summary's path equals the definition's on random small runs: few nodes run many times,
// equal ends (ties), inputs that name the node itself, later nodes, absent nodes and repeats.
TEST(TraceSummary, CriticalPathMatchesItsDefinition) {
  std::mt19937 rng(37);
  for (int round = 0; round < 300; ++round) {
    const int nodes = 1 + static_cast<int>(rng() % 6);
    const int count = 1 + static_cast<int>(rng() % 40);
    std::string events;
    for (int k = 0; k < count; ++k) {
      std::vector<int64_t> inputs;
      for (unsigned m = rng() % 4; m > 0; --m) inputs.push_back(static_cast<int64_t>(rng() % 8));
      if (!events.empty()) events += ",";
      events += node_slice(rng() % nodes, rng() % 30, rng() % 5, inputs);
    }
    const Trace t = parse_trace(doc(events), "random.json");
    std::vector<const TraceEvent*> slices;
    for (const TraceEvent& e : t.events) slices.push_back(&e);
    const std::vector<const TraceEvent*> want = reference_path(slices);
    const Summary s = summarize(t);
    ASSERT_EQ(s.critical_paths.size(), 1u);
    const std::vector<CriticalStep>& got = s.critical_paths[0].steps;
    ASSERT_EQ(got.size(), want.size()) << "round " << round << ": " << events;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(got[k].node, want[k]->args["node"].get<int64_t>()) << round << ", step " << k;
      EXPECT_EQ(got[k].start_ns, want[k]->ts) << round << ", step " << k;
      EXPECT_EQ(got[k].dur_ns, want[k]->dur) << round << ", step " << k;
    }
  }
}

// A run of `count` node slices of two nodes, each the other's input, one after the other: the
// path goes back through every slice, and each step's inputs have count / 2 slices. The walk
// once scanned them all at each step (count^2 / 2: 20,000 slices took 17 s). Bounded here with a
// margin for a loaded machine and sanitizers; CHANFLOW_TEST_TRACE_SLICES sets count (the stress
// test: 100,000, where the docs promise about 0.7 s of CPU for 100,000 events).
TEST(TraceSummary, CriticalPathOfManySlicesIsFast) {
  int64_t count = 20000;
  if (const char* env = std::getenv("CHANFLOW_TEST_TRACE_SLICES")) count = std::stoll(env);
  std::string events;
  for (int64_t k = 0; k < count; ++k) {
    if (k != 0) events += ",";
    events += node_slice(k % 2, 2 * k, 1, {1 - k % 2});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Summary s = summarize(parse_trace(doc(events), "many.json"));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%lld node slices: read and summarized in %.3f s\n", static_cast<long long>(count),
              secs);
  ASSERT_EQ(s.critical_paths.size(), 1u);
  EXPECT_EQ(s.critical_paths[0].steps.size(), static_cast<size_t>(count));
  EXPECT_EQ(s.critical_paths[0].total_ns, (2 * count - 1) * kUs);
  EXPECT_LT(secs, 0.4 + 8e-5 * static_cast<double>(count)) << count << " slices";
}

// Green-thread ids are per scheduler: a slice after an exit is a later thread with the same id.
TEST(TraceSummary, IdReusedAfterExit) {
  const std::string run = R"({"ph":"X","cat":"run","name":"g","ts":%d,"dur":%d,"pid":1,"tid":1,)"
                          R"("args":{"g":1,"end":"exit"}})";
  char a[200], b[200];
  std::snprintf(a, sizeof a, run.c_str(), 0, 1);
  std::snprintf(b, sizeof b, run.c_str(), 10, 2);
  const Summary s = summarize(parse_trace(doc(std::string(a) + "," + b), "reuse.json"));
  ASSERT_EQ(s.gthreads.size(), 1u);
  EXPECT_EQ(s.gthreads[0].running_ns, 3 * kUs);
  EXPECT_EQ(s.gthreads[0].runnable_ns + s.gthreads[0].blocked_ns, 0);
  EXPECT_EQ(s.gthreads[0].slices, 2);
  EXPECT_TRUE(s.gthreads[0].exited);
}

// truncated.json: producer_consumer.json cut inside its 13th event, with no otherData: the 12
// complete events are read; main's park has no wake in them, so it is blocked to the end (60).
TEST(TraceSummary, TruncatedFileKeepsCompleteEvents) {
  const Trace t = read_trace(fixture("truncated.json"));
  EXPECT_TRUE(t.truncated);
  EXPECT_FALSE(t.complete);
  EXPECT_EQ(t.events.size(), 12u);
  const Summary s = summarize(t);
  EXPECT_EQ(s.end_ns, 60 * kUs);
  EXPECT_EQ(gthread(s, "main").blocked_ns, 50 * kUs);
  EXPECT_FALSE(gthread(s, "main").exited);
  EXPECT_EQ(gthread(s, "consumer").blocked_ns, 30250);
  EXPECT_TRUE(gthread(s, "consumer").exited);
  EXPECT_NE(format_summary(s).find("INCOMPLETE\n  the file was cut short"), std::string::npos);
  EXPECT_EQ(summary_to_json(s)["complete"], false);
}

// Every cut of a complete file after "traceEvents": [ reads as an incomplete trace holding the
// events before the cut: never an error, never more events than the whole file.
TEST(TraceSummary, EveryCutIsReadUpToTheLastCompleteEvent) {
  const std::string text = slurp(fixture("producer_consumer.json"));
  const size_t open = text.find('[') + 1;
  size_t last = 0;
  const size_t close = text.rfind('}');  // cut before it; a cut of trailing space is no cut
  for (size_t cut = open; cut < close; ++cut) {
    Trace t;
    ASSERT_NO_THROW(t = parse_trace(text.substr(0, cut), "cut.json")) << "cut at " << cut;
    EXPECT_FALSE(t.complete) << "cut at " << cut;
    EXPECT_GE(t.events.size(), last) << "cut at " << cut;
    last = t.events.size();
    (void)summarize(t);
  }
  EXPECT_EQ(last, 19u);
  EXPECT_TRUE(parse_trace(text, "whole.json").complete);
  // A complete otherData without complete: true is an incomplete trace too.
  EXPECT_FALSE(parse_trace(R"({"traceEvents":[],"otherData":{"chanflow_trace":1}})", "x").complete);
}

TEST(TraceSummary, BadInputsNameFileEventAndField) {
  {
    const TraceError e = parse_error("this is not a trace");
    EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos) << e.what();
  }
  for (const char* text : {R"([{"ph":"X"}])", R"({"foo":1})", R"({"traceEvents":{}})"}) {
    const TraceError e = parse_error(text);
    EXPECT_EQ(e.field(), "traceEvents") << text;
    EXPECT_NE(std::string(e.what()).find("not a chanflow trace"), std::string::npos) << e.what();
  }
  // Garbage after the last complete event is not a cut file.
  EXPECT_NE(std::string(parse_error(R"({"traceEvents":[{"ph":"M","pid":1}, xyz)").what())
                .find("not JSON"),
            std::string::npos);
  EXPECT_EQ(parse_error(R"({"traceEvents":[],"otherData":{}})").field(),
            "otherData.chanflow_trace");
  EXPECT_NE(
      std::string(parse_error(R"({"traceEvents":[],"otherData":{"chanflow_trace":2}})").what())
          .find("unsupported chanflow trace version 2"),
      std::string::npos);

  struct Case {
    std::string events;
    int64_t index;
    std::string field;
  };
  const std::string ok_run =
      R"({"ph":"X","cat":"run","name":"g","ts":0,"dur":1,"pid":1,"tid":1,"args":{"g":1,"end":"exit"}})";
  const Case cases[] = {
      {"1", 0, ""},
      {R"({"ts":0,"pid":1})", 0, "ph"},
      {ok_run + R"(,{"ph":"X","ts":"soon","dur":1,"pid":1,"tid":1})", 1, "ts"},
      {R"({"ph":"X","ts":0,"pid":1,"tid":1})", 0, "dur"},
      {R"({"ph":"i","ts":0})", 0, "pid"},
      {R"({"ph":"X","cat":"run","ts":0,"dur":1,"pid":1,"tid":1,"args":{"end":"exit"}})", 0,
       "args.g"},
      {R"({"ph":"X","cat":"run","ts":0,"dur":1,"pid":1,"tid":1,"args":{"g":1,"end":"sleep"}})", 0,
       "args.end"},
      {R"({"ph":"X","cat":"run","ts":0,"dur":1,"pid":1,"tid":1,"args":{"g":1,"end":"park"}})", 0,
       "args.wait"},
      {R"({"ph":"X","cat":"run","ts":0,"dur":1,"pid":1,"tid":1,"args":{"g":1,"end":"park",)"
       R"("wait":{"kind":"select","obj":"s","cases":[{"kind":"chan.recv"}]}}})",
       0, "args.wait.cases[0].obj"},
      {R"({"ph":"s","cat":"wake","ts":0,"pid":1,"tid":1,"args":{"g":1}})", 0, "id"},
      {R"({"ph":"s","cat":"wake","id":1,"ts":0,"pid":1,"tid":1,"args":{"g":"x"}})", 0, "args.g"},
      {R"({"ph":"X","cat":"node","ts":0,"dur":1,"pid":1,"tid":1,"args":{"node":1,"inputs":[0,"x"]}})",
       0, "args.inputs[1]"},
      {R"({"ph":"i","cat":"gthread","name":"go","ts":0,"pid":1,"tid":1,"args":{"g":1}})", 0,
       "args.gname"},
      {R"({"ph":"M","name":"thread_name","pid":1,"args":{"name":"w"}})", 0, "tid"},
      {R"({"ph":"i","s":"x","ts":0,"pid":1})", 0, "s"},
      {R"({"ph":"i","ts":1e13,"pid":1})", 0, "ts"},
      {R"({"ph":"X","cat":"node","ts":0,"dur":1,"pid":1,"tid":1,"args":{"node":1,"inputs":[],"run":"r"}})",
       0, "args.run"},
      {R"({"ph":"X","ts":0,"dur":-1,"pid":1,"tid":1})", 0, "dur"},
      {R"({"ph":"X","cat":"node","ts":0,"dur":1,"pid":1,"tid":1,"args":{"node":1,"inputs":[],"run":-1}})",
       0, "args.run"},
      {R"({"ph":"X","cat":"node","ts":0,"dur":1,"pid":1,"tid":1,)"
       R"("args":{"node":1,"inputs":[18446744073709551615]}})",
       0, "args.inputs[0]"},
      {R"({"ph":"X","cat":"run","ts":0,"dur":1,"pid":1,"tid":1,"args":{"g":9223372036854775808,"end":"exit"}})",
       0, "args.g"},
      {R"({"ph":"X","cat":"wait","name":"blocked","ts":0,"dur":1,"pid":1,"args":{"wait":{}}})", 0,
       "tid"},
      {R"({"ph":"X","cat":"wait","name":"blocked","ts":0,"dur":1,"pid":1,"tid":2,"args":{}})", 0,
       "args.wait"},
      {R"({"ph":"X","cat":"wait","name":"blocked","ts":0,"dur":1,"pid":1,"tid":2,)"
       R"("args":{"wait":{"kind":"mutex","obj":3}}})",
       0, "args.wait.obj"},
  };
  for (const Case& c : cases) {
    const TraceError e = parse_error(doc(c.events));
    EXPECT_EQ(e.event_index(), c.index) << c.events << ": " << e.what();
    EXPECT_EQ(e.field(), c.field) << c.events << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("event " + std::to_string(c.index)), std::string::npos)
        << e.what();
  }

  // The fixture file: its third event's run slice has no args.g.
  try {
    read_trace(fixture("missing_field.json"));
    ADD_FAILURE() << "missing_field.json was accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.event_index(), 2);
    EXPECT_EQ(e.field(), "args.g");
    EXPECT_NE(std::string(e.what()).find("missing_field.json: event 2 (ph X, cat run): field "
                                         "'args.g' is missing"),
              std::string::npos)
        << e.what();
  }
  // Hostile numbers: a count that is negative or past int64 (it printed
  // "--9,223,372,036,854,775,808 dropped"), an id past int64 (it wrapped to -1).
  struct FileCase {
    const char* file;
    int64_t index;
    const char* field;
    const char* text;
  };
  const FileCase files[] = {
      {"dropped_negative.json", -1, "otherData.dropped_events",
       "dropped_negative.json: field 'otherData.dropped_events' is negative "
       "(-9223372036854775808)"},
      {"dropped_past_int64.json", -1, "otherData.dropped_events",
       "dropped_past_int64.json: field 'otherData.dropped_events' is out of range (above 2^63 - "
       "1) (18446744073709551615)"},
      {"pid_past_int64.json", 0, "pid",
       "pid_past_int64.json: event 0 (ph X, cat run): field 'pid' is out of range"},
  };
  for (const FileCase& c : files) {
    try {
      (void)summarize(read_trace(fixture(c.file)));
      ADD_FAILURE() << c.file << " was accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(e.event_index(), c.index) << c.file;
      EXPECT_EQ(e.field(), c.field) << c.file;
      EXPECT_NE(std::string(e.what()).find(c.text), std::string::npos) << e.what();
    }
  }
  for (const char* count : {"-1", "1.5", "\"7\"", "9223372036854775808"}) {
    const std::string text = std::string(R"({"traceEvents":[],"otherData":{"chanflow_trace":1,)") +
                             R"("dropped_events":)" + count + "}}";
    EXPECT_EQ(parse_error(text).field(), "otherData.dropped_events") << count;
  }
  EXPECT_EQ(parse_trace(R"({"traceEvents":[],"otherData":{"chanflow_trace":1,)"
                        R"("dropped_events":9223372036854775807}})",
                        "max.json")
                .dropped_events,
            INT64_MAX);
  try {
    read_trace(fixture("producer_consumer.json"), 100);
    ADD_FAILURE() << "a file past --max-trace-size was read";
  } catch (const LimitError& e) {
    EXPECT_EQ(e.limit(), "--max-trace-size");
    EXPECT_NE(std::string(e.what()).find("larger than the limit of 100 bytes"), std::string::npos);
  }
  try {
    read_trace(fixture("no_such_file.json"));
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_file.json: cannot open"), std::string::npos);
  }
}

// The report: the summary's tables as HTML, and the timeline data embedded so that no name can
// end its <script> element early.
TEST(TraceHtml, SelfContainedAndEscaped) {
  const std::string events =
      R"({"ph":"i","s":"t","cat":"gthread","name":"go","ts":0,"pid":1,"tid":1,)"
      R"("args":{"g":1,"gname":"</script><b>x","parent":0}},)"
      R"({"ph":"X","cat":"run","name":"</script><b>x","ts":0,"dur":2,"pid":1,"tid":1,)"
      R"("args":{"g":1,"end":"exit"}})";
  const Trace t = parse_trace(doc(events), "t.json");
  const std::string html = trace_to_html(t, summarize(t));
  const size_t data = html.find(R"(<script type="application/json" id="trace-data">)");
  ASSERT_NE(data, std::string::npos);
  const size_t data_end = html.find("</script>", data);
  EXPECT_EQ(html.substr(data, data_end - data).find("</"), std::string::npos);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;b&gt;x"), std::string::npos);  // the table's cell
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  const nlohmann::json d =
      nlohmann::json::parse(html.substr(data + 48, data_end - data - 48));  // after the opening tag
  EXPECT_EQ(d["tracks"].size(), 1u);
  EXPECT_EQ(d["slices"].size(), 8u);  // one slice, 8 numbers
}

}  // namespace
}  // namespace chanflow::tools
