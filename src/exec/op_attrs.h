// op_attrs.h — typed attributes of prepared ops (private to the exec layer).
//
// Each kernel declares a struct of the attributes it reads, with a table binding each field to
// the schema attribute it comes from:
//
//   struct MatmulAttrs {
//     bool transpose_x = false, transpose_y = false;
//     double alpha = 1;
//     static constexpr auto kFields =
//         std::tuple{field("transpose_X", &MatmulAttrs::transpose_x),
//                    field("transpose_Y", &MatmulAttrs::transpose_y),
//                    field("alpha", &MatmulAttrs::alpha)};
//   };
//
// Preparing an op reads every field once, with its C++ type, from the OpDesc or else the schema's
// default (read_attrs); a struct with a `static void finish(A&)` then derives what the kernel
// needs from the raw values. OpAttrs holds the struct inline in the PreparedOp: a kernel reads
// `a.alpha` with no lookup, allocation or conversion per run. Registering a kernel checks every
// field against the op's schema (check_fields): a kernel can only read an attribute its schema
// declares, with the schema's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/ir/op_desc.h"
#include "chanflow/ir/op_schema.h"
#include "chanflow/ir/var_type.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow::exec_detail {

// One attribute field: the schema attribute `name` read into `member` of A.
template <class A, class T>
struct AttrField {
  const char* name;
  T A::*member;
};
template <class A, class T>
constexpr AttrField<A, T> field(const char* name, T A::*member) {
  return {name, member};
}

// An op whose kernel reads no attributes.
struct NoAttrs {
  static constexpr auto kFields = std::tuple{};
};

// The C++ types a field may have, and the schema attribute types each reads. A DType field reads
// an INT holding a tensor element VarType number (Fluid's `dtype: 5`).
template <class T>
struct FieldType;
template <>
struct FieldType<bool> {
  static bool accepts(AttrType t) { return t == AttrType::kBoolean; }
  static bool read(const Attr& a) { return a.as_bool(); }
  static constexpr const char* kName = "BOOLEAN";
};
template <>
struct FieldType<int64_t> {
  static bool accepts(AttrType t) { return t == AttrType::kInt || t == AttrType::kLong; }
  static int64_t read(const Attr& a) { return a.as_int(); }
  static constexpr const char* kName = "INT or LONG";
};
template <>
struct FieldType<double> {
  static bool accepts(AttrType t) { return t == AttrType::kFloat; }
  static double read(const Attr& a) { return a.as_float(); }
  static constexpr const char* kName = "FLOAT";
};
template <>
struct FieldType<std::string> {
  static bool accepts(AttrType t) { return t == AttrType::kString; }
  static std::string read(const Attr& a) { return a.as_string(); }
  static constexpr const char* kName = "STRING";
};
template <>
struct FieldType<std::vector<int64_t>> {
  static bool accepts(AttrType t) { return t == AttrType::kInts; }
  static std::vector<int64_t> read(const Attr& a) { return a.as_ints(); }
  static constexpr const char* kName = "INTS";
};
template <>
struct FieldType<std::vector<std::string>> {
  static bool accepts(AttrType t) { return t == AttrType::kStrings; }
  static std::vector<std::string> read(const Attr& a) { return a.as_strings(); }
  static constexpr const char* kName = "STRINGS";
};
template <>
struct FieldType<DType> {
  static bool accepts(AttrType t) { return t == AttrType::kInt; }
  static DType read(const Attr& a) {
    const int64_t v = a.as_int();
    if (!is_valid_var_type(v)) CHANFLOW_THROW(TypeError) << "not a VarType number: " << v;
    return dtype_from_var_type(static_cast<VarType>(v));
  }
  static constexpr const char* kName = "INT (an element VarType)";
};

// The value of attribute `name` of `desc`: its own, else the schema's default. Throws Error
// naming the attribute when neither has one.
Attr attr_or_default(const OpDesc& desc, const OpSchema* schema, std::string_view name);

