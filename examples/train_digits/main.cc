// train_digits — data-parallel training of an MLP on the UCI handwritten digits with green
// threads, channels and select (training/pipeline.h), a GoMachine per worker for forward and
// backward, and an evaluation program (training/mlp_eval.pbtxt) run by the executor. The
// Fashion-MNIST example (examples/train_fashion) runs the same pipeline on bigger models.
//
//   build/release/examples/train_digits --workers 2 --epochs 40 --out-dir out/train_digits
//   scripts/plot_training.py out/train_digits/metrics.csv     # -> training.png
//
// Exit status: 0 on success; 1 on an error (one line on stderr naming it); 3 when the final test
// accuracy is below --min-accuracy.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "chanflow/core/error.h"
#include "digits.h"
#include "training/cli.h"
#include "training/models.h"

namespace td = train_digits;

int main(int argc, char** argv) {
  CLI::App app{
      "Train an MLP on the UCI digits with chanflow (green threads, channels, select, "
      "GoMachine gradients, an executor-run evaluation program)",
      "train_digits"};
  training::TrainConfig cfg;
  cfg.eval_program = TRAIN_DIGITS_PROGRAM;
  cfg.adam.lr = 5e-3;
  training::CommonOptions common;
  common.out_dir = "out/train_digits";
  common.deadline_s = 100;
  training::add_common_options(app, cfg, common);
  std::string data = TRAIN_DIGITS_DATA;
  double test_fraction = 0.2;
  int64_t expected_rows = 1797;
  int64_t hidden = 256;
  app.add_option("--hidden", hidden, "hidden units")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--data", data, "the digits CSV (gzip or plain)")->capture_default_str();
  app.add_option("--expected-rows", expected_rows, "images the data file must hold (-1: any)")
      ->capture_default_str();
  app.add_option("--test-fraction", test_fraction, "held-out share of each class")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 0.99));
  app.add_option("--program", cfg.eval_program, "the evaluation program (.pbtxt)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const td::Digits digits = td::load_digits(data, {.expected_rows = expected_rows});
    const td::Split split = td::stratified_split(digits, test_fraction, cfg.seed);
    const training::Mlp mlp({.inputs = td::kPixels, .hidden = hidden, .classes = td::kClasses});
    return training::run_and_report("train_digits", mlp, digits, split, cfg, common);
  } catch (const chanflow::Error& e) {
    std::cerr << "train_digits: error: " << e.what() << "\n";
    return 1;
  }
}
