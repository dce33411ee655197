#pragma once
/// @brief tf.io.decode_png, decode_jpeg, extract_jpeg_shape and encode_png (Debian's libpng and
/// libjpeg-turbo): images are uint8 tensors [height, width, channels]. `channels` 0 keeps the
/// file's; 1, 3 or 4 (PNG: also 2) converts as TensorFlow does (gray to RGB replicates, RGB to
/// gray uses the Rec. 709 weights, alpha is dropped or set opaque). Corrupt or oversized data
/// gives io_error.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/linkage.hpp>

namespace ctflow::io {

/// @brief A decoded image: [height, width, channels].
using Image = Tensor<std::uint8_t, Shape<dyn, dyn, dyn>>;

/// @brief The largest image a decoder accepts (bytes of the decoded tensor): 1 GiB.
inline constexpr std::size_t max_image_bytes = std::size_t(1) << 30;

/// @brief The most scans a progressive JPEG may have (libjpeg-turbo's advice against files whose
/// every few bytes make the decoder pass over the whole image once more).
inline constexpr std::size_t max_jpeg_scans = 1000;

namespace detail {

[[noreturn]] CTFLOW_DECL void image_error(const char* op, const std::string& why);
CTFLOW_DECL void check_channels(const char* op, int channels, bool png);
CTFLOW_DECL void check_size(const char* op, std::size_t h, std::size_t w, std::size_t c);
/// Converts pixels of `from` channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) to `to` channels.
CTFLOW_DECL Image convert_channels(const std::uint8_t* in, std::size_t h, std::size_t w, int from, int to);
/// The PNG file of contiguous uint8 pixels [h, w, c].
CTFLOW_DECL std::string encode_png(const std::uint8_t* pixels, const dims_t<3>& d);
/// The JPEG header's [height, width, components].
CTFLOW_DECL dims_t<3> jpeg_shape(std::string_view contents);

}  // namespace detail

/// @brief tf.io.decode_png (8-bit output; 16-bit files are reduced to 8 bits).
CTFLOW_DECL Image decode_png(std::string_view contents, int channels = 0);

/// @brief tf.io.encode_png of a uint8 image [height, width, channels] with 1 to 4 channels.
template <class S> std::string encode_png(const Tensor<std::uint8_t, S>& image) {
  static_assert(S::rank == 3, "ctflow::io::encode_png: the image must be [height, width, channels]");
  return detail::encode_png(image.data(), image.dims());
}

/// @brief tf.io.decode_jpeg (channels 0: the file's, 1 or 3).
CTFLOW_DECL Image decode_jpeg(std::string_view contents, int channels = 0);

/// @brief tf.io.extract_jpeg_shape: the image's [height, width, components] from the JPEG's
/// header alone, without decoding (what decode_jpeg with channels 0 would return the shape of).
template <class T = std::int32_t> Tensor<T, Shape<3>> extract_jpeg_shape(std::string_view contents) {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>, "ctflow::io::extract_jpeg_shape: output_type is int32 or int64");
  const dims_t<3> s = detail::jpeg_shape(contents);
  Tensor<T, Shape<3>> out;
  for (std::size_t i = 0; i < 3; ++i) out(i) = T(s[i]);
  return out;
}

}  // namespace ctflow::io

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/data/impl/image.ipp>
#endif