// Reads A's fields from `desc` (schema defaults for the ones it omits), then A::finish. Throws
// TypeError naming the attribute and both types when a value has a type the field cannot read,
// and whatever finish throws (Error with a message; callers add the op's position).
template <class A>
A read_attrs(const OpDesc& desc, const OpSchema* schema) {
  A a{};
  std::apply(
      [&](const auto&... f) {
        (
            [&] {
              using T = std::remove_cvref_t<decltype(a.*(f.member))>;
              const Attr v = attr_or_default(desc, schema, f.name);
              if (!FieldType<T>::accepts(v.type())) {
                CHANFLOW_THROW(TypeError)
                    << "attribute '" << f.name << "' is " << attr_type_name(v.type())
                    << ", the kernel reads " << FieldType<T>::kName;
              }
              a.*(f.member) = FieldType<T>::read(v);
            }(),
            ...);
      },
      A::kFields);
  if constexpr (requires(A & x) { A::finish(x); }) A::finish(a);
  return a;
}

// Throws Error naming the op and the attribute when one of A's fields is not an attribute of
// `schema`, or is one of a type the field cannot read.
template <class A>
void check_fields(const OpSchema& schema) {
  std::apply(
      [&](const auto&... f) {
        (
            [&] {
              using T = std::remove_cvref_t<decltype(std::declval<A&>().*(f.member))>;
              const AttrSpec* spec = schema.attr(f.name);
              if (spec == nullptr) {
                CHANFLOW_THROW(Error)
                    << "exec kernel of op '" << schema.type() << "' reads attribute '" << f.name
                    << "', which its schema does not declare";
              }
              if (!FieldType<T>::accepts(spec->type)) {
                CHANFLOW_THROW(Error)
                    << "exec kernel of op '" << schema.type() << "' reads attribute '" << f.name
                    << "' as " << FieldType<T>::kName << ", its schema declares "
                    << attr_type_name(spec->type);
              }
            }(),
            ...);
      },
      A::kFields);
}

// A PreparedOp's attributes: one attribute struct held inline (no allocation per op or per run).
// The kernel row that prepares an op also runs it, so the struct a kernel reads is the one its
// prepare function stored; debug builds check it. Movable (ops live in a vector), not copyable.
class OpAttrs {
 public:
  static constexpr std::size_t kCapacity = 128;

  OpAttrs() = default;
  OpAttrs(const OpAttrs&) = delete;
  OpAttrs& operator=(const OpAttrs&) = delete;
  OpAttrs(OpAttrs&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) ops_->move(buf_, o.buf_);
    o.ops_ = nullptr;
  }
  OpAttrs& operator=(OpAttrs&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_ != nullptr) ops_->move(buf_, o.buf_);
      o.ops_ = nullptr;
    }
    return *this;
  }
  ~OpAttrs() { reset(); }

  // Stores `a` (replacing what was stored).
  template <class A>
  void set(A a) {
    static_assert(sizeof(A) <= kCapacity && alignof(A) <= alignof(std::max_align_t),
                  "an attribute struct must fit OpAttrs (raise kCapacity)");
    static_assert(std::is_nothrow_move_constructible_v<A>);
    reset();
    ::new (static_cast<void*>(buf_)) A(std::move(a));
    ops_ = &kOps<A>;
  }
  // The stored struct; it must be an A.
  template <class A>
  const A& get() const noexcept {
    CHANFLOW_DCHECK(ops_ == &kOps<A>);
    return *std::launder(reinterpret_cast<const A*>(buf_));
  }
  template <class A>
  bool holds() const noexcept {
    return ops_ == &kOps<A>;
  }

 private:
  struct Ops {
    void (*move)(void* to, void* from) noexcept;  // move-constructs into `to`, destroys `from`
    void (*destroy)(void* p) noexcept;
  };
  template <class A>
  static constexpr Ops kOps = {[](void* to, void* from) noexcept {
                                 A* src = std::launder(static_cast<A*>(from));
                                 ::new (to) A(std::move(*src));
                                 src->~A();
                               },
                               [](void* p) noexcept { std::launder(static_cast<A*>(p))->~A(); }};

  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(buf_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kCapacity];
  const Ops* ops_ = nullptr;
};

}  // namespace chanflow::exec_detail
