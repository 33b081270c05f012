// The C ABI (chanflow/c_api.h) from a C program: built-ins called by name, a C function registered
// and called through the registry (also from green threads and from several OS threads at once),
// reference counting, and every error path's status and text. Compiled as C11; exits nonzero on
// the first failed check's end, after printing every failure.
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chanflow/c_api.h"

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

// A call that must succeed; prints the last error otherwise.
#define OK(call)                                                                                   \
  do {                                                                                             \
    if ((call) != 0) {                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, chanflow_last_error()); \
      ++g_failures;                                                                                \
    }                                                                                              \
  } while (0)

// A call that must fail with exactly this error text.
#define FAILS_WITH(call, text) check_fails(call, text, #call, __LINE__)

static void check_fails(int status, const char* want, const char* what, int line) {
  if (status == 0) {
    fprintf(stderr, "%s:%d: %s succeeded, expected the error \"%s\"\n", __FILE__, line, what, want);
    ++g_failures;
  } else if (strcmp(chanflow_last_error(), want) != 0) {
    fprintf(stderr, "%s:%d: %s failed with\n  \"%s\"\nexpected\n  \"%s\"\n", __FILE__, line, what,
            chanflow_last_error(), want);
    ++g_failures;
  }
}

// A call that must fail with an error text starting with `prefix`.
#define FAILS_STARTING(call, prefix) check_fails_prefix(call, prefix, #call, __LINE__)

static void check_fails_prefix(int status, const char* prefix, const char* what, int line) {
  if (status == 0 || strncmp(chanflow_last_error(), prefix, strlen(prefix)) != 0) {
    fprintf(stderr, "%s:%d: %s: status %d, error \"%s\", expected an error starting \"%s\"\n",
            __FILE__, line, what, status, chanflow_last_error(), prefix);
    ++g_failures;
  }
}

static int64_t int_of(chanflow_object_t obj) {
  int64_t v = -999;
  OK(chanflow_int_value(obj, &v));
  return v;
}

static int type_key_is(chanflow_object_t obj, const char* key) {
  const char* k = NULL;
  return chanflow_object_type_key(obj, &k) == 0 && strcmp(k, key) == 0;
}

// ---- a C function: adds two Ints, counting its calls in its user data ----

struct Adder {
  atomic_long calls;
  atomic_int* deleted;  // set to 1 by the deleter
};

static int c_add(void* user_data, const chanflow_object_t* args, size_t num_args,
                 chanflow_object_t* out) {
  struct Adder* adder = (struct Adder*)user_data;
  atomic_fetch_add(&adder->calls, 1);
  if (num_args != 2) {
    chanflow_set_last_error("TypeError: c_test.add: expected 2 arguments");
    return 1;
  }
  int64_t a = 0, b = 0;
  // A failed chanflow call inside the body: its error text is the body's error as it is.
  if (chanflow_int_value(args[0], &a) != 0 || chanflow_int_value(args[1], &b) != 0) return 1;
  return chanflow_int_new(a + b, out);
}

static void delete_adder(void* user_data) {
  struct Adder* adder = (struct Adder*)user_data;
  atomic_store(adder->deleted, 1);
  free(adder);
}

// Fails with a chosen text ("ShapeError: ..."), or without any when user_data is NULL.
static int c_fail(void* user_data, const chanflow_object_t* args, size_t num_args,
                  chanflow_object_t* out) {
  (void)args;
  (void)num_args;
  (void)out;
  if (user_data != NULL) {
    chanflow_set_last_error((const char*)user_data);
    return 1;
  }
  return 7;
}

// Fails after storing a result: the result must be released, not leaked.
static int c_fail_with_result(void* user_data, const chanflow_object_t* args, size_t num_args,
                              chanflow_object_t* out) {
  (void)user_data;
  (void)args;
  (void)num_args;
  chanflow_int_new(5, out);
  chanflow_set_last_error("Error: failed after making a result");
  return 1;
}

// Returns its argument as its result (a new reference: retained).
static int c_identity(void* user_data, const chanflow_object_t* args, size_t num_args,
                      chanflow_object_t* out) {
  (void)user_data;
  if (num_args != 1) {
    chanflow_set_last_error("TypeError: c_test.identity: expected 1 argument");
    return 1;
  }
  if (args[0] != NULL && chanflow_object_retain(args[0]) != 0) return 1;
  *out = args[0];
  return 0;
}

