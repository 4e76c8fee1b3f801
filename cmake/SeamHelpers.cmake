# Adds each listed subdirectory that has a CMakeLists.txt (folders fill in as work lands).
macro(seam_add_subdirs)
  foreach(dir ${ARGN})
    if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
      add_subdirectory(${dir})
    endif()
  endforeach()
endmacro()

# seam_add_unit_test(name SOURCES...): a doctest executable registered with CTest.
function(seam_add_unit_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE seam::seam seam_test_main seam_warnings)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS unit)
endfunction()

# seam_add_mpi_test(name NP np COMMAND exe args...): runs exe under mpirun with np ranks
# (oversubscribed, as root allowed), with a hard timeout.
function(seam_add_mpi_test name)
  cmake_parse_arguments(T "" "NP;TIMEOUT" "COMMAND;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none
            -n ${T_NP} ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS mpi
                       ENVIRONMENT "${T_ENV}")
endfunction()
