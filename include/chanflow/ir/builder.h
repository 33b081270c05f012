// builder.h — ProgramBuilder, the C++ twin of Fluid's Python API for writing programs.
//
// Methods append ops to the current block; control-flow methods return scope guards whose
// destructor closes the sub-block they opened (RAII, like Python's `with`):
//
//   cf::ProgramBuilder b;
//   cf::Var ch = b.make_channel(cf::DType::kFloat64, /*capacity=*/0);
//   {
//     auto go = b.go();                                       // ops below run on a green thread
//     b.channel_send(ch, b.fill_constant({1}, cf::DType::kFloat64, 1234));
//   }                                                         // closes the go block
//   auto [v, ok] = b.channel_recv(ch);
//   b.channel_close(ch);
//   cf::Program p = b.build();                                // verified
//
// Closures: like Fluid's Go, when a go block closes the builder finds the variables its ops (and
// nested blocks) use from enclosing blocks and lists them as the go op's `X`; the executor binds
// them when the go op starts, as Go binds a function call's arguments. `while_loop`,
// `conditional_block` and `select` list the outer variables they read (`X` / `Params`) and write
// (`Out`) the same way.
//
// Names: generated variables are named like Fluid's ("fill_constant_0.tmp_0", "channel_1");
// declare your own with var(). Every op method takes an optional `out` to write an existing
// variable instead (loops update their state this way: `b.increment(i, 1, i)`).
//
// Errors: misuse (a Var of another builder, a variable not visible in the current block, a
// non-channel given as a channel, guards closed out of order) throws Error/TypeError at once, or
// from build() when it happened in a guard's destructor. Not thread-safe: one builder, one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/program.h"
#include "chanflow/ir/var_type.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

class ProgramBuilder;

// A handle to a variable of a ProgramBuilder: its name and type. Cheap to copy. A default Var is
// "none" (valid() false), used for optional arguments.
class CHANFLOW_API Var {
 public:
  Var() = default;
  bool valid() const noexcept { return owner_ != nullptr; }
  const std::string& name() const noexcept { return name_; }
  VarType type() const noexcept { return type_; }  // kLoDTensor or kChannel
  bool is_channel() const noexcept { return type_ == VarType::kChannel; }
  // Tensors: the element type. Channels: what the channel carries (element VarType,
  // kLoDTensor for any tensor, kChannel for channels).
  VarType element() const noexcept { return element_; }
  // A tensor's dtype; throws TypeError for a channel.
  DType dtype() const;
  int64_t block() const noexcept { return block_; }  // the block that declares it

 private:
  friend class ProgramBuilder;
  const ProgramBuilder* owner_ = nullptr;
  std::string name_;
  VarType type_ = VarType::kLoDTensor;
  VarType element_ = VarType::kFP32;
  int64_t block_ = 0;
};

// A scope guard closing a sub-block when destroyed (or at close()). Move-only.
class CHANFLOW_API BlockGuard {
 public:
  BlockGuard() = default;
  BlockGuard(BlockGuard&& other) noexcept;
  BlockGuard& operator=(BlockGuard&& other) noexcept;
  BlockGuard(const BlockGuard&) = delete;
  BlockGuard& operator=(const BlockGuard&) = delete;
  // Closes the block if still open. Never throws: an error is kept and rethrown by build().
  ~BlockGuard();
  // Closes the block now (throws on misuse). Idempotent.
  void close();
  // The index of the block this guard opened.
  int64_t block() const noexcept { return block_; }

 protected:
  friend class ProgramBuilder;
  BlockGuard(ProgramBuilder* builder, int64_t block, int kind, int64_t extra);
  ProgramBuilder* builder_ = nullptr;
  int64_t block_ = -1;
  int kind_ = 0;
  int64_t extra_ = -1;  // per kind: the select's op record, the condition ...
  int uncaught_ = 0;
};

// The guard of a select: add cases with case_send / case_recv / case_default (each returns the
// guard of the case's body). Closing the select emits the select op.
class CHANFLOW_API SelectGuard : public BlockGuard {
 public:
  SelectGuard() = default;
  SelectGuard(SelectGuard&&) noexcept = default;
  SelectGuard& operator=(SelectGuard&&) noexcept = default;
  // A case that sends x on ch when chosen; the ops added until the returned guard closes are its
  // body.
  BlockGuard case_send(const Var& ch, Var x);
  // A case that receives from ch into `out` (created when none) when chosen.
  BlockGuard case_recv(const Var& ch, Var out = {});
  // The default case (at most one): chosen when no other case can proceed.
  BlockGuard case_default();
  // The variable the last case_recv receives into.
  Var last_received() const noexcept { return last_received_; }

 private:
  friend class ProgramBuilder;
  using BlockGuard::BlockGuard;
  Var last_received_;
};

