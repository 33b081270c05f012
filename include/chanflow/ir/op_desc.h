// op_desc.h — OpDesc, one operator of a block (Fluid's OpDesc).
//
// An op has a type (a registered op name such as "fill_constant", "go", "select"), named input
// and output parameters each bound to a list of variable names (Fluid's `inputs { parameter:
// "X" arguments: "a" arguments: "b" }`), and named attributes. Parameter and attribute maps keep
// their insertion order, which is the order of the file.
//
//   cf::OpDesc op = cf::OpDesc::make("elementwise_add", {{"X", {"a"}}, {"Y", {"b"}}},
//                                    {{"Out", {"c"}}}, {{"axis", cf::Attr::i(-1)}});
//   op.input("X");                 // {"a"}
//   op.attr("axis")->as_int();     // -1
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/export.h"
#include "chanflow/core/map.h"
#include "chanflow/core/object.h"
#include "chanflow/core/reflection.h"
#include "chanflow/core/string.h"
#include "chanflow/ir/attr.h"

namespace chanflow {

// Parameter name -> variable names, in file order.
using ArgumentMap = Map<String, Array<String>>;
// Attribute name -> value, in file order.
using AttrMap = Map<String, Attr>;

// The data node; immutable once shared.
class CHANFLOW_API OpDescObj : public Object {
 public:
  std::string type;
  ArgumentMap inputs;
  ArgumentMap outputs;
  AttrMap attrs;
  bool is_target = false;

  void visit_fields(FieldVisitor& v);
  static constexpr const char* kTypeKey = "ir.OpDesc";
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(OpDescObj, Object);
};

// A handle to an op. Thread-safe for concurrent reads.
class CHANFLOW_API OpDesc : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(OpDesc, ObjectRef, OpDescObj);

  using Args = std::vector<std::pair<std::string, std::vector<std::string>>>;
  using Attrs = std::vector<std::pair<std::string, Attr>>;
  // Makes an op from ordered parameter lists and attributes.
  static OpDesc make(std::string type, const Args& inputs, const Args& outputs,
                     const Attrs& attrs = {});
  // Makes an op from its containers (shared, not copied).
  static OpDesc from_maps(std::string type, ArgumentMap inputs, ArgumentMap outputs, AttrMap attrs,
                          bool is_target = false);

  const std::string& type() const noexcept { return get()->type; }
  // The variable names bound to an input/output parameter; empty when the parameter is absent.
  std::vector<std::string> input(std::string_view parameter) const;
  std::vector<std::string> output(std::string_view parameter) const;
  // The attribute named `name`, or nullopt.
  std::optional<Attr> attr(std::string_view name) const;
  // A copy of this op with attribute `name` set to `value` (appended when new).
  OpDesc with_attr(std::string_view name, Attr value) const;

  // Structural equality (type, parameters in order, attributes by name and value).
  bool equals(const OpDesc& other) const noexcept;
};

}  // namespace chanflow