// ---- tests ----

static void test_boxed_values(void) {
  chanflow_object_t i = NULL, f = NULL, b = NULL, s = NULL;
  OK(chanflow_int_new(-42, &i));
  OK(chanflow_float_new(2.5, &f));
  OK(chanflow_bool_new(7, &b));
  static const char kBytes[] = {'a', '\0', 'b'};
  OK(chanflow_string_new(kBytes, sizeof kBytes, &s));
  CHECK(int_of(i) == -42);
  double fv = 0;
  OK(chanflow_float_value(f, &fv));
  CHECK(fv == 2.5);
  int bv = 0;
  OK(chanflow_bool_value(b, &bv));
  CHECK(bv == 1);
  const char* data = NULL;
  size_t size = 0;
  OK(chanflow_string_value(s, &data, &size));
  CHECK(size == 3 && memcmp(data, kBytes, 3) == 0 && data[3] == '\0');
  CHECK(type_key_is(i, "Int") && type_key_is(f, "Float") && type_key_is(b, "Bool") &&
        type_key_is(s, "String"));
  uint32_t index = 0;
  OK(chanflow_object_type_index(s, &index));
  CHECK(index == 1);
  chanflow_object_t empty = NULL;
  OK(chanflow_string_new(NULL, 0, &empty));
  OK(chanflow_string_value(empty, &data, &size));
  CHECK(size == 0 && data[0] == '\0');

  // Wrong types name both.
  int64_t iv = 0;
  FAILS_WITH(chanflow_int_value(s, &iv),
             "TypeError: chanflow_int_value: obj must be a 'Int', got a 'String'");
  FAILS_WITH(chanflow_string_value(i, &data, &size),
             "TypeError: chanflow_string_value: obj must be a 'String', got a 'Int'");
  FAILS_WITH(chanflow_float_value(b, &fv),
             "TypeError: chanflow_float_value: obj must be a 'Float', got a 'Bool'");
  FAILS_WITH(chanflow_bool_value(f, &bv),
             "TypeError: chanflow_bool_value: obj must be a 'Bool', got a 'Float'");
  FAILS_WITH(chanflow_string_new(NULL, 3, &empty),
             "TypeError: chanflow_string_new: data is NULL but size is 3");
  FAILS_WITH(chanflow_int_new(1, NULL), "TypeError: chanflow_int_new: out is NULL");
  FAILS_WITH(chanflow_float_new(1, NULL), "TypeError: chanflow_float_new: out is NULL");
  FAILS_WITH(chanflow_bool_new(1, NULL), "TypeError: chanflow_bool_new: out is NULL");
  FAILS_WITH(chanflow_string_new("x", 1, NULL), "TypeError: chanflow_string_new: out is NULL");
  FAILS_WITH(chanflow_int_value(i, NULL), "TypeError: chanflow_int_value: out is NULL");

  OK(chanflow_object_release(i));
  OK(chanflow_object_release(f));
  OK(chanflow_object_release(b));
  OK(chanflow_object_release(s));
  OK(chanflow_object_release(empty));
}

static void test_type_registry(void) {
  uint32_t index = 0;
  OK(chanflow_type_key_to_index("Int", &index));
  CHECK(index == 4);
  OK(chanflow_type_key_to_index("Function", &index));
  CHECK(index == 7);
  const char* key = NULL;
  OK(chanflow_type_index_to_key(7, &key));
  CHECK(key != NULL && strcmp(key, "Function") == 0);
  OK(chanflow_type_index_to_key(0, &key));
  CHECK(strcmp(key, "Object") == 0);
  FAILS_WITH(chanflow_type_key_to_index("no.such.Type", &index),
             "Error: no type with key 'no.such.Type' is registered");
  FAILS_WITH(chanflow_type_index_to_key(60, &key), "Error: no type has index 60");
  FAILS_WITH(chanflow_type_index_to_key(UINT32_MAX, &key), "Error: no type has index 4294967295");
  FAILS_WITH(chanflow_type_key_to_index(NULL, &index),
             "TypeError: chanflow_type_key_to_index: key is NULL");
}

