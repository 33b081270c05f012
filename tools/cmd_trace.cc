// cmd_trace.cc — `chanflow trace summary FILE [--json] [--top N]` and
// `chanflow trace html FILE -o REPORT.html [--top N]`: read a trace written by `chanflow run
// --trace` (or any chanflow trace version 1) and explain it offline (trace_summary.h,
// trace_html.h).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "chanflow/core/error.h"
#include "cli.h"
#include "trace_html.h"
#include "trace_summary.h"

namespace chanflow::tools {
namespace {

struct TraceArgs {
  std::string file;
  std::string out;
  bool json = false;
  size_t top = 10;
  std::uint64_t max_bytes = kDefaultMaxTraceBytes;
};

// --max-trace-size SIZE: bytes with an optional K, M, G ... suffix (powers of 1024).
void add_trace_size_option(CLI::App* cmd, std::uint64_t& bytes) {
  cmd->add_option("--max-trace-size", bytes,
                  "refuse a trace file larger than SIZE bytes (K/M/G suffixes; default 1G)")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << text) || !f.flush()) CHANFLOW_THROW(Error) << "trace html: cannot write " << path;
}

}  // namespace

void add_trace_command(CLI::App& app, std::function<int()>& run) {
  CLI::App* trace = app.add_subcommand(
      "trace", "Read a trace written by `run --trace`: a text summary or an HTML report");
  trace->require_subcommand(1);

  auto a = std::make_shared<TraceArgs>();
  CLI::App* summary = trace->add_subcommand(
      "summary",
      "Per green thread: time running, runnable and blocked, and on what; the channels blocked on "
      "longest; a GoMachine run's critical path (--json: the same as a JSON object)");
  summary
      ->add_option("FILE", a->file,
                   "trace file (chanflow trace JSON; a file cut short is read "
                   "up to its last complete event)")
      ->required();
  summary->add_flag("--json", a->json, "print a JSON object instead of text");
  summary->add_option("--top", a->top, "list at most N channels")->capture_default_str();
  add_trace_size_option(summary, a->max_bytes);
  summary->callback([&run, a] {
    run = [a] {
      const Summary s = summarize(read_trace(a->file, a->max_bytes));
      const std::string text =
          a->json ? summary_to_json(s, a->top).dump(2) + "\n" : format_summary(s, a->top);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    };
  });

  CLI::App* html = trace->add_subcommand(
      "html",
      "Write a self-contained HTML report (timeline per worker, wake arrows, counters, and the "
      "summary); it needs no network");
  html->add_option("FILE", a->file, "trace file (chanflow trace JSON)")->required();
  html->add_option("-o,--output", a->out, "the HTML file to write")->required();
  html->add_option("--top", a->top, "list at most N channels")->capture_default_str();
  add_trace_size_option(html, a->max_bytes);
  html->callback([&run, a] {
    run = [a] {
      const Trace t = read_trace(a->file, a->max_bytes);
      write_file(a->out, trace_to_html(t, summarize(t), a->top));
      return 0;
    };
  });
}

}  // namespace chanflow::tools
