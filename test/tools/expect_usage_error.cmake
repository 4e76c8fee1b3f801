# Runs a tool with a bad argument, the command after `--`: cmake -DEXPECT=<regex> -P
# expect_usage_error.cmake -- <tool> <args>. Passes only when it exits with exactly 2 (not a crash's
# signal status, not 1) and its output matches EXPECT, the message naming the flag.
include(${CMAKE_CURRENT_LIST_DIR}/../command_after_dashes.cmake)
if(NOT command OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DEXPECT=<regex> -P expect_usage_error.cmake -- <command>")
endif()

execute_process(COMMAND ${command} OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE rc TIMEOUT 30)
message("${output}")
if(NOT rc STREQUAL "2")
  message(FATAL_ERROR "exit status ${rc}, expected 2")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "the message does not match: ${EXPECT}")
endif()
