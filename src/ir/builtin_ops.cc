// The schemas of chanflow's built-in ops. Parameter and attribute names are Fluid's, so the
// programs of Fluid's CSP design documents verify unchanged.
#include <string>

#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/var_type.h"
#include "ir_internal.h"

namespace chanflow {
namespace {

using T = AttrType;

std::function<Attr()> int_default(int64_t v) {
  return [v] { return Attr::i(v); };
}
std::function<Attr()> float_default(double v) {
  return [v] { return Attr::f(v); };
}
std::function<Attr()> bool_default(bool v) {
  return [v] { return Attr::b(v); };
}
std::function<Attr()> string_default(const std::string& v) {
  return [v] { return Attr::s(v); };
}
std::function<Attr()> ints_default(const std::vector<int64_t>& v) {
  return [v] { return Attr::ints(v); };
}

// An INT attribute naming a tensor element type (Fluid's `dtype: 3` = INT64).
std::string check_element_type(const Attr& a) {
  const int64_t v = a.as_int();
  if (!is_valid_var_type(v) || !is_element_type(static_cast<VarType>(v))) {
    return "must be a tensor element VarType (BOOL=0 INT16=1 INT32=2 INT64=3 FP16=4 FP32=5 "
           "FP64=6 UINT8=20 INT8=21), got " +
           std::to_string(v);
  }
  return {};
}

// What a channel can carry: tensors of one dtype, tensors of any dtype, or channels.
std::string check_channel_element(const Attr& a) {
  const int64_t v = a.as_int();
  if (v == static_cast<int64_t>(VarType::kLoDTensor) ||
      v == static_cast<int64_t>(VarType::kChannel)) {
    return {};
  }
  if (is_valid_var_type(v) && is_element_type(static_cast<VarType>(v))) return {};
  return "must be a tensor element VarType, LOD_TENSOR (7) or CHANNEL (16), got " +
         std::to_string(v);
}

// arg_max's index type: INT32 (2) or INT64 (3); Paddle's older default -1 also means INT64.
std::string check_index_type(const Attr& a) {
  const int64_t v = a.as_int();
  if (v == -1 || v == static_cast<int64_t>(VarType::kInt32) ||
      v == static_cast<int64_t>(VarType::kInt64)) {
    return {};
  }
  return "must be INT32 (2) or INT64 (3) (-1: INT64), got " + std::to_string(v);
}

std::string check_print_phase(const Attr& a) {
  const std::string& v = a.as_string();
  if (v == "FORWARD" || v == "BACKWARD" || v == "BOTH") return {};
  return "must be FORWARD, BACKWARD or BOTH, got '" + v + "'";
}

std::string check_non_negative(const Attr& a) {
  if (a.as_int() < 0) return "must be >= 0, got " + std::to_string(a.as_int());
  return {};
}

std::string check_block_index(const Attr& a) {
  if (a.as_block() <= 0)
    return "must name a sub-block (index >= 1), got " + std::to_string(a.as_block());
  return {};
}

std::string check_dims(const Attr& a) {
  for (int64_t d : a.as_ints()) {
    if (d < -1) return "dims must be >= -1, got " + std::to_string(d);
  }
  return {};
}

void binary(OpSchemaRegistry& r, const char* type, const char* doc) {
  r.add(OpSchema(type).doc(doc).input("X").input("Y").output("Out").attr(
      "axis", T::kInt, int_default(-1), "broadcast axis of Y in X (-1: NumPy rules)"));
}

void compare(OpSchemaRegistry& r, const char* type, const char* doc) {
  r.add(
      OpSchema(type)
          .doc(doc)
          .input("X")
          .input("Y")
          .output("Out")
          .attr("axis", T::kInt, int_default(-1), "broadcast axis of Y in X (-1: NumPy rules)")
          .attr("force_cpu", T::kBoolean, bool_default(false), "Fluid's placement hint; ignored"));
}

void unary(OpSchemaRegistry& r, const char* type, const char* doc) {
  r.add(OpSchema(type).doc(doc).input("X").output("Out"));
}

}  // namespace

namespace ir_detail {

void register_ir_ops(OpSchemaRegistry& r) {
  // ---- tensors ---------------------------------------------------------------------------
  r.add(
      OpSchema("fill_constant")
          .doc("Out = a tensor of `shape` and element type `dtype` filled with `value`.")
          .output("Out")
          .attr("shape", T::kInts, {}, "the tensor's shape", check_dims)
          .attr("dtype", T::kInt, int_default(static_cast<int64_t>(VarType::kFP32)),
                "element VarType", check_element_type)
          .attr("value", T::kFloat, float_default(0.0), "the fill value")
          .attr("str_value", T::kString, string_default(""),
                "the fill value as text (Fluid's exact form, e.g. \"2147483647\"); when "
                "non-empty it is used instead of `value`")
          .attr("force_cpu", T::kBoolean, bool_default(false), "Fluid's placement hint; ignored"));
  r.add(OpSchema("assign")
            .doc("Out = X. Tensors are values (copy on write); channels are handles (the copy "
                 "refers to the same channel).")
            .input("X")
            .output("Out"));
  binary(r, "elementwise_add", "Out = X + Y (broadcasting)");
  binary(r, "elementwise_sub", "Out = X - Y (broadcasting)");
  binary(r, "elementwise_mul", "Out = X * Y (broadcasting)");
  binary(r, "elementwise_div", "Out = X / Y (broadcasting)");
  binary(r, "elementwise_max", "Out = max(X, Y) (broadcasting)");
  binary(r, "elementwise_min", "Out = min(X, Y) (broadcasting)");
  compare(r, "equal", "Out = (X == Y), BOOL");
  compare(r, "not_equal", "Out = (X != Y), BOOL");
  compare(r, "less_than", "Out = (X < Y), BOOL");
  compare(r, "less_equal", "Out = (X <= Y), BOOL");
  compare(r, "greater_than", "Out = (X > Y), BOOL");
  compare(r, "greater_equal", "Out = (X >= Y), BOOL");
  r.add(OpSchema("logical_and").doc("Out = X && Y, BOOL").input("X").input("Y").output("Out"));
  r.add(OpSchema("logical_or").doc("Out = X || Y, BOOL").input("X").input("Y").output("Out"));
  unary(r, "logical_not", "Out = !X, BOOL");
  r.add(OpSchema("increment")
            .doc("Out = X + step (X has one element)")
            .input("X")
            .output("Out")
            .attr("step", T::kFloat, float_default(1.0), "the increment"));
  r.add(OpSchema("scale")
            .doc("Out = scale * X + bias (or scale * (X + bias) when !bias_after_scale)")
            .input("X")
            .output("Out")
            .attr("scale", T::kFloat, float_default(1.0))
            .attr("bias", T::kFloat, float_default(0.0))
            .attr("bias_after_scale", T::kBoolean, bool_default(true)));
  r.add(OpSchema("cast")
            .doc("Out = X converted to out_dtype")
            .input("X")
            .output("Out")
            .attr("in_dtype", T::kInt, {}, "element VarType of X", check_element_type)
            .attr("out_dtype", T::kInt, {}, "element VarType of Out", check_element_type));
  r.add(OpSchema("matmul")
            .doc("Out = alpha * op(X) @ op(Y), op = transpose when transpose_X / transpose_Y; "
                 "batched over leading dims")
            .input("X")
            .input("Y")
            .output("Out")
            .attr("transpose_X", T::kBoolean, bool_default(false))
            .attr("transpose_Y", T::kBoolean, bool_default(false))
            .attr("alpha", T::kFloat, float_default(1.0)));
  unary(r, "relu", "Out = max(X, 0)");
  unary(r, "sigmoid", "Out = 1 / (1 + exp(-X))");
  unary(r, "tanh", "Out = tanh(X)");
  // Fluid 1.x's softplus had no attributes (later Paddle added beta and threshold).
  unary(r, "softplus", "Out = log(1 + exp(X)), stable for large |X|");
  r.add(OpSchema("softmax")
            .doc("Out = softmax(X) along axis")
            .input("X")
            .output("Out")
            .attr("axis", T::kInt, int_default(-1)));
  for (const char* type : {"reduce_sum", "reduce_mean"}) {
    r.add(OpSchema(type)
              .doc(std::string(type == std::string("reduce_sum") ? "sum" : "mean") +
                   " of X over `dim` (every axis when reduce_all)")
              .input("X")
              .output("Out")
              .attr("dim", T::kInts, ints_default({0}), "axes to reduce (negative from the end)")
              .attr("keep_dim", T::kBoolean, bool_default(false))
              .attr("reduce_all", T::kBoolean, bool_default(false)));
  }
  r.add(OpSchema("arg_max")
            .doc("Out = index of the first maximum of X along `axis` (of every element when "
                 "flatten); a NaN counts as the maximum")
            .input("X")
            .output("Out")
            .attr("axis", T::kLong, {}, "the axis searched (negative from the end)")
            .attr("keepdims", T::kBoolean, bool_default(false), "keep `axis` with extent 1")
            .attr("flatten", T::kBoolean, bool_default(false),
                  "search every element; Out has shape [1]")
            .attr("dtype", T::kInt, int_default(static_cast<int64_t>(VarType::kInt64)),
                  "element VarType of Out: INT32 or INT64", check_index_type));
  r.add(OpSchema("reshape")
            .doc("Out = X with shape `shape` (one -1 is inferred, 0 copies X's extent)")
            .input("X")
            .output("Out")
            .attr("shape", T::kInts, {}, "the new shape"));
  r.add(OpSchema("transpose")
            .doc("Out = X with axes permuted by `axis`")
            .input("X")
            .output("Out")
            .attr("axis", T::kInts, {}, "the permutation"));
  r.add(OpSchema("print")
            .doc("Prints In (with `message`) to standard output; Out, if given, = In")
            .input("In")
            .output("Out", /*required=*/false)
            .attr("message", T::kString, string_default(""))
            .attr("summarize", T::kInt, int_default(-1), "elements to print (-1: all)")
            .attr("first_n", T::kInt, int_default(-1), "print only the first n times (-1: always)")
            .attr("print_tensor_name", T::kBoolean, bool_default(true),
                  "prefix the output with Tensor[<variable name>]")
            // The tensor's text always shows its shape and dtype, and chanflow tensors have no LoD:
            // Fluid's switches for them are accepted and change nothing.
            .attr("print_tensor_type", T::kBoolean, bool_default(true), "Fluid's flag; ignored")
            .attr("print_tensor_shape", T::kBoolean, bool_default(true), "Fluid's flag; ignored")
            .attr("print_tensor_lod", T::kBoolean, bool_default(true), "Fluid's flag; ignored")
            .attr("print_tensor_layout", T::kBoolean, bool_default(true), "Fluid's flag; ignored")
            .attr("print_phase", T::kString, string_default("BOTH"),
                  "FORWARD or BOTH print; BACKWARD prints only in a backward pass, which the "
                  "executor does not run",
                  check_print_phase));

  // ---- control flow ----------------------------------------------------------------------
  r.add(OpSchema("while")
            .doc("Runs sub_block while Condition (a one-element BOOL tensor) is true; the block "
                 "updates Condition itself.")
            .input("X", false, true, "variables of enclosing blocks the body reads")
            .input("Condition")
            .output("Out", false, true, "variables of enclosing blocks the body writes")
            .output("StepScopes", false, false, "Fluid's step scopes (unused)")
            .attr("sub_block", T::kBlock, {}, "the loop body", check_block_index)
            .attr("is_test", T::kBoolean, bool_default(false), "Fluid's flag; ignored"));
  r.add(OpSchema("conditional_block")
            .doc("Runs sub_block once when the condition X is true (is_scalar_condition: X is one "
                 "BOOL element; otherwise: every X is non-empty).")
            .input("X", true, true, "the condition(s)")
            .input("Params", false, true, "variables of enclosing blocks the body reads")
            .output("Out", false, true, "variables of enclosing blocks the body writes")
            .output("Scope", false, false, "Fluid's scope variable (unused)")
            .attr("sub_block", T::kBlock, {}, "the body", check_block_index)
            .attr("is_scalar_condition", T::kBoolean, bool_default(false)));
  r.add(OpSchema("go")
            .doc("Starts sub_block on a new green thread. The variables listed in X are bound "
                 "when the op runs (like a Go function call's arguments); the block's scope keeps "
                 "the enclosing scopes alive (closures).")
            .input("X", false, true, "variables of enclosing blocks the block uses")
            .attr("sub_block", T::kBlock, {}, "the block run on the green thread",
                  check_block_index));
  r.add(
      OpSchema("select")
          .doc("Waits until one of `cases` can proceed (Go's select), performs its channel "
               "operation, writes its index to case_to_execute, then runs sub_block (whose "
               "conditional_blocks run the chosen case's body).")
          .input("X", false, true, "variables of enclosing blocks the cases read")
          .input("case_to_execute", true, false, "an INT32 tensor written with the case index")
          .output("Out", false, true, "variables of enclosing blocks the cases write")
          .attr("sub_block", T::kBlock, {}, "the block holding the case bodies", check_block_index)
          .attr("cases", T::kStrings, {},
                "one '<index>,<kind>,<channel>,<var>' per case; kind 0 default, 1 send, "
                "2 receive"));

  // ---- CSP ---------------------------------------------------------------------------------
  r.add(OpSchema("channel_create")
            .doc("Out = a new channel of element type data_type and capacity (0: unbuffered)")
            .output("Out")
            .attr("data_type", T::kInt, {}, "element VarType", check_channel_element)
            .attr("capacity", T::kInt, int_default(0), "buffer size", check_non_negative));
  r.add(OpSchema("channel_send")
            .doc("Sends X on Channel (blocks until received or buffered). Sending on a closed "
                 "channel is an error (Go); Status, if given, is set true after the send.")
            .input("Channel")
            .input("X")
            .output("Status", false)
            .attr("copy", T::kBoolean, bool_default(false),
                  "Fluid's flag; values are always "
                  "copied (tensors are values)"));
  r.add(OpSchema("channel_recv")
            .doc("Receives from Channel into Out; Status = true, or false (and Out a zero tensor) "
                 "once the channel is closed and drained.")
            .input("Channel")
            .output("Out")
            .output("Status"));
  r.add(OpSchema("channel_close")
            .doc("Closes Channel; closing twice is an error (Go)")
            .input("Channel"));
}

}  // namespace ir_detail
}  // namespace chanflow
