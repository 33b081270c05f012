// stage_trace.cc — stage events and merging Chrome trace documents with nlohmann-json.
#include "stage_trace.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "chanflow/core/error.h"

namespace train_digits {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void StageTrace::add(const std::string& track, const std::string& name, int64_t begin_ns,
                     int64_t end_ns) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(tracks_.begin(), tracks_.end(), track) == tracks_.end()) tracks_.push_back(track);
  events_.push_back(Event{track, name, begin_ns, end_ns});
}

void StageTrace::instant(const std::string& track, const std::string& name) {
  add(track, name, steady_now_ns(), -1);
}

std::string StageTrace::events_json() const {
  using nlohmann::json;
  std::lock_guard<std::mutex> lock(mu_);
  json arr = json::array();
  auto tid_of = [&](const std::string& track) {
    return static_cast<int>(std::find(tracks_.begin(), tracks_.end(), track) - tracks_.begin()) + 1;
  };
  arr.push_back({{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", 3},
                 {"tid", 0},
                 {"args", {{"name", "training pipeline (stages)"}}}});
  for (const std::string& t : tracks_) {
    arr.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", 3},
                   {"tid", tid_of(t)},
                   {"args", {{"name", t}}}});
  }
  for (const Event& e : events_) {
    const double ts = static_cast<double>(e.begin_ns - origin_ns_) / 1000.0;
    if (e.end_ns < 0) {
      arr.push_back({{"name", e.name},
                     {"ph", "i"},
                     {"s", "t"},
                     {"ts", ts},
                     {"pid", 3},
                     {"tid", tid_of(e.track)}});
    } else {
      arr.push_back({{"name", e.name},
                     {"ph", "X"},
                     {"ts", ts},
                     {"dur", static_cast<double>(e.end_ns - e.begin_ns) / 1000.0},
                     {"pid", 3},
                     {"tid", tid_of(e.track)}});
    }
  }
  return arr.dump();
}

std::string merge_trace(const StageTrace& stages, const std::vector<TraceSource>& sources) {
  using nlohmann::json;
  json all = json::parse(stages.events_json());
  for (const TraceSource& s : sources) {
    json doc;
    try {
      doc = json::parse(s.json);
    } catch (const json::exception& e) {
      CHANFLOW_THROW(chanflow::Error)
          << "merge_trace: '" << s.process_name << "' is not valid JSON: " << e.what();
    }
    json& events = doc.is_array() ? doc : doc["traceEvents"];
    const double shift = static_cast<double>(s.origin_ns - stages.origin_ns()) / 1000.0;
    std::set<int> pids;
    for (json& e : events) {
      const int pid = s.pid_base + e.value("pid", 1) - 1;
      e["pid"] = pid;
      pids.insert(pid);
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift;
      if (e.value("name", "") != "process_name") all.push_back(std::move(e));
    }
    for (int pid : pids) {
      all.push_back({{"name", "process_name"},
                     {"ph", "M"},
                     {"pid", pid},
                     {"tid", 0},
                     {"args", {{"name", s.process_name}}}});
    }
  }
  json doc = {{"traceEvents", all}, {"displayTimeUnit", "ms"}};
  return doc.dump();
}

}  // namespace train_digits
