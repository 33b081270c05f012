// op_table.h — the op table: one row per op type holding its schema (Paddle's type name, input
// and output slots, attributes with defaults and checks), its shape/dtype inference, its kernel
// and its one gradient rule.
//
// Both front ends read the same rows. The executor runs a program op of a row through the row's
// kernel (the exec layer adapts every row once, op_registry.h); a graph builds a node of a row
// with cf::op() (graph/table_ops.h) and evaluates it with the same kernel. Program backward
// (cf::append_backward, backward.h) and graph differentiation (cf::grad) both call the row's
// gradient rule, which emits gradient ops — rows of the table too — through a GradCall: a program
// variable or a graph node is what the rule sees as a GradValue. So an op has one gradient
// definition whichever front end differentiates it.
//
//   const cf::OpDef* conv = cf::find_op_def("conv2d");
//   conv->schema().attr("groups")->make_default().as_int();   // 1
//   conv->has_grad();                                          // true: emits conv2d_grad
//
// Adding an op: one OpDefBuilder chain in a src/ops/rows_*.cc file (docs/ops.md walks through
// one). Rows register their schemas into the ir layer's registries (add_builtin_op_provider) as
// the layer loads, so programs naming them verify wherever the layer is linked.
//
// Thread-safety: the table is built once, before first use, and immutable afterwards; every
// function here is thread-safe. Kernels keep no state and may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/ir/attr.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// A tensor's static type: dtype and shape (-1: extent unknown).
struct TensorInfo {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};

// An op's attributes as its kernel, inference and gradient rule read them: the value the op was
// given, else its schema's default. Reading an attribute the schema does not declare, or one
// with another type, throws TypeError naming the op and the attribute.
class CHANFLOW_API AttrReader {
 public:
  AttrReader(const OpSchema& schema, const OpDesc& desc) : schema_(schema), desc_(desc) {}
  Attr get(std::string_view name) const;
  int64_t i(std::string_view name) const { return get(name).as_int(); }
  double f(std::string_view name) const { return get(name).as_float(); }
  bool b(std::string_view name) const { return get(name).as_bool(); }
  std::string s(std::string_view name) const { return get(name).as_string(); }
  std::vector<int64_t> ints(std::string_view name) const { return get(name).as_ints(); }
  std::vector<double> floats(std::string_view name) const { return get(name).as_floats(); }
  const OpSchema& schema() const noexcept { return schema_; }

 private:
  const OpSchema& schema_;
  const OpDesc& desc_;
};

// A kernel's view of one call: its inputs and wanted outputs by slot index (the slot's position
// in the schema's inputs() / outputs()), and the kernel options of the caller (chunking and
// cancellation). The executor and the graph each implement it.
class CHANFLOW_API KernelCall {
 public:
  virtual ~KernelCall() = default;
  // How many tensors input slot `slot` binds (0 for an absent optional input).
  virtual size_t num_inputs(int slot) const = 0;
  // Input `i` of slot `slot`; throws Error naming the op and the variable when it is absent or
  // not a tensor.
  virtual Tensor input(int slot, size_t i = 0) const = 0;
  // How many tensors output slot `slot` wants (0: none, the kernel may skip computing it).
  virtual size_t num_outputs(int slot) const = 0;
  bool wants(int slot) const { return num_outputs(slot) > 0; }
  // Whether output `i` of slot `slot` is wanted: every one below num_outputs(slot) for the
  // executor; only the node's own for a graph node of a duplicable output slot (split's Out[i]),
  // so a kernel may skip computing the others.
  virtual bool wants_value(int slot, size_t i) const { return i < num_outputs(slot); }
  // The value output `i` of slot `slot` holds now, when nothing else holds it (so a kernel that
  // updates state in place, e.g. batch_norm's MeanOut aliasing Mean, writes without copying);
  // else an undefined tensor.
  virtual Tensor take_output(int slot, size_t i = 0) = 0;
  // Sets output `i` of slot `slot` (ignored when not wanted).
  virtual void set_output(int slot, Tensor value, size_t i = 0) = 0;
  // Options for `work` units of `kind`: chunked with the caller's cancellation check when the
  // work exceeds one chunk (chunk_by_policy), else none.
  virtual KernelOptions options(int64_t work, WorkKind kind = WorkKind::kElements) const = 0;

  bool has_input(int slot) const { return num_inputs(slot) > 0; }
};

// Inference's view: input types by slot, output types set by slot. Shapes may hold -1 (unknown
// extents); inference keeps what it cannot know unknown and throws ShapeError/TypeError only for
// what no value could satisfy.
class CHANFLOW_API InferCall {
 public:
  virtual ~InferCall() = default;
  virtual size_t num_inputs(int slot) const = 0;
  virtual const TensorInfo& input(int slot, size_t i = 0) const = 0;
  virtual size_t num_outputs(int slot) const = 0;
  virtual void set_output(int slot, TensorInfo info, size_t i = 0) = 0;
  bool has_input(int slot) const { return num_inputs(slot) > 0; }
};

