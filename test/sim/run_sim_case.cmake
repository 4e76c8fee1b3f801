# Runs one seam_decoder_sim case, the command after `--`: cmake -DSIM_EXPECT=<regex> -P
# run_sim_case.cmake -- mpirun ... seam_decoder_sim .... Passes only when the command exits 0 and
# its output holds both the plan line §2.6 predicts (SIM_EXPECT) and the PASS line: CTest's
# PASS_REGULAR_EXPRESSION alone would ignore the exit status.
include(${CMAKE_CURRENT_LIST_DIR}/../command_after_dashes.cmake)
if(NOT command OR NOT DEFINED SIM_EXPECT)
  message(FATAL_ERROR "usage: cmake -DSIM_EXPECT=<regex> -P run_sim_case.cmake -- <command>")
endif()

execute_process(COMMAND ${command} OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE rc)
message("${output}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
if(NOT output MATCHES "${SIM_EXPECT}")
  message(FATAL_ERROR "the plan lacks the expected line: ${SIM_EXPECT}")
endif()
if(NOT output MATCHES "seam_decoder_sim: PASS")
  message(FATAL_ERROR "no PASS line")
endif()
