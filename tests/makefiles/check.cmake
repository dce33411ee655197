# Configures the project from scratch in WORK with the Unix Makefiles generator, the tests and the
# fuzzers on, and builds one fuzzer: a cheap target whose output goes to a directory of its own.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK} -G "Unix Makefiles" -DCMAKE_CXX_COMPILER=${CXX}
                        -DCTFLOW_BUILD_TESTS=ON -DCTFLOW_BUILD_FUZZERS=ON RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring with Unix Makefiles failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} --target fuzz_csv RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/tests/fuzz/csv_fuzz)
  message(FATAL_ERROR "building fuzz_csv with Unix Makefiles failed")
endif()
