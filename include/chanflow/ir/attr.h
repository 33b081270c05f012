// attr.h — Attr, one typed attribute value of an op (Fluid's OpDesc.Attr).
//
// An attribute pairs an AttrType with a boxed value: Int for INT, LONG and BLOCK (a block index),
// Float for FLOAT, String for STRING, Bool for BOOLEAN, and Array<Int|Float|String|Bool> for the
// list types. Attributes are immutable objects, so ops and programs can share them:
//
//   cf::Attr shape = cf::Attr::ints({1});
//   cf::Attr body = cf::Attr::block(1);
//   int64_t b = body.as_block();              // 1
//   body.as_float();                          // throws TypeError: attribute is BLOCK, not FLOAT
//
// FLOAT values are stored rounded to float32, the precision of the file format, so a program
// built in memory equals the same program saved and loaded again.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/export.h"
#include "chanflow/core/object.h"
#include "chanflow/core/reflection.h"
#include "chanflow/core/string.h"

namespace chanflow {

// Fluid's AttrType numbering (the file format).
enum class AttrType : int32_t {
  kInt = 0,
  kFloat = 1,
  kString = 2,
  kInts = 3,
  kFloats = 4,
  kStrings = 5,
  kBoolean = 6,
  kBooleans = 7,
  kBlock = 8,
  kLong = 9,
};

// Whether v is one of the AttrType numbers (0..9). Thread-safe.
constexpr bool is_valid_attr_type(int64_t v) noexcept { return v >= 0 && v <= 9; }
// The Fluid name of an attribute type ("INT", "BLOCK" ...). Thread-safe.
CHANFLOW_API std::string_view attr_type_name(AttrType t) noexcept;

// The data node of an attribute. `type` is an AttrType number; `value` holds the boxed value
// described above. Immutable once shared. Reflected (fields "type", "value") for JSON.
class CHANFLOW_API AttrObj : public Object {
 public:
  AttrObj() = default;
  AttrObj(int64_t attr_type, ObjectRef attr_value)
      : type(attr_type), value(std::move(attr_value)) {}

  int64_t type = 0;
  ObjectRef value;

  void visit_fields(FieldVisitor& v);
  static constexpr const char* kTypeKey = "ir.Attr";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(AttrObj, Object);
};

// A handle to an attribute value. Copies share it. Thread-safe for concurrent reads.
class CHANFLOW_API Attr : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Attr, ObjectRef, AttrObj);

  // Constructors, one per attribute type.
  static Attr i(int64_t v);  // INT (stored as int32 on disk: values outside int32 fail to save)
  static Attr f(double v);   // FLOAT (rounded to float32)
  static Attr s(std::string v);
  static Attr ints(const std::vector<int64_t>& v);
  static Attr floats(const std::vector<double>& v);
  static Attr strings(const std::vector<std::string>& v);
  static Attr b(bool v);
  static Attr bools(const std::vector<bool>& v);
  static Attr block(int64_t block_index);
  static Attr l(int64_t v);  // LONG

  AttrType type() const noexcept { return static_cast<AttrType>(get()->type); }

  // Typed access. Each throws TypeError naming both types when the attribute has another type
  // (as_int accepts INT and LONG).
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_string() const;
  std::vector<int64_t> as_ints() const;
  std::vector<double> as_floats() const;
  std::vector<std::string> as_strings() const;
  bool as_bool() const;
  std::vector<bool> as_bools() const;
  int64_t as_block() const;

  // Whether the boxed value matches the declared type (true for attributes made by the
  // constructors above; from_json input may break it). Thread-safe.
  bool well_formed() const noexcept;
  // Structural equality: same type and equal values.
  bool equals(const Attr& other) const noexcept;
  // A short rendering for messages: `INT 3`, `INTS [1, 2]`, `STRING "x"`.
  std::string to_string() const;
};

}  // namespace chanflow
