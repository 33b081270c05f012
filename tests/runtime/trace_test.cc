// The trace (chanflow/runtime/trace.h): tracks named with allocated ids, the event kinds, the
// bound on events (dropped and counted), streaming to a file that stays valid when stopped
// mid-run, and the runtime's own events — park reasons, wake flows, channel and run-queue
// counters — on 1, 2, 4 and 8 workers.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "deadlock.h"  // white-box: os_waiter_count
#include "runtime_test_util.h"
#include "support/scoped_env.h"
#include "trace_impl.h"  // white-box: src/runtime

namespace {

using chanflow::testing_support::ScopedEnv;
using nlohmann::json;

json stopped_doc() {
  cf::trace::stop();
  return json::parse(cf::trace::to_json());
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The file's first `n` bytes (fewer if it is shorter).
std::string read_file(const std::string& path, std::size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::string text(n, '\0');
  f.read(text.data(), static_cast<std::streamsize>(n));
  text.resize(static_cast<std::size_t>(f.gcount()));
  return text;
}

// Every (pid) and (pid, tid) an event uses has a metadata event naming it.
void expect_tracks_named(const json& doc) {
  std::set<int> procs;
  std::set<std::pair<int, int>> threads;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") procs.insert(e["pid"].get<int>());
    if (e["name"] == "thread_name") threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
  }
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M") continue;
    EXPECT_TRUE(procs.count(e["pid"].get<int>())) << e.dump();
    const int tid = e.value("tid", 0);
    if (tid != 0) {
      EXPECT_TRUE(threads.count({e["pid"].get<int>(), tid})) << e.dump();
    }
  }
}

TEST(Trace, ApiEventsOnNamedTracks) {
  const uint32_t p = cf::trace::process("trace test");
  EXPECT_EQ(cf::trace::process("trace test"), p);  // by name
  EXPECT_NE(cf::trace::process("trace test 2"), p);
  const cf::trace::Track a = cf::trace::thread(p, "lane a");
  const cf::trace::Track b = cf::trace::thread(p, "lane a");  // each call: a new track
  EXPECT_NE(a.tid, b.tid);
  EXPECT_FALSE(cf::trace::enabled());
  cf::trace::slice(a, "test", "before start", 0, 1);  // off: not recorded
  cf::trace::start();
  EXPECT_TRUE(cf::trace::enabled());
  const int64_t t0 = cf::trace::now_ns();
  cf::trace::slice(a, "test", "work \"quoted\"", t0, t0 + 2500, R"({"k":1})");
  cf::trace::instant(b, "test", "tick", t0 + 100);
  cf::trace::counter(a, "test", "depth", t0 + 200, R"({"n":3})");
  const uint64_t id = cf::trace::flow_id();
  cf::trace::flow_begin(a, "test", "hand", id, t0 + 300);
  cf::trace::flow_end(b, "test", "hand", id, t0 + 400);
  { cf::trace::ScopedSlice s(b, "test", "scoped"); }
  EXPECT_THROW(cf::trace::slice(a, "test", "bad args", t0, t0, "[1]"), cf::Error);
  const json doc = stopped_doc();
  EXPECT_FALSE(cf::trace::enabled());
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["otherData"]["chanflow_trace"], 1);
  EXPECT_EQ(doc["otherData"]["complete"], true);
  std::map<std::string, json> by_name;
  for (const json& e : doc["traceEvents"]) {
    if (e.value("cat", "") == "test")
      by_name[e["name"].get<std::string>() + e["ph"].get<std::string>()] = e;
  }
  ASSERT_EQ(by_name.size(), 6u);
  const json& w = by_name["work \"quoted\"X"];
  EXPECT_EQ(w["pid"], p);
  EXPECT_EQ(w["tid"], a.tid);
  EXPECT_NEAR(w["dur"].get<double>(), 2.5, 1e-9);
  EXPECT_EQ(w["args"]["k"], 1);
  EXPECT_GE(w["ts"].get<double>(), 0.0);  // microseconds since start()
  EXPECT_NEAR(by_name["ticki"]["ts"].get<double>() - w["ts"].get<double>(), 0.1, 1e-6);
  EXPECT_EQ(by_name["depthC"]["args"]["n"], 3);
  EXPECT_EQ(by_name["hands"]["id"], by_name["handf"]["id"]);
  EXPECT_EQ(by_name["handf"]["bp"], "e");
  EXPECT_EQ(by_name["scopedX"]["tid"], b.tid);
  expect_tracks_named(doc);
  std::map<int, std::string> procs;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") procs[e["pid"]] = e["args"]["name"];
  }
  EXPECT_EQ(procs[static_cast<int>(p)], "trace test");
}

// At most max_events events are written, from any number of threads; the others are counted,
// and the file says how many (otherData, and a "dropped" mark).
TEST(Trace, KeepsAtMostMaxEventsAndCountsTheRest) {
  constexpr std::size_t kBound = 300;
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  const cf::trace::Track t = cf::trace::thread(cf::trace::process("trace test"), "bound");
  cf::trace::start({.max_events = kBound});
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([t] {
      for (int k = 0; k < kEach; ++k) cf::trace::instant(t, "bound", "e", cf::trace::now_ns());
    });
  }
  for (auto& th : ts) th.join();
  const json doc = stopped_doc();
  std::size_t kept = 0;
  for (const json& e : doc["traceEvents"]) kept += e.value("cat", "") == "bound" ? 1 : 0;
  EXPECT_LE(kept, kBound);
  EXPECT_EQ(kept, cf::trace::event_count());
  EXPECT_EQ(kept + cf::trace::dropped_count(), static_cast<std::size_t>(kThreads * kEach));
  EXPECT_EQ(doc["otherData"]["dropped_events"].get<std::size_t>(), cf::trace::dropped_count());
  EXPECT_EQ(doc["otherData"]["max_events"].get<std::size_t>(), kBound);
  int marks = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e.value("cat", "") == "mark" && e["name"] == "dropped") ++marks;
  }
  EXPECT_EQ(marks, 1);
  cf::trace::start();  // a new recording starts from zero
  EXPECT_EQ(cf::trace::dropped_count(), 0u);
  cf::trace::stop();
}

