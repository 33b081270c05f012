// report.cc — metrics.csv / metrics.json (nlohmann-json) / trace.json.
#include "report.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chanflow/core/error.h"

namespace train_digits {
namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  if (!f) CHANFLOW_THROW(chanflow::Error) << "cannot open '" << p.string() << "' for writing";
  f << text;
  if (!f) CHANFLOW_THROW(chanflow::Error) << "failed writing '" << p.string() << "'";
}

}  // namespace

OutputPaths write_outputs(const std::string& dir, const TrainConfig& c, const TrainResult& r) {
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
  j["config"] = {{"workers", c.workers},
                 {"epochs", c.epochs},
                 {"batch_size", c.batch_size},
                 {"shards_per_step", c.shards_per_step},
                 {"delay", c.delay},
                 {"seed", c.seed},
                 {"hidden", c.model.hidden},
                 {"learning_rate", c.adam.lr},
                 {"deadline_ms", c.deadline.count()}};
  j["epochs"] = nlohmann::json::array();
  for (const EpochMetrics& m : r.epochs) {
    j["epochs"].push_back({{"epoch", m.epoch},
                           {"time_s", m.time_s},
                           {"train_loss", m.train_loss},
                           {"train_accuracy", m.train_accuracy},
                           {"test_accuracy", m.test_accuracy},
                           {"samples_per_s", m.samples_per_s}});
  }
  j["summary"] = {{"test_accuracy", r.test_accuracy},
                  {"test_rows", r.test_rows},
                  {"final_train_loss", r.final_train_loss},
                  {"steps", r.steps},
                  {"samples", r.samples},
                  {"train_seconds", r.train_seconds},
                  {"wall_seconds", r.wall_seconds},
                  {"samples_per_s", r.samples_per_s},
                  {"deadline_reached", r.deadline_reached},
                  {"graph_nodes_per_worker", r.graph_nodes},
                  {"weights_fnv1a", fmt::format("{:016x}", r.weights_hash)}};
  out.metrics_json = (base / "metrics.json").string();
  write_file(out.metrics_json, j.dump(2) + "\n");

  out.trace_json = r.trace_path;  // streamed there by the run itself
  return out;
}

}  // namespace train_digits
