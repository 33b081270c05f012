// cache_line.h — kCacheLine: the size chanflow assumes for a CPU cache line when it keeps
// independently written data apart (false sharing) or prefetches memory a line at a time.
//
//   struct Counters {
//     alignas(kCacheLine) std::atomic<uint64_t> sent{0};      // written by producers
//     alignas(kCacheLine) std::atomic<uint64_t> received{0};  // written by consumers
//   };
#pragma once

#include <cstddef>

namespace chanflow {

// 64 bytes: the line size of x86-64 and of most AArch64 cores. A fixed constant rather than
// std::hardware_destructive_interference_size, whose value may differ between compilers and
// flags (GCC 12 warns, -Winterference-size, that using it in a header is not ABI-stable); the
// alignment of types in public headers (ObjectPool's shards) must not change with the compiler.
inline constexpr std::size_t kCacheLine = 64;

}  // namespace chanflow
