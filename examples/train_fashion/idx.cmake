# The Fashion-MNIST IDX reader (idx.h) and its test. Included from examples/CMakeLists.txt and from
# the fuzz project fuzz/idx/CMakeLists.txt, hence paths relative to this file. Needs ZLIB::ZLIB
# (find_package(ZLIB) before the include).
add_library(train_fashion_idx STATIC ${CMAKE_CURRENT_LIST_DIR}/idx.cc)
target_include_directories(train_fashion_idx PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(train_fashion_idx PUBLIC chanflow::core PRIVATE ZLIB::ZLIB chanflow_warnings)
if(CHANFLOW_BUILD_TESTS)
  # ZLIB::ZLIB for the test's own gzip writer. The real-data case skips without the Debian files.
  chanflow_add_test(train_fashion_idx_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/tests/idx_test.cc
    DEPS train_fashion_idx ZLIB::ZLIB
    LABELS unit
    TIMEOUT 120)
endif()
