#include "chanflow/core/reflection.h"

#include <unordered_map>

#include "chanflow/core/locks.h"

namespace chanflow {
namespace {

struct ReflectionTable {
  os::SharedMutex mutex;
  std::unordered_map<uint32_t, ReflectionInfo> by_index CHANFLOW_GUARDED_BY(mutex);
};

ReflectionTable& table() {
  static auto* t = new ReflectionTable();  // leaked: usable during static destruction
  return *t;
}

}  // namespace

void register_reflection(uint32_t type_index, ReflectionInfo info) {
  ReflectionTable& t = table();
  os::LockGuard lock(t.mutex);
  t.by_index.emplace(type_index, info);
}

std::optional<ReflectionInfo> find_reflection(uint32_t type_index) {
  ReflectionTable& t = table();
  os::SharedLockGuard lock(t.mutex);
  auto it = t.by_index.find(type_index);
  if (it == t.by_index.end()) return std::nullopt;
  return it->second;
}

}  // namespace chanflow