static void test_builtins(void) {
  chanflow_object_t a = NULL, s = NULL, result = NULL;
  OK(chanflow_int_new(3, &a));
  OK(chanflow_string_new("hi", 2, &s));

  // core.type_key by name.
  OK(chanflow_func_call_by_name("core.type_key", &a, 1, &result));
  const char* data = NULL;
  size_t size = 0;
  OK(chanflow_string_value(result, &data, &size));
  CHECK(size == 3 && strcmp(data, "Int") == 0);
  OK(chanflow_object_release(result));

  // core.make_array(a, NULL, s) through a function handle, then core.to_json / core.from_json.
  chanflow_object_t make_array = NULL, to_json = NULL, array = NULL, text = NULL, back = NULL;
  OK(chanflow_func_get("core.make_array", &make_array));
  CHECK(type_key_is(make_array, "Function"));
  chanflow_object_t items[3] = {a, NULL, s};
  OK(chanflow_func_call(make_array, items, 3, &array));
  CHECK(type_key_is(array, "Array"));
  OK(chanflow_func_get("core.to_json", &to_json));
  OK(chanflow_func_call(to_json, &array, 1, &text));
  OK(chanflow_string_value(text, &data, &size));
  CHECK(strstr(data, "\"chanflow.json\"") != NULL);
  OK(chanflow_func_call_by_name("core.from_json", &text, 1, &back));
  CHECK(type_key_is(back, "Array"));
  // The round trip is exact: the same JSON again.
  chanflow_object_t text2 = NULL;
  OK(chanflow_func_call(to_json, &back, 1, &text2));
  const char* data2 = NULL;
  size_t size2 = 0;
  OK(chanflow_string_value(text2, &data2, &size2));
  CHECK(size == size2 && memcmp(data, data2, size) == 0);

  // No arguments at all: args may be NULL.
  chanflow_object_t empty_array = NULL;
  OK(chanflow_func_call(make_array, NULL, 0, &empty_array));
  CHECK(type_key_is(empty_array, "Array"));

  // The built-ins' own errors come back with their class.
  result = NULL;
  FAILS_WITH(chanflow_func_call_by_name("core.from_json", &a, 1, &result),
             "TypeError: core.from_json: argument 0 must be a 'String', got a 'Int'");
  FAILS_WITH(chanflow_func_call_by_name("core.type_key", NULL, 0, &result),
             "TypeError: core.type_key: expected 1 argument, got 0");
  chanflow_object_t nothing = NULL;
  FAILS_WITH(chanflow_func_call_by_name("core.type_key", &nothing, 1, &result),
             "TypeError: core.type_key: argument 0 must be an object, got null");
  FAILS_STARTING(chanflow_func_call_by_name("core.from_json", &s, 1, &result), "Error: ");
  CHECK(result == NULL);  // out-parameters are written only on success

  chanflow_object_t all[] = {a, s, make_array, to_json, array, text, back, text2, empty_array};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) OK(chanflow_object_release(all[i]));
}

