// map.h — Map<K, V>, a shared, copy-on-write hash map of object handles.
//
//   cf::Map<cf::String, cf::Int> m;
//   m.set("x", cf::Int(1));
//   std::optional<cf::Int> v = m.get("x");     // lookup by content, no String allocated
//   for (auto [k, v] : m) { ... }               // iteration order: see below
//
// Keys: String by content, Int/Float/Bool by value, other objects by identity (object_hash.h).
// Layout: up to kSmallMax entries the map is a plain array scanned linearly (hash compared first);
// beyond that an open-addressing index (linear probing, load <= 1/2) points into the entry array.
// Iteration order is insertion order, except that erase moves the last entry into the erased
// entry's position.
// Thread-safety: as Array (copy on write; one handle must not be written while used elsewhere).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/error.h"
#include "chanflow/core/object.h"
#include "chanflow/core/object_hash.h"

namespace chanflow {

class CHANFLOW_API MapObj : public Object {
 public:
  struct Entry {
    ObjectRef key;
    ObjectRef value;
    uint64_t hash;
  };
  static constexpr size_t kSmallMax = 8;
  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  MapObj() = default;
  MapObj(const MapObj& other) : Object(), entries(other.entries), slots(other.slots) {}

  std::vector<Entry> entries;   // insertion order
  std::vector<uint32_t> slots;  // empty while small; else power-of-two table of entry index + 1

  // Index of the entry whose hash is `hash` and for which match(key) holds, or kNotFound.
  template <class Match>
  size_t find(uint64_t hash, Match&& match) const noexcept {
    if (slots.empty()) {
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].hash == hash && match(entries[i].key)) return i;
      }
      return kNotFound;
    }
    const size_t mask = slots.size() - 1;
    for (size_t s = home_slot(hash);; s = (s + 1) & mask) {
      const uint32_t slot = slots[s];
      if (slot == 0) return kNotFound;
      const Entry& e = entries[slot - 1];
      if (e.hash == hash && match(e.key)) return slot - 1;
    }
  }
  // Appends a key known to be absent.
  void insert_new(ObjectRef key, ObjectRef value, uint64_t hash);
  // Removes entry i; the last entry moves into its place.
  void erase_at(size_t i);
  void clear() noexcept {
    entries.clear();
    slots.clear();
  }
  // Fibonacci hashing: multiply by 2^64/phi and keep the top bits, so keys whose hashes differ
  // only in high bits (or are plain integers) still spread; no modulo.
  size_t home_slot(uint64_t hash) const noexcept {
    return static_cast<size_t>((hash * 0x9e3779b97f4a7c15ULL) >>
                               (std::countl_zero(slots.size()) + 1));
  }

  static constexpr const char* kTypeKey = "Map";
  static constexpr uint32_t kTypeIndex = TypeIndex::kMap;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(MapObj, Object);

 private:
  void rebuild_index(size_t capacity);
  size_t slot_of(size_t entry_index) const noexcept;
};

template <class K = ObjectRef, class V = ObjectRef>
class Map : public ObjectRef {
  static_assert(std::is_base_of_v<ObjectRef, K> && std::is_base_of_v<ObjectRef, V>,
                "Map<K, V>: K and V must be ObjectRef types");

