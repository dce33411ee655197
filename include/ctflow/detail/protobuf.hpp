#pragma once
// A small protobuf wire-format codec for the few fixed messages ctflow reads and writes
// (tf.train.Example, and TensorBoard's Event and Summary). A reader never trusts a length: every
// varint and every length-delimited field is bounded by the bytes that remain, and a malformed
// message gives io_error naming what was read, the offset and the reason.

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include <ctflow/core/errors.hpp>

namespace ctflow::detail::pb {

enum wire : std::uint32_t { varint_type = 0, fixed64_type = 1, length_type = 2, fixed32_type = 5 };

/// Appends encoded fields to a string.
struct writer {
  std::string& out;

  void varint(std::uint64_t v) {
    while (v >= 0x80) { out.push_back(char(std::uint8_t(v) | 0x80)); v >>= 7; }
    out.push_back(char(v));
  }
  void tag(std::uint32_t field, wire w) { varint((std::uint64_t(field) << 3) | w); }
  void bytes(std::uint32_t field, std::string_view b) {
    tag(field, length_type);
    varint(b.size());
    out.append(b);
  }
  void uint64(std::uint32_t field, std::uint64_t v) { tag(field, varint_type); varint(v); }
  void fixed32(std::uint32_t field, std::uint32_t v) { tag(field, fixed32_type); raw(v); }
  void fixed64(std::uint32_t field, std::uint64_t v) { tag(field, fixed64_type); raw(v); }
  void float32(std::uint32_t field, float f) { fixed32(field, std::bit_cast<std::uint32_t>(f)); }
  void float64(std::uint32_t field, double d) { fixed64(field, std::bit_cast<std::uint64_t>(d)); }
  /// A fixed-width little-endian value (fixed32, fixed64, float, double).
  template <class U> void raw(U v) {
    for (std::size_t i = 0; i < sizeof(U); ++i) out.push_back(char(std::uint8_t(v >> (8 * i))));
  }
  /// A length-delimited sub-message built by f(writer&).
  template <class F> void message(std::uint32_t field, F&& f) {
    std::string body;
    writer w{body};
    f(w);
    bytes(field, body);
  }
  /// repeated float, packed (empty: nothing written, as protobuf does).
  void packed_floats(std::uint32_t field, std::span<const float> v) {
    if (v.empty()) return;
    tag(field, length_type);
    varint(v.size() * 4);
    for (float f : v) raw(std::bit_cast<std::uint32_t>(f));
  }
  /// repeated int64, packed varints (negative values take ten bytes, as protobuf encodes them).
  void packed_int64s(std::uint32_t field, std::span<const std::int64_t> v) {
    if (v.empty()) return;
    std::string body;
    writer w{body};
    for (auto x : v) w.varint(std::uint64_t(x));
    bytes(field, body);
  }
};

/// Reads the fields of one message in order.
class reader {
 public:
  reader(std::string_view bytes, std::string what, std::uint64_t base = 0)
      : begin_(reinterpret_cast<const std::uint8_t*>(bytes.data())), p_(begin_), end_(begin_ + bytes.size()), what_(std::move(what)), base_(base) {}

  bool done() const { return p_ == end_; }
  std::uint64_t offset() const { return base_ + std::uint64_t(p_ - begin_); }
  const std::string& what() const { return what_; }

  /// The next field's number and wire type; false at the end of the message.
  bool next(std::uint32_t& field, wire& w) {
    if (p_ == end_) return false;
    const std::uint64_t key = varint();
    field = std::uint32_t(key >> 3);
    w = wire(key & 7);
    if (field == 0 || key >> 32) fail("invalid field number");
    if (w != varint_type && w != fixed64_type && w != length_type && w != fixed32_type) fail("unsupported wire type " + std::to_string(unsigned(w)));
    return true;
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) fail("truncated varint");
      const std::uint8_t b = *p_++;
      v |= std::uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("varint longer than 10 bytes");
  }
  std::uint32_t fixed32() { return fixed<std::uint32_t>(); }
  std::uint64_t fixed64() { return fixed<std::uint64_t>(); }
  /// A length-delimited field's bytes (bounded by what remains).
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (n > std::uint64_t(end_ - p_)) fail("length " + std::to_string(n) + " runs past the end (" + std::to_string(end_ - p_) + " bytes left)");
    std::string_view r(reinterpret_cast<const char*>(p_), std::size_t(n));
    p_ += n;
    return r;
  }
  /// A sub-message reader over a length-delimited field.
  reader sub() {
    const std::uint64_t at = offset();
    const auto b = bytes();
    return reader(b, what_, at + (offset() - at - b.size()));
  }
  void skip(wire w) {
    switch (w) {
      case varint_type: varint(); break;
      case fixed64_type: fixed64(); break;
      case length_type: bytes(); break;
      case fixed32_type: fixed32(); break;
    }
  }
  /// A fixed-width little-endian value.
  template <class U> U fixed() {
    if (std::size_t(end_ - p_) < sizeof(U)) fail("truncated fixed" + std::to_string(8 * sizeof(U)));
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) v |= U(p_[i]) << (8 * i);
    p_ += sizeof(U);
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw io_error(what_ + ": malformed protobuf at offset " + std::to_string(offset()) + ": " + why);
  }

 private:
  const std::uint8_t *begin_, *p_, *end_;
  std::string what_;
  std::uint64_t base_;
};

}  // namespace ctflow::detail::pb
