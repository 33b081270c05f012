// error.h — the error hierarchy every chanflow layer throws.
//
// Every error a user can cause is a chanflow::Error (a std::runtime_error) whose message says what
// failed and where. Named kinds let callers react to one cause:
//
//   try { ch.send(v); } catch (const cf::ChannelClosedError& e) { ... }
//
// Throw with the streaming macro, which builds the message from anything fmt or iostreams can
// print:
//
//   CHANFLOW_THROW(cf::TypeError) << "downcast: expected " << want << ", got " << got;
#pragma once

#include <cstdint>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"

namespace chanflow {

// The base of every error chanflow throws. what() is the full, user-facing message. Messages
// quote names and text from untrusted input, so every control byte in them other than a line
// break or a tab (NUL, ESC ...) is stored escaped as \xHH: a NUL would cut what() short (it is a
// C string) and an escape sequence would drive the reader's terminal.
class CHANFLOW_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
};

// A send on a closed channel, a close of a closed or nil channel, or a send case of a select that
// was chosen on a closed channel. `channel()` names the channel when the thrower knows it by name:
// the executor's channel ops and select set it to the program variable that held the channel, so
// a caller can tell which of a program's channels was closed without reading the message. Empty
// otherwise (the runtime's own send and close know channels by address only).
class CHANFLOW_API ChannelClosedError : public Error {
 public:
  explicit ChannelClosedError(const std::string& message, std::string channel = {})
      : Error(message), channel_(std::move(channel)) {}

  const std::string& channel() const noexcept { return channel_; }

 private:
  std::string channel_;
};

// Every green thread is parked, no timer is pending, and a caller waits: nothing can ever wake it.
// The message lists each parked green thread and what it waits on.
class CHANFLOW_API DeadlockError : public Error {
 public:
  using Error::Error;
};

// A Context was canceled.
class CHANFLOW_API CanceledError : public Error {
 public:
  using Error::Error;
};

// A Context's deadline passed.
class CHANFLOW_API DeadlineExceededError : public Error {
 public:
  using Error::Error;
};

// A value has the wrong type or dtype for the operation (includes failed downcasts).
class CHANFLOW_API TypeError : public Error {
 public:
  using Error::Error;
};

// Shapes do not agree (broadcasting, matmul, reshape ...); the message names both shapes and the
// op.
class CHANFLOW_API ShapeError : public Error {
 public:
  using Error::Error;
};

// A resource limit was reached: the program file's size, live green threads, live tensor bytes,
// worker threads ... `limit()` names the limit as its user sets it ("--max-threads", "max_bytes");
// the message names it too, with its value, and what hit it (the op, the file).
class CHANFLOW_API LimitError : public Error {
 public:
  LimitError(const std::string& message, std::string limit)
      : Error(message), limit_(std::move(limit)) {}

  const std::string& limit() const noexcept { return limit_; }

 private:
  std::string limit_;
};

// A program failed to load, verify or run. Carries the position of the offending op; block_index
// and op_index are -1 when the problem is not tied to one block or op.
class CHANFLOW_API ProgramError : public Error {
 public:
  ProgramError(const std::string& message, int block_index = -1, int op_index = -1,
               std::string op_type = {})
      : Error(message),
        block_index_(block_index),
        op_index_(op_index),
        op_type_(std::move(op_type)) {}

  int block_index() const noexcept { return block_index_; }
  int op_index() const noexcept { return op_index_; }
  const std::string& op_type() const noexcept { return op_type_; }

 private:
  int block_index_;
  int op_index_;
  std::string op_type_;
};

// A graph machine's run failed (GoMachine or TapeMachine): one entry per node that failed on its
// own (nodes canceled because another failed are not listed). what() is
// "<machine>: N node(s) failed" and one line per failure; the machine is named there once.
class CHANFLOW_API MachineError : public Error {
 public:
  struct Failure {
    int64_t node_id;
    std::string node_name;
    std::string message;
    std::exception_ptr error;  // the original exception, rethrowable
  };

  // `machine` names the kind of machine that failed ("GoMachine", "TapeMachine").
  MachineError(std::string machine, std::vector<Failure> failures);

  const std::string& machine() const noexcept { return machine_; }
  const std::vector<Failure>& failures() const noexcept { return failures_; }

 private:
  std::string machine_;
  std::vector<Failure> failures_;
};

namespace detail {

// Collects a message with operator<< and throws E(message) when the full expression ends.
// Used only through CHANFLOW_THROW.
template <class E>
class ErrorThrower {
 public:
  ErrorThrower() = default;
  ErrorThrower(const ErrorThrower&) = delete;
  ErrorThrower& operator=(const ErrorThrower&) = delete;
  ~ErrorThrower() noexcept(false) { throw E(stream_.str()); }

  template <class V>
  ErrorThrower& operator<<(const V& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

}  // namespace detail
}  // namespace chanflow

// CHANFLOW_THROW(Kind) << a << b;  — throws Kind with the streamed message.
#define CHANFLOW_THROW(Kind) ::chanflow::detail::ErrorThrower<Kind>()
