// main.cc — `chanflow`: run, check and draw chanflow programs, read their traces (see cli.h).
//
// Exit status: 0 on success (and for --help, --version), 1 when the command fails (one line on
// stderr: "chanflow: <kind>: <message>"), 2 for a usage error (CLI11's message on stderr), 124
// when `run --timeout` stopped the run, 130/143 when SIGINT/SIGTERM did (cmd_run.cc).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "chanflow/core/error.h"
#include "cli.h"
#include "trace_summary.h"

namespace {

constexpr int kUsageError = 2;  // the shell convention (bash, getopt users) for a bad command line
constexpr int kTimedOut = 124;  // coreutils' timeout(1) status when the command timed out

// One paragraph: newlines folded into spaces.
std::string paragraph(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// Whether `argv1` names none of the app's subcommands (and is not an option).
bool unknown_command(CLI::App& app, const char* argv1) {
  if (argv1[0] == '-') return false;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == argv1) return false;
  }
  return true;
}

const char* kind_of(const std::exception& e) {
  if (dynamic_cast<const chanflow::DeadlockError*>(&e)) return "deadlock";
  if (dynamic_cast<const chanflow::tools::TraceError*>(&e)) return "bad trace";
  if (dynamic_cast<const chanflow::ProgramError*>(&e)) return "program error";
  if (dynamic_cast<const chanflow::LimitError*>(&e)) return "limit exceeded";
  if (dynamic_cast<const chanflow::DeadlineExceededError*>(&e)) return "deadline exceeded";
  if (dynamic_cast<const chanflow::CanceledError*>(&e)) return "canceled";
  if (dynamic_cast<const chanflow::TypeError*>(&e)) return "type error";
  if (dynamic_cast<const chanflow::ShapeError*>(&e)) return "shape error";
  if (dynamic_cast<const chanflow::Error*>(&e)) return "error";
  return "internal error";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "chanflow: run, check and draw chanflow programs (protobuf text or binary, from a file or "
      "standard input), and read their traces"};
  // CHANFLOW_VERSION is the CMake project version (tools/CMakeLists.txt).
  app.set_version_flag("--version", "chanflow " CHANFLOW_VERSION, "print the version and exit");
  app.require_subcommand(1);
  std::function<int()> command;
  chanflow::tools::add_run_command(app, command);
  chanflow::tools::add_check_command(app, command);
  chanflow::tools::add_dot_command(app, command);
  chanflow::tools::add_trace_command(app, command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints --help and --version to stdout with status 0, and a usage error's message to
    // stderr with a status of its own (105, 106, 109...): every usage error exits 2 instead.
    if (e.get_exit_code() == 0) return app.exit(e);
    if (argc > 1 && app.get_subcommands().empty() && unknown_command(app, argv[1])) {
      std::fprintf(stderr, "chanflow: unknown command '%s' (commands: run, check, dot, trace)\n",
                   argv[1]);
    }
    app.exit(e);
    return kUsageError;
  }
  try {
    return command();
  } catch (const std::exception& e) {
    // Some messages already begin with their kind ("deadlock: every thread ..."): say it once.
    const char* kind = kind_of(e);
    const std::string message = paragraph(e.what());
    const size_t n = std::strlen(kind);
    if (message.compare(0, n, kind) == 0 && message.size() > n && message[n] == ':') {
      std::fprintf(stderr, "chanflow: %s\n", message.c_str());
    } else {
      std::fprintf(stderr, "chanflow: %s: %s\n", kind, message.c_str());
    }
    return dynamic_cast<const chanflow::DeadlineExceededError*>(&e) != nullptr ? kTimedOut : 1;
  }
}
