// cli.h — the `chanflow` command's subcommands (run, check, dot, trace), each registered on a
// CLI11 app.
//
//   chanflow run examples/programs/go_op.pbtxt --fetch result
//   chanflow check prog.pbtxt
//   chanflow dot prog.pbtxt -o prog.dot
//   chanflow trace summary t.json          (trace html t.json -o report.html)
//   some_generator | chanflow run - --fetch result
//
// Every subcommand returns the process exit status: 0 on success; errors are thrown as
// chanflow::Error and reported by main as one paragraph on stderr with status 1. Usage errors
// (CLI11's parse errors) exit with status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "chanflow/ir/program.h"

namespace chanflow::tools {

// Loads the program at `path`, or from standard input when `path` is "-", in the text or the
// binary protobuf format, decided by its content (load_program.cc says how), not its extension.
// Reads at most `max_bytes` (LimitError past it: see Program::read_bytes). Throws Error when the
// file cannot be read, ProgramError when it is not a valid program (naming both formats when
// neither parses).
Program load_program(const std::string& path,
                     std::uint64_t max_bytes = Program::kDefaultMaxFileBytes);

// Adds `--max-program-size SIZE` to `cmd`, stored in `bytes` (default
// Program::kDefaultMaxFileBytes). SIZE is a byte count with an optional K, M, G ... suffix (powers
// of 1024; CLI11's AsSizeValue); a malformed SIZE is a usage error.
void add_program_size_option(CLI::App* cmd, std::uint64_t& bytes);

// Adds a subcommand to `app`; `run` is set to the function to call when it was chosen.
void add_run_command(CLI::App& app, std::function<int()>& run);
void add_check_command(CLI::App& app, std::function<int()>& run);
void add_dot_command(CLI::App& app, std::function<int()>& run);
// `trace summary` and `trace html` (cmd_trace.cc).
void add_trace_command(CLI::App& app, std::function<int()>& run);

// The Graphviz text of a program file (blocks as clusters, sub-blocks nested).
std::string program_to_dot(const std::string& path,
                           std::uint64_t max_bytes = Program::kDefaultMaxFileBytes);

}  // namespace chanflow::tools