static void test_c_function_and_ref_counting(void) {
  const int64_t live_before = chanflow_live_object_count();
  atomic_int deleted = 0;
  struct Adder* adder = (struct Adder*)malloc(sizeof *adder);
  atomic_init(&adder->calls, 0);
  adder->deleted = &deleted;

  chanflow_object_t func = NULL;
  OK(chanflow_func_new(c_add, adder, delete_adder, &func));
  int32_t count = 0;
  OK(chanflow_object_use_count(func, &count));
  CHECK(count == 1);
  OK(chanflow_object_retain(func));
  OK(chanflow_object_use_count(func, &count));
  CHECK(count == 2);
  OK(chanflow_func_register("c_test.add", func, 0));
  OK(chanflow_object_use_count(func, &count));
  CHECK(count == 3);  // ours twice, the registry's once
  OK(chanflow_object_release(func));
  OK(chanflow_object_release(func));
  CHECK(atomic_load(&deleted) == 0);  // the registry keeps it alive

  // Called by name, and by a handle got from the registry.
  chanflow_object_t args[2], sum = NULL;
  OK(chanflow_int_new(20, &args[0]));
  OK(chanflow_int_new(22, &args[1]));
  OK(chanflow_func_call_by_name("c_test.add", args, 2, &sum));
  CHECK(int_of(sum) == 42);
  OK(chanflow_object_release(sum));
  chanflow_object_t got = NULL;
  OK(chanflow_func_get("c_test.add", &got));
  CHECK(got == func);  // the same object
  OK(chanflow_func_call(got, args, 2, &sum));
  CHECK(int_of(sum) == 42);
  OK(chanflow_object_release(sum));

  // Through a C++ built-in, on a green thread: runtime.call_in_green_thread(c_test.add, 20, 22).
  chanflow_object_t call_args[3] = {got, args[0], args[1]};
  OK(chanflow_func_call_by_name("runtime.call_in_green_thread", call_args, 3, &sum));
  CHECK(int_of(sum) == 42);
  OK(chanflow_object_release(sum));
  // runtime.map_in_green_threads over 16 items, each call on its own green thread.
  chanflow_object_t make_array = NULL, pairs[16], pair_args[2], array = NULL, mapped = NULL;
  chanflow_object_t identity = NULL;
  OK(chanflow_func_get("core.make_array", &make_array));
  OK(chanflow_func_new(c_identity, NULL, NULL, &identity));
  for (int i = 0; i < 16; ++i) OK(chanflow_int_new(i, &pairs[i]));
  OK(chanflow_func_call(make_array, pairs, 16, &array));
  pair_args[0] = identity;
  pair_args[1] = array;
  OK(chanflow_func_call_by_name("runtime.map_in_green_threads", pair_args, 2, &mapped));
  chanflow_object_t json_a = NULL, json_b = NULL;
  OK(chanflow_func_call_by_name("core.to_json", &array, 1, &json_a));
  OK(chanflow_func_call_by_name("core.to_json", &mapped, 1, &json_b));
  const char *da = NULL, *db = NULL;
  size_t na = 0, nb = 0;
  OK(chanflow_string_value(json_a, &da, &na));
  OK(chanflow_string_value(json_b, &db, &nb));
  CHECK(na == nb && memcmp(da, db, na) == 0);  // identity over every item, in order
  for (int i = 0; i < 16; ++i) OK(chanflow_object_release(pairs[i]));
  chanflow_object_t rest[] = {make_array, identity, array, mapped, json_a, json_b};
  for (size_t i = 0; i < sizeof rest / sizeof rest[0]; ++i) OK(chanflow_object_release(rest[i]));

  // The C function's own error, through the registry.
  FAILS_WITH(chanflow_func_call_by_name("c_test.add", args, 1, &sum),
             "TypeError: c_test.add: expected 2 arguments");
  chanflow_object_t bad_args[2] = {args[0], got};
  FAILS_WITH(chanflow_func_call_by_name("c_test.add", bad_args, 2, &sum),
             "TypeError: chanflow_int_value: obj must be a 'Int', got a 'Function'");
  // By name, by handle, on a green thread, and the two failed calls.
  CHECK(atomic_load(&adder->calls) == 5);

  // Registered twice: refused unless overriding.
  FAILS_WITH(chanflow_func_register("c_test.add", got, 0),
             "Error: register_func: a global function named 'c_test.add' is already registered "
             "(pass override=true to replace it)");
  OK(chanflow_func_register("c_test.add", got, 1));

  // Removal drops the registry's reference; ours (got) is the last one, so the deleter runs on
  // our release and not before.
  int removed = 0;
  OK(chanflow_func_remove("c_test.add", &removed));
  CHECK(removed == 1);
  OK(chanflow_func_remove("c_test.add", &removed));
  CHECK(removed == 0);
  OK(chanflow_func_remove("c_test.add", NULL));
  CHECK(atomic_load(&deleted) == 0);
  OK(chanflow_object_use_count(got, &count));
  CHECK(count == 1);
  OK(chanflow_object_release(got));
  CHECK(atomic_load(&deleted) == 1);
  OK(chanflow_object_release(args[0]));
  OK(chanflow_object_release(args[1]));
  if (live_before >= 0) CHECK(chanflow_live_object_count() == live_before);

  // A function whose creation fails does not own its user data: no deleter call.
  atomic_int never = 0;
  struct Adder* unused = (struct Adder*)malloc(sizeof *unused);
  unused->deleted = &never;
  chanflow_object_t f = NULL;
  FAILS_WITH(chanflow_func_new(NULL, unused, delete_adder, &f),
             "TypeError: chanflow_func_new: fn is NULL");
  FAILS_WITH(chanflow_func_new(c_add, unused, delete_adder, NULL),
             "TypeError: chanflow_func_new: out is NULL");
  CHECK(atomic_load(&never) == 0);
  free(unused);
  // No deleter at all is fine too.
  OK(chanflow_func_new(c_add, NULL, NULL, &f));
  OK(chanflow_object_release(f));
}

