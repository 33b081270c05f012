# cmake --install: headers, libraries, the CMake package (find_package(chanflow CONFIG) ->
# chanflow::chanflow) and a pkg-config file.
include(CMakePackageConfigHelpers)

get_property(_layers GLOBAL PROPERTY CHANFLOW_LAYERS)
install(TARGETS ${_layers} chanflow_all
  EXPORT chanflowTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# detail/ headers are installed only where a public header includes them (runtime/detail/wait.h
# and chan_base.h, under Mutex, WaitGroup and the channel templates). The tensor kernels' dispatch
# and strided-loop templates serve chanflow's own sources only.
install(DIRECTORY include/chanflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  PATTERN "tensor/detail" EXCLUDE)
# Generated headers (protobuf) live in the build tree.
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/chanflow DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} OPTIONAL)
install(EXPORT chanflowTargets NAMESPACE chanflow::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chanflow)

configure_package_config_file(cmake/chanflowConfig.cmake.in
  ${PROJECT_BINARY_DIR}/chanflowConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chanflow)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/chanflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/chanflowConfig.cmake
  ${PROJECT_BINARY_DIR}/chanflowConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/chanflow)

# pkg-config: static archives need their private dependencies listed.
set(CHANFLOW_PC_LIBS "")
foreach(_l IN LISTS _layers)
  get_target_property(_out ${_l} OUTPUT_NAME)
  string(PREPEND CHANFLOW_PC_LIBS "-l${_out} ")
endforeach()
file(RELATIVE_PATH CHANFLOW_PC_TO_PREFIX
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/chanflow.pc.in ${PROJECT_BINARY_DIR}/chanflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/chanflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
