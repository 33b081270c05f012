// report.h — what a run leaves behind: metrics.csv (one row per epoch, for the plot script),
// metrics.json (the configuration, every epoch and the summary) and trace.json.
//
//   write_outputs("out/", config, result);   // creates the directory; returns the paths written
//
// Thread-safety: call from one thread after train() returned. Blocks on file I/O.
#pragma once

#include <string>
#include <vector>

#include "pipeline.h"

namespace train_digits {

struct OutputPaths {
  std::string metrics_csv, metrics_json, trace_json;  // trace_json empty when not traced
};

// Throws chanflow::Error naming the path when a file cannot be written.
OutputPaths write_outputs(const std::string& dir, const TrainConfig& config,
                          const TrainResult& result);

}  // namespace train_digits
