# `cmake --install`: the public headers (include/seam: the C++ API of the communicator, the
# layer-boundary planner (boundary.h and the headers it includes) and, where built, the device
# communicator; the C API seam.h; version.h), the shared libraries, a CMake package
# (find_package(Seam) -> seam::seam, seam::c, and seam::cuda where built), a pkg-config file
# (seam.pc, the C API) and the Python binding.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

configure_file(${PROJECT_SOURCE_DIR}/include/seam/version.h.in ${PROJECT_BINARY_DIR}/include/seam/version.h @ONLY)
set(seam_public_headers seam.h communicator.h work.h tensor.h dtype.h errors.h norm.h shared_host_memory.h
    boundary.h stage_declaration.h reduction_policy.h batch_facts.h parallel.h layer_output.h)
if(SEAM_CUDA)
  list(APPEND seam_public_headers device_communicator.h boundary_device.h)
endif()
list(TRANSFORM seam_public_headers PREPEND ${PROJECT_SOURCE_DIR}/include/seam/)
install(FILES ${seam_public_headers} ${PROJECT_BINARY_DIR}/include/seam/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/seam)
install(FILES ${PROJECT_SOURCE_DIR}/include/seam/detail/f16_soft.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/seam/detail)

# The libraries find each other beside themselves wherever the prefix is moved.
set(seam_libraries seam seam_c)
if(TARGET seam_cuda)
  list(APPEND seam_libraries seam_cuda)
endif()
set_target_properties(${seam_libraries} PROPERTIES INSTALL_RPATH "$ORIGIN")
set_target_properties(seam_c PROPERTIES EXPORT_NAME c)  # seam::c, as inside the build
if(TARGET seam_cuda)
  set_target_properties(seam_cuda PROPERTIES EXPORT_NAME cuda)
endif()
install(TARGETS ${seam_libraries} EXPORT SeamTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT SeamTargets NAMESPACE seam:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Seam)
# The Python binding, beside the libraries (it loads ../libseam_c.so): PYTHONPATH=<libdir>/python.
install(FILES ${PROJECT_SOURCE_DIR}/python/seam.py DESTINATION ${CMAKE_INSTALL_LIBDIR}/python)

if(SEAM_CUDA)
  set(SEAM_CUDA_BOOL TRUE)
else()
  set(SEAM_CUDA_BOOL FALSE)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SeamConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/SeamConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Seam)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SeamConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SeamConfig.cmake ${PROJECT_BINARY_DIR}/SeamConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Seam)

# pkg-config: the prefix is the one given at install time (cmake --install --prefix).
install(CODE "
  set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/seam.pc.in\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/seam.pc\" @ONLY)
")
