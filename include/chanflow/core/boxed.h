// boxed.h — Int, Float and Bool: scalars as objects, so containers can hold them.
//
//   cf::Array<cf::Int> xs{cf::Int(1), cf::Int(2)};   int64_t v = xs[1].value();
//
// Boxed values are immutable; equality and hashing in Map are by value.
#pragma once

#include <cstdint>
#include <ostream>

#include "chanflow/core/object.h"

namespace chanflow {

class IntObj : public Object {
 public:
  explicit IntObj(int64_t v) : value(v) {}
  const int64_t value;
  static constexpr const char* kTypeKey = "Int";
  static constexpr uint32_t kTypeIndex = TypeIndex::kInt;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(IntObj, Object);
};

class FloatObj : public Object {
 public:
  explicit FloatObj(double v) : value(v) {}
  const double value;
  static constexpr const char* kTypeKey = "Float";
  static constexpr uint32_t kTypeIndex = TypeIndex::kFloat;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(FloatObj, Object);
};

class BoolObj : public Object {
 public:
  explicit BoolObj(bool v) : value(v) {}
  const bool value;
  static constexpr const char* kTypeKey = "Bool";
  static constexpr uint32_t kTypeIndex = TypeIndex::kBool;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(BoolObj, Object);
};

// A boxed int64.
class Int : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Int, ObjectRef, IntObj);
  explicit Int(int64_t v) : ObjectRef(make_object<IntObj>(v)) {}
  int64_t value() const noexcept { return get()->value; }
  friend bool operator==(const Int& a, const Int& b) noexcept { return a.value() == b.value(); }
  friend std::ostream& operator<<(std::ostream& os, const Int& v) { return os << v.value(); }
};

// A boxed double.
class Float : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Float, ObjectRef, FloatObj);
  explicit Float(double v) : ObjectRef(make_object<FloatObj>(v)) {}
  double value() const noexcept { return get()->value; }
  friend bool operator==(const Float& a, const Float& b) noexcept { return a.value() == b.value(); }
  friend std::ostream& operator<<(std::ostream& os, const Float& v) { return os << v.value(); }
};

// A boxed bool.
class Bool : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Bool, ObjectRef, BoolObj);
  explicit Bool(bool v) : ObjectRef(make_object<BoolObj>(v)) {}
  bool value() const noexcept { return get()->value; }
  friend bool operator==(const Bool& a, const Bool& b) noexcept { return a.value() == b.value(); }
  friend std::ostream& operator<<(std::ostream& os, const Bool& v) { return os << v.value(); }
};

}  // namespace chanflow
