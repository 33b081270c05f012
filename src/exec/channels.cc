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
#define CHANFLOW_DTYPE_CHECK(e, ...) &is_tensor_of<DType::e>,
constexpr ChannelObj::ElemCheck kTensorChecks[kNumDTypes] = {CHANFLOW_DTYPES(CHANFLOW_DTYPE_CHECK)};
#undef CHANFLOW_DTYPE_CHECK

ChannelObj::ElemCheck tensor_check(DType d) {
  const auto i = static_cast<size_t>(d);
  if (i >= static_cast<size_t>(kNumDTypes)) {
    throw TypeError("make_tensor_channel: unknown dtype " + std::to_string(i));
  }
  return kTensorChecks[i];
}

constexpr std::string_view kChoices =
    "'Object' (anything), 'Tensor', 'Tensor(<dtype>)' such as 'Tensor(float32)', 'Channel', "
    "'Int', 'Float', 'Bool', 'String', 'Array' or 'Map'";

}  // namespace

Channel make_tensor_channel(DType dtype, std::size_t capacity) {
  return Channel(make_object<ChannelObj>(
      capacity, std::string(TensorObj::kTypeKey) + "(" + std::string(dtype_name(dtype)) + ")",
      tensor_check(dtype), TensorObj::runtime_type_index(), static_cast<int32_t>(dtype)));
}

ChannelElem channel_elem(const ChannelObj& ch) noexcept {
  ChannelElem e;
  e.type_index = ch.elem_type_index();
  if (e.type_index == TensorObj::runtime_type_index()) {
    e.kind = ChannelElem::Kind::kTensor;
    if (ch.elem_subtype() >= 0) e.dtype = static_cast<DType>(ch.elem_subtype());
  } else if (e.type_index == ChannelObj::runtime_type_index()) {
    e.kind = ChannelElem::Kind::kChannel;
  }
  return e;
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
  // "Tensor(<dtype>)": the key's text is parsed here, at the boundary, and nowhere else.
  const std::string_view prefix = "Tensor(";
  if (elem.size() > prefix.size() + 1 && elem.substr(0, prefix.size()) == prefix &&
      elem.back() == ')') {
    const std::string_view name = elem.substr(prefix.size(), elem.size() - prefix.size() - 1);
    for (const DTypeInfo& i : kDTypeTable) {
      if (i.name == name) return make_tensor_channel(i.dtype, capacity);
    }
  }
  throw TypeError("no channel element type '" + std::string(elem) + "': expected " +
                  std::string(kChoices));
}

}  // namespace chanflow
