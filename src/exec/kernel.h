// kernel.h — what every kernel file uses: the kernel table entry, prepare helpers and fast
// variable access (private to the exec layer).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec/op_registry.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"
#include "op_attrs.h"
#include "prepared.h"

namespace chanflow::exec_detail {

// Throws CanceledError when the run has been canceled (run_block.cc).
void throw_if_canceled(const RunState& rs);

// The program's variable names, resolved once for every block (prepare.cc).
struct NameTables;

// Resolves names while an op is prepared.
class PrepareCtx {
 public:
  PrepareCtx(const PreparedProgram& prog, const OpDesc& desc, const OpSchema& schema,
             PreparedOp& op, const NameTables& names)
      : prog_(prog), desc_(desc), schema_(schema), op_(op), names_(names) {}

  const OpDesc& desc() const { return desc_; }
  const OpSchema& schema() const { return schema_; }
  PreparedOp& op() { return op_; }
  const PreparedOp& op() const { return op_; }
  const PreparedProgram& program() const { return prog_; }
  // Resolves a variable name as seen from the op's block (or block `from`): a name one of the
  // op's parameters or select cases names (or, from a go op's sub-block, one of its X). O(1).
  VarRef resolve(const std::string& name, int32_t from = -1) const;
  const NameTables& names() const { return names_; }
  // Appends the (first) variable of input parameter `param`; an invalid ref when absent.
  void in(const char* param) {
    std::vector<std::string> names = desc_.input(param);
    push(op_.in, op_.in_names, names);
  }
  void out(const char* param) {
    std::vector<std::string> names = desc_.output(param);
    push(op_.out, op_.out_names, names);
  }
  // The op's attribute `name`, or its schema's default (fails the op when neither exists).
  Attr attr(const char* name) const;

