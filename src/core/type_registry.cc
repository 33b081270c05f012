// The registry keeps a fixed array of atomic TypeInfo pointers, so readers (is_instance's slow
// path, type_key) never lock: a writer builds a TypeInfo completely, then publishes it with a
// release store; readers load with acquire. Writers serialise on a mutex. TypeInfos are never
// freed (types live as long as the process).
#include "chanflow/core/type_registry.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>

#include "chanflow/core/locks.h"

namespace chanflow {

struct TypeRegistry::State {
  std::array<std::atomic<const TypeInfo*>, kMaxTypeIndex> table{};
  // Writers hold it exclusively, readers of the maps shared.
  os::SharedMutex mutex;
  std::unordered_map<std::string, uint32_t> by_key CHANFLOW_GUARDED_BY(mutex);
  std::unordered_map<uint32_t, uint32_t> slots_used CHANFLOW_GUARDED_BY(mutex);  // parent -> used
  uint32_t next_dynamic CHANFLOW_GUARDED_BY(mutex) = TypeIndex::kStaticEnd;

  // Makes `info`, fully built, visible to lock-free readers. Writers only.
  void publish(TypeInfo* info) CHANFLOW_REQUIRES(mutex);
  // The deepest ancestor of `parent` (or `parent` itself) that forbids overflow, or nullptr.
  const TypeInfo* nearest_sealed_ancestor(const TypeInfo* parent) const CHANFLOW_REQUIRES(mutex);
};

TypeRegistry& TypeRegistry::global() {
  // Leaked on purpose: objects destroyed during static destruction may still ask for type keys.
  static TypeRegistry* registry = [] {
    auto* r = new TypeRegistry();
    return r;
  }();
  return *registry;
}

TypeRegistry::TypeRegistry() : state_(new State()) {
  auto* root =
      new TypeInfo{TypeIndex::kObject, TypeIndex::kObject, 0, 0, true, false, "Object", {}, {}};
  os::LockGuard lock(state_->mutex);  // uncontended: the registry is not shared yet
  state_->publish(root);
  state_->by_key.emplace(root->key, root->index);
}

void TypeRegistry::State::publish(TypeInfo* info) {
  info->ancestry = detail::TypeAncestry{info->depth, info->ancestors.data()};
  // Release: a reader that sees the pointer sees the fully built, never again modified info.
  detail::g_type_ancestry[info->index].store(&info->ancestry, std::memory_order_release);
  table[info->index].store(info, std::memory_order_release);
}

const TypeInfo* TypeRegistry::State::nearest_sealed_ancestor(const TypeInfo* parent) const {
  if (!parent->child_slots_can_overflow) return parent;
  for (auto it = parent->ancestors.rbegin(); it != parent->ancestors.rend(); ++it) {
    const TypeInfo* a = table[*it].load(std::memory_order_relaxed);
    if (!a->child_slots_can_overflow) return a;
  }
  return nullptr;
}

uint32_t TypeRegistry::register_type(const detail::TypeSpec& spec) {
  os::LockGuard lock(state_->mutex);
  const std::string key(spec.key);
  if (auto it = state_->by_key.find(key); it != state_->by_key.end()) {
    const TypeInfo* existing = state_->table[it->second].load(std::memory_order_relaxed);
    if (existing->parent_index != spec.parent_index) {
      CHANFLOW_THROW(Error) << "type registry: key '" << key
                            << "' is already registered with another parent type ('"
                            << state_->table[existing->parent_index].load()->key
                            << "'); each object type needs its own kTypeKey";
    }
    return it->second;
  }
  const TypeInfo* parent = state_->table[spec.parent_index].load(std::memory_order_relaxed);
  CHANFLOW_CHECK(parent != nullptr) << "parent type index " << spec.parent_index
                                    << " registered before its child '" << key << "'";
  if (parent->final) {
    CHANFLOW_THROW(Error) << "type registry: '" << key << "' derives from final type '"
                          << parent->key << "'";
  }
  const uint32_t span = spec.child_slots + 1;  // the type itself plus its reserved child slots
  uint32_t index = 0;
  if (spec.static_index != TypeIndex::kDynamic) {
    if (spec.static_index >= TypeIndex::kStaticEnd || spec.static_index <= parent->index ||
        state_->table[spec.static_index].load(std::memory_order_relaxed) != nullptr) {
      CHANFLOW_THROW(Error) << "type registry: static index " << spec.static_index << " of '" << key
                            << "' is taken, not below " << TypeIndex::kStaticEnd
                            << " or not above its parent's";
    }
    if (spec.child_slots != 0) {
      CHANFLOW_THROW(Error) << "type registry: static type '" << key
                            << "' cannot reserve child slots";
    }
    index = spec.static_index;
  } else {
    uint32_t& used = state_->slots_used[parent->index];
    if (used + span <= parent->child_slots) {
      index = parent->index + 1 + used;  // inside the parent's range: is_instance is a compare
      used += span;
    } else if (!parent->child_slots_can_overflow) {
      CHANFLOW_THROW(Error) << "type registry: parent '" << parent->key << "' has all its "
                            << parent->child_slots << " child slots taken and forbids overflow; "
                            << "cannot register '" << key << "'";
    } else if (const TypeInfo* sealed = state_->nearest_sealed_ancestor(parent)) {
      // The parent allows overflow but an ancestor does not: is_instance<Sealed> is a range
      // compare and nothing else, so every descendant of `sealed` must sit inside its range.
      // Take the next free span of its slots. The index is still above the parent's (and above
      // every ancestor between them): each is in a span taken from the same counter earlier.
      uint32_t& sealed_used = state_->slots_used[sealed->index];
      if (sealed_used + span > sealed->child_slots) {
        CHANFLOW_THROW(Error) << "type registry: cannot register '" << key << "': its parent '"
                              << parent->key << "' has all its " << parent->child_slots
                              << " child slots taken, and its ancestor '" << sealed->key
                              << "' forbids overflow and has no room left (" << sealed_used
                              << " of its " << sealed->child_slots << " child slots used, " << span
                              << " needed); reserve more slots in '" << sealed->key << "'";
      }
      index = sealed->index + 1 + sealed_used;
      sealed_used += span;
    } else {
      index = state_->next_dynamic;  // past every range: found through the ancestor table
      if (index + span > kMaxTypeIndex) {
        CHANFLOW_THROW(Error) << "type registry: no type index left for '" << key << "' (limit "
                              << kMaxTypeIndex << ")";
      }
      state_->next_dynamic += span;
    }
  }
  auto* info = new TypeInfo{index,
                            parent->index,
                            parent->depth + 1,
                            spec.child_slots,
                            spec.child_slots_can_overflow,
                            spec.final,
                            key,
                            parent->ancestors,
                            {}};
  info->ancestors.push_back(parent->index);
  state_->by_key.emplace(key, index);
  state_->publish(info);
  return index;
}

const TypeInfo* TypeRegistry::find(uint32_t index) const noexcept {
  if (index >= kMaxTypeIndex) return nullptr;
  return state_->table[index].load(std::memory_order_acquire);
}

std::optional<uint32_t> TypeRegistry::index_of(std::string_view key) const {
  os::SharedLockGuard lock(state_->mutex);
  auto it = state_->by_key.find(std::string(key));
  if (it == state_->by_key.end()) return std::nullopt;
  return it->second;
}

bool TypeRegistry::is_descendant(uint32_t child, uint32_t ancestor) const noexcept {
  if (child == ancestor) return true;
  if (child >= kMaxTypeIndex || ancestor >= kMaxTypeIndex) return false;
  return detail::is_overflow_descendant(child, ancestor);
}

size_t TypeRegistry::size() const {
  os::SharedLockGuard lock(state_->mutex);
  return state_->by_key.size();
}

std::string TypeRegistry::dump() const {
  os::SharedLockGuard lock(state_->mutex);
  std::unordered_map<uint32_t, std::vector<uint32_t>> children;
  for (const auto& [key, index] : state_->by_key) {
    const TypeInfo* info = state_->table[index].load(std::memory_order_relaxed);
    if (info->index != info->parent_index) children[info->parent_index].push_back(index);
  }
  for (auto& [parent, list] : children) std::sort(list.begin(), list.end());
  std::ostringstream out;
  std::vector<uint32_t> stack{TypeIndex::kObject};
  while (!stack.empty()) {
    const TypeInfo* info = state_->table[stack.back()].load(std::memory_order_relaxed);
    stack.pop_back();
    out << std::string(2 * size_t{info->depth}, ' ') << info->index << ' ' << info->key;
    if (info->final) out << " [final]";
    if (info->child_slots != 0) {
      auto used = state_->slots_used.find(info->index);
      out << " (child slots " << (used == state_->slots_used.end() ? 0 : used->second) << '/'
          << info->child_slots << (info->child_slots_can_overflow ? ", may overflow" : "") << ')';
    }
    out << '\n';
    auto& kids = children[info->index];
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  }
  return out.str();
}

namespace detail {

uint32_t register_type(const TypeSpec& spec) { return TypeRegistry::global().register_type(spec); }

// Zero-initialised before any dynamic initialisation, so usable from static constructors.
std::atomic<const TypeAncestry*> g_type_ancestry[kMaxTypeIndex];

std::string_view type_key_of(uint32_t index) noexcept {
  const TypeInfo* info = TypeRegistry::global().find(index);
  return info == nullptr ? std::string_view("<unregistered>") : std::string_view(info->key);
}

#if defined(CHANFLOW_OBJECT_TRACKING)
std::atomic<int64_t>& live_object_counter() noexcept {
  static std::atomic<int64_t> counter{0};
  return counter;
}
#endif

}  // namespace detail

int64_t live_object_count() noexcept {
#if defined(CHANFLOW_OBJECT_TRACKING)
  return detail::live_object_counter().load(std::memory_order_acquire);
#else
  return -1;
#endif
}

}  // namespace chanflow
