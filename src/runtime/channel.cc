// channel.cc — the type-erased channel object.
#include "chanflow/runtime/channel.h"

#include "chanflow/core/error.h"

namespace chanflow {

ChannelObj::ChannelObj(std::size_t capacity, std::string elem_type_key, ElemCheck check,
                       std::string name)
    : base_(capacity, &detail::ElemOpsOf<ObjectRef>::kOps),
      elem_type_(std::move(elem_type_key)),
      check_(check) {
  base_.set_name(std::move(name));
}

void ChannelObj::check_elem(const ObjectRef& v) const {
  if (check_ == nullptr || !v.defined()) return;
  if (!check_(v.get())) {
    CHANFLOW_THROW(TypeError) << "channel send: channel " << static_cast<const void*>(this)
                              << " carries " << elem_type_ << ", got " << v->type_key();
  }
}

void ChannelObj::send(ObjectRef v) {
  check_elem(v);
  detail::chan_send(&base_, &v);
}
std::optional<ObjectRef> ChannelObj::recv() {
  std::optional<ObjectRef> out;
  detail::chan_recv(&base_, &out);
  return out;
}
bool ChannelObj::try_send(ObjectRef v) {
  check_elem(v);
  return detail::chan_try_send(&base_, &v);
}
std::optional<ObjectRef> ChannelObj::try_recv() {
  std::optional<ObjectRef> out;
  detail::chan_try_recv(&base_, &out);
  return out;
}
void ChannelObj::close() { detail::chan_close(&base_); }

void Channel::send(ObjectRef v) const {
  if (defined()) get()->check_elem(v);
  detail::chan_send(base(), &v);
}
std::optional<ObjectRef> Channel::recv() const {
  std::optional<ObjectRef> out;
  detail::chan_recv(base(), &out);
  return out;
}
bool Channel::try_send(ObjectRef v) const {
  if (defined()) get()->check_elem(v);
  return detail::chan_try_send(base(), &v);
}
std::optional<ObjectRef> Channel::try_recv() const {
  std::optional<ObjectRef> out;
  detail::chan_try_recv(base(), &out);
  return out;
}
void Channel::close() const { detail::chan_close(base()); }

SelectCase Channel::select_send(ObjectRef& value) const {
  if (defined()) get()->check_elem(value);
  return {SelectCase::Kind::kSend, base(), &value};
}
SelectCase Channel::select_recv(std::optional<ObjectRef>& out) const {
  return {SelectCase::Kind::kRecv, base(), &out};
}

}  // namespace chanflow
