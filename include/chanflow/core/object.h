// object.h — the unified object protocol: one ref-counted, type-indexed base for every value.
//
// Tensors, channels, scopes, IR nodes and containers are all Objects. An object type is a data node
// `FooObj : Object` with its type configuration in static constexpr members and one macro; users
// hold it through a cheap handle `Foo : ObjectRef` (or ObjectPtr<FooObj> inside the library):
//
//   struct PointObj : cf::Object {
//     int64_t x = 0;
//     static constexpr const char* kTypeKey = "example.Point";
//     CHANFLOW_DECLARE_OBJECT_INFO(PointObj, cf::Object);
//   };
//   struct Point : cf::ObjectRef { CHANFLOW_DEFINE_OBJECT_REF(Point, cf::ObjectRef, PointObj); };
//
//   cf::ObjectPtr<PointObj> p = cf::make_object<PointObj>();
//   cf::ObjectRef any(p);
//   if (const PointObj* pt = any.as<PointObj>()) { ... }      // runtime type check, no RTTI
//   Point q = cf::downcast<Point>(any);                       // throws TypeError on mismatch
//
// The header is 16 bytes: type index, atomic reference count, deleter. The deleter decides where an
// object's memory goes (heap, a pool, an arena), so objects can cross allocators and libraries.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/core/export.h"

namespace chanflow {

class Object;
template <class T>
class ObjectPtr;
class ObjectRef;

// Static type indices of built-in types (RFC F7). Types that declare kTypeIndex = kDynamic get an
// index allocated at first use from their unique kTypeKey (RFC F5).
struct TypeIndex {
  static constexpr uint32_t kObject = 0;
  static constexpr uint32_t kString = 1;
  static constexpr uint32_t kArray = 2;
  static constexpr uint32_t kMap = 3;
  static constexpr uint32_t kInt = 4;
  static constexpr uint32_t kFloat = 5;
  static constexpr uint32_t kBool = 6;
  static constexpr uint32_t kFunction = 7;
  static constexpr uint32_t kTensor = 16;
  static constexpr uint32_t kChannel = 17;
  static constexpr uint32_t kStaticEnd = 64;  // first dynamically allocated index
  static constexpr uint32_t kDynamic = 0xFFFFFFFFu;
};

namespace detail {
struct ObjectUnsafe;

// What a type tells the registry about itself (from its static constexpr members).
struct TypeSpec {
  const char* key;
  uint32_t static_index;  // TypeIndex::kDynamic to allocate one
  uint32_t parent_index;
  uint32_t child_slots;
  bool child_slots_can_overflow;
  bool final;
};
// Registers a type (idempotent by key) and returns its index. Thread-safe. Throws Error when the
// key is reused with another parent, a static index is taken, or no index is left.
CHANFLOW_API uint32_t register_type(const TypeSpec& spec);

template <class T>
uint32_t register_type_of() {
  using Parent = typename T::ParentObjectType;
  static_assert(!Parent::kTypeFinal, "cannot derive from a final object type");
  // Static members are inherited: a kTypeIndex equal to the parent's was not declared by T.
  constexpr bool kDeclaresStaticIndex =
      T::kTypeIndex != Parent::kTypeIndex && T::kTypeIndex != TypeIndex::kDynamic;
  return register_type(TypeSpec{T::kTypeKey,
                                kDeclaresStaticIndex ? T::kTypeIndex : TypeIndex::kDynamic,
                                Parent::runtime_type_index(), T::kTypeChildSlots,
                                T::kTypeChildSlotsCanOverflow, T::kTypeFinal});
}
// The ancestry of a registered type, published once (immutable) in g_type_ancestry.
struct TypeAncestry {
  uint32_t depth;             // Object is 0
  const uint32_t* ancestors;  // ancestors[d]: the index of the ancestor at depth d < depth
};
inline constexpr uint32_t kMaxTypeIndex = 1u << 14;
// Indexed by type index; null for unused indices. Written once per type under the registry's
// lock with a release store; is_instance reads it lock-free (acquire) without a function call.
CHANFLOW_API extern std::atomic<const TypeAncestry*> g_type_ancestry[kMaxTypeIndex];

// Slow path of is_instance: is `child` a descendant of `ancestor` outside its slot range? O(1).
inline bool is_overflow_descendant(uint32_t child, uint32_t ancestor) noexcept {
  const TypeAncestry* c = g_type_ancestry[child].load(std::memory_order_acquire);
  const TypeAncestry* a = g_type_ancestry[ancestor].load(std::memory_order_acquire);
  return c != nullptr && a != nullptr && c->depth > a->depth && c->ancestors[a->depth] == ancestor;
}
CHANFLOW_API std::string_view type_key_of(uint32_t index) noexcept;
// Runs the deleter of `obj`, whose count just reached zero. Deleters nest at most a fixed depth
// on a thread: what the deepest one releases is queued, and run by that frame once it returns,
// before the outermost release returns. So releasing a chain of a million nested containers takes
// constant stack. src/core/release.cc states the invariants.
CHANFLOW_API void run_deleter(Object* obj) noexcept;
#if defined(CHANFLOW_OBJECT_TRACKING)
CHANFLOW_API std::atomic<int64_t>& live_object_counter() noexcept;
inline void track_object_created() noexcept {
  live_object_counter().fetch_add(1, std::memory_order_relaxed);
}
inline void track_object_destroyed() noexcept {
  live_object_counter().fetch_sub(1, std::memory_order_relaxed);
}
#else
inline void track_object_created() noexcept {}
inline void track_object_destroyed() noexcept {}
#endif
}  // namespace detail

// Number of live objects when the build has CHANFLOW_OBJECT_TRACKING (debug, asan, tsan presets),
// or -1 when tracking is compiled out. Tests use it to prove nothing leaks.
CHANFLOW_API int64_t live_object_count() noexcept;

// Declares the type configuration of an object type. Put it in the public section of `TypeName`,
// after the static constexpr kTypeKey (and optionally kTypeIndex, kTypeFinal, kTypeChildSlots,
// kTypeChildSlotsCanOverflow, which otherwise inherit their defaults from Object).
#define CHANFLOW_DECLARE_OBJECT_INFO(TypeName, ParentType)                                 \
  using ParentObjectType = ParentType;                                                     \
  static uint32_t runtime_type_index() {                                                   \
    static_assert(std::is_base_of_v<ParentType, TypeName>, "parent must be a base class"); \
    static const uint32_t index = ::chanflow::detail::register_type_of<TypeName>();        \
    return index;                                                                          \
  }                                                                                        \
  static_assert(true, "require a semicolon")

// Marks an object type final: no subtypes, so is_instance is one compare.
#define CHANFLOW_DECLARE_FINAL_OBJECT_INFO(TypeName, ParentType) \
  static constexpr bool kTypeFinal = true;                       \
  CHANFLOW_DECLARE_OBJECT_INFO(TypeName, ParentType)

// The base of every chanflow object. Not copyable or movable: objects live where they were made
// and are shared through ObjectPtr / ObjectRef.
class CHANFLOW_API Object {
 public:
  // Releases an object's memory when its count reaches zero. Runs the destructor too. Must not
  // throw, and must not block a green thread (channel operations, cf::Mutex, waits): it runs
  // inside a release, which the runtime must not move to another worker. The objects it releases
  // are destroyed after it returns (before the outermost release returns), so it must not free
  // memory that another object it releases lives in.
  using FDeleter = void (*)(Object* self);

