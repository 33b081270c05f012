// channels.cc — channels of the element types programs declare (see channels.h).
#include "chanflow/exec/channels.h"

#include <string>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/error.h"
#include "chanflow/core/map.h"
#include "chanflow/core/string.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {
namespace {

template <DType D>
bool is_tensor_of(const Object* o) {
  return o->is_instance<TensorObj>() && static_cast<const TensorObj*>(o)->dtype() == D;
}

// ChannelObj's element check is a plain function pointer (checked on every send), so each dtype
// gets its own instantiation.
ChannelObj::ElemCheck tensor_check(DType d) {
  switch (d) {
    case DType::kBool:
      return &is_tensor_of<DType::kBool>;
    case DType::kInt8:
      return &is_tensor_of<DType::kInt8>;
    case DType::kInt16:
      return &is_tensor_of<DType::kInt16>;
    case DType::kInt32:
      return &is_tensor_of<DType::kInt32>;
    case DType::kInt64:
      return &is_tensor_of<DType::kInt64>;
    case DType::kUInt8:
      return &is_tensor_of<DType::kUInt8>;
    case DType::kFloat16:
      return &is_tensor_of<DType::kFloat16>;
    case DType::kFloat32:
      return &is_tensor_of<DType::kFloat32>;
    case DType::kFloat64:
      return &is_tensor_of<DType::kFloat64>;
  }
  throw TypeError("make_tensor_channel: unknown dtype " + std::to_string(static_cast<int>(d)));
}

constexpr std::string_view kChoices =
    "'Object' (anything), 'Tensor', 'Tensor(<dtype>)' such as 'Tensor(float32)', 'Channel', "
    "'Int', 'Float', 'Bool', 'String', 'Array' or 'Map'";

}  // namespace

Channel make_tensor_channel(DType dtype, std::size_t capacity) {
  return Channel(make_object<ChannelObj>(
      capacity, std::string(TensorObj::kTypeKey) + "(" + std::string(dtype_name(dtype)) + ")",
      tensor_check(dtype)));
}

std::string_view channel_elem_choices() noexcept { return kChoices; }

Channel make_channel_of(std::string_view elem, std::size_t capacity) {
  if (elem == Object::kTypeKey) return Channel::make<Object>(capacity);
  if (elem == TensorObj::kTypeKey) return Channel::make<TensorObj>(capacity);
  if (elem == ChannelObj::kTypeKey) return Channel::make<ChannelObj>(capacity);
  if (elem == IntObj::kTypeKey) return Channel::make<IntObj>(capacity);
  if (elem == FloatObj::kTypeKey) return Channel::make<FloatObj>(capacity);
  if (elem == BoolObj::kTypeKey) return Channel::make<BoolObj>(capacity);
  if (elem == StringObj::kTypeKey) return Channel::make<StringObj>(capacity);
  if (elem == ArrayObj::kTypeKey) return Channel::make<ArrayObj>(capacity);
  if (elem == MapObj::kTypeKey) return Channel::make<MapObj>(capacity);
  const std::string_view prefix = "Tensor(";
  if (elem.size() > prefix.size() + 1 && elem.substr(0, prefix.size()) == prefix &&
      elem.back() == ')') {
    const std::string_view name = elem.substr(prefix.size(), elem.size() - prefix.size() - 1);
    for (int i = 0; i < kNumDTypes; ++i) {
      const auto d = static_cast<DType>(i);
      if (dtype_name(d) == name) return make_tensor_channel(d, capacity);
    }
  }
  throw TypeError("no channel element type '" + std::string(elem) + "': expected " +
                  std::string(kChoices));
}

}  // namespace chanflow
