#include "chanflow/core/map.h"

#include <bit>

namespace chanflow {

void MapObj::insert_new(ObjectRef key, ObjectRef value, uint64_t hash) {
  entries.push_back(Entry{std::move(key), std::move(value), hash});
  if (slots.empty()) {
    if (entries.size() > kSmallMax) rebuild_index(4 * entries.size());
    return;
  }
  if (2 * entries.size() > slots.size()) {
    rebuild_index(2 * slots.size());
    return;
  }
  const size_t mask = slots.size() - 1;
  size_t s = home_slot(hash);
  while (slots[s] != 0) s = (s + 1) & mask;
  slots[s] = static_cast<uint32_t>(entries.size());
}

void MapObj::rebuild_index(size_t capacity) {
  slots.assign(std::bit_ceil(capacity), 0);
  const size_t mask = slots.size() - 1;
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t s = home_slot(entries[i].hash);
    while (slots[s] != 0) s = (s + 1) & mask;
    slots[s] = static_cast<uint32_t>(i + 1);
  }
}

size_t MapObj::slot_of(size_t entry_index) const noexcept {
  const size_t mask = slots.size() - 1;
  size_t s = home_slot(entries[entry_index].hash);
  while (slots[s] != entry_index + 1) s = (s + 1) & mask;
  return s;
}

void MapObj::erase_at(size_t i) {
  const size_t last = entries.size() - 1;
  if (!slots.empty()) {
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    const size_t mask = slots.size() - 1;
    size_t hole = slot_of(i);
    for (size_t j = (hole + 1) & mask; slots[j] != 0; j = (j + 1) & mask) {
      const size_t home = home_slot(entries[slots[j] - 1].hash);
      // Move slot j into the hole unless its home lies cyclically in (hole, j].
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots[hole] = slots[j];
        hole = j;
      }
    }
    slots[hole] = 0;
    if (i != last) slots[slot_of(last)] = static_cast<uint32_t>(i + 1);
  }
  if (i != last) entries[i] = std::move(entries[last]);
  entries.pop_back();
}

}  // namespace chanflow