 private:
  void push(std::vector<VarRef>& refs, std::vector<std::string>& names,
            const std::vector<std::string>& vars) {
    if (vars.empty()) {
      refs.push_back(VarRef{});
      names.emplace_back();
    } else {
      refs.push_back(resolve(vars[0]));
      names.push_back(vars[0]);
    }
  }
  const PreparedProgram& prog_;
  const OpDesc& desc_;
  const OpSchema& schema_;
  PreparedOp& op_;
  const NameTables& names_;
};

// ---- kernel rows ---------------------------------------------------------------------------
//
// Every op the executor runs is one row of a kernel family's table (kernels_*.cc):
//
//   op<MatmulAttrs, run_matmul>("matmul", bind_xy_out, infer_matmul)
//
// names the op (whose schema, in the ir layer, declares its parameters and attributes), the
// struct of attributes its kernel reads (op_attrs.h), the kernel `run(op, attrs, frame)`, the
// function binding its parameters to variables (`bind(ctx)`: c.in("X"), c.out("Out")), and its
// dtype/shape inference `infer(attrs, op, inputs)` (null for control flow and channel ops). The
// row prepares the attributes once per op and runs the kernel with them: no kernel runs without
// the attributes it was prepared with, and register_exec_kernels checks each row against its
// schema (the op exists, every attribute field is declared with a type the field reads).

using BindFn = void (*)(PrepareCtx& c);
using PrepareFn = void (*)(PrepareCtx& c);  // bind, then read and store the attributes
using InferFn = std::vector<TensorInfo> (*)(const OpDesc& op, const OpSchema* schema,
                                            const std::vector<TensorInfo>& in);
using CheckFn = void (*)(const OpSchema& schema);
template <class A>
using TypedRun = void (*)(const PreparedOp& op, const A& attrs, Frame& f);
template <class A>
using TypedInfer = std::vector<TensorInfo> (*)(const A& attrs, const OpDesc& op,
                                               const std::vector<TensorInfo>& in);

// One row (see above).
struct KernelRow {
  const char* type;
  KernelFn run;
  PrepareFn prepare;
  InferFn infer;
  CheckFn check;
};

// The extension attached to each schema.
struct KernelDef : public OpExtension {
  explicit KernelDef(const KernelRow& r) : run(r.run), prepare(r.prepare), infer(r.infer) {}
  KernelFn run;
  PrepareFn prepare;
  InferFn infer;  // null for control flow and channel ops
};

namespace rows {
template <class A, TypedRun<A> R>
void run(const PreparedOp& op, Frame& f) {
  R(op, op.attrs.get<A>(), f);
}
template <class A, BindFn B>
void prepare(PrepareCtx& c) {
  B(c);
  c.op().attrs.set(read_attrs<A>(c.desc(), &c.schema()));
}
template <class A, TypedInfer<A> I>
std::vector<TensorInfo> infer(const OpDesc& op, const OpSchema* schema,
                              const std::vector<TensorInfo>& in) {
  A attrs;
  try {
    attrs = read_attrs<A>(op, schema);
  } catch (const TypeError& e) {
    throw TypeError(op.type() + ": " + e.what());
  }
  return I(attrs, op, in);
}
}  // namespace rows

// The row of op `type`: attributes A, kernel R, parameters bound by B, inference I. Two overloads
// rather than a null default for I: GCC's UBSan (-fsanitize=undefined) makes a function address
// compared with null not a constant expression.
template <class A, TypedRun<A> R, BindFn B, TypedInfer<A> I>
constexpr KernelRow op(const char* type) {
  return KernelRow{type, &rows::run<A, R>, &rows::prepare<A, B>, &rows::infer<A, I>,
                   &check_fields<A>};
}
// The row of an op without tensor inference (control flow, channels).
template <class A, TypedRun<A> R, BindFn B>
constexpr KernelRow op(const char* type) {
  return KernelRow{type, &rows::run<A, R>, &rows::prepare<A, B>, nullptr, &check_fields<A>};
}

// The kernel families' tables.
std::vector<KernelRow> math_kernels();
std::vector<KernelRow> tensor_kernels();
std::vector<KernelRow> control_flow_kernels();
std::vector<KernelRow> csp_kernels();
// Every row of the op table that has a kernel (table_kernels.cc).
std::vector<KernelRow> table_kernels();

// ---- fast variable access ----------------------------------------------------------------
inline ScopeObj* scope_at(ScopeObj* s, int32_t depth) {
  while (depth-- > 0) s = s->parent();
  return s;
}
inline ObjectRef read_var(const Frame& f, VarRef r) {
  return scope_at(f.scope, r.depth)->get(r.slot);
}
inline void write_var(const Frame& f, VarRef r, ObjectRef v) {
  scope_at(f.scope, r.depth)->set(r.slot, std::move(v));
}
// Input k as a tensor; throws Error naming the variable when it is unset or not a tensor.
Tensor read_tensor(const PreparedOp& op, const Frame& f, size_t k);
// Output k's current value when it is a tensor nobody else holds (for in-place reuse), else null.
Tensor take_output_buffer(const PreparedOp& op, const Frame& f, size_t k);
// Throws TypeError: `value`, written to output k, is a tensor whose dtype is not the one its
// variable is declared with.
[[noreturn]] void throw_out_dtype(const PreparedOp& op, size_t k, const TensorObj& value);
// Stores v in output k. A tensor must have its variable's declared dtype, where the op has one
// (PreparedOp::out_dtypes).
inline void write_out(const PreparedOp& op, const Frame& f, size_t k, ObjectRef v) {
  if (k < op.out_dtypes.size() && op.out_dtypes[k]) {
    const auto* t = v.as<TensorObj>();
    if (t != nullptr && t->dtype() != *op.out_dtypes[k]) throw_out_dtype(op, k, *t);
  }
  write_var(f, op.out[k], std::move(v));
}

// The declaration of `name` as seen from the op's block.
VarDecl find_decl(const PrepareCtx& c, const std::string& name);
// A zero value of a declared type: zeros of the element dtype (shape from dims, unknown extents
// as 1, no dims as {1}); a null ref for channels and unknown types.
ObjectRef zero_value(const VarDecl& d);
// Whether a one-element tensor is true (ShapeError otherwise).
bool scalar_true(const Tensor& t, const char* what);
// A new strong reference to a scope.
Scope scope_ref(ScopeObj* s);

// The DType of a VarType number attribute (TypeError otherwise).
DType dtype_of_var_type_number(int64_t v);

// Options for a kernel doing `work` units of `kind` in frame `f`: chunked by the tensor layer's
// policy (chunk_by_policy), so that a canceled run stops between chunks of a large kernel instead
// of finishing it. Small kernels get default options (no check).
inline KernelOptions kernel_options(const Frame& f, int64_t work,
                                    WorkKind kind = WorkKind::kElements) {
  KernelOptions o;
  chunk_by_policy(o, work, kind, [rs = f.rs] { throw_if_canceled(*rs); });
  return o;
}

// The parameter bindings most ops share.
void bind_x_out(PrepareCtx& c);   // X -> Out
void bind_xy_out(PrepareCtx& c);  // X, Y -> Out

}  // namespace chanflow::exec_detail
