// ProgramBuilder: Fluid's Python program-building API in C++. Blocks are kept as plain vectors
// while they are open; build() turns them into IR objects and verifies the result.
#include "chanflow/ir/builder.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "capture_impl.h"
#include "chanflow/core/error.h"
#include "chanflow/ir/select_case.h"
#include "chanflow/ir/verifier.h"

namespace chanflow {
namespace {

enum GuardKind { kGo = 1, kWhile = 2, kCond = 3, kSelect = 4, kCase = 5 };

int64_t vt(VarType t) { return static_cast<int64_t>(t); }

}  // namespace

struct ProgramBuilder::State {
  struct BlockState {
    int64_t parent = -1;
    std::vector<VarDesc> vars;
    std::unordered_set<std::string> declared;
    std::unordered_map<std::string, Var> by_name;
    std::vector<OpDesc> ops;
  };
  struct SelectRecord {
    int64_t block = -1;  // the select's sub-block
    Var case_to_execute;
    std::vector<std::string> cases;
    std::vector<std::string> reads;   // channels and sent values named by cases
    std::vector<std::string> writes;  // received-into variables named by cases
    bool has_default = false;
  };
  struct GuardInfo {
    int kind = 0;
    Var cond;
    int64_t select = -1;
  };

  // A deque: blocks never move, so `capture_views` can point into them.
  std::deque<BlockState> blocks;
  std::vector<ir_detail::CaptureBlockView> capture_views;  // one per block, for close_guard
  std::vector<int64_t> stack;  // open blocks; back() is the current block
  std::unordered_map<std::string, int> counters;
  std::unordered_set<std::string> all_names;
  std::vector<SelectRecord> selects;
  std::vector<GuardInfo> guards;
  std::string deferred_error;  // from a guard destructor, rethrown by build()
};

// ---- Var ---------------------------------------------------------------------------------------

DType Var::dtype() const {
  if (type_ != VarType::kLoDTensor || !is_element_type(element_)) {
    CHANFLOW_THROW(TypeError) << "variable '" << name_ << "' is a " << var_type_name(type_)
                              << ", not a tensor with a dtype";
  }
  return dtype_from_var_type(element_);
}

// ---- guards ------------------------------------------------------------------------------------

BlockGuard::BlockGuard(ProgramBuilder* builder, int64_t block, int kind, int64_t extra)
    : builder_(builder),
      block_(block),
      kind_(kind),
      extra_(extra),
      uncaught_(std::uncaught_exceptions()) {}

BlockGuard::BlockGuard(BlockGuard&& other) noexcept
    : builder_(std::exchange(other.builder_, nullptr)),
      block_(other.block_),
      kind_(other.kind_),
      extra_(other.extra_),
      uncaught_(other.uncaught_) {}

BlockGuard& BlockGuard::operator=(BlockGuard&& other) noexcept {
  if (this != &other) {
    if (builder_ != nullptr) {
      try {
        close();
      } catch (...) {  // the builder keeps the error for build()
      }
    }
    builder_ = std::exchange(other.builder_, nullptr);
    block_ = other.block_;
    kind_ = other.kind_;
    extra_ = other.extra_;
    uncaught_ = other.uncaught_;
  }
  return *this;
}

BlockGuard::~BlockGuard() {
  if (builder_ == nullptr) return;
  if (std::uncaught_exceptions() > uncaught_) {
    // Unwinding: the program is abandoned; leave it marked broken rather than emit half an op.
    if (builder_->state_->deferred_error.empty()) {
      builder_->state_->deferred_error = "a guard was unwound by an exception";
    }
    builder_ = nullptr;
    return;
  }
  try {
    close();
  } catch (const std::exception& e) {
    if (builder_ != nullptr && builder_->state_->deferred_error.empty()) {
      builder_->state_->deferred_error = e.what();
    }
  }
  builder_ = nullptr;
}

void BlockGuard::close() {
  if (builder_ == nullptr) return;
  ProgramBuilder* b = std::exchange(builder_, nullptr);
  try {
    b->close_guard(*this);
  } catch (const std::exception& e) {
    if (b->state_->deferred_error.empty()) b->state_->deferred_error = e.what();
    throw;
  }
}

BlockGuard SelectGuard::case_send(const Var& ch, Var x) {
  if (builder_ == nullptr) CHANFLOW_THROW(Error) << "select: case_send on a closed select";
  return builder_->add_case(*this, static_cast<int>(SelectCaseKind::kSend), ch, std::move(x));
}
BlockGuard SelectGuard::case_recv(const Var& ch, Var out) {
  if (builder_ == nullptr) CHANFLOW_THROW(Error) << "select: case_recv on a closed select";
  return builder_->add_case(*this, static_cast<int>(SelectCaseKind::kRecv), ch, std::move(out));
}
BlockGuard SelectGuard::case_default() {
  if (builder_ == nullptr) CHANFLOW_THROW(Error) << "select: case_default on a closed select";
  return builder_->add_case(*this, static_cast<int>(SelectCaseKind::kDefault), Var(), Var());
}

// ---- builder -----------------------------------------------------------------------------------

ProgramBuilder::ProgramBuilder() : state_(std::make_unique<State>()) {
  const State::BlockState& root = state_->blocks.emplace_back();
  state_->capture_views.push_back({root.parent, &root.declared, &root.ops});
  state_->stack.push_back(0);
}

ProgramBuilder::~ProgramBuilder() = default;

int64_t ProgramBuilder::current_block() const noexcept { return state_->stack.back(); }

Var ProgramBuilder::declare(VarType type, VarType element, std::string name, int64_t capacity,
                            const std::vector<int64_t>& dims, bool persistable) {
  const int64_t b = current_block();
  auto& block = state_->blocks[static_cast<size_t>(b)];
  if (name.empty()) CHANFLOW_THROW(Error) << "ProgramBuilder: empty variable name";
  if (block.declared.count(name) != 0) {
    CHANFLOW_THROW(Error) << "ProgramBuilder: variable '" << name
                          << "' is already declared in block " << b;
  }
  VarDesc desc = type == VarType::kChannel ? VarDesc::channel(name, element, capacity)
                                           : VarDesc::tensor(name, element, dims, persistable);
  Var v;
  v.owner_ = this;
  v.name_ = name;
  v.type_ = type;
  v.element_ = element;
  v.block_ = b;
  block.vars.push_back(desc);
  block.declared.insert(name);
  block.by_name.emplace(name, v);
  state_->all_names.insert(std::move(name));
  return v;
}

Var ProgramBuilder::temp(const std::string& op_type, VarType element) {
  std::string name;
  do {
    name = op_type + "_" + std::to_string(state_->counters[op_type]++) + ".tmp_0";
  } while (state_->all_names.count(name) != 0);
  return declare(VarType::kLoDTensor, element, std::move(name), 0);
}

Var ProgramBuilder::var(std::string name, DType dtype, const std::vector<int64_t>& dims) {
  return declare(VarType::kLoDTensor, var_type_from_dtype(dtype), std::move(name), 0, dims);
}

Var ProgramBuilder::parameter(std::string name, DType dtype, const std::vector<int64_t>& dims) {
  return declare(VarType::kLoDTensor, var_type_from_dtype(dtype), std::move(name), 0, dims, true);
}

Var ProgramBuilder::make_channel(DType element, int64_t capacity, std::string name) {
  return make_channel(var_type_from_dtype(element), capacity, std::move(name));
}

Var ProgramBuilder::make_channel(VarType element, int64_t capacity, std::string name) {
  if (capacity < 0) CHANFLOW_THROW(Error) << "make_channel: negative capacity " << capacity;
  if (!is_element_type(element) && element != VarType::kLoDTensor && element != VarType::kChannel) {
    CHANFLOW_THROW(TypeError) << "make_channel: a channel cannot carry " << var_type_name(element);
  }
  if (name.empty()) {
    do {
      name = "channel_" + std::to_string(state_->counters["channel"]++);
    } while (state_->all_names.count(name) != 0);
  }
  Var ch = declare(VarType::kChannel, element, std::move(name), capacity);
  append_op("channel_create", {}, {{"Out", {ch.name()}}},
            {{"data_type", Attr::i(vt(element))}, {"capacity", Attr::i(capacity)}});
  return ch;
}

Var ProgramBuilder::declare_channel(std::string name, VarType element, int64_t capacity) {
  if (capacity < 0) CHANFLOW_THROW(Error) << "declare_channel: negative capacity " << capacity;
  if (!is_element_type(element) && element != VarType::kLoDTensor && element != VarType::kChannel) {
    CHANFLOW_THROW(TypeError) << "declare_channel: a channel cannot carry "
                              << var_type_name(element);
  }
  return declare(VarType::kChannel, element, std::move(name), capacity);
}

Var ProgramBuilder::lookup(const std::string& name) const {
  for (int64_t b = current_block(); b >= 0; b = state_->blocks[static_cast<size_t>(b)].parent) {
    const auto& block = state_->blocks[static_cast<size_t>(b)];
    auto it = block.by_name.find(name);
    if (it != block.by_name.end()) return it->second;
  }
  throw Error("ProgramBuilder: no variable '" + name + "' is visible in block " +
              std::to_string(current_block()));
}

void ProgramBuilder::check_var(const Var& v, const char* role) const {
  if (!v.valid()) CHANFLOW_THROW(Error) << "ProgramBuilder: " << role << " is not a variable";
  if (v.owner_ != this) {
    CHANFLOW_THROW(Error) << "ProgramBuilder: " << role << " '" << v.name()
                          << "' belongs to another builder";
  }
  for (int64_t b = current_block(); b >= 0; b = state_->blocks[static_cast<size_t>(b)].parent) {
    if (b == v.block_) return;
  }
  CHANFLOW_THROW(Error) << "ProgramBuilder: " << role << " '" << v.name()
                        << "' is declared in block " << v.block_
                        << ", which is not visible from block " << current_block();
}

void ProgramBuilder::append_op(const std::string& type, const OpDesc::Args& inputs,
                               const OpDesc::Args& outputs, const OpDesc::Attrs& attrs) {
  for (const auto* args : {&inputs, &outputs}) {
    for (const auto& [param, names] : *args) {
      for (const auto& n : names) (void)lookup(n);  // throws when not visible
    }
  }
  state_->blocks[static_cast<size_t>(current_block())].ops.push_back(
      OpDesc::make(type, inputs, outputs, attrs));
}

Var ProgramBuilder::unary_op(const std::string& type, const Var& x, VarType out_elem, Var out,
                             const OpDesc::Attrs& attrs) {
  check_var(x, "input X");
  if (x.is_channel()) CHANFLOW_THROW(TypeError) << type << ": X '" << x.name() << "' is a channel";
  if (out.valid()) {
    check_var(out, "output Out");
  } else {
    out = temp(type, out_elem);
  }
  append_op(type, {{"X", {x.name()}}}, {{"Out", {out.name()}}}, attrs);
  return out;
}

Var ProgramBuilder::binary_op(const std::string& type, const Var& x, const Var& y, VarType out_elem,
                              Var out, const OpDesc::Attrs& attrs) {
  check_var(x, "input X");
  check_var(y, "input Y");
  if (x.is_channel() || y.is_channel()) {
    CHANFLOW_THROW(TypeError) << type << ": inputs must be tensors";
  }
  if (out.valid()) {
    check_var(out, "output Out");
  } else {
    out = temp(type, out_elem);
  }
  append_op(type, {{"X", {x.name()}}, {"Y", {y.name()}}}, {{"Out", {out.name()}}}, attrs);
  return out;
}

namespace {
VarType promoted(const Var& x, const Var& y) {
  return var_type_from_dtype(promote_types(x.dtype(), y.dtype()));
}
VarType floated(const Var& x) { return var_type_from_dtype(float_result_type(x.dtype())); }
// What reduce_sum and reduce_mean compute (the executor checks results against declarations):
// floats keep their dtype; integer and bool sums are INT64 and means FP64 (NumPy's).
VarType summed(const Var& x) { return is_floating(x.dtype()) ? x.element() : VarType::kInt64; }
VarType averaged(const Var& x) { return is_floating(x.dtype()) ? x.element() : VarType::kFP64; }
}  // namespace

Var ProgramBuilder::fill_constant(const std::vector<int64_t>& shape, DType dtype, double value,
                                  Var out) {
  const VarType t = var_type_from_dtype(dtype);
  if (out.valid()) {
    check_var(out, "output Out");
  } else {
    out = temp("fill_constant", t);
  }
  append_op("fill_constant", {}, {{"Out", {out.name()}}},
            {{"shape", Attr::ints(shape)},
             {"dtype", Attr::i(vt(t))},
             {"value", Attr::f(value)},
             {"force_cpu", Attr::b(false)}});
  return out;
}

Var ProgramBuilder::assign(const Var& x, Var out) {
  check_var(x, "input X");
  if (out.valid()) {
    check_var(out, "output Out");
  } else if (x.is_channel()) {
    std::string name;
    do {
      name = "assign_" + std::to_string(state_->counters["assign"]++) + ".tmp_0";
    } while (state_->all_names.count(name) != 0);
    const auto& decl = state_->blocks[static_cast<size_t>(x.block_)];
    int64_t cap = 0;
    for (const VarDesc& d : decl.vars) {
      if (d->name == x.name()) cap = d->capacity;
    }
    out = declare(VarType::kChannel, x.element(), name, cap);
  } else {
    out = temp("assign", x.element());
  }
  append_op("assign", {{"X", {x.name()}}}, {{"Out", {out.name()}}});
  return out;
}

#define CHANFLOW_BINARY(name, elem)                                               \
  Var ProgramBuilder::name(const Var& x, const Var& y, Var out) {                 \
    check_var(x, "input X");                                                      \
    check_var(y, "input Y");                                                      \
    return binary_op(#name, x, y, elem, std::move(out), {{"axis", Attr::i(-1)}}); \
  }
CHANFLOW_BINARY(elementwise_add, promoted(x, y))
CHANFLOW_BINARY(elementwise_sub, promoted(x, y))
CHANFLOW_BINARY(elementwise_mul, promoted(x, y))
CHANFLOW_BINARY(elementwise_div, promoted(x, y))
CHANFLOW_BINARY(elementwise_max, promoted(x, y))
CHANFLOW_BINARY(elementwise_min, promoted(x, y))
CHANFLOW_BINARY(equal, VarType::kBool)
CHANFLOW_BINARY(not_equal, VarType::kBool)
CHANFLOW_BINARY(less_than, VarType::kBool)
CHANFLOW_BINARY(less_equal, VarType::kBool)
CHANFLOW_BINARY(greater_than, VarType::kBool)
CHANFLOW_BINARY(greater_equal, VarType::kBool)
#undef CHANFLOW_BINARY

Var ProgramBuilder::logical_and(const Var& x, const Var& y, Var out) {
  return binary_op("logical_and", x, y, VarType::kBool, std::move(out));
}
Var ProgramBuilder::logical_or(const Var& x, const Var& y, Var out) {
  return binary_op("logical_or", x, y, VarType::kBool, std::move(out));
}
Var ProgramBuilder::logical_not(const Var& x, Var out) {
  return unary_op("logical_not", x, VarType::kBool, std::move(out));
}
Var ProgramBuilder::increment(const Var& x, double step, Var out) {
  check_var(x, "input X");
  return unary_op("increment", x, x.element(), std::move(out), {{"step", Attr::f(step)}});
}
Var ProgramBuilder::scale(const Var& x, double s, double bias, Var out) {
  check_var(x, "input X");
  return unary_op(
      "scale", x, x.element(), std::move(out),
      {{"scale", Attr::f(s)}, {"bias", Attr::f(bias)}, {"bias_after_scale", Attr::b(true)}});
}
Var ProgramBuilder::cast(const Var& x, DType to, Var out) {
  check_var(x, "input X");
  return unary_op("cast", x, var_type_from_dtype(to), std::move(out),
                  {{"in_dtype", Attr::i(vt(x.element()))},
                   {"out_dtype", Attr::i(vt(var_type_from_dtype(to)))}});
}
Var ProgramBuilder::matmul(const Var& x, const Var& y, bool transpose_x, bool transpose_y,
                           Var out) {
  check_var(x, "input X");
  check_var(y, "input Y");
  return binary_op("matmul", x, y, promoted(x, y), std::move(out),
                   {{"transpose_X", Attr::b(transpose_x)},
                    {"transpose_Y", Attr::b(transpose_y)},
                    {"alpha", Attr::f(1.0)}});
}
Var ProgramBuilder::relu(const Var& x, Var out) {
  check_var(x, "input X");
  return unary_op("relu", x, x.element(), std::move(out));
}
Var ProgramBuilder::sigmoid(const Var& x, Var out) {
  check_var(x, "input X");
  return unary_op("sigmoid", x, floated(x), std::move(out));
}
Var ProgramBuilder::tanh(const Var& x, Var out) {
  check_var(x, "input X");
  return unary_op("tanh", x, floated(x), std::move(out));
}
Var ProgramBuilder::softmax(const Var& x, int64_t axis, Var out) {
  check_var(x, "input X");
  return unary_op("softmax", x, floated(x), std::move(out), {{"axis", Attr::i(axis)}});
}
Var ProgramBuilder::reduce_sum(const Var& x, const std::vector<int64_t>& dims, bool keep_dim,
                               Var out) {
  check_var(x, "input X");
  return unary_op("reduce_sum", x, summed(x), std::move(out),
                  {{"dim", Attr::ints(dims)},
                   {"keep_dim", Attr::b(keep_dim)},
                   {"reduce_all", Attr::b(dims.empty())}});
}
Var ProgramBuilder::reduce_mean(const Var& x, const std::vector<int64_t>& dims, bool keep_dim,
                                Var out) {
  check_var(x, "input X");
  return unary_op("reduce_mean", x, averaged(x), std::move(out),
                  {{"dim", Attr::ints(dims)},
                   {"keep_dim", Attr::b(keep_dim)},
                   {"reduce_all", Attr::b(dims.empty())}});
}
Var ProgramBuilder::reshape(const Var& x, const std::vector<int64_t>& shape, Var out) {
  check_var(x, "input X");
  return unary_op("reshape", x, x.element(), std::move(out), {{"shape", Attr::ints(shape)}});
}
Var ProgramBuilder::transpose(const Var& x, const std::vector<int64_t>& perm, Var out) {
  check_var(x, "input X");
  return unary_op("transpose", x, x.element(), std::move(out), {{"axis", Attr::ints(perm)}});
}
void ProgramBuilder::print(const Var& x, std::string message) {
  check_var(x, "input In");
  append_op("print", {{"In", {x.name()}}}, {},
            {{"message", Attr::s(std::move(message))},
             {"summarize", Attr::i(-1)},
             {"first_n", Attr::i(-1)}});
}

// ---- CSP ---------------------------------------------------------------------------------------

namespace {
void check_channel(const Var& ch, const char* op) {
  if (!ch.is_channel()) {
    CHANFLOW_THROW(TypeError) << op << ": '" << ch.name() << "' is not a channel";
  }
}
void check_payload(const Var& ch, const Var& v, const char* op) {
  const VarType e = ch.element();
  const bool ok = e == VarType::kChannel     ? v.is_channel()
                  : e == VarType::kLoDTensor ? !v.is_channel()
                                             : (!v.is_channel() && v.element() == e);
  if (!ok) {
    CHANFLOW_THROW(TypeError) << op << ": variable '" << v.name() << "' ("
                              << var_type_name(v.type()) << " " << var_type_name(v.element())
                              << ") does not match channel '" << ch.name() << "' of "
                              << var_type_name(e);
  }
}
}  // namespace

Var ProgramBuilder::channel_send(const Var& ch, const Var& x) {
  check_var(ch, "channel");
  check_var(x, "input X");
  check_channel(ch, "channel_send");
  check_payload(ch, x, "channel_send");
  Var status = temp("channel_send", VarType::kBool);
  append_op("channel_send", {{"Channel", {ch.name()}}, {"X", {x.name()}}},
            {{"Status", {status.name()}}}, {{"copy", Attr::b(false)}});
  return status;
}

std::pair<Var, Var> ProgramBuilder::channel_recv(const Var& ch, Var out) {
  check_var(ch, "channel");
  check_channel(ch, "channel_recv");
  if (out.valid()) {
    check_var(out, "output Out");
  } else if (ch.element() == VarType::kChannel) {
    std::string name;
    do {
      name = "channel_recv_" + std::to_string(state_->counters["channel_recv"]++) + ".tmp_0";
    } while (state_->all_names.count(name) != 0);
    out = declare(VarType::kChannel, VarType::kLoDTensor, name, 0);
  } else {
    out = temp("channel_recv", ch.element() == VarType::kLoDTensor ? VarType::kFP32 : ch.element());
  }
  check_payload(ch, out, "channel_recv");
  Var status = temp("channel_recv", VarType::kBool);
  append_op("channel_recv", {{"Channel", {ch.name()}}},
            {{"Out", {out.name()}}, {"Status", {status.name()}}});
  return {out, status};
}

void ProgramBuilder::channel_close(const Var& ch) {
  check_var(ch, "channel");
  check_channel(ch, "channel_close");
  append_op("channel_close", {{"Channel", {ch.name()}}}, {});
}

// ---- control flow ------------------------------------------------------------------------------

int64_t ProgramBuilder::open_block() {
  State::BlockState block;
  block.parent = current_block();
  state_->blocks.push_back(std::move(block));
  const State::BlockState& added = state_->blocks.back();
  state_->capture_views.push_back({added.parent, &added.declared, &added.ops});
  const int64_t idx = static_cast<int64_t>(state_->blocks.size()) - 1;
  state_->stack.push_back(idx);
  return idx;
}

BlockGuard ProgramBuilder::go() {
  const int64_t b = open_block();
  state_->guards.push_back({kGo, Var(), -1});
  return {this, b, kGo, static_cast<int64_t>(state_->guards.size()) - 1};
}

BlockGuard ProgramBuilder::while_loop(const Var& cond) {
  check_var(cond, "condition");
  if (cond.is_channel() || cond.element() != VarType::kBool) {
    CHANFLOW_THROW(TypeError) << "while_loop: condition '" << cond.name()
                              << "' must be a BOOL tensor";
  }
  const int64_t b = open_block();
  state_->guards.push_back({kWhile, cond, -1});
  return {this, b, kWhile, static_cast<int64_t>(state_->guards.size()) - 1};
}

BlockGuard ProgramBuilder::conditional_block(const Var& cond) {
  check_var(cond, "condition");
  if (cond.is_channel() || cond.element() != VarType::kBool) {
    CHANFLOW_THROW(TypeError) << "conditional_block: condition '" << cond.name()
                              << "' must be a BOOL tensor";
  }
  const int64_t b = open_block();
  state_->guards.push_back({kCond, cond, -1});
  return {this, b, kCond, static_cast<int64_t>(state_->guards.size()) - 1};
}

SelectGuard ProgramBuilder::select() {
  State::SelectRecord rec;
  rec.case_to_execute = fill_constant({1}, DType::kInt32, -1);
  rec.block = open_block();
  state_->selects.push_back(std::move(rec));
  state_->guards.push_back({kSelect, Var(), static_cast<int64_t>(state_->selects.size()) - 1});
  return {this, state_->selects.back().block, kSelect,
          static_cast<int64_t>(state_->guards.size()) - 1};
}

BlockGuard ProgramBuilder::add_case(SelectGuard& s, int kind, const Var& ch, Var v) {
  const int64_t sel = state_->guards[static_cast<size_t>(s.extra_)].select;
  State::SelectRecord& rec = state_->selects[static_cast<size_t>(sel)];
  if (current_block() != rec.block) {
    CHANFLOW_THROW(Error) << "select: a case must be added directly in its select (block "
                          << rec.block << "), not in block " << current_block();
  }
  const auto k = static_cast<SelectCaseKind>(kind);
  SelectCaseAttr sc;
  sc.index = static_cast<int64_t>(rec.cases.size());
  sc.kind = k;
  if (k == SelectCaseKind::kDefault) {
    if (rec.has_default) CHANFLOW_THROW(Error) << "select: a second default case";
    rec.has_default = true;
  } else {
    check_var(ch, "channel");
    check_channel(ch, k == SelectCaseKind::kSend ? "case_send" : "case_recv");
    if (k == SelectCaseKind::kRecv && !v.valid()) {
      // Declared in the block enclosing the select so the case body and later ops can read it.
      const int64_t saved = state_->stack.back();
      state_->stack.back() = state_->blocks[static_cast<size_t>(rec.block)].parent;
      try {
        v = temp("select_recv",
                 ch.element() == VarType::kLoDTensor ? VarType::kFP32 : ch.element());
      } catch (...) {
        state_->stack.back() = saved;
        throw;
      }
      state_->stack.back() = saved;
    }
    check_var(v, k == SelectCaseKind::kSend ? "sent value" : "receive target");
    check_payload(ch, v, k == SelectCaseKind::kSend ? "case_send" : "case_recv");
    sc.channel = ch.name();
    sc.var = v.name();
    rec.reads.push_back(ch.name());
    (k == SelectCaseKind::kSend ? rec.reads : rec.writes).push_back(v.name());
    if (k == SelectCaseKind::kRecv) s.last_received_ = v;
  }
  rec.cases.push_back(format_select_case(sc));
  // Fluid's encoding: the case body runs under conditional_block(equal(index, case_to_execute)).
  Var index = fill_constant({1}, DType::kInt32, static_cast<double>(sc.index));
  Var cond = equal(index, rec.case_to_execute);
  const int64_t b = open_block();
  state_->guards.push_back({kCase, cond, sel});
  return {this, b, kCase, static_cast<int64_t>(state_->guards.size()) - 1};
}

void ProgramBuilder::close_guard(BlockGuard& g) {
  if (state_->stack.size() <= 1 || state_->stack.back() != g.block_) {
    CHANFLOW_THROW(Error) << "ProgramBuilder: guards closed out of order (closing block "
                          << g.block_ << " while block " << current_block() << " is innermost)";
  }
  // Captures of the closing block's subtree. Blocks nest in creation order, so its descendants
  // are exactly the blocks created after it: the analysis scans only those.
  const State::GuardInfo info = state_->guards[static_cast<size_t>(g.extra_)];
  BlockCaptures cap = ir_detail::compute_captures(state_->capture_views, g.block_, g.block_,
                                                  /*with_read_first=*/info.kind == kGo);
  state_->stack.pop_back();
  const Attr sub_block = Attr::block(g.block_);
  OpDesc::Args inputs;
  OpDesc::Args outputs;
  switch (info.kind) {
    case kGo:
      // X are the block's arguments (bound when it starts, like `go f(x)`): what it reads before
      // writing. The rest of what it uses it shares with the enclosing blocks (a Go closure), so
      // a value it receives into an enclosing variable is there after the run.
      if (!cap.read_first.empty()) inputs.push_back({"X", cap.read_first});
      append_op("go", inputs, {}, {{"sub_block", sub_block}});
      break;
    case kWhile:
      if (!cap.reads.empty()) inputs.push_back({"X", cap.reads});
      inputs.push_back({"Condition", {info.cond.name()}});
      if (!cap.writes.empty()) outputs.push_back({"Out", cap.writes});
      append_op("while", inputs, outputs, {{"sub_block", sub_block}, {"is_test", Attr::b(false)}});
      break;
    case kCond:
    case kCase:
      inputs.push_back({"X", {info.cond.name()}});
      if (!cap.reads.empty()) inputs.push_back({"Params", cap.reads});
      if (!cap.writes.empty()) outputs.push_back({"Out", cap.writes});
      append_op("conditional_block", inputs, outputs,
                {{"sub_block", sub_block}, {"is_scalar_condition", Attr::b(true)}});
      break;
    case kSelect: {
      const State::SelectRecord& rec = state_->selects[static_cast<size_t>(info.select)];
      if (rec.cases.empty()) CHANFLOW_THROW(Error) << "select: closed without any case";
      std::vector<std::string> reads = cap.reads;
      std::vector<std::string> writes = cap.writes;
      auto merge = [](std::vector<std::string>& into, const std::vector<std::string>& more) {
        for (const auto& n : more) {
          if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
        }
      };
      merge(reads, rec.reads);
      merge(writes, rec.writes);
      if (!reads.empty()) inputs.push_back({"X", reads});
      inputs.push_back({"case_to_execute", {rec.case_to_execute.name()}});
      if (!writes.empty()) outputs.push_back({"Out", writes});
      append_op("select", inputs, outputs,
                {{"sub_block", sub_block}, {"cases", Attr::strings(rec.cases)}});
      break;
    }
    default:
      CHANFLOW_THROW(Error) << "ProgramBuilder: unknown guard";
  }
}

Program ProgramBuilder::build() const {
  if (!state_->deferred_error.empty()) {
    CHANFLOW_THROW(Error) << "ProgramBuilder: " << state_->deferred_error;
  }
  if (state_->stack.size() != 1) {
    CHANFLOW_THROW(Error) << "ProgramBuilder::build: block " << current_block()
                          << " is still open (close its guard first)";
  }
  Array<Block> blocks;
  for (size_t i = 0; i < state_->blocks.size(); ++i) {
    const auto& b = state_->blocks[i];
    blocks.push_back(Block::make(static_cast<int64_t>(i), b.parent,
                                 Array<VarDesc>(b.vars.begin(), b.vars.end()),
                                 Array<OpDesc>(b.ops.begin(), b.ops.end())));
  }
  return verify(Program::make(blocks));
}

}  // namespace chanflow