 public:
  using ContainerType = MapObj;

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::pair<K, V>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = value_type;
    const_iterator() = default;
    explicit const_iterator(std::vector<MapObj::Entry>::const_iterator it) : it_(it) {}
    value_type operator*() const {
      return {detail::element_cast<K>(it_->key), detail::element_cast<V>(it_->value)};
    }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) {
      auto t = *this;
      ++it_;
      return t;
    }
    friend bool operator==(const const_iterator&, const const_iterator&) = default;

   private:
    std::vector<MapObj::Entry>::const_iterator it_;
  };
  using iterator = const_iterator;

  // An empty map (allocates its node).
  Map() : ObjectRef(make_object<MapObj>()) {}
  Map(std::initializer_list<std::pair<K, V>> items) : Map() {
    for (const auto& [k, v] : items) set(k, v);
  }
  explicit Map(ObjectPtr<Object> data) noexcept : ObjectRef(std::move(data)) {}

  const MapObj* operator->() const noexcept { return static_cast<const MapObj*>(data_.get()); }
  using ObjectRef::get;  // the node pointer; get(key) below looks a key up

  size_t size() const noexcept { return node().entries.size(); }
  bool empty() const noexcept { return size() == 0; }
  const_iterator begin() const noexcept { return const_iterator(node().entries.begin()); }
  const_iterator end() const noexcept { return const_iterator(node().entries.end()); }

  bool contains(const K& key) const noexcept { return index_of(key) != MapObj::kNotFound; }
  size_t count(const K& key) const noexcept { return contains(key) ? 1 : 0; }
  // The value for key, or nullopt.
  std::optional<V> get(const K& key) const { return value_at(index_of(key)); }
  // Lookup by raw content without allocating a key object (Map<String, V> and Map<Int, V>).
  std::optional<V> get(std::string_view key) const requires std::is_same_v<K, String> {
    return value_at(node().find(detail::hash_string(key), [&](const ObjectRef& k) {
      return static_cast<const StringObj*>(k.get())->data == key;
    }));
  }
  std::optional<V> get(const char* key) const requires std::is_same_v<K, String> {
    return get(std::string_view(key));
  }
  std::optional<V> get(int64_t key) const requires std::is_same_v<K, Int> {
    return value_at(node().find(detail::hash_int(key), [&](const ObjectRef& k) {
      return static_cast<const IntObj*>(k.get())->value == key;
    }));
  }
  // The value object for key without copying its handle (no reference-count traffic), or
  // nullptr when absent. Valid while this map (or a copy sharing its node) holds the entry.
  using ValueObject = typename V::ContainerType;
  const ValueObject* find(const K& key) const noexcept { return object_at(index_of(key)); }
  const ValueObject* find(std::string_view key) const noexcept requires std::is_same_v<K, String> {
    return object_at(node().find(detail::hash_string(key), [&](const ObjectRef& k) {
      return static_cast<const StringObj*>(k.get())->data == key;
    }));
  }
  const ValueObject* find(const char* key) const noexcept requires std::is_same_v<K, String> {
    return find(std::string_view(key));
  }
  const ValueObject* find(int64_t key) const noexcept requires std::is_same_v<K, Int> {
    return object_at(node().find(detail::hash_int(key), [&](const ObjectRef& k) {
      return static_cast<const IntObj*>(k.get())->value == key;
    }));
  }

  // The value for key; throws Error when absent.
  V at(const K& key) const {
    const size_t i = index_of(key);
    if (i == MapObj::kNotFound) CHANFLOW_THROW(Error) << "Map: key not found";
    return detail::element_cast<V>(node().entries[i].value);
  }

  // Inserts or replaces. Copies the node first when it is shared.
  void set(K key, V value) {
    const uint64_t h = detail::object_hash(key);
    MapObj& m = cow();
    const size_t i = m.find(h, [&](const ObjectRef& k) { return detail::object_equal(k, key); });
    if (i != MapObj::kNotFound) {
      m.entries[i].value = std::move(value);
    } else {
      m.insert_new(std::move(key), std::move(value), h);
    }
  }
  // Removes key; returns whether it was present.
  bool erase(const K& key) {
    const size_t i = index_of(key);
    if (i == MapObj::kNotFound) return false;
    cow().erase_at(i);
    return true;
  }
  void clear() { cow().clear(); }

 private:
  const MapObj& node() const noexcept { return *operator->(); }
  size_t index_of(const K& key) const noexcept {
    return node().find(detail::object_hash(key),
                       [&](const ObjectRef& k) { return detail::object_equal(k, key); });
  }
  const ValueObject* object_at(size_t i) const noexcept {
    if (i == MapObj::kNotFound) return nullptr;
    return static_cast<const ValueObject*>(node().entries[i].value.get());
  }
  std::optional<V> value_at(size_t i) const {
    if (i == MapObj::kNotFound) return std::nullopt;
    return detail::element_cast<V>(node().entries[i].value);
  }
  MapObj& cow() {
    if (!unique()) *this = Map(make_object<MapObj>(node()));
    return *static_cast<MapObj*>(detail::ObjectUnsafe::mutable_ptr(*this).get());
  }
};

}  // namespace chanflow