  static constexpr const char* kTypeKey = "Object";
  static constexpr uint32_t kTypeIndex = TypeIndex::kObject;
  static constexpr bool kTypeFinal = false;
  static constexpr uint32_t kTypeChildSlots = 0;
  static constexpr bool kTypeChildSlotsCanOverflow = true;
  static uint32_t runtime_type_index() noexcept { return TypeIndex::kObject; }

  Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Object(Object&&) = delete;
  Object& operator=(Object&&) = delete;

  // The runtime type index of this object's dynamic type.
  uint32_t type_index() const noexcept { return type_index_; }
  // The unique type key of this object's dynamic type, e.g. "String".
  std::string_view type_key() const noexcept { return detail::type_key_of(type_index_); }
  // Whether this object is a T (or a subtype of T). Lock-free; one range compare for types whose
  // subtypes fit in their reserved child slots, one compare for final types, an O(1) table lookup
  // for subtypes that overflowed the slots.
  template <class T>
  bool is_instance() const noexcept;
  // The current reference count. Racy by nature when other threads hold references.
  int32_t use_count() const noexcept { return ref_count_.load(std::memory_order_acquire); }

 protected:
  ~Object() = default;

 private:
  friend struct detail::ObjectUnsafe;
  template <class T>
  friend class ObjectPtr;

