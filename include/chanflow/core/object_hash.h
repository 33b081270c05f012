// object_hash.h — the hashing and equality Map uses for keys.
//
// Strings compare and hash by content, boxed scalars (Int, Float, Bool) by value, every other
// object by identity. A null handle equals only a null handle.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <string_view>

#include "chanflow/core/boxed.h"
#include "chanflow/core/object.h"
#include "chanflow/core/string.h"

namespace chanflow::detail {

// splitmix64's finaliser: spreads every input bit over the output.
constexpr uint64_t mix_hash(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Integers hash to themselves: Map spreads them with Fibonacci hashing when it places them.
inline uint64_t hash_int(int64_t v) noexcept { return static_cast<uint64_t>(v); }
inline uint64_t hash_string(std::string_view s) noexcept {
  return mix_hash(std::hash<std::string_view>()(s));
}
inline uint64_t hash_float(double v) noexcept {
  return mix_hash(std::bit_cast<uint64_t>(v == 0.0 ? 0.0 : v) ^ 0x9e3779b97f4a7c15ULL);
}

inline uint64_t object_hash(const ObjectRef& ref) noexcept {
  const Object* obj = ref.get();
  if (obj == nullptr) return 0;
  switch (obj->type_index()) {
    case TypeIndex::kString:
      return hash_string(static_cast<const StringObj*>(obj)->data);
    case TypeIndex::kInt:
      return hash_int(static_cast<const IntObj*>(obj)->value);
    case TypeIndex::kFloat:
      return hash_float(static_cast<const FloatObj*>(obj)->value);
    case TypeIndex::kBool:
      return hash_int(static_cast<const BoolObj*>(obj)->value ? 1 : 0) ^ 0xb001;
    default:
      return mix_hash(reinterpret_cast<uintptr_t>(obj));
  }
}

inline bool object_equal(const ObjectRef& a, const ObjectRef& b) noexcept {
  const Object* x = a.get();
  const Object* y = b.get();
  if (x == y) return true;
  if (x == nullptr || y == nullptr || x->type_index() != y->type_index()) return false;
  switch (x->type_index()) {
    case TypeIndex::kString:
      return static_cast<const StringObj*>(x)->data == static_cast<const StringObj*>(y)->data;
    case TypeIndex::kInt:
      return static_cast<const IntObj*>(x)->value == static_cast<const IntObj*>(y)->value;
    case TypeIndex::kFloat:
      return static_cast<const FloatObj*>(x)->value == static_cast<const FloatObj*>(y)->value;
    case TypeIndex::kBool:
      return static_cast<const BoolObj*>(x)->value == static_cast<const BoolObj*>(y)->value;
    default:
      return false;
  }
}

}  // namespace chanflow::detail
