#pragma once
/// @file
/// @brief Copies between host memory and a GPU through pinned staging buffers, as TensorFlow's
/// GPU host allocator stages them: the copy goes in chunks of a buffer's size, the buffers taking
/// turns, so that the host's memcpy of one chunk runs while the DMA engine moves the one before
/// it. A copy from pageable memory cannot be asynchronous (the driver stages it itself, one
/// piece at a time); one from pinned memory can.
///
/// The order of the steps is written here once, over what a device gives (`staging_device`), so
/// that it is tested against a device whose copies finish late, without a GPU.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstring>

namespace ctflow::backend::cuda {

/// What a staged copy asks of a device, for each staging buffer `i` (its copies run in order on
/// one stream):
///   `void* buffer(i)`: the pinned buffer (`chunk` bytes);
///   `to_device(i, dst, bytes)`: starts a copy of the buffer's first `bytes` to device memory dst;
///   `from_device(i, src, bytes)`: starts a copy of `bytes` of device memory src into the buffer;
///   `wait(i)`: returns once the last copy started on the buffer has ended (at once where none).
template <class D>
concept staging_device = requires(D d, std::size_t i, void* p, const void* q, std::size_t n) {
  { d.buffer(i) } -> std::same_as<void*>;
  d.to_device(i, p, n);
  d.from_device(i, q, n);
  d.wait(i);
};

/// Copies `bytes` from host memory src to device memory dst through `buffers` staging buffers of
/// `chunk` bytes each; finished on return.
template <staging_device D>
void staged_to_device(D& d, std::size_t buffers, std::size_t chunk, void* dst, const void* src, std::size_t bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  std::size_t part = 0;
  for (std::size_t at = 0; at < bytes; at += chunk, ++part) {
    const std::size_t i = part % buffers, n = std::min(chunk, bytes - at);
    d.wait(i);  // its last chunk has left it
    std::memcpy(d.buffer(i), from + at, n);
    d.to_device(i, to + at, n);
  }
  for (std::size_t i = 0; i < std::min(buffers, part); ++i) d.wait(i);
}

/// Copies `bytes` from device memory src to host memory dst through `buffers` staging buffers of
/// `chunk` bytes each: every buffer's first chunk is started, then each chunk, once it has
/// arrived, is copied out and its buffer given the chunk `buffers` places on; finished on return.
template <staging_device D>
void staged_to_host(D& d, std::size_t buffers, std::size_t chunk, void* dst, const void* src, std::size_t bytes) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  const std::size_t parts = (bytes + chunk - 1) / chunk;
  auto start = [&](std::size_t part) {
    const std::size_t at = part * chunk;
    d.from_device(part % buffers, from + at, std::min(chunk, bytes - at));
  };
  for (std::size_t part = 0; part < std::min(buffers, parts); ++part) start(part);
  for (std::size_t part = 0; part < parts; ++part) {
    const std::size_t i = part % buffers, at = part * chunk;
    d.wait(i);
    std::memcpy(to + at, d.buffer(i), std::min(chunk, bytes - at));
    if (part + buffers < parts) start(part + buffers);
  }
}

}  // namespace ctflow::backend::cuda
