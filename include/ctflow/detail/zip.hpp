#pragma once
// A zip archive held in memory (Keras's `.keras` files): its directory read and checked once,
// its members inflated on demand. Nothing from the file is trusted: every offset and size is
// bounded by the archive's own length, a deflated member's size by the deflate format's largest
// ratio to its compressed size, and a member is inflated as a stream into memory that grows with
// what the stream really produces, then checked against the directory's size and CRC-32.
// Stored and deflated members are read, ZIP64 archives included; anything else is an io_error
// naming the archive, the offset and the reason.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/detail/linkage.hpp>

namespace ctflow::detail {

class zip_archive {
 public:
  /// One member, as the central directory describes it.
  struct member {
    std::string name;
    std::uint16_t method = 0;  // 0 stored, 8 deflated
    std::uint32_t crc32 = 0;
    std::uint64_t compressed_size = 0, size = 0;
    std::uint64_t header = 0;  // offset of its local header
    std::uint64_t data = 0;    // offset of its (compressed) bytes
  };

  /// Reads the directory of the archive `bytes` (which must outlive it); `name` and `what` name
  /// the file and the reader in errors.
  CTFLOW_DECL zip_archive(std::span<const std::uint8_t> bytes, std::string name, std::string what);

  const std::vector<member>& members() const { return members_; }
  /// The member called `name`, or null.
  CTFLOW_DECL const member* find(std::string_view name) const;
  /// A member's bytes, its size and CRC-32 checked against the directory.
  CTFLOW_DECL std::vector<std::uint8_t> read(const member& m) const;

  /// The largest ratio of a deflated member's size to its compressed size that the deflate
  /// format allows (a run of one byte: 258 bytes per 2 bits, plus the block headers).
  static constexpr std::uint64_t max_deflate_ratio = 1032;

 private:
  [[noreturn]] void fail(std::uint64_t offset, const std::string& why) const;
  std::uint32_t u16(std::uint64_t at) const;
  std::uint32_t u32(std::uint64_t at) const;
  std::uint64_t u64(std::uint64_t at) const;

  std::span<const std::uint8_t> bytes_;
  std::string name_, what_;
  std::vector<member> members_;
};

}  // namespace ctflow::detail

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/detail/impl/zip.ipp>
#endif
