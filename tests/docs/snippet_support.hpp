// What every generated documentation program (tests/docs/extract.cmake) includes: the three
// umbrella headers the notebook blocks are written against, and the driver that runs the
// notebook up to one block or one whole program, with the standard output of the other blocks
// discarded.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <type_traits>

#include <fcntl.h>
#include <unistd.h>

#include <ctflow/ctflow.hpp>
#include <ctflow/data.hpp>
#include <ctflow/io.hpp>

namespace ctflow_doc {

/// Sends the standard output (std::cout and stdout alike) to /dev/null, or back.
inline void mute(bool on) {
  static int saved = -1;
  std::cout.flush();
  std::fflush(stdout);
  if (on && saved < 0) {
    saved = ::dup(1);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::close(null);
  } else if (!on && saved >= 0) {
    ::dup2(saved, 1);
    ::close(saved);
    saved = -1;
  }
}

/// Called where notebook block k begins; true when the run stops before it. Only the output of
/// block `last`, the one run for its output, is kept.
inline bool stop_before(int k, int last) {
  if (k > last) {
    mute(false);
    return true;
  }
  mute(k != last);
  return false;
}

/// Calls a whole program's main, with or without (argc, argv).
template <class F> int call_main(F* f, char* name) {
  if constexpr (std::is_invocable_v<F*>) {
    return f();
  } else {
    char* argv[] = {name, nullptr};
    return f(1, argv);
  }
}

/// `<exe> notebook K` runs notebook blocks 1 to K and keeps block K's output; `<exe> program N`
/// runs whole program N (numbered from 1 in the markdown file's order).
template <class Notebook, class Programs>
int run(int argc, char** argv, Notebook notebook, const Programs& programs) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s notebook BLOCK | program N\n", argv[0]);
    return 2;
  }
  const int k = std::atoi(argv[2]);
  try {
    if (std::strcmp(argv[1], "notebook") == 0) {
      const int rc = notebook(k);
      mute(false);
      return rc;
    }
    if (std::strcmp(argv[1], "program") == 0 && k >= 1 && std::size_t(k) <= programs.size())
      return programs[std::size_t(k - 1)](argv[0]);
  } catch (const std::exception& e) {
    mute(false);
    std::fprintf(stderr, "uncaught exception: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "%s: no %s %s\n", argv[0], argv[1], argv[2]);
  return 2;
}

}  // namespace ctflow_doc
