#pragma once
// Raw element bytes in a given byte order, for tf.io.decode_raw and readers of binary formats.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>

namespace ctflow::detail {

/// Copies bytes (a whole number of elements) into out as elements of T stored with the given
/// byte order.
template <class T> void load_raw(T* out, std::span<const std::uint8_t> bytes, bool little_endian) {
  if (bytes.empty()) return;
  std::memcpy(out, bytes.data(), bytes.size());
  if (little_endian != (std::endian::native == std::endian::little) && sizeof(T) > 1) {
    auto* p = reinterpret_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < bytes.size(); i += sizeof(T)) std::reverse(p + i, p + i + sizeof(T));
  }
}

}  // namespace ctflow::detail
