// TFRecord framing: lengths, both CRCs, truncation.
#include <ctflow/data/tfrecord.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  std::size_t total = 0;
  for (const auto& r : ctflow::io::read_tfrecords({data, size})) total += r.size();
  if (total > size) __builtin_trap();  // a record cannot hold more bytes than the input
})
