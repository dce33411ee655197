# The installed package, one PART at a time. PART=prefix installs ctflow from BINARY_DIR into a
# fresh prefix (WORK/prefix); each other part configures, builds and runs a consumer project that
# finds it with find_package(ctflow), in a directory of its own: core, CONSUMER/core, of the core
# alone, with the components' dependencies hidden from it (and a model Keras saved compiled in by
# ctflow_import, the installed ctflow-import); full, CONSUMER, of the components data and io, built
# with the umbrella headers precompiled; compiled, CONSUMER/compiled, the same program built
# against the compiled parts (ctflow_add_compiled_library); keras, CONSUMER/keras, of the keras
# component alone; and pkg_config, the keras consumer built by one compiler line with pkg-config's
# flags (PKG_CONFIG). CXX builds them all.
if(PART STREQUAL "prefix")
  file(REMOVE_RECURSE ${WORK})
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK}/prefix RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install failed")
  endif()
  return()
endif()

# consumer(NAME SOURCE EXECUTABLE OPTIONS...): configures, builds and runs a consumer; its output in `out`.
function(consumer name source executable)
  file(REMOVE_RECURSE ${WORK}/${name})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${WORK}/${name} -DCMAKE_PREFIX_PATH=${WORK}/prefix
                          -DCMAKE_CXX_COMPILER=${CXX} ${ARGN}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the ${name} consumer failed")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/${name} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the ${name} consumer failed")
  endif()
  execute_process(COMMAND ${WORK}/${name}/${executable} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${name} consumer failed: ${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# expect_output(WHAT PROGRAM PATTERN): runs PROGRAM, which must succeed and print PATTERN.
function(expect_output what program pattern)
  execute_process(COMMAND ${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "${what} printed: ${out}")
  endif()
endfunction()

if(PART STREQUAL "core")
  consumer(core ${CONSUMER}/core core_consumer -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON -DCMAKE_DISABLE_FIND_PACKAGE_PNG=ON
           -DCMAKE_DISABLE_FIND_PACKAGE_JPEG=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
           -DCTFLOW_TEST_MODEL=${SOURCE_DIR}/tests/keras/data/weights/batch_normalization.keras
           -DCTFLOW_TEST_CASE=${SOURCE_DIR}/tests/keras/data/weights/batch_normalization.safetensors)
  if(NOT out MATCHES "ctflow.Tensor\\(\\[0\\. 2\\. 6\\.\\]")
    message(FATAL_ERROR "the core consumer printed: ${out}")
  endif()
  expect_output("the core consumer's embedded network" ${WORK}/core/embedded_consumer "embedded 3 ok")
elseif(PART STREQUAL "full")
  consumer(full ${CONSUMER} consumer)
  if(NOT out MATCHES "ctflow.Tensor\\(\\[5\\. 7\\. 9\\.\\]" OR NOT out MATCHES "pipeline 10 png 7" OR NOT out MATCHES "safetensors 2.5")
    message(FATAL_ERROR "the full consumer printed: ${out}")
  endif()
elseif(PART STREQUAL "compiled")
  consumer(compiled ${CONSUMER}/compiled compiled_consumer)
  if(NOT out MATCHES "ctflow.Tensor\\(\\[5\\. 7\\. 9\\.\\]" OR NOT out MATCHES "pipeline 10 png 7" OR NOT out MATCHES "safetensors 2.5")
    message(FATAL_ERROR "the compiled consumer printed: ${out}")
  endif()
elseif(PART STREQUAL "keras")
  consumer(keras ${CONSUMER}/keras keras_consumer)
  if(NOT out MATCHES "keras 58 0")
    message(FATAL_ERROR "the keras consumer printed: ${out}")
  endif()
elseif(PART STREQUAL "pkg_config")
  # Without CMake: the keras consumer built by the line docs/getting-started.md gives.
  set(ENV{PKG_CONFIG_PATH} "${WORK}/prefix/${LIBDIR}/pkgconfig")
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ctflow-keras OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs ctflow-keras failed: ${err}")
  endif()
  if(NOT flags MATCHES "-I${WORK}/prefix/[^ ]*include" OR NOT flags MATCHES "-std=c\\+\\+20")
    message(FATAL_ERROR "pkg-config gives unexpected flags: ${flags}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  file(MAKE_DIRECTORY ${WORK}/pkg_config)
  execute_process(COMMAND ${CXX} ${CONSUMER}/keras/consumer.cpp -o ${WORK}/pkg_config/consumer ${flags} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the compiler line from pkg-config failed: ${err}")
  endif()
  expect_output("the pkg-config consumer" ${WORK}/pkg_config/consumer "keras 58 0")
else()
  message(FATAL_ERROR "check.cmake: no part ${PART}")
endif()
