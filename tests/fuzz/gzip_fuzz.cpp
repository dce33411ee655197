// gzip data as the readers take it: inflated in memory (detail::gunzip, several members), and
// read from a file through detail::input_file with GZIP compression, as TFRecordDataset and the
// IDX reader open files.
#include <cstdio>
#include <string>
#include <vector>

#include <ctflow/detail/file.hpp>

#include "../unit/test_files.hpp"
#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  const auto out = ctflow::detail::gunzip({data, size}, "fuzz", "fuzz.gz");
  if (out.size() > 1032 * size + 64 * 1024) __builtin_trap();  // more than deflate can make of its input
  static const std::string path = test_files::temp_dir("ctflow_gzip_fuzz") + "/input.gz";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  ctflow::detail::input_file in(path, ctflow::detail::compression::gzip, "fuzz");
  std::vector<std::uint8_t> buf(4096);
  std::size_t total = 0;
  while (std::size_t n = in.read(buf.data(), buf.size())) total += n;
  if (total != out.size()) __builtin_trap();  // the two paths disagree
})
