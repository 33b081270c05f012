# cpack -G DEB (from the build tree): one Debian package `chanflow` with the library (headers,
# static layers, CMake and pkg-config files), the `chanflow` command and the Python package
# (/usr/lib/python3/dist-packages/chanflow, found by Debian's python3 without PYTHONPATH).
set(CPACK_PACKAGE_NAME chanflow)
set(CPACK_PACKAGE_VENDOR "chanflow")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "chanflow developers")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# The shared libraries the command and the Python module load (protobuf, Boost.Context,
# OpenBLAS, fmt, libstdc++ ...) are found by dpkg-shlibdeps; Python and NumPy are not ELF
# dependencies, so they are listed. The module is built for one CPython minor version.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(TARGET chanflow_python)
  string(REPLACE "." ";" _pyv "${CHANFLOW_PYTHON_VERSION}")
  list(GET _pyv 0 _major)
  list(GET _pyv 1 _minor)
  math(EXPR _next_minor "${_minor} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "python3 (>= ${_major}.${_minor}~), python3 (<< ${_major}.${_next_minor}), python3-numpy")
endif()
include(CPack)
