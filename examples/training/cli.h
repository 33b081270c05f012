// cli.h — what the training examples' command lines share: the pipeline's options (workers,
// epochs, batch, seed, deadline, shards, delay, learning rate, trace, outputs) and the run itself
// with its progress bar, outputs and summary lines. Each example adds its own data and model
// options and calls run_and_report.
//
//   CLI::App app{"...", "train_fashion"};
//   training::TrainConfig cfg;  training::CommonOptions common{.out_dir = "out/train_fashion"};
//   training::add_common_options(app, cfg, common);
//   CLI11_PARSE(app, argc, argv);
//   return training::run_and_report("train_fashion", model, data, split, cfg, common);
//
// Thread-safety: from the main thread, before and instead of any other use of chanflow.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "dataset.h"
#include "model.h"
#include "pipeline.h"

namespace training {

struct CommonOptions {
  std::string out_dir = "out/train";
  double deadline_s = 0;   // 0: none
  std::string trace_file;  // default OUT_DIR/trace.json
  bool no_trace = false;
  bool quiet = false;       // no progress lines
  double min_accuracy = 0;  // exit 3 below it
};

// Adds --workers --epochs --batch-size --seed --deadline --out-dir --shards --delay --lr --trace
// --trace-steps --no-trace --pin/--no-pin --quiet --min-accuracy (defaults: the values in cfg and
// common when called).
void add_common_options(CLI::App& app, TrainConfig& cfg, CommonOptions& common);

// Completes cfg from the parsed options (deadline, trace path), prints one line describing the
// run, trains with a progress bar on stdout, writes the outputs and prints the accuracy,
// throughput and paths. Returns the process's exit status: 0; 1 after an error (one line on stderr
// naming it, `program: error: ...`); 3 when the final test accuracy is below --min-accuracy.
int run_and_report(const std::string& program, const Model& model, const Dataset& data,
                   const Split& split, TrainConfig& cfg, const CommonOptions& common);

}  // namespace training
