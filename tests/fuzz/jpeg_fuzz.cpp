// JPEG decoding (libjpeg-turbo behind ctflow::io::decode_jpeg), in every channel count: sizes
// checked before decoding, the decoder's memory and scans bounded, truncation an io_error, and
// the decoded shape the one extract_jpeg_shape reads from the header.
#include <algorithm>

#include <ctflow/data/image.hpp>

#include "fuzz_common.hpp"

namespace {

/// Whether the frame may be arithmetic-coded (a code of SOF9 to SOF15, but DHT's and JPG's,
/// before the first scan; a byte pair inside a segment may look like one too): such data has no
/// size floor, so a few bytes may legitimately decode up to max_image_bytes of pixels, seconds of
/// work that find nothing new. Those are decoded only up to a megapixel (as libjpeg-turbo's own
/// fuzzers bound theirs).
bool arithmetic(std::string_view b) {
  const std::size_t scan = std::min(b.find("\xFF\xDA"), b.size());
  for (std::size_t i = 0; i + 1 < scan; ++i) {
    const std::uint8_t m = std::uint8_t(b[i + 1]);
    if (std::uint8_t(b[i]) == 0xFF && m >= 0xC9 && m <= 0xCF && m != 0xCC) return true;
  }
  return false;
}

}  // namespace

CTFLOW_FUZZ({
  const auto shape = ctflow::io::extract_jpeg_shape<std::int64_t>(bytes);
  if (shape(0) < 0 || shape(1) < 0 || shape(2) < 0) __builtin_trap();
  if (arithmetic(bytes) && shape(0) * shape(1) > (std::int64_t(1) << 20)) return 0;
  for (int c : {0, 1, 3}) {
    const auto img = ctflow::io::decode_jpeg(bytes, c);
    if (img.size() > ctflow::io::max_image_bytes) __builtin_trap();
    if (std::int64_t(img.dims()[0]) != shape(0) || std::int64_t(img.dims()[1]) != shape(1)) __builtin_trap();
    if (c == 0 && std::int64_t(img.dims()[2]) != shape(2)) __builtin_trap();
  }
})