static void test_errors_inside_called_functions(void) {
  chanflow_object_t shape_fail = NULL, silent_fail = NULL, result_fail = NULL, result = NULL;
  OK(chanflow_func_new(c_fail, (void*)"ShapeError: matmul: [2, 3] x [4, 5]", NULL, &shape_fail));
  OK(chanflow_func_new(c_fail, NULL, NULL, &silent_fail));
  OK(chanflow_func_new(c_fail_with_result, NULL, NULL, &result_fail));
  const int64_t live_before = chanflow_live_object_count();

  FAILS_WITH(chanflow_func_call(shape_fail, NULL, 0, &result),
             "ShapeError: matmul: [2, 3] x [4, 5]");
  FAILS_WITH(chanflow_func_call(silent_fail, NULL, 0, &result),
             "Error: a C function failed (returned 7) without setting an error text "
             "(chanflow_set_last_error)");
  FAILS_WITH(chanflow_func_call(result_fail, NULL, 0, &result),
             "Error: failed after making a result");
  if (live_before >= 0) CHECK(chanflow_live_object_count() == live_before);  // released

  // The class survives a trip through C++ and a green thread: C -> C++ -> green thread -> C.
  FAILS_WITH(chanflow_func_call_by_name("runtime.call_in_green_thread", &shape_fail, 1, &result),
             "ShapeError: matmul: [2, 3] x [4, 5]");
  CHECK(result == NULL);

  chanflow_object_t all[] = {shape_fail, silent_fail, result_fail};
  for (size_t i = 0; i < 3; ++i) OK(chanflow_object_release(all[i]));
}

static void test_bad_handles_and_arguments(void) {
  chanflow_object_t result = NULL, i = NULL;
  OK(chanflow_int_new(1, &i));
  uint32_t index = 0;
  int32_t count = 0;
  const char* key = NULL;

  FAILS_WITH(chanflow_object_retain(NULL),
             "TypeError: chanflow_object_retain: obj is a null handle");
  OK(chanflow_object_release(NULL));  // as free(NULL)
  FAILS_WITH(chanflow_object_type_index(NULL, &index),
             "TypeError: chanflow_object_type_index: obj is a null handle");
  FAILS_WITH(chanflow_object_type_key(NULL, &key),
             "TypeError: chanflow_object_type_key: obj is a null handle");
  FAILS_WITH(chanflow_object_use_count(NULL, &count),
             "TypeError: chanflow_object_use_count: obj is a null handle");
  FAILS_WITH(chanflow_func_call(NULL, NULL, 0, &result),
             "TypeError: chanflow_func_call: func is a null handle");
  FAILS_WITH(chanflow_func_register("c_test.null", NULL, 0),
             "TypeError: chanflow_func_register: func is a null handle");

  // Pointers that are not handles: misaligned, and memory that holds no object.
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)0x1001),
             "TypeError: chanflow_object_retain: obj is not a chanflow object handle (misaligned "
             "pointer)");
  uint64_t not_an_object[4] = {UINT64_MAX, UINT64_MAX, 0, 0};
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(void*)not_an_object),
             "TypeError: chanflow_object_retain: obj is not a live chanflow object handle");
  FAILS_WITH(chanflow_func_call((chanflow_object_t)(void*)not_an_object, NULL, 0, &result),
             "TypeError: chanflow_func_call: func is not a live chanflow object handle");
  chanflow_object_t bad_arg = (chanflow_object_t)(void*)not_an_object;
  FAILS_WITH(chanflow_func_call_by_name("core.make_array", &bad_arg, 1, &result),
             "TypeError: chanflow_func_call_by_name: args[0] is not a live chanflow object "
             "handle");

  // Not a function.
  FAILS_WITH(chanflow_func_call(i, NULL, 0, &result),
             "TypeError: chanflow_func_call: func must be a 'Function', got a 'Int'");
  FAILS_WITH(chanflow_func_register("c_test.int", i, 0),
             "TypeError: chanflow_func_register: func must be a 'Function', got a 'Int'");

  // Unknown names, bad names, bad arrays and outputs.
  FAILS_WITH(chanflow_func_get("c_test.nope", &result),
             "Error: no global function named 'c_test.nope' is registered");
  FAILS_WITH(chanflow_func_call_by_name("c_test.nope", NULL, 0, &result),
             "Error: no global function named 'c_test.nope' is registered");
  FAILS_WITH(chanflow_func_get(NULL, &result), "TypeError: chanflow_func_get: name is NULL");
  FAILS_WITH(chanflow_func_remove(NULL, NULL), "TypeError: chanflow_func_remove: name is NULL");
  chanflow_object_t f = NULL;
  OK(chanflow_func_get("core.make_array", &f));
  FAILS_WITH(chanflow_func_register("", f, 0), "Error: register_func: the name must not be empty");
  FAILS_WITH(chanflow_func_call(f, NULL, 2, &result),
             "TypeError: chanflow_func_call: args is NULL but num_args is 2");
  FAILS_WITH(chanflow_func_call(f, NULL, 0, NULL), "TypeError: chanflow_func_call: out is NULL");
  const char* const* names = NULL;
  size_t n = 0;
  FAILS_WITH(chanflow_func_list(NULL, &n), "TypeError: chanflow_func_list: names is NULL");
  FAILS_WITH(chanflow_func_list(&names, NULL), "TypeError: chanflow_func_list: count is NULL");
  CHECK(result == NULL);
  OK(chanflow_object_release(f));
  OK(chanflow_object_release(i));
}

