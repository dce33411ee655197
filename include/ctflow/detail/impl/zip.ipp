#pragma once
// Definitions of detail/zip.hpp (compiled with ctflow::data's part; see detail/linkage.hpp).

#include <zlib.h>

#include <algorithm>
#include <cstdio>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/zip.hpp>

namespace ctflow::detail {

namespace zip_format {
inline constexpr std::uint32_t local_header = 0x04034b50, central_header = 0x02014b50, end_record = 0x06054b50;
inline constexpr std::uint32_t end_record64 = 0x06064b50, end_locator64 = 0x07064b50;
inline constexpr std::uint32_t escape32 = 0xFFFFFFFF;  // "see the ZIP64 extra field"
inline constexpr std::uint64_t end_record_size = 22, central_header_size = 46, local_header_size = 30;

inline std::string hex32(std::uint32_t v) {
  char b[11];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

inline std::uint32_t crc32_of(const std::uint8_t* p, std::uint64_t n) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const uInt k = uInt(std::min<std::uint64_t>(n, 1u << 30));
    crc = ::crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return std::uint32_t(crc);
}
}  // namespace zip_format

CTFLOW_DECL void zip_archive::fail(std::uint64_t offset, const std::string& why) const { throw_io(what_, name_, offset, why); }

CTFLOW_DECL std::uint32_t zip_archive::u16(std::uint64_t at) const {
  if (at > bytes_.size() || bytes_.size() - at < 2) fail(at, "zip structure runs past the end of the file");
  return std::uint32_t(bytes_[at]) | std::uint32_t(bytes_[at + 1]) << 8;
}
CTFLOW_DECL std::uint32_t zip_archive::u32(std::uint64_t at) const { return u16(at) | u16(at + 2) << 16; }
CTFLOW_DECL std::uint64_t zip_archive::u64(std::uint64_t at) const { return std::uint64_t(u32(at)) | std::uint64_t(u32(at + 4)) << 32; }

CTFLOW_DECL zip_archive::zip_archive(std::span<const std::uint8_t> bytes, std::string name, std::string what)
    : bytes_(bytes), name_(std::move(name)), what_(std::move(what)) {
  using namespace zip_format;
  const std::uint64_t size = bytes_.size();
  if (size < end_record_size) fail(0, "not a zip file (" + std::to_string(size) + " bytes, too short)");
  // The end-of-central-directory record: the last one whose comment ends within the file, in the
  // last 64 KiB + 22 bytes.
  std::uint64_t end = size - end_record_size;
  for (;;) {
    if (u32(end) == end_record && end + end_record_size + u16(end + 20) <= size) break;
    if (end == 0 || size - end >= end_record_size + 0xFFFF) fail(size, "not a zip file (no end of central directory record)");
    --end;
  }
  std::uint64_t entries = u16(end + 10), directory_size = u32(end + 12), directory = u32(end + 16);
  std::uint64_t directory_end_limit = end;
  if (end >= 20 && u32(end - 20) == end_locator64) {
    // ZIP64: the locator before the record points to the 64-bit record, which holds the sizes.
    const std::uint64_t at = u64(end - 20 + 8);
    if (at > end - 20 || u32(at) != end_record64) fail(end - 20, "corrupt ZIP64 end of central directory locator");
    entries = u64(at + 32);
    directory_size = u64(at + 40);
    directory = u64(at + 48);
    directory_end_limit = at;
  }
  if (directory > directory_end_limit || directory_size > directory_end_limit - directory)
    fail(end, "the central directory (" + std::to_string(directory_size) + " bytes at offset " + std::to_string(directory) +
                  ") runs past its end record");
  if (entries > directory_size / central_header_size)
    fail(end, std::to_string(entries) + " members cannot fit a central directory of " + std::to_string(directory_size) + " bytes");
  members_.reserve(std::size_t(entries));
  std::uint64_t at = directory;
  const std::uint64_t directory_end = directory + directory_size;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (directory_end - at < central_header_size || u32(at) != central_header) fail(at, "corrupt zip central directory entry");
    member m;
    const std::uint32_t flags = u16(at + 8);
    m.method = std::uint16_t(u16(at + 10));
    m.crc32 = u32(at + 16);
    m.compressed_size = u32(at + 20);
    m.size = u32(at + 24);
    const std::uint64_t name_length = u16(at + 28), extra_length = u16(at + 30), comment_length = u16(at + 32);
    m.header = u32(at + 42);
    const std::uint64_t entry_size = central_header_size + name_length + extra_length + comment_length;
    if (directory_end - at < entry_size) fail(at, "zip central directory entry runs past the directory");
    m.name.assign(reinterpret_cast<const char*>(bytes_.data() + at + central_header_size), name_length);
    if (flags & 1u) fail(at, "zip member '" + m.name + "' is encrypted");
    // The ZIP64 extra field holds, in this order, each of the three that is escaped.
    const bool big_size = m.size == escape32, big_compressed = m.compressed_size == escape32, big_header = m.header == escape32;
    for (std::uint64_t x = at + central_header_size + name_length, x_end = x + extra_length; x_end - x >= 4;) {
      const std::uint32_t id = u16(x), length = u16(x + 2);
      if (x_end - x - 4 < length) fail(x, "zip member '" + m.name + "': extra field runs past its entry");
      if (id == 1) {
        std::uint64_t f = x + 4;
        const auto take = [&](std::uint64_t& v) {
          if (x + 4 + length - f < 8) fail(x, "zip member '" + m.name + "': ZIP64 extra field too short");
          v = u64(f);
          f += 8;
        };
        if (big_size) take(m.size);
        if (big_compressed) take(m.compressed_size);
        if (big_header) take(m.header);
      }
      x += 4 + length;
    }
    at += entry_size;
    // The local header repeats the name and has an extra field of its own; the data follow it.
    if (m.header > size || size - m.header < local_header_size || u32(m.header) != local_header)
      fail(m.header, "corrupt local header of zip member '" + m.name + "'");
    m.data = m.header + local_header_size + u16(m.header + 26) + u16(m.header + 28);
    if (m.data > size || m.compressed_size > size - m.data)
      fail(m.header, "zip member '" + m.name + "' (" + std::to_string(m.compressed_size) + " bytes) runs past the end of the file");
    if (m.method == 0 && m.size != m.compressed_size)
      fail(m.header, "stored zip member '" + m.name + "' has " + std::to_string(m.compressed_size) + " bytes, its size says " + std::to_string(m.size));
    if (m.method == 8 && m.size / max_deflate_ratio > m.compressed_size)
      fail(m.header, "deflated zip member '" + m.name + "' claims " + std::to_string(m.size) + " bytes from " + std::to_string(m.compressed_size) +
                         ": more than deflate can hold");
    members_.push_back(std::move(m));
  }
}

CTFLOW_DECL const zip_archive::member* zip_archive::find(std::string_view name) const {
  // The last of equal names, as Python's zipfile reads it.
  for (auto it = members_.rbegin(); it != members_.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

CTFLOW_DECL std::vector<std::uint8_t> zip_archive::read(const member& m) const {
  using namespace zip_format;
  const std::uint8_t* in = bytes_.data() + m.data;
  std::vector<std::uint8_t> out;
  if (m.method == 0) {
    out.assign(in, in + m.compressed_size);
  } else if (m.method == 8) {
    out = inflate_exact({in, std::size_t(m.compressed_size)}, -15, m.size, what_, name_, m.data, "deflated zip member '" + m.name + "'");
  } else {
    fail(m.header, "zip member '" + m.name + "' uses compression method " + std::to_string(m.method) + " (stored and deflated are read)");
  }
  const std::uint32_t crc = crc32_of(out.data(), out.size());
  if (crc != m.crc32) fail(m.data, "bad CRC-32 for zip member '" + m.name + "': " + hex32(crc) + ", the directory says " + hex32(m.crc32));
  return out;
}

}  // namespace ctflow::detail
