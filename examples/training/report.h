// report.h — what a run leaves behind: metrics.csv (one row per epoch, for the plot script),
// metrics.json (the summary, the configuration and every epoch) and trace.json.
//
//   write_outputs("out/", model, cfg, result);   // makes the directory; returns the paths
//
// Thread-safety: call from one thread after train() returned. Blocks on file I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model.h"

#include "pipeline.h"

namespace training {

struct OutputPaths {
  std::string metrics_csv, metrics_json, trace_json;  // trace_json empty when not traced
};

// metrics.json's top level: model, test_accuracy, samples_per_s, epochs (completed), workers,
// batch_size, seed, seconds (training), wall_seconds, peak_rss_kib, weights_hash (FNV-1a, hex),
// deadline_reached, ...; then "config" and "per_epoch" (epoch, time_s, train_loss,
// train_accuracy, test_accuracy, samples_per_s). Throws chanflow::Error naming the path when a
// file cannot be written.
OutputPaths write_outputs(const std::string& dir, const Model& model, const TrainConfig& config,
                          const TrainResult& result);

// The process's peak resident set (VmHWM of /proc/self/status) in KiB; -1 where it is not known.
int64_t peak_rss_kib();

}  // namespace training
