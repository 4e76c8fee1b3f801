# Runs seam_decoder_sim with --inject-fault (the command after `--`): cmake -P run_sim_fault.cmake --
# mpirun ... seam_decoder_sim ... --inject-fault KIND. Passes only when the simulator ran to its
# verdict and that verdict is FAIL with mismatches counted (exit status 1), not a crash or an error.
include(${CMAKE_CURRENT_LIST_DIR}/../command_after_dashes.cmake)
if(NOT command)
  message(FATAL_ERROR "usage: cmake -P run_sim_fault.cmake -- <command>")
endif()

execute_process(COMMAND ${command} OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE rc)
message("${output}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "exit status ${rc}, not 1 (a FAIL verdict)")
endif()
if(NOT output MATCHES "seam_decoder_sim: FAIL — [0-9]+ values checked [^\n]*[^0-9][1-9][0-9]* mismatched")
  message(FATAL_ERROR "no FAIL line with mismatches")
endif()
