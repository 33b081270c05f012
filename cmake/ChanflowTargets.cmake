# Helpers that give every layer and every test the same shape.

# Warnings live on an interface target so each layer opts in the same way. CI turns them into errors.
add_library(chanflow_warnings INTERFACE)
target_compile_options(chanflow_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough
  # Not -Wnull-dereference: GCC derives it from the optimiser's path analysis, so it changes with
  # -O levels and flags checked `as<T>()` results after inlining; null handles are covered by
  # tests and sanitizers instead.
  # GCC 12 reports impossible overlaps inside libstdc++'s std::string at -O3 (GCC PR 105329,
  # a false positive in the standard library, not in chanflow).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  # GCC 12 also flags std::optional<T> payloads as "maybe uninitialized" after inlining (GCC PR
  # 80635, a long-standing false positive). -Wuninitialized (the definite case) stays on.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>
  # Clang checks the lock annotations of core/thread_annotations.h (the `clang` preset,
  # docs/runtime.md "Checked locking"); GCC has no such analysis and the macros expand to nothing.
  $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety>
  $<$<BOOL:${CHANFLOW_WERROR}>:-Werror>)

# chanflow_add_layer(<name> SOURCES <files...> DEPS <targets...> [PRIVATE_DEPS <targets...>])
# Creates chanflow_<name>, aliased chanflow::<name>, exported as part of the chanflow package.
function(chanflow_add_layer name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(chanflow_${name} ${A_SOURCES})
  add_library(chanflow::${name} ALIAS chanflow_${name})
  set_target_properties(chanflow_${name} PROPERTIES
    EXPORT_NAME ${name}
    OUTPUT_NAME chanflow_${name}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(chanflow_${name} PUBLIC cxx_std_20)
  target_include_directories(chanflow_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_definitions(chanflow_${name} PRIVATE CHANFLOW_BUILDING_LIBRARY)
  if(NOT BUILD_SHARED_LIBS)
    target_compile_definitions(chanflow_${name} PUBLIC CHANFLOW_STATIC)
  endif()
  target_link_libraries(chanflow_${name} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS}
    $<BUILD_INTERFACE:chanflow_warnings>)
  set_property(GLOBAL APPEND PROPERTY CHANFLOW_LAYERS chanflow_${name})
endfunction()

# chanflow_add_test(<name> SOURCES <files...> DEPS <targets...> LABELS <labels...>
#                   [TIMEOUT <seconds>] [ENV <VAR=value...>])
# One GoogleTest executable, registered with CTest as a single test (gtest_discover_tests would
# run every case in its own process, which is slow on 2 cores and hides cross-test leaks).
function(chanflow_add_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;DEPS;LABELS;ENV" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_DEPS} chanflow_test_main chanflow_warnings)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT})
  if(A_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${A_ENV}")
  endif()
endfunction()
