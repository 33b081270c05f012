// prepared.h — a program prepared for execution (private to the exec layer).
//
// Preparing resolves, once per program: each op's kernel (from its schema's extension), its
// attributes (read into its kernel's typed attribute struct, op_attrs.h), and each variable name
// it uses into a VarRef — how many
// scopes up and which slot. The hot loop then runs `op.run(op, frame)` with no string or map
// lookups.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chanflow/exec/scope.h"
#include "chanflow/ir/program.h"
#include "chanflow/tensor/dtype.h"
#include "op_attrs.h"

namespace chanflow::exec_detail {

// A variable as seen from one block: `depth` scopes up from the block's scope, slot `slot`.
struct VarRef {
  int32_t depth = -1;
  int32_t slot = -1;
  bool valid() const noexcept { return depth >= 0; }
};

struct RunState;
struct ThreadRecord;
struct PreparedProgram;

// What a kernel runs against: the scope of the running block and the run's shared state.
struct Frame {
  ScopeObj* scope;
  RunState* rs;
  ThreadRecord* thread;
};

struct PreparedOp;
using KernelFn = void (*)(const PreparedOp& op, Frame& f);

// A variable's declared type (for zero values of closed receives).
struct VarDecl {
  int64_t type = -1;       // VarType number
  int64_t data_type = -1;  // element VarType
  std::vector<int64_t> dims;
};

struct PreparedCase {
  enum Kind : int32_t { kDefault = 0, kSend = 1, kRecv = 2 };  // the file format's numbers
  int64_t index = 0;
  VarDecl decl;  // of `var`
  Kind kind = kDefault;
  VarRef channel;
  VarRef var;
  std::string channel_name, var_name;
};

// One op, ready to run. Fields beyond `run` are filled by the op's kernel row (kernel.h): its
// bind function pushes `in`/`out` (and, for control flow, the structural fields below), and the
// row stores the kernel's attribute struct in `attrs`.
struct PreparedOp {
  KernelFn run = nullptr;
  int32_t block = 0;
  int32_t index = 0;
  std::string type;
  // Inputs / outputs in the order the kernel's bind function pushed them.
  std::vector<VarRef> in, out;
  std::vector<std::string> in_names, out_names;  // for messages only
  // The kernel's attributes (its row's attribute struct).
  OpAttrs attrs;
  // Control flow: the block run by while, conditional_block, go and select.
  int32_t sub_block = -1;
  // select
  std::vector<PreparedCase> cases;
  // go: outer variable -> slot of the new scope, bound when the op starts
  std::vector<std::pair<VarRef, int32_t>> binds;
  bool escapes = false;  // go: the block may touch enclosing scopes (they become shared)
  // Declared type of out[0] (zero values for closed receives).
  VarDecl out_decl;
  // Per output: the dtype its variable is declared with, which every tensor the op writes there
  // must have (write_out checks it); empty where the value decides (see prepare.cc).
  std::vector<std::optional<DType>> out_dtypes;
};

struct PreparedBlock {
  int32_t idx = 0;
  int32_t parent = -1;
  bool is_go = false;
  // Declared variables first, then (go blocks) the captured ones.
  std::shared_ptr<const std::vector<std::string>> names;
  std::vector<PreparedOp> ops;
};

struct PreparedProgram {
  Program program;  // checked (check_program): as given, optional attributes not filled
  std::vector<PreparedBlock> blocks;
  // Block 0's declarations by slot, for feeds/fetches.
  std::vector<VarDesc> block0_vars;
  // Per block 0 slot: the first channel_create (in block order) whose Out is that variable, as
  // {block, op index}; {-1, -1} when none. Such a variable cannot be bound to a caller's channel:
  // the op would replace it.
  std::vector<std::pair<int32_t, int32_t>> block0_channel_create;
};

// Verifies and prepares `program` (ProgramError on a bad program).
std::shared_ptr<const PreparedProgram> prepare_program(const Program& program);

// Reports a problem found while preparing op `op` ("block b, op i ('type'): msg").
[[noreturn]] void fail_prepare(const PreparedOp& op, const std::string& msg);

}  // namespace chanflow::exec_detail
