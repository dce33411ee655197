// Shared by the libFuzzer targets: a reader may only ever fail with ctflow::io_error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <ctflow/core/errors.hpp>

#define CTFLOW_FUZZ(...)                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);      \
    try {                                                                         \
      __VA_ARGS__                                                                 \
    } catch (const ctflow::io_error&) {                                           \
    }                                                                             \
    return 0;                                                                     \
  }
