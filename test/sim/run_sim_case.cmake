# Runs one seam_decoder_sim case, the command after `--`: cmake -DSIM_EXPECT=<regex> -P
# run_sim_case.cmake -- mpirun ... seam_decoder_sim .... Passes only when the command exits 0 and
# its output holds both the plan line §2.6 predicts (SIM_EXPECT) and the PASS line: CTest's
# PASS_REGULAR_EXPRESSION alone would ignore the exit status. With -DSIM_FAULT=1 (a run with
# --inject-fault) it passes only on the FAIL verdict with mismatches counted (exit status 1).
include(${CMAKE_CURRENT_LIST_DIR}/../command_after_dashes.cmake)
if(NOT command OR (NOT DEFINED SIM_EXPECT AND NOT SIM_FAULT))
  message(FATAL_ERROR "usage: cmake -DSIM_EXPECT=<regex> | -DSIM_FAULT=1 -P run_sim_case.cmake -- <command>")
endif()

execute_process(COMMAND ${command} OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE rc)
message("${output}")
if(SIM_FAULT)
  set(want_rc 1)
  set(verdict "seam_decoder_sim: FAIL — [0-9]+ values checked [^\n]*[^0-9][1-9][0-9]* mismatched")
else()
  set(want_rc 0)
  set(verdict "seam_decoder_sim: PASS")
endif()
if(NOT rc EQUAL want_rc)
  message(FATAL_ERROR "exit status ${rc}, not ${want_rc}")
endif()
if(DEFINED SIM_EXPECT AND NOT output MATCHES "${SIM_EXPECT}")
  message(FATAL_ERROR "the plan lacks the expected line: ${SIM_EXPECT}")
endif()
if(NOT output MATCHES "${verdict}")
  message(FATAL_ERROR "no verdict line matching: ${verdict}")
endif()
# A bf16 run on host memory is compared bit for bit (its partials on an exact grid), faults too.
string(REPLACE ";" " " line "${command}")
if(line MATCHES "--dtype bf16" AND NOT line MATCHES "--device cuda" AND NOT output MATCHES "tolerance \\(bf16\\): bit-exact")
  message(FATAL_ERROR "a bf16 run on host memory was not compared bit for bit")
endif()
