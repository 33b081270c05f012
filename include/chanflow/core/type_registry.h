// type_registry.h — the process-wide table of object types, for lookups and debugging.
//
// Types register themselves on first use (CHANFLOW_DECLARE_OBJECT_INFO); this header is for code
// that needs to go from a key to an index or back, walk the hierarchy, or print it:
//
//   std::optional<uint32_t> idx = cf::TypeRegistry::global().index_of("String");
//   std::cout << cf::TypeRegistry::global().dump();
//
// Index allocation: built-in types have static indices below TypeIndex::kStaticEnd. Other types get
// an index inside their parent's reserved child slots when one is free, otherwise (if the parent
// allows overflow) at the end of the table — unless some ancestor forbids overflow: then inside
// the free slots of the nearest such ancestor, or the registration throws Error naming the type,
// its parent and that ancestor. Every type reserves 1 + kTypeChildSlots consecutive indices, so
// is_instance<Base> is a range check for in-range descendants, and every descendant of a type
// that forbids overflow is in its range; overflowed ones are found through each type's ancestor
// table (depth + ancestors), which is O(1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chanflow/core/export.h"
#include "chanflow/core/object.h"

namespace chanflow {

// Immutable once published: readers never lock.
struct TypeInfo {
  uint32_t index;
  uint32_t parent_index;  // equals index for Object
  uint32_t depth;         // Object is 0
  uint32_t child_slots;   // reserved for descendants: [index + 1, index + child_slots]
  bool child_slots_can_overflow;
  bool final;
  std::string key;
  std::vector<uint32_t> ancestors;  // ancestors[d] is the index of the ancestor at depth d
  detail::TypeAncestry ancestry;    // depth + ancestors.data(), as is_instance reads them
};

class CHANFLOW_API TypeRegistry {
 public:
  // Largest number of type indices (static range + reserved slots + dynamic types).
  static constexpr uint32_t kMaxTypeIndex = detail::kMaxTypeIndex;

  // The process-wide registry. Never destroyed, so objects may outlive static destructors.
  static TypeRegistry& global();

  // Type information for an index, or nullptr if no type has it. Lock-free.
  const TypeInfo* find(uint32_t index) const noexcept;
  // The index registered for a key. Takes a shared lock.
  std::optional<uint32_t> index_of(std::string_view key) const;
  // Whether `child` is `ancestor` or one of its descendants. Lock-free, O(1).
  bool is_descendant(uint32_t child, uint32_t ancestor) const noexcept;
  // Number of registered types.
  size_t size() const;
  // One line per type, indented by depth: "index key (slots used/reserved)".
  std::string dump() const;

  TypeRegistry(const TypeRegistry&) = delete;
  TypeRegistry& operator=(const TypeRegistry&) = delete;

 private:
  friend uint32_t detail::register_type(const detail::TypeSpec& spec);
  TypeRegistry();
  ~TypeRegistry() = default;
  uint32_t register_type(const detail::TypeSpec& spec);

  struct State;
  State* state_;
};

}  // namespace chanflow
