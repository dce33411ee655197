# ctflow_add_compiled_library(<name> [COMPONENTS data io keras]): a static library of ctflow's
# compiled parts (the core's, and those of the components named; keras brings io, io brings data), for a program built with
# CTFLOW_SEPARATE_COMPILATION (see include/ctflow/detail/linkage.hpp). Linking it defines that
# macro for the program, whose translation units then neither parse nor compile what the library
# holds. Give the library the instruction-set flags of the program (-march=...): it holds kernels.
function(ctflow_add_compiled_library name)
  cmake_parse_arguments(arg "" "" "COMPONENTS" ${ARGN})
  set(components)
  if("data" IN_LIST arg_COMPONENTS OR "io" IN_LIST arg_COMPONENTS OR "keras" IN_LIST arg_COMPONENTS)
    list(APPEND components data)
  endif()
  if("io" IN_LIST arg_COMPONENTS OR "keras" IN_LIST arg_COMPONENTS)
    list(APPEND components io)
  endif()
  if("keras" IN_LIST arg_COMPONENTS)
    list(APPEND components keras)
  endif()
  foreach(c IN LISTS arg_COMPONENTS)
    if(NOT c MATCHES "^(data|io|keras)$")
      message(FATAL_ERROR "ctflow_add_compiled_library: no component ${c}: there are data, io and keras")
    endif()
  endforeach()
  # One unit per part, so that a parallel build compiles them side by side: the core's, each
  # component's, and keras's in two halves. The second, its files (parsing, copying and
  # formatting), builds at -O1 where the build type asks for -O3 (Release): 22 s instead of 40.
  set(parts core)
  set(libs ctflow::ctflow)
  foreach(c IN LISTS components)
    if(c STREQUAL "keras")
      list(APPEND parts keras_training keras_files)
    else()
      list(APPEND parts ${c})
    endif()
    list(APPEND libs ctflow::${c})
  endforeach()
  set(sources)
  foreach(part IN LISTS parts)
    set(source ${CMAKE_CURRENT_BINARY_DIR}/${name}_${part}.cpp)
    file(CONFIGURE OUTPUT ${source}
         CONTENT "// ctflow's compiled parts (ctflow_add_compiled_library): ${part}.\n#include <ctflow/compiled/${part}.hpp>\n")
    list(APPEND sources ${source})
    if(part STREQUAL "keras_files")
      set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "$<$<CONFIG:Release>:-O1>")
    endif()
  endforeach()
  add_library(${name} STATIC ${sources})
  target_link_libraries(${name} PUBLIC ${libs})
  target_compile_definitions(${name} PUBLIC CTFLOW_SEPARATE_COMPILATION)
endfunction()