// White-box: sets an object's reference count, at offset 4 of its 16-byte header (docs/core.md:
// uint32 type index, then the 32-bit count), so that the limit is reached without 2^30 retains
// (minutes). Read back through chanflow_object_use_count, so a wrong offset fails the test.
static void set_use_count(chanflow_object_t obj, int32_t count) {
  memcpy((char*)obj + 4, &count, sizeof count);
  int32_t got = 0;
  OK(chanflow_object_use_count(obj, &got));
  CHECK(got == count);
}

// The count cannot wrap: a retain at 2^30 references is refused and leaves the object usable
// (it wrapped after 2^31 - 1 retains, and the object could then never be used or freed); a
// function handing out one more handle to such an object is refused the same way.
static void test_reference_count_limit(void) {
  const int32_t limit = (int32_t)1 << 30;
  chanflow_object_t i = NULL;
  OK(chanflow_int_new(5, &i));
  set_use_count(i, limit - 1);
  OK(chanflow_object_retain(i));
  int32_t count = 0;
  OK(chanflow_object_use_count(i, &count));
  CHECK(count == limit);
  FAILS_WITH(chanflow_object_retain(i),
             "LimitError: chanflow_object_retain: obj already has 1073741824 references, the most "
             "a C handle's object may have (2^30); release some first");
  OK(chanflow_object_use_count(i, &count));
  CHECK(count == limit);
  CHECK(int_of(i) == 5);
  OK(chanflow_object_release(i));
  OK(chanflow_object_use_count(i, &count));
  CHECK(count == limit - 1);

  chanflow_object_t f = NULL, got = NULL;
  OK(chanflow_func_new(c_identity, NULL, NULL, &f));
  OK(chanflow_func_register("c_test.limit", f, 0));
  set_use_count(f, limit);
  FAILS_WITH(chanflow_func_get("c_test.limit", &got),
             "LimitError: chanflow_func_get: the function already has 1073741824 references, the "
             "most a C handle's object may have (2^30); release some first");
  CHECK(got == NULL);
  OK(chanflow_object_use_count(f, &count));
  CHECK(count == limit);  // the refused reference was given back
  set_use_count(f, 2);    // ours and the registry's
  OK(chanflow_func_remove("c_test.limit", NULL));
  OK(chanflow_object_release(f));
  set_use_count(i, 1);
  OK(chanflow_object_release(i));
}

// Pointers that cannot be objects are refused before their memory is read (each segfaulted).
static void test_pointers_that_are_not_handles(void) {
  const char* first_page =
      "TypeError: chanflow_object_retain: obj is not a chanflow object handle "
      "(a pointer into the first page)";
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)0x10), first_page);
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)0x800), first_page);
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)(sysconf(_SC_PAGESIZE) - 16)),
             first_page);
  int32_t count = 0;
  FAILS_WITH(chanflow_object_use_count((chanflow_object_t)(uintptr_t)0x800, &count),
             "TypeError: chanflow_object_use_count: obj is not a chanflow object handle (a "
             "pointer into the first page)");
  const char* not_user =
      "TypeError: chanflow_object_retain: obj is not a chanflow object handle "
      "(not a user-space address)";
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)(UINTPTR_MAX - 7)), not_user);
#if defined(__x86_64__)
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)0xffff800000000000u), not_user);
  FAILS_WITH(chanflow_object_retain((chanflow_object_t)(uintptr_t)0x0100000000000000u), not_user);
