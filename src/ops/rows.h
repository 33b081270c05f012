// rows.h — how the rows of the op table are written (private to the ops layer).
//
// A row is one OpDefBuilder chain: the schema by Paddle's names, then inference, kernel and
// gradient rule.
//
//   OpDefBuilder("leaky_relu").doc("Out = X > 0 ? X : alpha * X")
//       .input("X").output("Out")
//       .attr("alpha", T::kFloat, f_default(0.02))
//       .infer(infer_like_x).kernel(run_leaky_relu).grad(grad_leaky_relu);
//
// A gradient op is a row too; grad_op() derives its schema from the forward row's (Paddle's
// convention: the forward inputs and outputs it reads, "<out>@GRAD" inputs, "<in>@GRAD" outputs,
// the forward attributes), and emit_grad_op() is the rule that emits it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/ops/op_table.h"

namespace chanflow {

using T = AttrType;

class OpDefBuilder {
 public:
  // A new op: the row declares its schema.
  explicit OpDefBuilder(std::string type);
  // A row that adds the gradient rule of `type`, an op whose schema is the ir layer's and whose
  // kernel is one of the executor's built-in rows.
  static OpDefBuilder grad_rule_of(std::string type);

  OpDefBuilder& doc(std::string text);
  OpDefBuilder& input(std::string name, bool required = true, bool duplicable = false,
                      std::string doc = {});
  OpDefBuilder& output(std::string name, bool required = true, bool duplicable = false,
                       std::string doc = {});
  OpDefBuilder& attr(std::string name, AttrType type, std::function<Attr()> make_default = {},
                     std::string doc = {}, std::function<std::string(const Attr&)> check = {});
  OpDefBuilder& kernel(KernelFn f);
  OpDefBuilder& infer(InferFn f);
  OpDefBuilder& grad(GradFn f);
  OpDefBuilder& no_grad(std::string reason);
  // The kernel draws a fresh seed per run unless fix_seed (OpDef::draws_seed).
  OpDefBuilder& draws_seed();

  // The schema of the gradient op `grad_type` of this (forward) row: optional inputs for the
  // forward inputs `ins` and outputs `outs` it reads and "<o>@GRAD" for each forward output of
  // `out_grads`; optional outputs "<i>@GRAD" for each forward input of `in_grads`; the forward
  // row's attributes. Continue the chain with its inference and kernel.
  OpDefBuilder grad_op(std::string grad_type, const std::vector<std::string>& ins,
                       const std::vector<std::string>& outs,
                       const std::vector<std::string>& out_grads,
                       const std::vector<std::string>& in_grads) const;

  OpDef build() const;

 private:
  OpDef def_;
  std::shared_ptr<OpSchema> schema_;  // null for grad_rule_of
};

// The row families (rows_*.cc); op_table.cc assembles them.
std::vector<OpDef> math_rows();
std::vector<OpDef> conv_rows();
std::vector<OpDef> nn_rows();
std::vector<OpDef> optimizer_rows();

// ---- helpers rows share -------------------------------------------------------------------
inline std::function<Attr()> i_default(int64_t v) {
  return [v] { return Attr::i(v); };
}
inline std::function<Attr()> f_default(double v) {
  return [v] { return Attr::f(v); };
}
inline std::function<Attr()> b_default(bool v) {
  return [v] { return Attr::b(v); };
}
inline std::function<Attr()> s_default(std::string v) {
  return [v] { return Attr::s(v); };
}
inline std::function<Attr()> ints_default(std::vector<int64_t> v) {
  return [v] { return Attr::ints(v); };
}

// The gradient slot name of a forward slot: "X" -> "X@GRAD" (Paddle's kGradVarSuffix).
inline std::string grad_slot(const std::string& slot) { return slot + "@GRAD"; }

// The rule of a row whose gradient is one gradient op (grad_op above): emits `grad_type` with
// the forward inputs `ins` and outputs `outs`, the gradients reaching `out_grads`, and asks for
// "<i>@GRAD" of each input of `in_grads` that needs one; gives those inputs their gradients. A
// duplicable input slot (concat's X) gets one "<i>@GRAD" value per value of the slot when any
// of them needs a gradient (those that need none are computed and dropped).
void emit_grad_op(GradCall& c, const std::string& grad_type, const std::vector<std::string>& ins,
                  const std::vector<std::string>& outs, const std::vector<std::string>& out_grads,
                  const std::vector<std::string>& in_grads);

// The forward op's attributes as given, for a gradient op that takes them all.
OpDesc::Attrs forward_attrs(const GradCall& c);

// Inference of an op whose outputs have the type of input X (the first input slot).
void infer_like_first_input(const AttrReader& a, InferCall& c);

// Throws ShapeError/TypeError "<op>: <message>".
#define CHANFLOW_OP_THROW(Kind, op) CHANFLOW_THROW(Kind) << (op) << ": "

}  // namespace chanflow