// A value the gradient being built refers to: a program variable (append_backward) or a graph
// node (cf::grad), as the GradCall that made it knows it. Invalid: no value (e.g. no gradient
// reaches that output).
struct GradValue {
  int64_t id = -1;
  bool valid() const noexcept { return id >= 0; }
};

// A gradient rule's view of the forward op it differentiates and of the builder it emits into.
class CHANFLOW_API GradCall {
 public:
  virtual ~GradCall() = default;
  // The forward op's input / output `i` of slot `slot` (by slot index), invalid when absent.
  virtual GradValue input(int slot, size_t i = 0) = 0;
  virtual GradValue output(int slot, size_t i = 0) = 0;
  // The gradient of the loss with respect to output `i` of slot `slot`; invalid when none flows
  // (the rule treats it as zeros).
  virtual GradValue output_grad(int slot, size_t i = 0) = 0;
  // Whether input `i` of slot `slot` needs a gradient (it leads to a parameter or a wanted node).
  virtual bool needs_grad(int slot, size_t i = 0) const = 0;
  // Gives input `i` of slot `slot` its gradient from this op (the builder sums contributions).
  virtual void set_input_grad(int slot, GradValue g, size_t i = 0) = 0;
  // Emits an op of the table: inputs by slot name, attributes (the rest take defaults), and the
  // output slots wanted, each with the number of values it holds (more than one only for a
  // duplicable slot, e.g. concat_grad's X@GRAD); returns the values slot by slot, in order, an
  // invalid one for an output the builder could not make.
  using Inputs = std::vector<std::pair<std::string, std::vector<GradValue>>>;
  using Outputs = std::vector<std::pair<std::string, size_t>>;
  virtual std::vector<std::vector<GradValue>> emit_outputs(const std::string& type,
                                                           const Inputs& inputs,
                                                           const OpDesc::Attrs& attrs,
                                                           const Outputs& outputs) = 0;
  // emit_outputs with one value per output slot: returns one value per wanted output, in order.
  std::vector<GradValue> emit(const std::string& type, const Inputs& inputs,
                              const OpDesc::Attrs& attrs, const std::vector<std::string>& outputs);
  // The forward op (type and attributes as given).
  virtual const OpDesc& forward() const = 0;
};

using KernelFn = void (*)(const AttrReader& attrs, KernelCall& call);
using InferFn = void (*)(const AttrReader& attrs, InferCall& call);
using GradFn = void (*)(const AttrReader& attrs, GradCall& call);

// One row.
class CHANFLOW_API OpDef {
 public:
  // The op's schema: the row's own, or for a gradient-only row the ir layer's built-in one.
  const OpSchema& schema() const;
  const std::string& type() const noexcept { return type_; }
  // Whether the row has its own kernel (false for a row that only adds the gradient rule of an
  // op whose kernel is one of the executor's built-in rows, e.g. elementwise_add).
  bool has_kernel() const noexcept { return kernel_ != nullptr; }
  bool has_grad() const noexcept { return grad_ != nullptr; }
  // Why no gradient flows through the op, for the error append_backward and cf::grad give when
  // a loss depends on it ("accuracy counts correct predictions: it has no gradient").
  const std::string& no_grad_reason() const noexcept { return no_grad_reason_; }
  // Whether the kernel draws a fresh random seed on every run unless its attribute fix_seed is
  // true (dropout). A graph refuses such an op unless fix_seed is true: each output node of a
  // graph op runs the kernel on its own, so Out and Mask would come from different draws.
  bool draws_seed() const noexcept { return draws_seed_; }
  // Slot indices by name; -1 when the schema has no such slot.
  int input_slot(std::string_view name) const noexcept;
  int output_slot(std::string_view name) const noexcept;

  // Runs the kernel (Error when the row has none).
  void run(const AttrReader& attrs, KernelCall& call) const;
  // Infers the outputs (Error when the row has no inference).
  void infer(const AttrReader& attrs, InferCall& call) const;
  // Applies the gradient rule (Error naming no_grad_reason when the row has none).
  void grad(const AttrReader& attrs, GradCall& call) const;

 private:
  friend class OpDefBuilder;
  std::string type_;
  std::shared_ptr<const OpSchema> own_schema_;  // null for a gradient-only row
  KernelFn kernel_ = nullptr;
  InferFn infer_ = nullptr;
  GradFn grad_ = nullptr;
  std::string no_grad_reason_;
  bool draws_seed_ = false;
};

// The row of `type`, or null. The rows exist from the first call on (built once).
CHANFLOW_API const OpDef* find_op_def(std::string_view type);
// Every row's type, sorted.
CHANFLOW_API std::vector<std::string> op_def_types();

}  // namespace chanflow
