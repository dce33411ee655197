# Runs PROGRAM KIND INDEX (KIND notebook: blocks 1 to INDEX; program: whole program INDEX) in the
# empty directory WORK; it must succeed and print the content of the file EXPECTED, spaces at the
# ends of lines and blank lines at the end aside.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${PROGRAM} ${KIND} ${INDEX} WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${KIND} ${INDEX} failed (${rc}):\n${err}\nits output:\n${out}")
endif()
file(READ ${EXPECTED} expected)
foreach(v out expected)
  string(REPLACE "\r" "" ${v} "${${v}}")
  string(REGEX REPLACE "[ \t]+\n" "\n" ${v} "${${v}}")
  string(REGEX REPLACE "[ \t\n]+$" "" ${v} "${${v}}")
endforeach()
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "the output differs from the documentation's.\nexpected:\n${expected}\nprinted:\n${out}\n${err}")
endif()
