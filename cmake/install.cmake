# SPDX-License-Identifier: Apache-2.0
# `cmake --install build --prefix DIR` installs the tools, the libraries and
# their headers, and a CMake package, so that another project builds on the
# runtime with
#   find_package(Systole 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE Systole::host)
# (examples/ is such a project; a test builds it against an installed copy).
include(CMakePackageConfigHelpers)

# The libraries a user links, by their names in the package (Systole::host
# is systole_host), and the static libraries they are made of.
set(systole_exported systole_spec systole_sim systole_driver systole_proto systole_host systole_mpi systole_run)
if(TARGET systole_xrt_topology)
  list(APPEND systole_exported systole_xrt_topology)
endif()
if(SYSTOLE_PERF)
  list(APPEND systole_exported systole_card_model)
endif()
foreach(target IN LISTS systole_exported)
  string(REPLACE "systole_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()

install(TARGETS ${systole_exported} EXPORT SystoleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS accel_train accel_gemm accel_data RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/spec/systole ${PROJECT_SOURCE_DIR}/driver/include/systole
                  ${PROJECT_SOURCE_DIR}/host/include/systole
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/systole/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/systole)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/systole)

set(systole_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Systole)
install(EXPORT SystoleTargets NAMESPACE Systole:: DESTINATION ${systole_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/SystoleConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/SystoleConfig.cmake
                              INSTALL_DESTINATION ${systole_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SystoleConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SystoleConfig.cmake ${PROJECT_BINARY_DIR}/SystoleConfigVersion.cmake
        DESTINATION ${systole_cmake_dir})
