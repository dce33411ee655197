// PNG decoding (libpng behind ctflow::io::decode_png), with every channel conversion.
#include <ctflow/data/image.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  const auto img = ctflow::io::decode_png(bytes);
  for (int c : {1, 3, 4}) ctflow::io::decode_png(bytes, c);
  if (img.size() > ctflow::io::max_image_bytes) __builtin_trap();
})
