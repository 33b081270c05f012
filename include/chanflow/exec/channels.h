// channels.h — channels of the element types programs declare, made in one place.
//
// A program's channel variable carries objects of one element type, named by a type key: "Object"
// (anything), "Tensor" (any dtype), "Tensor(<dtype>)" such as "Tensor(float32)" (tensors of that
// dtype only), "Channel", and the core value types "Int", "Float", "Bool", "String", "Array",
// "Map". channel_create makes its channels here, and so does every binding that makes a channel
// meant to be bound into a run (Executor::run's `channels`), so both agree on the key and check.
//
//   cf::Channel ch = cf::make_channel_of("Tensor(float32)", 4);   // sending an int64 tensor throws
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/tensor/dtype.h"

namespace chanflow {

// A channel of `capacity` carrying tensors of dtype `dtype` only; its element type key is
// "Tensor(<dtype>)". Never blocks.
CHANFLOW_API Channel make_tensor_channel(DType dtype, std::size_t capacity = 0);

// What a channel carries, as values (the key is only its text): tensors (of one dtype, or of any
// when `dtype` is empty), channels, or another object type (by type index; TypeIndex::kObject:
// anything).
struct ChannelElem {
  enum class Kind : uint8_t { kTensor, kChannel, kOther };
  Kind kind = Kind::kOther;
  std::optional<DType> dtype;  // kTensor only
  uint32_t type_index = TypeIndex::kObject;
  bool operator==(const ChannelElem&) const = default;
};
// The element type of `ch` (not null). Thread-safe (the element type never changes).
CHANFLOW_API ChannelElem channel_elem(const ChannelObj& ch) noexcept;

// A channel of `capacity` for the element type key `elem` (see the top of this file). Throws
// TypeError naming the key and listing the accepted ones when `elem` is none of them.
CHANFLOW_API Channel make_channel_of(std::string_view elem, std::size_t capacity = 0);

// The accepted keys, for error messages: "'Object' (anything), 'Tensor', ...".
CHANFLOW_API std::string_view channel_elem_choices() noexcept;

}  // namespace chanflow
