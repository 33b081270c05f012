// cmd_run.cc — `chanflow run FILE [--feed NAME=FILE.npy]... [--fetch NAME]... [--out DIR]
// [--trace OUT.json] [--trace-limit N] [--workers N] [--timeout DURATION] [--max-threads N]
// [--max-memory SIZE] [--max-program-size SIZE] [--max-feed-size SIZE]`.
//
// The run is stopped by --timeout (status 124, as coreutils' timeout) and by SIGINT/SIGTERM
// (status 130/143 after it wrote the trace; a second signal exits at once): both cancel the run's
// Context, and the message names what was still running.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/runtime/trace.h"
#include "chanflow/tensor/npy.h"
#include "cli.h"
#include "duration.h"
#include "interrupt.h"

namespace chanflow::tools {
namespace {

struct RunArgs {
  std::string file;
  std::vector<std::string> feeds;
  std::vector<std::string> fetches;
  std::string out_dir;
  std::string trace;
  int64_t trace_limit = static_cast<int64_t>(trace::kDefaultMaxEvents);
  std::string timeout;
  int workers = 0;
  std::uint64_t max_program_bytes = 0;
  std::uint64_t max_feed_bytes = kDefaultMaxNpyBytes;
  int64_t max_threads = ExecutorOptions{}.max_threads;
  int64_t max_memory_bytes = ExecutorOptions{}.max_memory_bytes;
};

// The part of a canceled run's message that names what was running ("still running: ...").
std::string still_running(const std::exception& e) {
  const std::string m = e.what();
  const size_t at = m.find("still running: ");
  return at == std::string::npos ? m : m.substr(at);
}

// What a file of status `st` is, for "... is in the way" ("a regular file", "a character device").
const char* file_kind(const std::filesystem::file_status& st) {
  namespace fs = std::filesystem;
  switch (st.type()) {
    case fs::file_type::regular:
      return "a regular file";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "a file that is not a directory";
  }
}

// Makes --out's directory and its parents (as mkdir -p), before the run: a path that cannot be a
// directory is the user's mistake, reported as an Error naming the path and why before any work
// is done — a file in the way (/dev/null), a path under a file, no permission to create it or to
// write in it.
void make_out_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path at = dir; !at.empty(); at = at.parent_path()) {
    const fs::file_status st = fs::status(at, ec);
    if (fs::is_directory(st)) break;
    if (fs::exists(st)) {
      if (at == fs::path(dir)) {
        CHANFLOW_THROW(Error) << "--out '" << dir << "': not a directory (" << file_kind(st)
                              << " is in the way)";
      }
      CHANFLOW_THROW(Error) << "--out '" << dir << "': cannot create the directory: '"
                            << at.string() << "' is " << file_kind(st) << ", not a directory";
    }
    if (at == at.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    CHANFLOW_THROW(Error) << "--out '" << dir << "': cannot create the directory: " << ec.message();
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    CHANFLOW_THROW(Error) << "--out '" << dir
                          << "': cannot write in the directory: " << std::strerror(errno);
  }
}

int run_command(const RunArgs& a) {
  Program p = load_program(a.file, a.max_program_bytes);
  std::map<std::string, Tensor> feed;
  for (const std::string& f : a.feeds) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == f.size()) {
      CHANFLOW_THROW(Error) << "--feed '" << f << "': expected NAME=FILE.npy";
    }
    feed[f.substr(0, eq)] = load_npy(f.substr(eq + 1), a.max_feed_bytes);
  }
  if (!a.out_dir.empty()) make_out_dir(a.out_dir);
  ExecutorOptions opts;
  opts.workers = a.workers;
  opts.max_threads = a.max_threads;
  opts.max_memory_bytes = a.max_memory_bytes;
  Context ctx = a.timeout.empty() ? with_cancel(background())
                                  : with_timeout(background(), parse_duration(a.timeout));
  // Before the executor starts its workers, so a signal during the whole run is taken.
  InterruptCanceler on_signal(ctx);
  Executor ex(opts);
  // The trace streams to its file from here on; every way out of the run (an error, --timeout,
  // a signal) stops it, which leaves a complete file.
  const bool tracing = !a.trace.empty();
  if (tracing) {
    trace::start({.path = a.trace, .max_events = static_cast<std::size_t>(a.trace_limit)});
  }
  auto finish_trace = [&](const char* mark) {
    if (!tracing) return;
    // run() returns once the run's green threads are done; the last one's run slice ends as it
    // switches back to its worker, a moment later. Waited for (briefly: a green thread that never
    // ends leaves its slice open).
    const int64_t give_up = trace::now_ns() + 100'000'000;
    while (ex.scheduler().live() != 0 && trace::now_ns() < give_up) {
      std::this_thread::yield();
    }
    trace::stop(mark == nullptr ? "" : mark);
  };
  std::map<std::string, Tensor> out;
  try {
    out = ex.run(ctx, p, feed, a.fetches);
  } catch (const CanceledError& e) {
    finish_trace("cancelled");
    if (on_signal.signal() == 0) throw;
    std::fprintf(stderr, "chanflow: interrupted (%s): %s\n", signal_name(on_signal.signal()),
                 still_running(e).c_str());
    return 128 + on_signal.signal();
  } catch (const DeadlineExceededError& e) {
    finish_trace("cancelled");
    CHANFLOW_THROW(DeadlineExceededError)
        << "deadline exceeded: --timeout " << a.timeout << " passed; " << still_running(e);
  } catch (...) {
    finish_trace(nullptr);
    throw;
  }
  finish_trace(nullptr);
  if (on_signal.signal() != 0) {  // it came after the program's last op
    std::fprintf(stderr, "chanflow: interrupted (%s) after the run ended\n",
                 signal_name(on_signal.signal()));
    return 128 + on_signal.signal();
  }
  if (!a.out_dir.empty()) {
    for (const auto& [name, t] : out) {
      std::string safe = name;
      for (char& c : safe) {
        if (c == '/' || c == '\\') c = '_';
      }
      save_npy(t, (std::filesystem::path(a.out_dir) / (safe + ".npy")).string());
    }
  } else {
    for (const std::string& name : a.fetches) {
      std::cout << name << " = " << out.at(name) << "\n";
    }
  }
  return 0;
}

