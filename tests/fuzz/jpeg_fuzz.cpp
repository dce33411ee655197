// JPEG decoding (libjpeg-turbo behind ctflow::io::decode_jpeg), in every channel count: sizes
// checked before decoding, the decoder's memory bounded, truncation an io_error.
#include <ctflow/data/image.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  for (int c : {0, 1, 3}) {
    const auto img = ctflow::io::decode_jpeg(bytes, c);
    if (img.size() > ctflow::io::max_image_bytes) __builtin_trap();
  }
})
