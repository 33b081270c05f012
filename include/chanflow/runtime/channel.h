// channel.h — Channel: the type-erased channel object the IR and executor pass around.
//
// A ChannelObj is a chanflow Object (type key "Channel") carrying ObjectRefs, with an element type
// fixed at creation: sending an object of another type throws TypeError. It runs the very same
// algorithm as Chan<T> (same send/recv/close semantics, same select), so typed and type-erased
// channels mix in one select. Channel is its handle; a null Channel is the nil channel.
//
//   cf::Channel ch = cf::Channel::make<cf::TensorObj>(4);   // only tensors may be sent
//   ch.send(tensor);  std::optional<cf::ObjectRef> v = ch.recv();
//   std::optional<cf::ObjectRef> got;
//   cf::SelectCase cs[] = {ch.select_recv(got), cf::SelectCase::default_case()};
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "chanflow/core/object.h"
#include "chanflow/runtime/detail/chan_base.h"
#include "chanflow/runtime/select.h"

namespace chanflow {

class CHANFLOW_API ChannelObj : public Object {
 public:
  // Whether an object may be sent (null refs always may: Go's nil).
  using ElemCheck = bool (*)(const Object* obj);

  // A channel of `capacity` for objects of type elem_type_key (check decides; nullptr: any),
  // shown in traces as `name` (empty: "#<id>").
  ChannelObj(std::size_t capacity, std::string elem_type_key, ElemCheck check,
             std::string name = {});
  // The same, also recording the element type as values (elem_type_index, elem_subtype).
  ChannelObj(std::size_t capacity, std::string elem_type_key, ElemCheck check,
             uint32_t elem_type_index, int32_t elem_subtype, std::string name = {})
      : ChannelObj(capacity, std::move(elem_type_key), check, std::move(name)) {
    elem_type_index_ = elem_type_index;
    elem_subtype_ = elem_subtype;
  }

  // As Chan<ObjectRef>::send/recv/try_send/try_recv/close (blocking and errors alike); send and
  // try_send first throw TypeError naming both types when v has the wrong type.
  void send(ObjectRef v);
  std::optional<ObjectRef> recv();
  bool try_send(ObjectRef v);
  std::optional<ObjectRef> try_recv();
  void close();
  std::size_t size() const noexcept { return base_.size(); }
  std::size_t capacity() const noexcept { return base_.capacity(); }
  bool closed() const noexcept { return base_.closed(); }
  // The element type key ("Object" accepts anything), for messages.
  const std::string& elem_type() const noexcept { return elem_type_; }
  // The element type as values, for comparisons: the type index of the element object type
  // (TypeIndex::kObject: anything), and a refinement of it the layer that made the channel
  // defines (-1: none; the exec layer stores the dtype of a channel of tensors of one dtype).
  uint32_t elem_type_index() const noexcept { return elem_type_index_; }
  int32_t elem_subtype() const noexcept { return elem_subtype_; }
  // Throws TypeError unless v may be sent here.
  void check_elem(const ObjectRef& v) const;

  detail::ChanBase* base() noexcept { return &base_; }

  static constexpr const char* kTypeKey = "Channel";
  static constexpr uint32_t kTypeIndex = TypeIndex::kChannel;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ChannelObj, Object);

 private:
  detail::ChanBase base_;
  std::string elem_type_;
  ElemCheck check_;
  uint32_t elem_type_index_ = TypeIndex::kObject;
  int32_t elem_subtype_ = -1;
};

class CHANFLOW_API Channel : public ObjectRef {
 public:
  CHANFLOW_DEFINE_MUTABLE_OBJECT_REF(Channel, ObjectRef, ChannelObj);

  // A channel for TObj objects (and subtypes); Object = any object. `name` is what traces show
  // for it (empty: "#<id>").
  template <class TObj = Object>
  static Channel make(std::size_t capacity = 0, std::string name = {}) {
    ChannelObj::ElemCheck check = nullptr;
    if constexpr (!std::is_same_v<TObj, Object>) {
      check = [](const Object* o) { return o->is_instance<TObj>(); };
    }
    return Channel(make_object<ChannelObj>(
        capacity, TObj::kTypeKey, check, TObj::runtime_type_index(), int32_t{-1}, std::move(name)));
  }

  // Nil-aware forms of ChannelObj's methods: on a null Channel, send/recv block forever, try_*
  // never succeed, close throws ChannelClosedError (Go's nil channel).
  void send(ObjectRef v) const;
  std::optional<ObjectRef> recv() const;
  bool try_send(ObjectRef v) const;
  std::optional<ObjectRef> try_recv() const;
  void close() const;

  // Select cases over this channel (see select.h). select_send checks the type at once.
  SelectCase select_send(ObjectRef& value) const;
  SelectCase select_recv(std::optional<ObjectRef>& out) const;

  detail::ChanBase* base() const noexcept { return defined() ? get()->base() : nullptr; }
};

}  // namespace chanflow