// stop(mark) ends the file with that mark beside "stop", also when the bound was used up long
// before (the way a run ended is not one of its events); stop() writes no other mark.
TEST(Trace, StopMarkIsWrittenPastTheBound) {
  const cf::trace::Track t = cf::trace::thread(cf::trace::process("trace test"), "stop mark");
  for (const bool past_bound : {false, true}) {
    cf::trace::start({.max_events = 10});
    for (int k = 0; k < (past_bound ? 100 : 3); ++k) {
      cf::trace::instant(t, "fill", "e", cf::trace::now_ns());
    }
    cf::trace::stop("cancelled");
    const json doc = json::parse(cf::trace::to_json());
    std::map<std::string, int64_t> marks;  // name -> ts in ns
    for (const json& e : doc["traceEvents"]) {
      if (e.value("cat", "") == "mark")
        marks[e["name"]] = std::llround(e["ts"].get<double>() * 1e3);
    }
    ASSERT_EQ(marks.count("cancelled"), 1u) << doc.dump();
    ASSERT_EQ(marks.count("stop"), 1u);
    EXPECT_EQ(marks["cancelled"], marks["stop"]);
    EXPECT_EQ(marks.count("dropped"), past_bound ? 1u : 0u);
    EXPECT_EQ(doc["otherData"]["complete"], true);
    EXPECT_LE(doc["otherData"]["events"].get<std::size_t>(), 10u);
  }
  cf::trace::start({.max_events = 10});
  cf::trace::stop();
  const json plain = json::parse(cf::trace::to_json());
  for (const json& e : plain["traceEvents"]) {
    if (e.value("cat", "") == "mark") {
      EXPECT_EQ(e["name"], "stop");
    }
  }
  // A mark is escaped like any name.
  cf::trace::start();
  cf::trace::stop("a \"quoted\" end");
  bool found = false;
  const json quoted = json::parse(cf::trace::to_json());
  for (const json& e : quoted["traceEvents"]) {
    found = found || (e.value("cat", "") == "mark" && e["name"] == "a \"quoted\" end");
  }
  EXPECT_TRUE(found);
}

