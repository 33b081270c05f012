// report.cc — metrics.csv / metrics.json (nlohmann-json) / trace.json.
#include "report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "chanflow/core/error.h"

namespace training {
namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  if (!f) CHANFLOW_THROW(chanflow::Error) << "cannot open '" << p.string() << "' for writing";
  f << text;
  if (!f) CHANFLOW_THROW(chanflow::Error) << "failed writing '" << p.string() << "'";
}

}  // namespace

int64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

OutputPaths write_outputs(const std::string& dir, const Model& model, const TrainConfig& c,
                          const TrainResult& r) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    CHANFLOW_THROW(chanflow::Error)
        << "cannot create the output directory '" << dir << "': " << ec.message();
  }
  OutputPaths out;
  const fs::path base(dir);

  std::string csv = "epoch,time_s,train_loss,train_accuracy,test_accuracy,samples_per_s\n";
  for (const EpochMetrics& m : r.epochs) {
    csv += fmt::format("{},{:.4f},{:.6f},{:.6f},{:.6f},{:.1f}\n", m.epoch, m.time_s, m.train_loss,
                       m.train_accuracy, m.test_accuracy, m.samples_per_s);
  }
  out.metrics_csv = (base / "metrics.csv").string();
  write_file(out.metrics_csv, csv);

  nlohmann::json j;
  // The headline figures at the top level (what scripts/bench.py and the tests read), then the
  // configuration and every epoch.
  j["model"] = model.describe();
  j["test_accuracy"] = r.test_accuracy;
  j["samples_per_s"] = r.samples_per_s;
  j["epochs"] = static_cast<int64_t>(r.epochs.size());
  j["workers"] = c.workers;
  j["batch_size"] = c.batch_size;
  j["seed"] = c.seed;
  j["seconds"] = r.train_seconds;
  j["wall_seconds"] = r.wall_seconds;
  j["peak_rss_kib"] = peak_rss_kib();
  j["weights_hash"] = fmt::format("{:016x}", r.weights_hash);
  j["deadline_reached"] = r.deadline_reached;
  j["test_rows"] = r.test_rows;
  j["final_train_loss"] = r.final_train_loss;
  j["steps"] = r.steps;
  j["samples"] = r.samples;
  j["graph_nodes_per_worker"] = r.graph_nodes;
  j["config"] = {{"workers", c.workers},       {"epochs", c.epochs},
                 {"batch_size", c.batch_size}, {"shards_per_step", c.shards_per_step},
                 {"delay", c.delay},           {"seed", c.seed},
                 {"learning_rate", c.adam.lr}, {"deadline_ms", c.deadline.count()}};
  j["per_epoch"] = nlohmann::json::array();
  for (const EpochMetrics& m : r.epochs) {
    j["per_epoch"].push_back({{"epoch", m.epoch},
                              {"time_s", m.time_s},
                              {"train_loss", m.train_loss},
                              {"train_accuracy", m.train_accuracy},
                              {"test_accuracy", m.test_accuracy},
                              {"samples_per_s", m.samples_per_s}});
  }
  out.metrics_json = (base / "metrics.json").string();
  write_file(out.metrics_json, j.dump(2) + "\n");

  out.trace_json = r.trace_path;  // streamed there by the run itself
  return out;
}

}  // namespace training