  void inc_ref() noexcept {
    // Relaxed: a new reference can only be made from an existing one, which already orders it.
    ref_count_.fetch_add(1, std::memory_order_relaxed);
  }
  void dec_ref() noexcept {
    // Sole owner: if the count is 1, the caller holds the only reference, so no other thread can
    // copy it (a copy needs a reference) and nobody else can observe the count again; delete
    // without a read-modify-write. The acquire load pairs with the release decrements of the
    // previous owners, so their writes are visible to the destructor. (libstdc++'s shared_ptr
    // takes the same shortcut since GCC 12; it is most of what make_shared/reset costs.)
    if (ref_count_.load(std::memory_order_acquire) == 1) {
      if (deleter_ != nullptr) {
        detail::run_deleter(this);
      } else {
        ref_count_.store(0, std::memory_order_relaxed);  // unmanaged: keep the count exact
      }
      return;
    }
#if defined(__SANITIZE_THREAD__)
    // TSan does not model standalone fences; acq_rel is equivalent and TSan understands it.
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (deleter_ != nullptr) detail::run_deleter(this);
    }
#else
    // Release publishes this thread's writes to whoever deletes; the acquire fence makes the
    // deleting thread see every other owner's writes before the destructor runs.
    if (ref_count_.fetch_sub(1, std::memory_order_release) == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);
      if (deleter_ != nullptr) detail::run_deleter(this);
    }
#endif
  }

  uint32_t type_index_{TypeIndex::kObject};
  std::atomic<int32_t> ref_count_{0};
  FDeleter deleter_{nullptr};
};
static_assert(sizeof(Object) == 16, "the object header is 16 bytes (RFC)");

namespace detail {
// The one place allowed to touch an Object's header and an ObjectRef's pointer.
struct ObjectUnsafe {
  static void init_header(Object* obj, uint32_t type_index, Object::FDeleter deleter) noexcept {
    obj->type_index_ = type_index;
    obj->deleter_ = deleter;
  }
  // Gives a freshly built, still private object its first reference: a plain store of 1 (nobody
  // else can see the object yet, so no read-modify-write is needed).
  template <class T>
  static ObjectPtr<T> adopt_new(Object* obj) noexcept;
  static Object::FDeleter deleter(const Object* obj) noexcept { return obj->deleter_; }
  static const ObjectPtr<Object>& ptr(const ObjectRef& ref) noexcept;
  static ObjectPtr<Object>&& move_ptr(ObjectRef&& ref) noexcept;
  static ObjectPtr<Object>& mutable_ptr(ObjectRef& ref) noexcept;
  template <class T>
  static ObjectPtr<T> adopt(Object* obj) noexcept;
  // Raw owning pointers, for the C ABI's handles (a handle is an Object* that owns one count):
  // detach takes the handle's reference out of `ref` (which becomes null) without touching the
  // count; attach makes a handle that takes over one count the caller owns.
  static Object* detach(ObjectRef&& ref) noexcept;
  static ObjectRef attach(Object* obj) noexcept;
  static void inc_ref(Object* obj) noexcept { obj->inc_ref(); }
  static void dec_ref(Object* obj) noexcept { obj->dec_ref(); }
};

template <class T>
void default_deleter(Object* obj) noexcept {
  delete static_cast<T*>(obj);
  track_object_destroyed();
}
}  // namespace detail

template <class T>
bool Object::is_instance() const noexcept {
  if constexpr (std::is_same_v<T, Object>) {
    return true;
  } else {
    const uint32_t begin = T::runtime_type_index();
    if constexpr (T::kTypeFinal) {
      return type_index_ == begin;
    } else {
      // T reserved [begin, begin + kTypeChildSlots]: itself plus its child slots, both ends
      // inclusive (TVM #17901 excluded the last slot). Unsigned wrap makes this one compare.
      if (type_index_ - begin <= T::kTypeChildSlots) return true;
      if constexpr (!T::kTypeChildSlotsCanOverflow) {
        return false;
      } else {
        // A descendant always has a larger index than its ancestor. Object indices are always
        // registered (< kMaxTypeIndex), so the table lookup needs no bounds check.
        return type_index_ > begin && detail::is_overflow_descendant(type_index_, begin);
      }
    }
  }
}

// An intrusive, thread-safe reference-counted pointer to an object of type T (or a subtype).
// Copying increments the count (relaxed); destruction decrements it (release) and the last owner
// runs the object's deleter after an acquire fence. Like std::shared_ptr, one ObjectPtr instance
// must not be written by one thread while another reads it; distinct copies are independent.
template <class T>
class ObjectPtr {
 public:
  using element_type = T;