// The buffers waiting for the writer are bounded too: a burst far larger than buffer_bytes is
// written or counted, every event one or the other.
TEST(Trace, BufferBoundDropsAndCountsWhenTheWriterFallsBehind) {
  const std::string path = ::testing::TempDir() + "/chanflow_trace_burst.json";
  const cf::trace::Track t = cf::trace::thread(cf::trace::process("trace test"), "burst");
  constexpr int kEvents = 200'000;  // ~100 bytes each: 20 MB against a 64 KiB queue
  cf::trace::start({.path = path, .max_events = 0, .buffer_bytes = 1});
  const std::string name(40, 'x');
  for (int k = 0; k < kEvents; ++k) cf::trace::instant(t, "burst", name, cf::trace::now_ns());
  cf::trace::stop();
  const json doc = json::parse(read_file(path));
  std::size_t kept = 0;
  for (const json& e : doc["traceEvents"]) kept += e.value("cat", "") == "burst" ? 1 : 0;
  EXPECT_EQ(kept + cf::trace::dropped_count(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(doc["otherData"]["dropped_events"].get<std::size_t>(), cf::trace::dropped_count());
  EXPECT_EQ(cf::trace::to_json(), "");  // went to the file
}

TEST(Trace, StartThrowsOnAnUnwritablePath) {
  EXPECT_THROW(cf::trace::start({.path = "/nonexistent-dir/x.json"}), cf::Error);
  EXPECT_FALSE(cf::trace::enabled());
}

// start() and stop() from several threads at once, while others record: each recording ends as
// a complete document, nothing crashes or hangs.
TEST(Trace, StartAndStopAreThreadSafe) {
  const cf::trace::Track t = cf::trace::thread(cf::trace::process("trace test"), "racer");
  std::atomic<bool> done{false};
  std::vector<std::thread> recorders;
  for (int i = 0; i < 2; ++i) {
    recorders.emplace_back([&] {
      while (!done.load()) cf::trace::instant(t, "race", "e", cf::trace::now_ns());
    });
  }
  std::vector<std::thread> switchers;
  for (int i = 0; i < 3; ++i) {
    switchers.emplace_back([] {
      for (int k = 0; k < 50; ++k) {
        cf::trace::start();
        cf::trace::stop();
      }
    });
  }
  for (auto& th : switchers) th.join();
  done = true;
  for (auto& th : recorders) th.join();
  const json doc = json::parse(cf::trace::to_json());
  EXPECT_EQ(doc["otherData"]["complete"], true);
}

// The trace clock agrees with the steady clock: the same elapsed time over an interval (within
// 0.1%: a TSC-based clock's scale is measured once, to a few ppm) and the same epoch (within
// 1 ms; the TSC clock is aligned to the steady clock when it is calibrated). Readings never go
// backwards on one thread.
TEST(Trace, ClockAgreesWithTheSteadyClock) {
  auto steady = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const int64_t t0 = cf::trace::now_ns();
  const int64_t s0 = steady();
  EXPECT_LT(std::abs(t0 - s0), 1'000'000) << "trace " << t0 << " ns, steady " << s0 << " ns";
  int64_t last = t0;
  int64_t backwards = 0;
  // About 50 ms of readings.
  while (steady() - s0 < 50'000'000) {
    const int64_t t = cf::trace::now_ns();
    backwards += t < last ? 1 : 0;
    last = t;
  }
  const int64_t t1 = cf::trace::now_ns();
  const int64_t s1 = steady();
  EXPECT_EQ(backwards, 0);
  const double ratio = static_cast<double>(t1 - t0) / static_cast<double>(s1 - s0);
  EXPECT_NEAR(ratio, 1.0, 1e-3) << "trace " << t1 - t0 << " ns vs steady " << s1 - s0 << " ns";
}

class TraceRuntime : public WorkersFixture {};

// Starts a pinger (sends on ping and receives on pong while more(i)) and a ponger (echoes until
// ping is closed); each calls wg.done() as it ends.
template <class More>
void go_ping_pong(cf::Chan<int> ping, cf::Chan<int> pong, cf::WaitGroup& wg, More more) {
  wg.add(2);
  cf::go("pinger", [ping, pong, &wg, more]() mutable {
    for (int i = 0; more(i); ++i) {
      ping.send(i);
      pong.recv();
    }
    ping.close();
    wg.done();
  });
  cf::go("ponger", [ping, pong, &wg]() mutable {
    while (auto v = ping.recv()) pong.send(*v);
    wg.done();
  });
}

// A file streamed while green threads run: events are in it before stop(); stopped while they
// still run, it is complete, valid JSON. (The writer renders as it goes: the ping-pong below
// would make it fall behind and spool, and the file would not grow until stop().)
TEST_P(TraceRuntime, StreamedFileIsValidWhenStoppedMidRun) {
  const ScopedEnv render("CHANFLOW_TRACE_SPOOL", "never");
  const std::string path =
      ::testing::TempDir() + "/chanflow_trace_mid_" + std::to_string(GetParam()) + ".json";
  auto ping = cf::make_chan<int>(0, "ping");
  auto pong = cf::make_chan<int>(0, "pong");
  std::atomic<bool> quit{false};
  cf::WaitGroup wg;
  // Bounded so that the file stays small however fast the host writes it (the ping-pong goes on
  // past the bound: events are then dropped, and the file is complete all the same).
  cf::trace::start({.path = path, .max_events = 300'000});
  go_ping_pong(ping, pong, wg, [&quit](int) { return !quit.load(std::memory_order_relaxed); });
  // Streamed: full buffers reach the file while the program runs.
  wait_until(
      [&] { return read_file(path, std::size_t{256} << 10).size() == std::size_t{256} << 10; });
  // What a process killed now would leave: the events up to the last complete one. Their tracks
  // are named in it already (the names are written as tracks appear, not only at stop).
  {
    std::string prefix = read_file(path, std::size_t{1} << 20);
    ASSERT_NE(prefix.rfind(",\n"), std::string::npos);
    prefix.resize(prefix.rfind(",\n"));
    const json cut = json::parse(prefix + "]}");
    std::size_t runs = 0;
    for (const json& e : cut["traceEvents"]) runs += e.value("cat", "") == "run" ? 1 : 0;
    EXPECT_GT(runs, 0u);
    expect_tracks_named(cut);
  }
  cf::trace::stop();
  const std::string text = read_file(path);
  quit = true;
  wg.wait();
  const json doc = json::parse(text);  // throws if not valid JSON
  EXPECT_EQ(doc["otherData"]["complete"], true);
  std::size_t runs = 0;
  for (const json& e : doc["traceEvents"]) runs += e.value("cat", "") == "run" ? 1 : 0;
  EXPECT_GT(runs, 100u);
  expect_tracks_named(doc);
}

// A recording the writer spools (as it does once it falls behind; here from the start) has every
// event in the file after stop(): none is in it before, none is lost, each wake flow has both
// ends, every track is named.
TEST_P(TraceRuntime, SpooledEventsAreAllInTheFileAfterStop) {
  const ScopedEnv spool("CHANFLOW_TRACE_SPOOL", "always");
  const std::string path =
      ::testing::TempDir() + "/chanflow_trace_spool_" + std::to_string(GetParam()) + ".json";
  // The spool is a file without a name in the output's directory; where the file system cannot
  // make one, the writer renders as it goes (documented), and this test has nothing to check.
  if (const int fd = ::open(::testing::TempDir().c_str(), O_TMPFILE | O_RDWR, 0600); fd >= 0) {
    ::close(fd);
  } else {
    GTEST_SKIP() << "no O_TMPFILE in " << ::testing::TempDir();
  }
  constexpr int kRounds = 10'000;  // ~2 MB of records: workers hand many buffers to the writer
  auto ping = cf::make_chan<int>(0, "ping");
  auto pong = cf::make_chan<int>(0, "pong");
  cf::WaitGroup wg;
  // Room for every record: the writer's queue never drops, however late it runs.
  cf::trace::start({.path = path, .max_events = 0, .buffer_bytes = std::size_t{64} << 20});
  go_ping_pong(ping, pong, wg, [](int i) { return i < kRounds; });
  wg.wait();
  wait_until([&] { return sched().live() == 0; });
  EXPECT_EQ(read_file(path).find(R"("cat":"run")"), std::string::npos) << "rendered, not spooled";
  cf::trace::stop();
  EXPECT_EQ(cf::trace::dropped_count(), 0u);
  const json doc = json::parse(read_file(path));
  EXPECT_EQ(doc["otherData"]["complete"], true);
  EXPECT_EQ(doc["otherData"]["events"], cf::trace::event_count());
  expect_tracks_named(doc);
  // Each transfer on an unbuffered channel parks whichever side came first: one park per
  // transfer (two a round trip), and perhaps the ponger's last receive, ended by the close.
  std::size_t parks = 0, wake_starts = 0, wake_ends = 0;
  std::set<uint64_t> starts, ends;
  for (const json& e : doc["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "run") {  // named from the recording's registry, not from the record
      EXPECT_TRUE(e["name"] == "pinger" || e["name"] == "ponger") << e.dump();
    }
    if (cat == "run" && e["args"]["end"] == "park") {
      const std::string obj = e["args"]["wait"]["obj"];
      EXPECT_TRUE(obj == "ping" || obj == "pong") << e.dump();
      ++parks;
    } else if (cat == "wake") {
      (e["ph"] == "s" ? starts : ends).insert(e["id"].get<uint64_t>());
      ++(e["ph"] == "s" ? wake_starts : wake_ends);
    }
  }
  EXPECT_GE(parks, std::size_t{2} * kRounds);
  EXPECT_LE(parks, std::size_t{2} * kRounds + 1);
  EXPECT_GE(wake_starts, parks);  // each park was woken; each green thread also by its spawn
  EXPECT_EQ(wake_starts, starts.size());
  EXPECT_EQ(starts, ends);
  EXPECT_EQ(wake_ends, ends.size());
  std::remove(path.c_str());
}

// CHANFLOW_TRACE_SPOOL takes auto, always or never; anything else is an Error naming it, and the
// trace is off (start() stops the recording before it reads the setting).
TEST(Trace, SpoolSettingIsChecked) {
  cf::trace::start();  // on, in memory: the failed start() below ends it
  ASSERT_TRUE(cf::trace::enabled());
  const ScopedEnv spool("CHANFLOW_TRACE_SPOOL", "sometimes");
  try {
    cf::trace::start();
    cf::trace::stop();
    ADD_FAILURE() << "start() accepted CHANFLOW_TRACE_SPOOL=sometimes";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CHANFLOW_TRACE_SPOOL is 'sometimes'"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(cf::trace::enabled());
}

struct Parsed {
  std::map<std::string, int64_t> g_of;         // gname -> g
  std::map<int64_t, std::vector<json>> parks;  // g -> its "park" run slices' wait, in order
  std::map<int64_t, std::vector<json>> wakes;  // g -> its wake flow starts' args
  std::map<int64_t, json> flow_s, flow_f;
  std::map<std::tuple<int, int, double>, int64_t> run_starts;
  // OS threads' blocking waits ("blocked" slices), and their ends: (pid, tid, ns).
  std::vector<json> blocked;
  std::set<std::tuple<int, int, int64_t>> blocked_ends;
  std::map<std::string, std::vector<json>> chan_counters;
  int run_queue_samples = 0;
};

// A rendered time (µs with 3 decimals) as integer ns, to compare sums exactly.
int64_t ns_of(const json& us) { return std::llround(us.get<double>() * 1000); }

Parsed parse(const json& doc) {
  Parsed p;
  std::vector<json> events(doc["traceEvents"].begin(), doc["traceEvents"].end());
  std::sort(events.begin(), events.end(),
            [](const json& a, const json& b) { return a.value("ts", 0.0) < b.value("ts", 0.0); });
  for (const json& e : events) {
    const std::string cat = e.value("cat", "");
    if (cat == "gthread") {
      p.g_of[e["args"]["gname"]] = e["args"]["g"];
    } else if (cat == "run") {
      p.run_starts[{e["pid"], e["tid"], e["ts"]}] = e["args"]["g"];
      if (e["args"]["end"] == "park") p.parks[e["args"]["g"]].push_back(e["args"]["wait"]);
    } else if (cat == "wait") {
      EXPECT_EQ(e["name"], "blocked");
      p.blocked.push_back(e);
      p.blocked_ends.insert({e["pid"], e["tid"], ns_of(e["ts"]) + ns_of(e["dur"])});
    } else if (cat == "wake" && e["ph"] == "s") {
      if (e["args"].contains("g")) p.wakes[e["args"]["g"]].push_back(e["args"]);
      p.flow_s[e["id"]] = e;
    } else if (cat == "wake") {
      p.flow_f[e["id"]] = e;
    } else if (cat == "chan") {
      p.chan_counters[e["name"]].push_back(e["args"]);
    } else if (cat == "sched") {
      EXPECT_EQ(e["name"], "run queue");
      EXPECT_GE(e["args"]["runnable"].get<int>(), 0);
      ++p.run_queue_samples;
    }
  }
  return p;
}

// Each kind of wait is named in the run slice that ends with it, and the wake flow that ends it
// says what woke the green thread: a named channel's send and close, an unnamed one ("#<id>"), a
// select's cases, a mutex's unlock, a wait group, a timer, a context's cancel, a spawn. Named
// mutexes and wait groups show their names, unnamed ones their addresses.
TEST_P(TraceRuntime, ParkReasonsAndWhatWokeEachGreenThread) {
  cf::Scheduler& s = sched();
  auto named = cf::make_chan<int>(0, "jobs");
  auto unnamed = cf::make_chan<int>();
  auto a = cf::make_chan<int>(0, "a");
  auto b = cf::make_chan<int>(0, "b");
  cf::Mutex mu;
  cf::WaitGroup gate;
  gate.add(1);
  cf::Mutex cache_mu("cache");
  cf::WaitGroup workers("workers");
  workers.add(1);
  cf::Context ctx = cf::with_cancel(cf::background());
  cf::trace::start({.max_events = 0});
  auto step = [&](const char* name, auto&& body, auto&& release) {
    cf::WaitGroup ended;
    ended.add(1);
    cf::go(name, [&] {
      body();
      ended.done();
    });
    wait_until([&] { return all_parked(s); });
    release();
    ended.wait();
  };
  step(
      "recv-named", [&] { named.recv(); }, [&] { named.send(1); });
  step(
      "recv-closed", [&] { named.recv(); }, [&] { named.close(); });
  step(
      "send-unnamed", [&] { unnamed.send(1); }, [&] { unnamed.recv(); });
  step(
      "select",
      [&] {
        std::optional<int> x, y;
        cf::SelectCase cs[] = {cf::SelectCase::recv(a, x), cf::SelectCase::recv(b, y)};
        cf::select(std::span<cf::SelectCase>(cs));
      },
      [&] { b.send(2); });
  mu.lock();
  step(
      "mutex",
      [&] {
        mu.lock();
        mu.unlock();
      },
      [&] { mu.unlock(); });
  step(
      "waitgroup", [&] { gate.wait(); }, [&] { gate.done(); });
  cache_mu.lock();
  step(
      "mutex-named",
      [&] {
        cache_mu.lock();
        cache_mu.unlock();
      },
      [&] { cache_mu.unlock(); });
  step(
      "waitgroup-named", [&] { workers.wait(); }, [&] { workers.done(); });
  step(
      "context", [&] { ctx.done().recv(); }, [&] { ctx.cancel(); });
  {
    cf::WaitGroup ended;
    ended.add(1);
    cf::go("sleeper", [&] {
      cf::sleep_for(std::chrono::microseconds(100));
      ended.done();
    });
    ended.wait();
  }
  // A green thread wakes another: by_g names it.
  {
    auto c = cf::make_chan<int>(0, "between");
    cf::WaitGroup ended;
    ended.add(2);
    cf::go("receiver", [&] {
      c.recv();
      ended.done();
    });
    wait_until([&] { return all_parked(s); });
    cf::go("sender", [&] {
      c.send(1);
      ended.done();
    });
    ended.wait();
  }
  wait_until([&] { return s.live() == 0; });
  const json doc = stopped_doc();
  const Parsed p = parse(doc);
  auto first_park = [&](const std::string& g) -> json {
    auto it = p.g_of.find(g);
    if (it == p.g_of.end() || !p.parks.count(it->second)) return json();
    return p.parks.at(it->second).front();
  };
  // Its wake flows: [0] is the spawn, [1] what ended its first park.
  auto wake = [&](const std::string& g, std::size_t i) -> json {
    auto it = p.g_of.find(g);
    if (it == p.g_of.end() || !p.wakes.count(it->second) || p.wakes.at(it->second).size() <= i) {
      return json();
    }
    return p.wakes.at(it->second)[i];
  };
  EXPECT_EQ(first_park("recv-named"), json({{"kind", "chan.recv"}, {"obj", "jobs"}}));
  EXPECT_EQ(wake("recv-named", 0)["by"], "spawn");
  EXPECT_EQ(wake("recv-named", 1)["by"], "chan.send");
  EXPECT_EQ(wake("recv-named", 1)["obj"], "jobs");
  EXPECT_EQ(wake("recv-named", 1)["by_g"], 0);  // the test's OS thread
  EXPECT_EQ(wake("recv-closed", 1)["by"], "chan.close");
  const json su = first_park("send-unnamed");
  EXPECT_EQ(su["kind"], "chan.send");
  EXPECT_EQ(su["obj"].get<std::string>().rfind('#', 0), 0u) << su;
  EXPECT_EQ(wake("send-unnamed", 1)["by"], "chan.recv");
  const json sel = first_park("select");
  EXPECT_EQ(sel["kind"], "select");
  std::set<std::string> cases;
  for (const json& c : sel["cases"]) {
    EXPECT_EQ(c["kind"], "chan.recv");
    cases.insert(c["obj"]);
  }
  EXPECT_EQ(cases, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(wake("select", 1)["obj"], "b");
  EXPECT_EQ(first_park("mutex")["kind"], "mutex");
  EXPECT_EQ(wake("mutex", 1)["by"], "unlock");
  EXPECT_EQ(first_park("waitgroup")["kind"], "waitgroup");
  EXPECT_EQ(wake("waitgroup", 1)["by"], "waitgroup");
  auto address_of = [](const void* obj) {
    std::ostringstream os;
    os << "#" << obj;  // "#0x..."
    return os.str();
  };
  EXPECT_EQ(first_park("mutex")["obj"], address_of(&mu));
  EXPECT_EQ(wake("mutex", 1)["obj"], address_of(&mu));
  EXPECT_EQ(first_park("waitgroup")["obj"], address_of(&gate));
  EXPECT_EQ(wake("waitgroup", 1)["obj"], address_of(&gate));
  EXPECT_EQ(first_park("mutex-named"), json({{"kind", "mutex"}, {"obj", "cache"}}));
  EXPECT_EQ(wake("mutex-named", 1)["by"], "unlock");
  EXPECT_EQ(wake("mutex-named", 1)["obj"], "cache");
  EXPECT_EQ(first_park("waitgroup-named"), json({{"kind", "waitgroup"}, {"obj", "workers"}}));
  EXPECT_EQ(wake("waitgroup-named", 1)["by"], "waitgroup");
  EXPECT_EQ(wake("waitgroup-named", 1)["obj"], "workers");
  EXPECT_EQ(first_park("context")["kind"], "context");
  EXPECT_EQ(wake("context", 1)["by"], "cancel");
  EXPECT_EQ(first_park("sleeper")["kind"], "timer");
  EXPECT_EQ(wake("sleeper", 1)["by"], "timer");
  EXPECT_EQ(wake("receiver", 1)["by_g"], p.g_of.at("sender"));
  // Every flow pairs up and lands at the start of a run slice of the green thread it woke, or for
  // the test's OS thread (its waits for each step) at the end of its blocking wait.
  ASSERT_FALSE(p.flow_s.empty());
  EXPECT_EQ(p.flow_s.size(), p.flow_f.size());
  for (const auto& [id, e] : p.flow_s) {
    auto f = p.flow_f.find(id);
    ASSERT_NE(f, p.flow_f.end()) << id;
    if (!e["args"].contains("g")) {
      EXPECT_TRUE(
          p.blocked_ends.count({f->second["pid"], f->second["tid"], ns_of(f->second["ts"])}))
          << "flow " << id;
      continue;
    }
    auto run = p.run_starts.find({f->second["pid"], f->second["tid"], f->second["ts"]});
    ASSERT_NE(run, p.run_starts.end()) << "flow " << id;
    EXPECT_EQ(run->second, e["args"]["g"].get<int64_t>());
  }
  expect_tracks_named(doc);
}

// An OS thread's blocking waits are "blocked" slices on its track, naming what it waits on (a
// channel, a select's cases, a named wait group), each ended by a wake flow from what released it:
// the code that runs on the calling thread (the executor's block 0, a Python thread) is explained
// like a green thread. Each release waits until the OS thread is queued on the object, so the OS
// thread blocks every time.
TEST_P(TraceRuntime, BlockingWaitsOfAnOsThreadAndWhatEndedThem) {
  auto replies = cf::make_chan<int>(0, "replies");
  auto a = cf::make_chan<int>(0, "a");
  auto b = cf::make_chan<int>(0, "b");
  cf::WaitGroup started("started");
  started.add(1);
  // The OS thread is queued on the object once it counts as parked (os_park registers it before
  // it unlocks); polling the channel's own lock instead would compete with it for that lock.
  const int parked_before = cf::detail::os_waiter_count();
  const auto os_thread_parked = [parked_before] {
    return cf::detail::os_waiter_count() > parked_before;
  };
  cf::trace::start({.max_events = 0});
  cf::go("replier", [&] {
    wait_until(os_thread_parked);
    replies.send(7);
    // Its lock taken only while the OS thread is parked (on replies still, or in the select).
    wait_until([&] { return os_thread_parked() && parked_receivers(b.base()) == 1; });
    b.send(8);
    started.done();
  });
  EXPECT_EQ(replies.recv(), 7);
  std::optional<int> x, y;
  cf::SelectCase cs[] = {cf::SelectCase::recv(a, x), cf::SelectCase::recv(b, y)};
  cf::select(std::span<cf::SelectCase>(cs));
  EXPECT_EQ(y, 8);
  started.wait();
  wait_until([&] { return sched().live() == 0; });
  const json doc = stopped_doc();
  const Parsed p = parse(doc);
  ASSERT_GE(p.blocked.size(), 2u);
  const json& on_replies = p.blocked[0];
  EXPECT_EQ(on_replies["args"]["wait"], json({{"kind", "chan.recv"}, {"obj", "replies"}}));
  const json& on_select = p.blocked[1];
  EXPECT_EQ(on_select["args"]["wait"]["kind"], "select");
  std::set<std::string> cases;
  for (const json& c : on_select["args"]["wait"]["cases"]) cases.insert(c["obj"]);
  EXPECT_EQ(cases, (std::set<std::string>{"a", "b"}));
  // Both on the same OS thread's track, not a worker's.
  EXPECT_EQ(on_replies["tid"], on_select["tid"]);
  // The wake flows that end them: sent by the replier, on the channel that released each.
  std::vector<json> os_wakes;
  for (const auto& [id, s] : p.flow_s) {
    if (!s["args"].contains("g")) os_wakes.push_back(s);
  }
  std::sort(os_wakes.begin(), os_wakes.end(),
            [](const json& l, const json& r) { return l["ts"] < r["ts"]; });
  ASSERT_GE(os_wakes.size(), 2u);
  EXPECT_EQ(os_wakes[0]["args"]["by"], "chan.send");
  EXPECT_EQ(os_wakes[0]["args"]["obj"], "replies");
  EXPECT_EQ(os_wakes[0]["args"]["by_g"], p.g_of.at("replier"));
  EXPECT_EQ(os_wakes[1]["args"]["obj"], "b");
  for (const auto& [id, s] : p.flow_s) {
    if (s["args"].contains("g")) continue;
    auto f = p.flow_f.find(id);
    ASSERT_NE(f, p.flow_f.end()) << id;
    EXPECT_TRUE(p.blocked_ends.count({f->second["pid"], f->second["tid"], ns_of(f->second["ts"])}))
        << "flow " << id << " does not end where a blocking wait does";
    EXPECT_EQ(f->second["tid"], on_replies["tid"]);
  }
}

// A wait group may be destroyed by the first waiter it released while its add() still wakes the
// others (wait_group.h): the trace names those wakes from what the parks recorded, never reading
// the group (ASan checks that).
TEST_P(TraceRuntime, WakesOfAWaitGroupDestroyedByItsFirstReleasedWaiter) {
  cf::Scheduler& s = sched();
  cf::trace::start({.max_events = 0});
  constexpr int kRounds = 30, kWaiters = 3;
  for (int round = 0; round < kRounds; ++round) {
    auto* wg = new cf::WaitGroup("short-lived");
    wg->add(1);
    std::atomic<bool> freed{false};
    cf::WaitGroup ended;
    ended.add(kWaiters);
    for (int i = 0; i < kWaiters; ++i) {
      cf::go("waiter", [&freed, &ended, wg] {
        wg->wait();
        if (!freed.exchange(true)) delete wg;
        ended.done();
      });
    }
    wait_until([&] { return all_parked(s); });
    wg->done();
    ended.wait();
  }
  wait_until([&] { return s.live() == 0; });
  const Parsed p = parse(stopped_doc());
  int named = 0;
  for (const auto& [g, wakes] : p.wakes) {
    for (const json& w : wakes) {
      if (w["by"] != "waitgroup") continue;
      EXPECT_EQ(w["obj"], "short-lived") << w;
      ++named;
    }
  }
  EXPECT_EQ(named, kRounds * kWaiters);
}

// Buffered channels are counters of their length on every change; the run queue is sampled.
TEST_P(TraceRuntime, ChannelOccupancyAndRunQueueCounters) {
  auto buf = cf::make_chan<int>(4, "buf");
  auto unbuffered = cf::make_chan<int>(0, "sync");
  cf::trace::start({.max_events = 0});
  cf::WaitGroup wg;
  wg.add(1);
  cf::go("filler", [&] {
    for (int i = 0; i < 4; ++i) buf.send(i);
    for (int i = 0; i < 4; ++i) buf.recv();
    wg.done();
  });
  wg.wait();
  // Many runnable green threads at once: the run queue grows.
  cf::WaitGroup many;
  many.add(64);
  for (int i = 0; i < 64; ++i) {
    cf::go([&] {
      cf::yield();
      many.done();
    });
  }
  many.wait();
  wait_until([&] { return sched().live() == 0; });
  const Parsed p = parse(stopped_doc());
  ASSERT_TRUE(p.chan_counters.count("chan buf"));
  EXPECT_FALSE(p.chan_counters.count("chan sync"));
  std::vector<int> lens;
  for (const json& a : p.chan_counters.at("chan buf")) {
    EXPECT_EQ(a["cap"], 4);
    lens.push_back(a["len"]);
  }
  EXPECT_EQ(lens, (std::vector<int>{1, 2, 3, 4, 3, 2, 1, 0}));
  EXPECT_GT(p.run_queue_samples, 0);
}

// The writer thread is the runtime's own: deadlock detection still concludes while a recording
// is on (a thread it did not know would suspend it for good: this test would hang).
TEST_P(TraceRuntime, DeadlockIsStillReportedWhileTracing) {
  cf::trace::start();
  auto ch = cf::make_chan<int>(0, "never");
  cf::go("stuck", [ch] { ch.recv(); });
  EXPECT_THROW(ch.recv(), cf::DeadlockError);
  cf::trace::stop();
}

// Off, the runtime records nothing.
TEST_P(TraceRuntime, OffRecordsNothing) {
  cf::trace::start();
  cf::trace::stop();
  auto c = cf::make_chan<int>(1, "c");
  cf::WaitGroup wg;
  wg.add(1);
  cf::go("quiet", [&] {
    c.send(1);
    c.recv();
    wg.done();
  });
  wg.wait();
  EXPECT_EQ(cf::trace::event_count(), 0u);
}

// Channel names are registered with each recording: a named channel used in two recordings in a
// row is named in both files, and an unnamed one is "#<id>" with the same id in both.
TEST_P(TraceRuntime, ChannelNamesInEveryRecording) {
  auto named = cf::make_chan<int>(0, "handoff");
  auto unnamed = cf::make_chan<int>(0);
  std::vector<std::set<std::string>> objs(2);
  for (int round = 0; round < 2; ++round) {
    cf::trace::start({.max_events = 0});
    // Two green threads on each unbuffered channel: whichever comes first parks on it (its run
    // slice names the channel) and the other wakes it (the wake names it too).
    cf::WaitGroup wg;
    wg.add(2);
    cf::go("receiver", [&] {
      named.recv();
      unnamed.recv();
      wg.done();
    });
    cf::go("sender", [&] {
      named.send(1);
      unnamed.send(2);
      wg.done();
    });
    wg.wait();
    const Parsed p = parse(stopped_doc());
    for (const auto& [g, waits] : p.parks) {
      for (const json& w : waits) objs[round].insert(w["obj"].get<std::string>());
    }
    for (const auto& [g, wakes] : p.wakes) {
      for (const json& w : wakes) objs[round].insert(w["obj"].get<std::string>());
    }
  }
  const std::string id = "#" + std::to_string(unnamed.base()->trace_id());
  for (const auto& o : objs) {
    EXPECT_TRUE(o.count("handoff")) << ::testing::PrintToString(o);
    EXPECT_TRUE(o.count(id)) << ::testing::PrintToString(o);
  }
}

// The renderer over raw bytes (trace_impl.h), as a spool read back wrong would hand it. A record
// here is laid out as trace.cc's Head: size u32, kind u8, sub, sub2, nstr u8, pid u32, tid u32,
// ts i64, n[3] i64 (48 bytes); kind 8 is the run-queue counter.
std::vector<unsigned char> run_queue_record(int64_t runnable) {
  std::vector<unsigned char> r(48, 0);
  const uint32_t size = 48, pid = 1, tid = 2;
  const int64_t ts = 5000;
  std::memcpy(r.data(), &size, 4);
  r[4] = 8;
  std::memcpy(r.data() + 8, &pid, 4);
  std::memcpy(r.data() + 12, &tid, 4);
  std::memcpy(r.data() + 16, &ts, 8);
  std::memcpy(r.data() + 24, &runnable, 8);
  return r;
}

TEST(TraceRender, RendersRecordsAndStopsAtTheFirstThatIsNotOne) {
  std::vector<unsigned char> bytes = run_queue_record(7);
  std::string out;
  ASSERT_TRUE(cf::detail::trace_render_bytes(bytes.data(), bytes.size(), &out));
  const json one = json::parse("[" + out + "]");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["ph"], "C");
  EXPECT_EQ(one[0]["args"]["runnable"], 7);

  // Each of these, after a good record, stops the rendering there: the good one is rendered.
  struct Bad {
    const char* what;
    std::vector<unsigned char> rec;
  };
  std::vector<Bad> bad;
  bad.push_back({"an unknown kind", run_queue_record(1)});
  bad.back().rec[4] = 200;
  bad.push_back({"a size not a multiple of 8", run_queue_record(1)});
  bad.back().rec[0] = 44;
  bad.push_back({"a size past the bytes", run_queue_record(1)});
  bad.back().rec[0] = 104;  // itself and the record after it are 96
  bad.push_back({"a size of 0", run_queue_record(1)});
  bad.back().rec[0] = 0;
  bad.push_back({"a size too small for its kind", run_queue_record(1)});
  bad.back().rec[0] = 16;
  bad.push_back({"more strings than a record has", run_queue_record(1)});
  bad.back().rec[7] = 9;
  bad.push_back({"a string with no room for its length", run_queue_record(1)});
  bad.back().rec[7] = 1;
  bad.push_back({"a string longer than its record", run_queue_record(1)});
  bad.back().rec.resize(56, 0);
  bad.back().rec[0] = 56;
  bad.back().rec[7] = 1;
  bad.back().rec[48] = 0xff;  // its length: 255 bytes, in a record of 56
  // Last in its bytes (fewer than 8 left): its size field is cut off.
  bad.push_back({"a cut-off record", {48, 0, 0, 0}});
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    std::vector<unsigned char> in = run_queue_record(3);
    in.insert(in.end(), b.rec.begin(), b.rec.end());
    if (b.rec.size() >= 8) in.insert(in.end(), bytes.begin(), bytes.end());  // never reached
    std::string text;
    EXPECT_FALSE(cf::detail::trace_render_bytes(in.data(), in.size(), &text));
    const json doc = json::parse("[" + text + "]");
    ASSERT_EQ(doc.size(), 1u);
    EXPECT_EQ(doc[0]["args"]["runnable"], 3);
  }

  std::string none;
  EXPECT_TRUE(cf::detail::trace_render_bytes(nullptr, 0, &none));
  EXPECT_TRUE(none.empty());
}

// An OS thread's blocking wait as its record holds it (a select on two channels, ended by a send
// on the second): a "blocked" slice of category "wait" without a green thread, and its wake flow,
// which ends where the wait does. The same bytes are a seed of fuzz/trace/corpus/render.
TEST(TraceRender, BlockedSliceOfAnOsThread) {
  std::vector<unsigned char> rec(56 + 24 + 32, 0);
  const auto put = [&rec](std::size_t at, auto v) { std::memcpy(rec.data() + at, &v, sizeof(v)); };
  put(0, uint32_t{112});
  rec[4] = 5;            // Kind::kRun
  rec[5] = 3;            // RunEnd::kBlocked
  rec[6] = 2;            // WaitKind::kSelect
  rec[7] = 2;            // cases
  put(8, uint32_t{2});   // its track
  put(12, uint32_t{3});  // the waker's
  put(16, int64_t{1000});
  put(24, int64_t{900});
  rec[48] = 3;  // ObjKind::kSelect
  rec[49] = 0;  // By::kChanSend
  rec[50] = 1;  // ObjKind::kLabel
  rec[51] = 1;  // has a wake
  put(56, int64_t{1500});
  put(64, uint64_t{12});
  put(72, uint64_t{7});
  for (std::size_t i = 0; i < 2; ++i) {
    put(80 + 16 * i, uint64_t{11 + i});
    rec[88 + 16 * i] = 1;  // WaitKind::kChanRecv
    rec[89 + 16 * i] = 1;  // ObjKind::kLabel
  }
  std::string out;
  ASSERT_TRUE(cf::detail::trace_render_bytes(rec.data(), rec.size(), &out));
  const json ev = json::parse("[" + out + "]");
  ASSERT_EQ(ev.size(), 3u) << out;
  EXPECT_EQ(ev[0]["cat"], "wait");
  EXPECT_EQ(ev[0]["name"], "blocked");
  EXPECT_EQ(ev[0]["tid"], 2);
  EXPECT_FALSE(ev[0]["args"].contains("g"));
  EXPECT_EQ(ev[0]["args"]["wait"], json::parse(R"({"kind":"select","obj":"select","cases":[
      {"kind":"chan.recv","obj":"#11"},{"kind":"chan.recv","obj":"#12"}]})"));
  EXPECT_EQ(ev[1]["ph"], "s");
  EXPECT_EQ(ev[1]["tid"], 3);
  EXPECT_EQ(ev[1]["args"], json({{"by", "chan.send"}, {"by_g", 7}, {"obj", "#12"}}));
  EXPECT_EQ(ev[2]["ph"], "f");
  EXPECT_EQ(ev[2]["tid"], 2);
  EXPECT_EQ(ns_of(ev[2]["ts"]), 1900);  // the wait's end
  EXPECT_EQ(ns_of(ev[1]["ts"]), 1500);
}

TEST(TraceRender, RefusedWhileARecordingIsOn) {
  cf::trace::start({});
  std::vector<unsigned char> bytes = run_queue_record(1);
  std::string out;
  EXPECT_THROW(cf::detail::trace_render_bytes(bytes.data(), bytes.size(), &out), cf::Error);
  cf::trace::stop();
  EXPECT_TRUE(cf::detail::trace_render_bytes(bytes.data(), bytes.size(), &out));
}

// Green-thread ids are unique in the process: threads of two schedulers never share one (a trace
// or an error message that shows both tells them apart).
TEST(TraceIds, GreenThreadIdsAreUniqueAcrossSchedulers) {
  std::set<uint64_t> ids;
  std::mutex mu;
  {
    cf::Scheduler a({.workers = 1});
    cf::Scheduler b({.workers = 2});
    cf::WaitGroup wg;
    wg.add(200);
    for (int i = 0; i < 100; ++i) {
      for (cf::Scheduler* s : {&a, &b}) {
        s->go([&] {
          {
            std::lock_guard<std::mutex> g(mu);
            ids.insert(cf::current_green_thread_id());
          }
          wg.done();
        });
      }
    }
    wg.wait();
  }
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_FALSE(ids.count(0));
}

INSTANTIATE_TEST_SUITE_P(Workers, TraceRuntime, CHANFLOW_WORKER_COUNTS);

}  // namespace