class CHANFLOW_API ProgramBuilder {
 public:
  ProgramBuilder();
  ~ProgramBuilder();
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  // ---- variables ---------------------------------------------------------------------------
  // Declares a tensor variable in the current block (throws Error if the name is taken there).
  Var var(std::string name, DType dtype, const std::vector<int64_t>& dims = {});
  // A persistable tensor variable (Fluid's parameters and optimiser state): it lives in the scope
  // the caller runs the program in, across runs (Executor::run with a Scope), and is what
  // append_backward differentiates with respect to by default.
  Var parameter(std::string name, DType dtype, const std::vector<int64_t>& dims);
  // Declares a channel variable and emits channel_create: tensors of `element` dtype.
  Var make_channel(DType element, int64_t capacity = 0, std::string name = {});
  // A channel of any tensor (element LOD_TENSOR) or of channels (element CHANNEL).
  Var make_channel(VarType element, int64_t capacity = 0, std::string name = {});
  // Declares a channel variable without creating a channel (it holds the nil channel until an
  // assign or channel_create writes it): for variables that are rebound, like `left` in a chain.
  Var declare_channel(std::string name, VarType element, int64_t capacity = 0);
  // The builder's variable visible from the current block by that name; throws Error if none.
  Var lookup(const std::string& name) const;

  // ---- compute ops (one per registered op; `out` defaults to a new variable) -----------------
  Var fill_constant(const std::vector<int64_t>& shape, DType dtype, double value, Var out = {});
  Var assign(const Var& x, Var out = {});
  Var elementwise_add(const Var& x, const Var& y, Var out = {});
  Var elementwise_sub(const Var& x, const Var& y, Var out = {});
  Var elementwise_mul(const Var& x, const Var& y, Var out = {});
  Var elementwise_div(const Var& x, const Var& y, Var out = {});
  Var elementwise_max(const Var& x, const Var& y, Var out = {});
  Var elementwise_min(const Var& x, const Var& y, Var out = {});
  Var equal(const Var& x, const Var& y, Var out = {});
  Var not_equal(const Var& x, const Var& y, Var out = {});
  Var less_than(const Var& x, const Var& y, Var out = {});
  Var less_equal(const Var& x, const Var& y, Var out = {});
  Var greater_than(const Var& x, const Var& y, Var out = {});
  Var greater_equal(const Var& x, const Var& y, Var out = {});
  Var logical_and(const Var& x, const Var& y, Var out = {});
  Var logical_or(const Var& x, const Var& y, Var out = {});
  Var logical_not(const Var& x, Var out = {});
  Var increment(const Var& x, double step = 1.0, Var out = {});
  Var scale(const Var& x, double scale, double bias = 0.0, Var out = {});
  Var cast(const Var& x, DType to, Var out = {});
  Var matmul(const Var& x, const Var& y, bool transpose_x = false, bool transpose_y = false,
             Var out = {});
  Var relu(const Var& x, Var out = {});
  Var sigmoid(const Var& x, Var out = {});
  Var tanh(const Var& x, Var out = {});
  Var softmax(const Var& x, int64_t axis = -1, Var out = {});
  Var reduce_sum(const Var& x, const std::vector<int64_t>& dims, bool keep_dim = false,
                 Var out = {});
  Var reduce_mean(const Var& x, const std::vector<int64_t>& dims, bool keep_dim = false,
                  Var out = {});
  Var reshape(const Var& x, const std::vector<int64_t>& shape, Var out = {});
  Var transpose(const Var& x, const std::vector<int64_t>& perm, Var out = {});
  void print(const Var& x, std::string message = {});

  // ---- CSP -----------------------------------------------------------------------------------
  // Sends x on ch; returns the Status variable (BOOL).
  Var channel_send(const Var& ch, const Var& x);
  // Receives from ch into `out` (created when none); returns [value, ok] (ok: BOOL, false once
  // the channel is closed and drained).
  std::pair<Var, Var> channel_recv(const Var& ch, Var out = {});
  void channel_close(const Var& ch);

  // ---- control flow (scope guards) ----------------------------------------------------------
  // The guarded ops run on a new green thread (a `go` op with the block's captures as X).
  [[nodiscard]] BlockGuard go();
  // The guarded ops run while `cond` (a BOOL tensor the body updates) is true.
  [[nodiscard]] BlockGuard while_loop(const Var& cond);
  // The guarded ops run once if `cond` (a one-element BOOL tensor) is true.
  [[nodiscard]] BlockGuard conditional_block(const Var& cond);
  // A select; add cases on the returned guard.
  [[nodiscard]] SelectGuard select();

  // ---- generic -------------------------------------------------------------------------------
  // Appends any op (e.g. one registered by a plug-in) to the current block. Inputs/outputs name
  // visible variables.
  void append_op(const std::string& type, const OpDesc::Args& inputs, const OpDesc::Args& outputs,
                 const OpDesc::Attrs& attrs = {});
  // The index of the block ops are appended to.
  int64_t current_block() const noexcept;

  // Finishes: throws Error when a guard is still open or a guard's destructor failed; then
  // returns the verified program (attribute defaults filled). The builder may keep building
  // afterwards; build() again gives the larger program.
  Program build() const;

 private:
  friend class BlockGuard;
  friend class SelectGuard;
  struct State;
  Var declare(VarType type, VarType element, std::string name, int64_t capacity,
              const std::vector<int64_t>& dims = {}, bool persistable = false);
  Var temp(const std::string& op_type, VarType element);
  void check_var(const Var& v, const char* role) const;
  Var unary_op(const std::string& type, const Var& x, VarType out_elem, Var out,
               const OpDesc::Attrs& attrs = {});
  Var binary_op(const std::string& type, const Var& x, const Var& y, VarType out_elem, Var out,
                const OpDesc::Attrs& attrs = {});
  int64_t open_block();
  void close_guard(BlockGuard& g);
  BlockGuard add_case(SelectGuard& s, int kind, const Var& ch, Var v);
  std::unique_ptr<State> state_;
};

}  // namespace chanflow
