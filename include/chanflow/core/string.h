// string.h — String, an immutable, shared string object.
//
// Strings are Objects so they can sit in Array / Map next to tensors and IR nodes. Equality, order
// and hashing are by content (embedded NUL bytes included), not by identity:
//
//   cf::String s = "go";
//   cf::Map<cf::String, cf::Int> m;  m.set("go", cf::Int(1));   // found by content
//   s == "go" && s == std::string("go") && s.size() == 2;
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "chanflow/core/object.h"

namespace chanflow {

class StringObj : public Object {
 public:
  explicit StringObj(std::string value) : data(std::move(value)) {}
  const std::string data;

  static constexpr const char* kTypeKey = "String";
  static constexpr uint32_t kTypeIndex = TypeIndex::kString;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(StringObj, Object);
};

class String : public ObjectRef {
 public:
  using ContainerType = StringObj;

  // The empty string.
  String() : String(std::string()) {}
  String(std::string value)  // NOLINT(google-explicit-constructor)
      : ObjectRef(make_object<StringObj>(std::move(value))) {}
  String(std::string_view value) : String(std::string(value)) {}  // NOLINT
  String(const char* value) : String(std::string(value)) {}       // NOLINT
  explicit String(ObjectPtr<Object> data) noexcept : ObjectRef(std::move(data)) {}

  const StringObj* operator->() const noexcept { return static_cast<const StringObj*>(get()); }
  const std::string& str() const noexcept { return operator->()->data; }
  std::string_view view() const noexcept { return str(); }
  const char* c_str() const noexcept { return str().c_str(); }
  size_t size() const noexcept { return str().size(); }
  bool empty() const noexcept { return str().empty(); }
  operator std::string_view() const noexcept { return view(); }  // NOLINT

  friend bool operator==(const String& a, const String& b) noexcept {
    return a.same_as(b) || a.view() == b.view();
  }
  friend bool operator==(const String& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const String& a, const std::string& b) noexcept { return a.view() == b; }
  friend bool operator==(const String& a, const char* b) noexcept { return a.view() == b; }
  friend std::strong_ordering operator<=>(const String& a, const String& b) noexcept {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const String& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::ostream& operator<<(std::ostream& os, const String& s) { return os << s.view(); }
};

}  // namespace chanflow

template <>
struct std::hash<chanflow::String> {
  size_t operator()(const chanflow::String& s) const noexcept {
    return std::hash<std::string_view>()(s.view());
  }
};
