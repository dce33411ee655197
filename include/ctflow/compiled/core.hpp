#pragma once
/// @file
/// @brief The compiled part of ctflow's core: include it in exactly one source file of a program
/// built with CTFLOW_SEPARATE_COMPILATION (CMake: `ctflow_add_compiled_library`; see
/// detail/linkage.hpp). The program's other translation units then neither parse nor compile
/// what it defines.

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#error "ctflow/compiled/core.hpp belongs to a program built with CTFLOW_SEPARATE_COMPILATION"
#endif

#include <ctflow/ctflow.hpp>

#include CTFLOW_BACKEND_INSTANCES