  ObjectPtr() noexcept = default;
  ObjectPtr(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  ObjectPtr(const ObjectPtr& other) noexcept : data_(other.data_) {
    if (data_ != nullptr) data_->inc_ref();
  }
  ObjectPtr(ObjectPtr&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(const ObjectPtr<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : data_(other.data_) {
    if (data_ != nullptr) data_->inc_ref();
  }
  template <class U, class = std::enable_if_t<std::is_base_of_v<T, U>>>
  ObjectPtr(ObjectPtr<U>&& other) noexcept  // NOLINT(google-explicit-constructor)
      : data_(std::exchange(other.data_, nullptr)) {}
  ~ObjectPtr() { reset(); }

  // Copy-and-swap: the copy takes its reference before ours is dropped, so self-assignment is safe.
  // NOLINTNEXTLINE(bugprone-unhandled-self-assignment)
  ObjectPtr& operator=(const ObjectPtr& other) noexcept {
    ObjectPtr(other).swap(*this);
    return *this;
  }
  ObjectPtr& operator=(ObjectPtr&& other) noexcept {
    ObjectPtr(std::move(other)).swap(*this);
    return *this;
  }

  T* get() const noexcept { return data_ == nullptr ? nullptr : static_cast<T*>(data_); }
  T* operator->() const noexcept { return get(); }
  T& operator*() const noexcept { return *get(); }
  explicit operator bool() const noexcept { return data_ != nullptr; }
  int32_t use_count() const noexcept { return data_ == nullptr ? 0 : data_->use_count(); }
  bool unique() const noexcept { return use_count() == 1; }

  void reset() noexcept {
    if (data_ != nullptr) {
      std::exchange(data_, nullptr)->dec_ref();
    }
  }
  void swap(ObjectPtr& other) noexcept { std::swap(data_, other.data_); }

  friend bool operator==(const ObjectPtr& a, const ObjectPtr& b) noexcept {
    return a.data_ == b.data_;
  }
  friend bool operator==(const ObjectPtr& a, std::nullptr_t) noexcept { return a.data_ == nullptr; }

 private:
  template <class U>
  friend class ObjectPtr;
  friend struct detail::ObjectUnsafe;
  // Takes a new reference to obj (count + 1).
  explicit ObjectPtr(Object* obj) noexcept : data_(obj) {
    if (data_ != nullptr) data_->inc_ref();
  }

  Object* data_{nullptr};
};

template <class T>
ObjectPtr<T> detail::ObjectUnsafe::adopt(Object* obj) noexcept {
  return ObjectPtr<T>(obj);
}

template <class T>
ObjectPtr<T> detail::ObjectUnsafe::adopt_new(Object* obj) noexcept {
  obj->ref_count_.store(1, std::memory_order_relaxed);
  ObjectPtr<T> p;
  p.data_ = obj;
  return p;
}

// Creates a T on the heap with new, sets its header and returns the first reference. If T's
// constructor throws, the memory is released and the exception propagates (nothing leaks).
template <class T, class... A>
ObjectPtr<T> make_object(A&&... args) {
  static_assert(std::is_base_of_v<Object, T>, "make_object<T>: T must derive from Object");
  const uint32_t index = T::runtime_type_index();  // may throw: before anything is allocated
  T* obj = new T(std::forward<A>(args)...);
  detail::ObjectUnsafe::init_header(obj, index, &detail::default_deleter<T>);
  detail::track_object_created();
  return detail::ObjectUnsafe::adopt_new<T>(static_cast<Object*>(obj));
}

// Gives an object constructed by the caller (in memory of the caller's choosing) its header and
// first reference. `deleter` runs when the count reaches zero: it must destroy the T and release
// its memory. This is how arenas and foreign allocators plug in; ObjectPool uses it too.
template <class T>
ObjectPtr<T> adopt_object(T* obj, Object::FDeleter deleter) {
  static_assert(std::is_base_of_v<Object, T>, "adopt_object<T>: T must derive from Object");
  CHANFLOW_CHECK(obj != nullptr && deleter != nullptr);
  detail::ObjectUnsafe::init_header(obj, T::runtime_type_index(), deleter);
  detail::track_object_created();
  return detail::ObjectUnsafe::adopt_new<T>(static_cast<Object*>(obj));
}

// A handle to any object, with const access. Subclasses (String, Array, Tensor ...) are typed
// handles over one object type. Copies share the object; equality is identity (same_as) unless a
// subclass defines content equality (String does). A default-constructed ObjectRef is null.
class CHANFLOW_API ObjectRef {
 public:
  using ContainerType = Object;

  ObjectRef() noexcept = default;
  explicit ObjectRef(ObjectPtr<Object> data) noexcept : data_(std::move(data)) {}
  template <class T, class = std::enable_if_t<std::is_base_of_v<Object, T>>>
  ObjectRef(ObjectPtr<T> data) noexcept  // NOLINT(google-explicit-constructor)
      : data_(std::move(data)) {}

  const Object* get() const noexcept { return data_.get(); }
  const Object* operator->() const noexcept { return data_.get(); }
  bool defined() const noexcept { return static_cast<bool>(data_); }
  int32_t use_count() const noexcept { return data_.use_count(); }
  bool unique() const noexcept { return data_.unique(); }
  bool same_as(const ObjectRef& other) const noexcept { return data_ == other.data_; }

  // The object as a const TObj if it is one (or a subtype), else nullptr (also for null refs).
  template <class TObj>
  const TObj* as() const noexcept {
    if (data_ != nullptr && data_->template is_instance<TObj>()) {
      return static_cast<const TObj*>(data_.get());
    }
    return nullptr;
  }

 protected:
  friend struct detail::ObjectUnsafe;
  ObjectPtr<Object> data_;
};

inline const ObjectPtr<Object>& detail::ObjectUnsafe::ptr(const ObjectRef& ref) noexcept {
  return ref.data_;
}
inline ObjectPtr<Object>&& detail::ObjectUnsafe::move_ptr(ObjectRef&& ref) noexcept {
  return std::move(ref.data_);
}
inline ObjectPtr<Object>& detail::ObjectUnsafe::mutable_ptr(ObjectRef& ref) noexcept {
  return ref.data_;
}
inline Object* detail::ObjectUnsafe::detach(ObjectRef&& ref) noexcept {
  return std::exchange(ref.data_.data_, nullptr);
}
inline ObjectRef detail::ObjectUnsafe::attach(Object* obj) noexcept {
  ObjectPtr<Object> p;
  p.data_ = obj;
  return ObjectRef(std::move(p));
}

// Defines the constructors and accessors of a typed handle `TypeName : ParentType` over ObjectName.
// Access is const: handles to shared objects must not mutate them (containers copy on write).
#define CHANFLOW_DEFINE_OBJECT_REF(TypeName, ParentType, ObjectName)         \
  using ContainerType = ObjectName;                                          \
  TypeName() noexcept = default;                                             \
  explicit TypeName(::chanflow::ObjectPtr<::chanflow::Object> data) noexcept \
      : ParentType(std::move(data)) {}                                       \
  const ObjectName* operator->() const noexcept {                            \
    return static_cast<const ObjectName*>(data_.get());                      \
  }                                                                          \
  const ObjectName* get() const noexcept { return operator->(); }            \
  static_assert(true, "require a semicolon")

// Like CHANFLOW_DEFINE_OBJECT_REF, for objects whose methods are thread-safe and meant to be
// called through shared handles (channels, scopes): access is non-const.
#define CHANFLOW_DEFINE_MUTABLE_OBJECT_REF(TypeName, ParentType, ObjectName)       \
  using ContainerType = ObjectName;                                                \
  TypeName() noexcept = default;                                                   \
  explicit TypeName(::chanflow::ObjectPtr<::chanflow::Object> data) noexcept       \
      : ParentType(std::move(data)) {}                                             \
  ObjectName* operator->() const noexcept {                                        \
    return static_cast<ObjectName*>(const_cast<::chanflow::Object*>(data_.get())); \
  }                                                                                \
  ObjectName* get() const noexcept { return operator->(); }                        \
  static_assert(true, "require a semicolon")

// Converts a handle to a more specific handle type. A null ref gives a null TRef. Throws TypeError
// naming both types when the object is not a TRef::ContainerType.
template <class TRef>
TRef downcast(ObjectRef ref) {
  using TObj = typename TRef::ContainerType;
  if (ref.defined() && !ref->template is_instance<TObj>()) {
    CHANFLOW_THROW(TypeError) << "downcast: expected an object of type '"
                              << detail::type_key_of(TObj::runtime_type_index()) << "' but got '"
                              << ref->type_key() << "'";
  }
  return TRef(detail::ObjectUnsafe::move_ptr(std::move(ref)));
}

}  // namespace chanflow

template <class T>
struct std::hash<chanflow::ObjectPtr<T>> {
  size_t operator()(const chanflow::ObjectPtr<T>& p) const noexcept {
    return std::hash<const void*>()(p.get());
  }
};