#endif
}

static void test_list(void) {
  chanflow_object_t f = NULL;
  OK(chanflow_func_new(c_identity, NULL, NULL, &f));
  OK(chanflow_func_register("c_test.listed", f, 0));
  OK(chanflow_object_release(f));
  const char* const* names = NULL;
  size_t n = 0;
  OK(chanflow_func_list(&names, &n));
  int found_builtin = 0, found_own = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) CHECK(strcmp(names[i - 1], names[i]) < 0);  // sorted, no duplicates
    found_builtin |= strcmp(names[i], "core.to_json") == 0;
    found_own |= strcmp(names[i], "c_test.listed") == 0;
  }
  CHECK(found_builtin && found_own);
  int removed = 0;
  OK(chanflow_func_remove("c_test.listed", &removed));
  CHECK(removed == 1);
  OK(chanflow_func_list(&names, &n));
  for (size_t i = 0; i < n; ++i) CHECK(strcmp(names[i], "c_test.listed") != 0);
}

// ---- several OS threads calling one C function through the registry at once ----

enum { kThreads = 4, kCallsPerThread = 2000 };

static void* caller_thread(void* arg) {
  const int64_t base = (int64_t)(intptr_t)arg;
  long failures = 0;
  for (int i = 0; i < kCallsPerThread; ++i) {
    chanflow_object_t args[2] = {NULL, NULL}, sum = NULL;
    int64_t v = 0;
    if (chanflow_int_new(base, &args[0]) != 0 || chanflow_int_new(i, &args[1]) != 0 ||
        chanflow_func_call_by_name("c_test.concurrent_add", args, 2, &sum) != 0 ||
        chanflow_int_value(sum, &v) != 0 || v != base + i) {
      ++failures;
    }
    chanflow_object_release(args[0]);
    chanflow_object_release(args[1]);
    chanflow_object_release(sum);
  }
  return (void*)(intptr_t)failures;
}

static void test_concurrent_calls(void) {
  atomic_int deleted = 0;
  struct Adder* adder = (struct Adder*)malloc(sizeof *adder);
  atomic_init(&adder->calls, 0);
  adder->deleted = &deleted;
  chanflow_object_t f = NULL;
  OK(chanflow_func_new(c_add, adder, delete_adder, &f));
  OK(chanflow_func_register("c_test.concurrent_add", f, 0));
  OK(chanflow_object_release(f));
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    CHECK(pthread_create(&threads[t], NULL, caller_thread, (void*)(intptr_t)(t * 100000)) == 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    void* failures = NULL;
    CHECK(pthread_join(threads[t], &failures) == 0);
    CHECK(failures == NULL);
  }
  CHECK(atomic_load(&adder->calls) == kThreads * kCallsPerThread);
  OK(chanflow_func_remove("c_test.concurrent_add", NULL));
  CHECK(atomic_load(&deleted) == 1);  // the registry held the last reference
}

int main(void) {
  CHECK(strcmp(chanflow_last_error(), "") == 0);
  const int64_t live_at_start = chanflow_live_object_count();
  test_boxed_values();
  test_type_registry();
  test_builtins();
  test_c_function_and_ref_counting();
  test_errors_inside_called_functions();
  test_bad_handles_and_arguments();
  test_reference_count_limit();
  test_pointers_that_are_not_handles();
  test_list();
  test_concurrent_calls();
  chanflow_set_last_error(NULL);
  CHECK(strcmp(chanflow_last_error(), "") == 0);
  // Everything made here was released: in tracking builds the count is back where it started.
  if (live_at_start >= 0) {
    CHECK(chanflow_live_object_count() == live_at_start);
    printf("live objects: %" PRId64 " at start and at the end\n", chanflow_live_object_count());
  }
  if (g_failures != 0) {
    fprintf(stderr, "c_api_test: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
