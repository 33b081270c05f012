// array.h — Array<T>, a shared, copy-on-write sequence of object handles.
//
// Any ObjectRef type can be an element (tensors, channels, IR nodes, boxed scalars), which is the
// point of a unified object system: one container for every value.
//
//   cf::Array<cf::Int> a{cf::Int(1), cf::Int(2)};
//   cf::Array<cf::Int> b = a;      // shares the node
//   b.push_back(cf::Int(3));       // b copies first (a is untouched): copy on write
//   a.push_back(cf::Int(4));       // a is now unique again: mutates in place, no copy
//
// Thread-safety: like std::shared_ptr — distinct Array handles may be used from different threads
// even when they share a node (a writer copies before writing when the node is shared); one handle
// must not be written concurrently with any other use of that same handle.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/object.h"

namespace chanflow {

class ArrayObj : public Object {
 public:
  ArrayObj() = default;
  explicit ArrayObj(std::vector<ObjectRef> items) : data(std::move(items)) {}
  std::vector<ObjectRef> data;

  static constexpr const char* kTypeKey = "Array";
  static constexpr uint32_t kTypeIndex = TypeIndex::kArray;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(ArrayObj, Object);
};

namespace detail {
// Makes a T handle from a stored element (elements are inserted through typed APIs only).
template <class T>
T element_cast(const ObjectRef& ref) {
  if constexpr (std::is_same_v<T, ObjectRef>) {
    return ref;
  } else {
    return T(ObjectUnsafe::ptr(ref));
  }
}
}  // namespace detail

template <class T = ObjectRef>
class Array : public ObjectRef {
  static_assert(std::is_base_of_v<ObjectRef, T>, "Array<T>: T must be an ObjectRef type");

 public:
  using ContainerType = ArrayObj;
  using value_type = T;

  // Read-only iterator yielding T by value (handles are cheap to copy).
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    const_iterator() = default;
    explicit const_iterator(std::vector<ObjectRef>::const_iterator it) : it_(it) {}
    T operator*() const { return detail::element_cast<T>(*it_); }
    T operator[](difference_type n) const { return detail::element_cast<T>(it_[n]); }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) {
      auto t = *this;
      ++it_;
      return t;
    }
    const_iterator& operator--() {
      --it_;
      return *this;
    }
    const_iterator operator--(int) {
      auto t = *this;
      --it_;
      return t;
    }
    const_iterator& operator+=(difference_type n) {
      it_ += n;
      return *this;
    }
    const_iterator& operator-=(difference_type n) {
      it_ -= n;
      return *this;
    }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return a.it_ - b.it_;
    }
    friend auto operator<=>(const const_iterator&, const const_iterator&) = default;
    friend bool operator==(const const_iterator&, const const_iterator&) = default;

   private:
    std::vector<ObjectRef>::const_iterator it_;
  };
  using iterator = const_iterator;

  // An empty array (allocates its node).
  Array() : ObjectRef(make_object<ArrayObj>()) {}
  Array(std::initializer_list<T> items) : Array(items.begin(), items.end()) {}
  explicit Array(const std::vector<T>& items) : Array(items.begin(), items.end()) {}
  template <class It>
  Array(It first, It last) : ObjectRef(make_object<ArrayObj>()) {
    auto& v = mutable_node()->data;
    for (; first != last; ++first) v.push_back(*first);
  }
  // n copies of value.
  Array(size_t n, const T& value)
      : ObjectRef(make_object<ArrayObj>(std::vector<ObjectRef>(n, value))) {}
  explicit Array(ObjectPtr<Object> data) noexcept : ObjectRef(std::move(data)) {}

  const ArrayObj* operator->() const noexcept { return static_cast<const ArrayObj*>(get()); }

  size_t size() const noexcept { return node().size(); }
  bool empty() const noexcept { return node().empty(); }
  // Element i; throws Error when i is out of range.
  T operator[](size_t i) const { return at(i); }
  T at(size_t i) const {
    if (i >= size()) {
      CHANFLOW_THROW(Error) << "Array: index " << i << " out of range (size " << size() << ")";
    }
    return detail::element_cast<T>(node()[i]);
  }
  T front() const { return at(0); }
  T back() const { return at(size() - 1); }
  const_iterator begin() const noexcept { return const_iterator(node().begin()); }
  const_iterator end() const noexcept { return const_iterator(node().end()); }

  // Mutations copy the node first when it is shared, and mutate in place when it is unique.
  void push_back(T value) { cow().push_back(std::move(value)); }
  void pop_back() {
    if (empty()) CHANFLOW_THROW(Error) << "Array: pop_back on an empty array";
    cow().pop_back();
  }
  void set(size_t i, T value) {
    if (i >= size()) {
      CHANFLOW_THROW(Error) << "Array: index " << i << " out of range (size " << size() << ")";
    }
    cow()[i] = std::move(value);
  }
  // Inserts value before position i (0 <= i <= size()).
  void insert(size_t i, T value) {
    if (i > size()) {
      CHANFLOW_THROW(Error) << "Array: insert position " << i << " out of range (size " << size()
                            << ")";
    }
    auto& v = cow();
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(i), std::move(value));
  }
  // Removes the element at position i.
  void erase(size_t i) {
    if (i >= size()) {
      CHANFLOW_THROW(Error) << "Array: erase position " << i << " out of range (size " << size()
                            << ")";
    }
    auto& v = cow();
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // Grows with null handles or shrinks to n elements.
  void resize(size_t n) { cow().resize(n); }
  void reserve(size_t n) { cow().reserve(n); }
  void clear() { cow().clear(); }

  // Element-wise identity comparison (same objects in the same order).
  bool same_elements(const Array& other) const {
    if (size() != other.size()) return false;
    for (size_t i = 0; i < size(); ++i) {
      if (!node()[i].same_as(other.node()[i])) return false;
    }
    return true;
  }

 private:
  const std::vector<ObjectRef>& node() const noexcept { return operator->()->data; }
  ArrayObj* mutable_node() noexcept {
    return static_cast<ArrayObj*>(detail::ObjectUnsafe::mutable_ptr(*this).get());
  }
  std::vector<ObjectRef>& cow() {
    if (!unique()) {
      *this = Array(make_object<ArrayObj>(node()));
    }
    return mutable_node()->data;
  }
};

}  // namespace chanflow
