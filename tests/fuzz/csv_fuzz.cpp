// CsvDataset: quoting, delimiters, line breaks, numbers, defaults. The input is a memfd file.
#include <sys/mman.h>
#include <unistd.h>

#include <ctflow/data/csv.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  using namespace ctflow;
  static const int fd = memfd_create("csv", 0);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (const auto& [a, b, c] : data::CsvDataset<float, std::int64_t, std::string>(path, {0.f, std::nullopt, ""}, {.na_value = "NA"}))
    if (c.size() > size) __builtin_trap();
  for (const auto& [a, b] : data::CsvDataset<double, std::int32_t>(path, {0.0, 0}, {.header = true, .field_delim = ';', .select_cols = {1, 3}}))
    (void)a;
})
