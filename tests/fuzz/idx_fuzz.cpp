// IDX headers: magic, type code, rank, dimensions against the data size.
#include <ctflow/data/idx.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  const std::span<const std::uint8_t> b(data, size);
  if (ctflow::data::parse_idx<std::uint8_t, 3>(b, "fuzz").size() > size) __builtin_trap();
  ctflow::data::parse_idx<float, 1>(b, "fuzz");
  ctflow::data::parse_idx<std::int16_t, 2>(b, "fuzz");
})
