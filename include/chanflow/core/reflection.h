// reflection.h — declare an object type's fields once; get JSON save/load (and more) from that.
//
//   class PointObj : public cf::Object {
//    public:
//     int64_t x = 0;
//     std::string label;
//     cf::ObjectRef next;                       // any handle type: String, Array<T>, your refs ...
//     void visit_fields(cf::FieldVisitor& v) { v("x", &x); v("label", &label); v("next", &next); }
//     static constexpr const char* kTypeKey = "example.Point";
//     CHANFLOW_DECLARE_FINAL_OBJECT_INFO(PointObj, cf::Object);
//   };
//   CHANFLOW_REGISTER_REFLECTION(PointObj);     // at namespace scope in one .cc file
//
// Field kinds: int64_t, double, bool, std::string and any ObjectRef type. A reflected type must be
// default-constructible (from_json creates it empty, then fills its fields).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "chanflow/core/array.h"
#include "chanflow/core/map.h"
#include "chanflow/core/object.h"

namespace chanflow {

// What a handle field accepts: used to reject ill-typed input when loading.
struct RefFieldType {
  bool (*accepts)(const ObjectRef& value);  // true for null and for values of the field's type
  std::string (*name)();
};

namespace detail {
template <class TRef>
struct RefTypeTraits {
  static bool accepts(const ObjectRef& v) {
    return !v.defined() || v->template is_instance<typename TRef::ContainerType>();
  }
  static std::string name() {
    return std::string(type_key_of(TRef::ContainerType::runtime_type_index()));
  }
};
template <>
struct RefTypeTraits<ObjectRef> {
  static bool accepts(const ObjectRef& /*v*/) { return true; }
  static std::string name() { return "Object"; }
};
template <class T>
struct RefTypeTraits<Array<T>> {
  static bool accepts(const ObjectRef& v) {
    if (!v.defined()) return true;
    const auto* a = v.as<ArrayObj>();
    if (a == nullptr) return false;
    for (const ObjectRef& e : a->data) {
      if (!RefTypeTraits<T>::accepts(e)) return false;
    }
    return true;
  }
  static std::string name() { return "Array<" + RefTypeTraits<T>::name() + ">"; }
};
template <class K, class V>
struct RefTypeTraits<Map<K, V>> {
  static bool accepts(const ObjectRef& v) {
    if (!v.defined()) return true;
    const auto* m = v.as<MapObj>();
    if (m == nullptr) return false;
    for (const auto& e : m->entries) {
      if (!RefTypeTraits<K>::accepts(e.key) || !RefTypeTraits<V>::accepts(e.value)) return false;
    }
    return true;
  }
  static std::string name() {
    return "Map<" + RefTypeTraits<K>::name() + ", " + RefTypeTraits<V>::name() + ">";
  }
};
}  // namespace detail

// Visits the fields of one object. Savers read through the pointers; loaders write through them.
class CHANFLOW_API FieldVisitor {
 public:
  virtual ~FieldVisitor() = default;
  virtual void visit(std::string_view name, int64_t* value) = 0;
  virtual void visit(std::string_view name, double* value) = 0;
  virtual void visit(std::string_view name, bool* value) = 0;
  virtual void visit(std::string_view name, std::string* value) = 0;
  virtual void visit(std::string_view name, ObjectRef* value, const RefFieldType& type) = 0;

  void operator()(std::string_view name, int64_t* value) { visit(name, value); }
  void operator()(std::string_view name, double* value) { visit(name, value); }
  void operator()(std::string_view name, bool* value) { visit(name, value); }
  void operator()(std::string_view name, std::string* value) { visit(name, value); }
  template <class TRef>
  requires std::is_base_of_v<ObjectRef, TRef>
  void operator()(std::string_view name, TRef* value) {
    static const RefFieldType type{&detail::RefTypeTraits<TRef>::accepts,
                                   &detail::RefTypeTraits<TRef>::name};
    visit(name, static_cast<ObjectRef*>(value), type);
  }
};

// What the registry knows about a reflected type.
struct ReflectionInfo {
  ObjectRef (*create)();  // a default-constructed instance
  void (*visit_fields)(Object* self, FieldVisitor& visitor);
};

// Registers T's fields (idempotent). Returns T's type index.
CHANFLOW_API void register_reflection(uint32_t type_index, ReflectionInfo info);
// Reflection of a type, or nullopt if the type declared none.
CHANFLOW_API std::optional<ReflectionInfo> find_reflection(uint32_t type_index);

template <class T>
uint32_t register_reflection() {
  static_assert(std::is_default_constructible_v<T>,
                "reflected types must be default-constructible");
  const uint32_t index = T::runtime_type_index();
  register_reflection(
      index, ReflectionInfo{
                 [] { return ObjectRef(make_object<T>()); },
                 [](Object* self, FieldVisitor& v) { static_cast<T*>(self)->visit_fields(v); },
             });
  return index;
}

}  // namespace chanflow

#define CHANFLOW_REFLECTION_CONCAT_INNER(a, b) a##b
#define CHANFLOW_REFLECTION_CONCAT(a, b) CHANFLOW_REFLECTION_CONCAT_INNER(a, b)
// Registers a type's reflection at program start. Use at namespace scope in a .cc file that the
// program links for other reasons too (static libraries drop unreferenced object files), or call
// chanflow::register_reflection<T>() yourself before loading.
#define CHANFLOW_REGISTER_REFLECTION(TypeName)                       \
  [[maybe_unused]] static const uint32_t CHANFLOW_REFLECTION_CONCAT( \
      chanflow_reflection_reg_, __COUNTER__) = ::chanflow::register_reflection<TypeName>()