// A DURATION option's check: Go's syntax, and positive.
std::string positive_duration(const std::string& text) {
  try {
    if (parse_duration(text).count() <= 0) return "the duration '" + text + "' is not positive";
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

void add_run_command(CLI::App& app, std::function<int()>& run) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a program and print the fetched tensors (or write them as .npy with --out)");
  cmd->add_option("FILE", a->file, "program file (text or binary protobuf; - reads standard input)")
      ->required();
  cmd->add_option("--feed", a->feeds, "NAME=FILE.npy: set block 0 variable NAME before the run")
      ->take_all();
  cmd->add_option("--fetch", a->fetches, "a block 0 tensor variable to print after the run")
      ->take_all();
  cmd->add_option("--out", a->out_dir, "write each fetched tensor to DIR/NAME.npy instead");
  cmd->add_option("--trace", a->trace,
                  "stream a Chrome trace (green threads, why they wait and who woke them, "
                  "channels, ops) to this .json file");
  cmd->add_option("--trace-limit", a->trace_limit,
                  "write at most N events to the --trace file; the ones past it are dropped and "
                  "counted in the file (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout,
                  "stop the run after DURATION (Go's syntax: 500ms, 2s, 1m30s): exit status 124 "
                  "and the ops still running")
      ->check(CLI::Validator(positive_duration, "DURATION"));
  // Above kMaxWorkers is the scheduler's LimitError (exit 1), so embedders and the command say
  // the same; a negative count is a usage error.
  cmd->add_option("--workers", a->workers, "worker threads (0: CHANFLOW_WORKERS or all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-threads", a->max_threads,
                  "most live green threads the run's go ops may have at once (0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->default_str(std::to_string(a->max_threads));
  cmd->add_option("--max-memory", a->max_memory_bytes,
                  "most live tensor bytes the run may hold (K/M/G suffixes; default: half the "
                  "physical memory; 0: unlimited)")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false));
  add_program_size_option(cmd, a->max_program_bytes);
  cmd->add_option("--max-feed-size", a->max_feed_bytes,
                  "refuse a --feed file whose header declares more than SIZE bytes (K/M/G "
                  "suffixes; default 4G)")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false));
  cmd->callback([&run, a] { run = [a] { return run_command(*a); }; });
}

}  // namespace chanflow::tools
