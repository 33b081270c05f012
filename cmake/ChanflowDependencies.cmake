# Every third-party dependency is a Debian 12 package found with find_package; none is vendored or
# downloaded. A missing one stops configuration with the package to install.

# chanflow_require(<find_package args...> DEBIAN <package> [<package>...])
macro(chanflow_require name)
  cmake_parse_arguments(_cfr "" "" "DEBIAN;ARGS" ${ARGN})
  find_package(${name} ${_cfr_ARGS} QUIET)
  if(NOT ${name}_FOUND)
    message(FATAL_ERROR
      "chanflow: dependency '${name}' not found. On Debian 12 install it with:\n"
      "  sudo apt-get install ${_cfr_DEBIAN}\n"
      "or run scripts/bootstrap.sh, which installs everything chanflow needs.")
  endif()
endmacro()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
chanflow_require(nlohmann_json ARGS 3.10 DEBIAN nlohmann-json3-dev)
chanflow_require(fmt ARGS 9 DEBIAN libfmt-dev)
chanflow_require(Boost ARGS 1.74 CONFIG COMPONENTS context DEBIAN libboost-context-dev)
chanflow_require(dlpack DEBIAN libdlpack-dev)
set(BLA_VENDOR OpenBLAS)
chanflow_require(BLAS DEBIAN libopenblas-dev)
chanflow_require(Protobuf ARGS 3.21 DEBIAN "libprotobuf-dev protobuf-compiler")
chanflow_require(CLI11 DEBIAN libcli11-dev)
if(CHANFLOW_BUILD_TESTS)
  chanflow_require(GTest DEBIAN "libgtest-dev libgmock-dev")
endif()
if(CHANFLOW_BUILD_BENCH)
  chanflow_require(benchmark DEBIAN libbenchmark-dev)
endif()
