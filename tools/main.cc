// main.cc — `chanflow`: run, check and draw chanflow programs (see cli.h).
#include <cstdio>
#include <exception>
#include <string>

#include "chanflow/core/error.h"
#include "cli.h"

namespace {

// One paragraph: newlines folded into spaces.
std::string paragraph(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

const char* kind_of(const std::exception& e) {
  if (dynamic_cast<const chanflow::DeadlockError*>(&e)) return "deadlock";
  if (dynamic_cast<const chanflow::ProgramError*>(&e)) return "program error";
  if (dynamic_cast<const chanflow::TypeError*>(&e)) return "type error";
  if (dynamic_cast<const chanflow::ShapeError*>(&e)) return "shape error";
  if (dynamic_cast<const chanflow::Error*>(&e)) return "error";
  return "internal error";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chanflow: run, check and draw chanflow programs (.pbtxt text or .pb binary)"};
  app.require_subcommand(1);
  std::function<int()> command;
  chanflow::tools::add_run_command(app, command);
  chanflow::tools::add_check_command(app, command);
  chanflow::tools::add_dot_command(app, command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return command();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chanflow: %s: %s\n", kind_of(e), paragraph(e.what()).c_str());
    return 1;
  }
}
