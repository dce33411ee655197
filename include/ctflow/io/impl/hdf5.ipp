#pragma once
// Definitions of io/hdf5.hpp (ctflow::io's compiled part; see detail/linkage.hpp). The structures
// read are those of the HDF5 file format specification (version 3.0); each is parsed from the
// mapped bytes through bounds-checked reads, and every walk (continuation blocks, B-tree nodes,
// heap blocks, soft links) keeps the addresses it has visited and a depth bound, so no file can
// make it loop.

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include <ctflow/detail/file.hpp>
#include <ctflow/io/hdf5.hpp>

namespace ctflow::io::hdf5 {

CTFLOW_DECL std::string ElementType::name() const {
  switch (kind) {
    case Kind::integer: return (is_signed ? "int" : "uint") + std::to_string(size * 8);
    case Kind::floating: return "float" + std::to_string(size * 8);
    case Kind::string: return "string";
    default: return "other";
  }
}

namespace detail {

inline constexpr const char* what = "ctflow::io::hdf5";
inline constexpr std::uint64_t undef = ~std::uint64_t(0);

/// Jenkins's lookup3 hashlittle over bytes, initial value 0: the checksum of the format's
/// structures of version 2 and later.
inline std::uint32_t lookup3(const std::uint8_t* k, std::size_t length) {
  const auto rot = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + std::uint32_t(length);
  const auto word = [&](std::size_t at, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < n; ++j) v |= std::uint32_t(k[at + j]) << (8 * j);
    return v;
  };
  while (length > 12) {
    a += word(0, 4), b += word(4, 4), c += word(8, 4);
    a -= c; a ^= rot(c, 4);  c += b;
    b -= a; b ^= rot(a, 6);  a += c;
    c -= b; c ^= rot(b, 8);  b += a;
    a -= c; a ^= rot(c, 16); c += b;
    b -= a; b ^= rot(a, 19); a += c;
    c -= b; c ^= rot(b, 4);  b += a;
    k += 12;
    length -= 12;
  }
  if (length == 0) return c;
  a += word(0, std::min<std::size_t>(length, 4));
  if (length > 4) b += word(4, std::min<std::size_t>(length - 4, 4));
  if (length > 8) c += word(8, length - 8);
  c ^= b; c -= rot(b, 14);
  a ^= c; a -= rot(c, 11);
  b ^= a; b -= rot(a, 25);
  c ^= b; c -= rot(b, 16);
  a ^= c; a -= rot(c, 4);
  b ^= a; b -= rot(a, 14);
  c ^= b; c -= rot(b, 24);
  return c;
}

/// floor(log2(x)) for x > 0.
inline unsigned log2_floor(std::uint64_t x) { return unsigned(63 - std::countl_zero(x)); }
/// The bytes that encode values up to x (the format's "limit" sizes).
inline unsigned limit_bytes(std::uint64_t x) { return (x == 0 ? 0 : log2_floor(x)) / 8 + 1; }

/// One header message: its type, flags and the file range of its data.
struct message {
  std::uint16_t type = 0;
  std::uint8_t flags = 0;
  std::uint64_t at = 0, size = 0;
};

struct object_header {
  std::vector<message> messages;
  const message* find(std::uint16_t type) const {
    for (const auto& m : messages)
      if (m.type == type) return &m;
    return nullptr;
  }
};

/// A group member: a hard link's object, or a soft link's target path.
struct link {
  std::uint64_t address = undef;
  std::string soft;
  bool external = false;
};

/// An attribute: its name, the ranges of its datatype, dataspace and data, and how its type and
/// space are given (in place or shared).
struct attribute_ref {
  std::string name;
  std::uint64_t type_at = 0, type_size = 0, space_at = 0, space_size = 0, data_at = 0, data_size = 0;
  bool type_shared = false, space_shared = false;
};

/// A fractal heap's header, with the derived sizes its blocks and IDs are read by.
struct fractal_heap {
  std::uint64_t address = 0;
  unsigned id_length = 0, width = 0, max_direct_rows = 0, first_row_bits = 0, start_bits = 0, offset_size = 0, length_size = 0;
  bool checksummed = false;
  std::uint64_t start_block = 0, max_direct = 0, root = undef;
  unsigned root_rows = 0;
  std::uint64_t row_size(unsigned r) const { return r == 0 ? start_block : start_block << (r - 1); }
  std::uint64_t row_offset(unsigned r) const { return r == 0 ? 0 : (start_block * width) << (r - 1); }
};

/// A parsed global heap collection: its objects' ranges by index.
struct global_heap {
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> objects;
};

/// A dataset's storage as its layout message gives it.
struct layout {
  int storage = 1;  // 0 compact, 1 contiguous, 2 chunked
  std::uint64_t address = undef, size = 0;
  std::vector<std::uint64_t> chunk;  // chunk extents (rank), chunked only
  int index = 0;                     // chunked: 0 a v1 B-tree, 1 one chunk, 2 implicit, 3 a fixed array, 5 a v2 B-tree
  bool single_filtered = false;
  std::uint64_t single_size = 0;
  std::uint32_t single_mask = 0;
  unsigned page_bits = 0;  // a fixed array's pages hold 2^page_bits chunks
  std::uint64_t element = 0;  // chunked: the element size the layout gives
  bool edge_unfiltered = false;  // chunked, version 4: partial edge chunks are stored without filters
  bool sized = true;             // contiguous: the message gives the size (versions 1 and 2 do not)
};

struct filter {
  std::uint16_t id = 0;
  std::vector<std::uint32_t> values;
};

struct file_state {
  ctflow::detail::mapped_file map;
  std::span<const std::uint8_t> bytes;
  std::string name;
  std::uint64_t base = 0;
  unsigned O = 8, L = 8;
  std::uint64_t root = 0;
  mutable std::map<std::uint64_t, std::shared_ptr<const object_header>> headers;
  mutable std::map<std::uint64_t, std::shared_ptr<const std::map<std::string, link>>> groups;
  mutable std::map<std::uint64_t, std::shared_ptr<const global_heap>> global_heaps;
  mutable std::map<std::uint64_t, std::shared_ptr<const std::vector<attribute_ref>>> attribute_lists;
  mutable std::set<std::uint64_t> verified_blocks;
  // The metadata parsed so far (bytes of structures, records, names), against a budget of a
  // multiple of the file's size: structures that overlap or point at one another over and over
  // cannot make the reader do more work than the file's size justifies. Every structure is
  // parsed once (the caches above), so a well-formed file stays far below it.
  mutable std::uint64_t work = 0;
  void spend(std::uint64_t bytes, std::uint64_t at) const {
    work += bytes;
    if (work > 64 * size() + (std::uint64_t(64) << 20))
      fail(at, "the file's structures refer to the same bytes over and over (more than 64 times its size parsed)");
  }

  [[noreturn]] void fail(std::uint64_t offset, const std::string& why) const { ctflow::detail::throw_io(what, name, offset, why); }

  std::uint64_t size() const { return bytes.size(); }
  /// Checks that [at, at + n) lies in the file.
  void need(std::uint64_t at, std::uint64_t n, const char* structure) const {
    if (at > size() || n > size() - at)
      fail(at, std::string(structure) + " (" + std::to_string(n) + " bytes) runs past the end of the file (" + std::to_string(size()) + " bytes)");
  }
  std::uint64_t le(std::uint64_t at, unsigned n) const {
    need(at, n, "a field");
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= std::uint64_t(bytes[at + i]) << (8 * i);
    return v;
  }
  bool signature(std::uint64_t at, const char (&sig)[5]) const {
    return at <= size() && size() - at >= 4 && std::memcmp(bytes.data() + at, sig, 4) == 0;
  }
  /// An address field's value as a file offset (the base added), or undef.
  std::uint64_t absolute(std::uint64_t relative) const {
    const std::uint64_t all = O == 8 ? undef : (std::uint64_t(1) << (8 * O)) - 1;
    if (relative == all) return undef;
    if (relative > undef - base) fail(0, "address " + std::to_string(relative) + " overflows");
    return base + relative;
  }
  void check_sum(std::uint64_t at, std::uint64_t n, const char* structure) const {
    need(at, n, structure);
    need(at + n, 4, structure);
    spend(n, at);
    const std::uint32_t stored = std::uint32_t(le(at + n, 4));
    if (lookup3(bytes.data() + at, std::size_t(n)) != stored) fail(at, std::string(structure) + ": checksum mismatch (the data is damaged)");
  }

  std::shared_ptr<const object_header> header(std::uint64_t address) const;
  std::shared_ptr<const std::map<std::string, link>> links(std::uint64_t address) const;
  std::shared_ptr<const std::vector<attribute_ref>> attributes(std::uint64_t address) const;
  std::uint64_t resolve(std::string_view path, bool must_exist) const;
  std::uint64_t resolve_from(std::uint64_t at, std::string_view path, bool must_exist, int depth, std::uint64_t& steps) const;
  ElementType element_type(std::uint64_t at, std::uint64_t size, int depth = 0) const;
  ValueInfo dataspace(std::uint64_t at, std::uint64_t size, std::vector<std::uint64_t>* max_shape = nullptr) const;
  std::pair<std::uint64_t, std::uint64_t> shared_message(std::uint64_t at, std::uint64_t size, std::uint16_t type) const;
  std::pair<std::uint64_t, std::uint64_t> heap_object(std::uint64_t collection, std::uint32_t index) const;
  fractal_heap heap_header(std::uint64_t address) const;
  std::pair<std::uint64_t, std::uint64_t> managed_object(const fractal_heap& h, const std::uint8_t* id) const;
  void btree2_records(std::uint64_t address, std::uint8_t type, std::uint64_t record_bytes, const std::function<void(std::uint64_t)>& record) const;
  void v1_group_tree(std::uint64_t node, std::uint64_t heap_data, std::uint64_t heap_size, std::map<std::string, link>& out, int level,
                     std::set<std::uint64_t>& seen) const;
  void parse_link(std::uint64_t at, std::uint64_t size, std::map<std::string, link>& out) const;
  attribute_ref parse_attribute(std::uint64_t at, std::uint64_t size) const;
  std::vector<std::string> strings(const ElementType& t, const ValueInfo& v, std::uint64_t at, std::uint64_t size) const;
  template <class T> void read_dataset(std::string_view path, T* dst) const;
};

/// Sequential reads inside one structure of the file, each bounded by the structure's end.
struct cursor {
  const file_state& f;
  std::uint64_t pos, end;
  const char* structure;
  void need(std::uint64_t n) const {
    if (pos > end || n > end - pos) f.fail(pos, std::string(structure) + " is truncated or malformed");
  }
  std::uint64_t u(unsigned n) {
    need(n);
    const std::uint64_t v = f.le(pos, n);
    pos += n;
    return v;
  }
  std::uint64_t offset() { return f.absolute(u(f.O)); }
  std::uint64_t length() { return u(f.L); }
  void skip(std::uint64_t n) {
    need(n);
    pos += n;
  }
  std::uint64_t left() const { return pos <= end ? end - pos : 0; }
};

// ---- object headers --------------------------------------------------------------------------

inline std::shared_ptr<const object_header> file_state::header(std::uint64_t address) const {
  if (address == undef) fail(0, "an object at an undefined address");
  if (auto it = headers.find(address); it != headers.end()) return it->second;
  auto h = std::make_shared<object_header>();
  struct block {
    std::uint64_t begin, end;
  };
  std::vector<block> pending;
  std::set<std::uint64_t> seen{address};
  std::uint64_t blocks_bytes = 0;  // at most the file's size: blocks cannot overlap to multiply messages
  bool v2 = false;
  unsigned message_header = 8;
  bool creation_order = false;
  need(address, 16, "an object header");
  if (signature(address, "OHDR")) {
    v2 = true;
    cursor c{*this, address + 4, size(), "an object header"};
    if (c.u(1) != 2) fail(address, "object header version is not 2");
    const unsigned flags = unsigned(c.u(1));
    if (flags & 0xC0) fail(address, "object header flags " + std::to_string(flags) + " are not defined");
    if (flags & 0x20) c.skip(16);
    if (flags & 0x10) c.skip(4);
    const std::uint64_t chunk = c.u(1u << (flags & 3));
    creation_order = flags & 0x04;
    message_header = creation_order ? 6 : 4;
    need(c.pos, chunk, "an object header");
    check_sum(address, c.pos - address + chunk, "an object header");
    pending.push_back({c.pos, c.pos + chunk});
  } else {
    cursor c{*this, address, size(), "an object header"};
    const std::uint64_t version = c.u(1);
    if (version != 1) fail(address, "not an object header (version " + std::to_string(version) + ")");
    c.skip(1 + 2 + 4);
    const std::uint64_t chunk = c.u(4);
    c.skip(4);
    need(c.pos, chunk, "an object header");
    pending.push_back({c.pos, c.pos + chunk});
  }
  for (std::size_t b = 0; b < pending.size(); ++b) {
    if (b > 65536) fail(address, "an object header of more than 65536 blocks");
    blocks_bytes += pending[b].end - pending[b].begin;
    if (blocks_bytes > size()) fail(address, "an object header's blocks overlap (more bytes than the file)");
    spend(pending[b].end - pending[b].begin, pending[b].begin);
    cursor c{*this, pending[b].begin, pending[b].end, "an object header message"};
    while (c.left() >= message_header) {
      message m;
      if (v2) {
        m.type = std::uint16_t(c.u(1));
        m.size = c.u(2);
        m.flags = std::uint8_t(c.u(1));
        if (creation_order) c.skip(2);
      } else {
        m.type = std::uint16_t(c.u(2));
        m.size = c.u(2);
        m.flags = std::uint8_t(c.u(1));
        c.skip(3);
      }
      m.at = c.pos;
      c.skip(m.size);
      if (m.type == 0x10) {
        // A continuation: the next block of messages (for version 2, an "OCHK" block).
        cursor d{*this, m.at, m.at + m.size, "a continuation message"};
        const std::uint64_t at = d.offset(), length = d.length();
        if (at == undef || !seen.insert(at).second) fail(m.at, "a continuation block that is undefined or already read");
        need(at, length, "a continuation block");
        if (v2) {
          if (length < 8 || !signature(at, "OCHK")) fail(at, "not an object header continuation block");
          check_sum(at, length - 4, "an object header continuation block");
          pending.push_back({at + 4, at + length - 4});
        } else {
          pending.push_back({at, at + length});
        }
      }
      if (m.type != 0) h->messages.push_back(m);
    }
  }
  return headers.emplace(address, std::move(h)).first->second;
}

/// The file range of a message that is shared: the message of that type in the object header
/// the sharing record points at (committed datatypes; the shared-message heap is not read).
inline std::pair<std::uint64_t, std::uint64_t> file_state::shared_message(std::uint64_t at, std::uint64_t size, std::uint16_t type) const {
  cursor c{*this, at, at + size, "a shared message"};
  const std::uint64_t version = c.u(1), kind = c.u(1);
  std::uint64_t address = undef;
  if (version == 1) {
    c.skip(6 + L);
    address = c.offset();
  } else if (version == 2 || (version == 3 && kind == 2)) {
    address = c.offset();
  } else {
    fail(at, "a message held in the shared-message heap (version " + std::to_string(version) + ", type " + std::to_string(kind) + ") is not read");
  }
  const auto h = header(address);
  const message* m = h->find(type);
  if (!m || (m->flags & 2)) fail(at, "a shared message's object has no message of type " + std::to_string(type));
  return {m->at, m->size};
}

// ---- datatypes, dataspaces -------------------------------------------------------------------

inline ElementType file_state::element_type(std::uint64_t at, std::uint64_t size, int depth) const {
  cursor c{*this, at, at + size, "a datatype message"};
  const unsigned head = unsigned(c.u(1));
  const unsigned cls = head & 0x0F, version = head >> 4;
  if (version < 1 || version > 5) fail(at, "datatype version " + std::to_string(version) + " is not defined");
  const std::uint32_t bits = std::uint32_t(c.u(3));
  ElementType t;
  t.size = std::size_t(c.u(4));
  if (t.size == 0) fail(at, "a datatype of size 0");
  if (cls == 0) {  // fixed-point
    const std::uint64_t offset = c.u(2), precision = c.u(2);
    if ((t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8) && offset == 0 && precision == t.size * 8) {
      t.kind = ElementType::Kind::integer;
      t.big_endian = bits & 1;
      t.is_signed = bits & 8;
    }
  } else if (cls == 1) {  // floating-point
    const std::uint64_t offset = c.u(2), precision = c.u(2), exp_at = c.u(1), exp_size = c.u(1), mant_at = c.u(1), mant_size = c.u(1), bias = c.u(4);
    const unsigned order = (bits & 1) | ((bits >> 5) & 2);
    const bool ieee = offset == 0 && precision == t.size * 8 && mant_at == 0 &&
                      ((t.size == 2 && exp_at == 10 && exp_size == 5 && mant_size == 10 && bias == 15) ||
                       (t.size == 4 && exp_at == 23 && exp_size == 8 && mant_size == 23 && bias == 127) ||
                       (t.size == 8 && exp_at == 52 && exp_size == 11 && mant_size == 52 && bias == 1023));
    if (ieee && order <= 1) {
      t.kind = ElementType::Kind::floating;
      t.big_endian = order == 1;
    }
  } else if (cls == 3) {  // fixed-length string
    t.kind = ElementType::Kind::string;
    t.string_padding = int(bits & 0x0F);
  } else if (cls == 9 && (bits & 0x0F) == 1) {  // variable-length string
    if (depth > 4) fail(at, "datatypes nested too deeply");
    if (t.size < 4 + O + 4) fail(at, "a variable-length string of " + std::to_string(t.size) + " bytes cannot hold its heap reference");
    t.kind = ElementType::Kind::string;
    t.variable_length = true;
    t.string_padding = int((bits >> 4) & 0x0F);
  }
  return t;
}

inline ValueInfo file_state::dataspace(std::uint64_t at, std::uint64_t size, std::vector<std::uint64_t>* max_shape) const {
  cursor c{*this, at, at + size, "a dataspace message"};
  const std::uint64_t version = c.u(1), rank = c.u(1), flags = c.u(1);
  ValueInfo v;
  if (version == 1) {
    c.skip(5);
  } else if (version == 2) {
    const std::uint64_t type = c.u(1);
    if (type > 2) fail(at, "dataspace type " + std::to_string(type) + " is not defined");
    v.null = type == 2;
  } else {
    fail(at, "dataspace version " + std::to_string(version) + " is not read");
  }
  if (rank > 32) fail(at, "a dataspace of rank " + std::to_string(rank) + " (at most 32)");
  for (std::uint64_t i = 0; i < rank; ++i) v.shape.push_back(c.length());
  if (max_shape) {  // the maximum extents (unlimited: all bits set) follow when flag bit 0 is set
    *max_shape = v.shape;
    if (flags & 1)
      for (std::uint64_t i = 0; i < rank; ++i) {
        const std::uint64_t e = c.length();
        (*max_shape)[i] = e == (L == 8 ? undef : (std::uint64_t(1) << (8 * L)) - 1) ? undef : e;
      }
  }
  if (!v.null) {
    std::uint64_t n = 1;
    for (auto e : v.shape) {
      if (e != 0 && n > undef / e) fail(at, "a dataspace of more elements than 64 bits count");
      n *= e;
    }
  }
  return v;
}

// ---- groups ----------------------------------------------------------------------------------

/// A name in a local heap's data segment: NUL-terminated inside it.
inline std::string heap_name(const file_state& f, std::uint64_t data, std::uint64_t size, std::uint64_t offset) {
  if (offset >= size) f.fail(data, "a name at offset " + std::to_string(offset) + " of a local heap of " + std::to_string(size) + " bytes");
  const auto* p = f.bytes.data() + data + offset;
  const void* nul = std::memchr(p, 0, std::size_t(size - offset));
  if (!nul) f.fail(data + offset, "a name in a local heap has no terminating NUL");
  f.spend(std::uint64_t(static_cast<const std::uint8_t*>(nul) - p), data + offset);
  return std::string(reinterpret_cast<const char*>(p), static_cast<const std::uint8_t*>(nul) - p);
}

inline void file_state::v1_group_tree(std::uint64_t node, std::uint64_t heap_data, std::uint64_t heap_size, std::map<std::string, link>& out,
                                      int level, std::set<std::uint64_t>& seen) const {
  if (!seen.insert(node).second) fail(node, "a group's B-tree reaches a node twice");
  if (!signature(node, "TREE")) fail(node, "not a group B-tree node");
  cursor c{*this, node + 4, size(), "a group B-tree node"};
  if (c.u(1) != 0) fail(node, "a group's B-tree node is not of type 0");
  const int node_level = int(c.u(1));
  if (level >= 0 && node_level != level) fail(node, "a B-tree node of level " + std::to_string(node_level) + " where " + std::to_string(level) + " belongs");
  const std::uint64_t entries = c.u(2);
  c.skip(2 * O);  // siblings
  c.skip(L);      // key 0
  spend(entries * (O + L), node);
  for (std::uint64_t i = 0; i < entries; ++i) {
    const std::uint64_t child = c.offset();
    c.skip(L);
    if (node_level > 0) {
      v1_group_tree(child, heap_data, heap_size, out, node_level - 1, seen);
      continue;
    }
    if (!seen.insert(child).second) fail(child, "a group's B-tree reaches a symbol table node twice");
    if (!signature(child, "SNOD")) fail(child, "not a symbol table node");
    cursor s{*this, child + 4, size(), "a symbol table node"};
    if (s.u(1) != 1) fail(child, "symbol table node version is not 1");
    s.skip(1);
    const std::uint64_t symbols = s.u(2);
    spend(symbols * (2 * O + 24), child);
    for (std::uint64_t k = 0; k < symbols; ++k) {
      const std::uint64_t name_offset = s.u(O), address = s.offset(), cache = s.u(4);
      s.skip(4);
      const std::uint64_t scratch = s.pos;
      s.skip(16);
      link l;
      if (cache == 2) l.soft = heap_name(*this, heap_data, heap_size, le(scratch, 4));
      else l.address = address;
      out.emplace(heap_name(*this, heap_data, heap_size, name_offset), std::move(l));
    }
  }
}

inline void file_state::parse_link(std::uint64_t at, std::uint64_t size_, std::map<std::string, link>& out) const {
  spend(size_, at);
  cursor c{*this, at, at + size_, "a link message"};
  if (c.u(1) != 1) fail(at, "link message version is not 1");
  const unsigned flags = unsigned(c.u(1));
  const unsigned type = (flags & 0x08) ? unsigned(c.u(1)) : 0;
  if (flags & 0x04) c.skip(8);
  if (flags & 0x10) c.skip(1);
  const std::uint64_t length = c.u(1u << (flags & 3));
  c.need(length);
  std::string name(reinterpret_cast<const char*>(bytes.data() + c.pos), std::size_t(length));
  c.skip(length);
  link l;
  if (type == 0) {
    l.address = c.offset();
  } else if (type == 1) {
    const std::uint64_t n = c.u(2);
    c.need(n);
    l.soft.assign(reinterpret_cast<const char*>(bytes.data() + c.pos), std::size_t(n));
  } else {
    l.external = true;  // external and user-defined links lead out of this file
  }
  out.emplace(std::move(name), std::move(l));
}

inline std::shared_ptr<const std::map<std::string, link>> file_state::links(std::uint64_t address) const {
  if (auto it = groups.find(address); it != groups.end()) return it->second;
  const auto h = header(address);
  auto out = std::make_shared<std::map<std::string, link>>();
  if (const message* st = h->find(0x11)) {
    cursor c{*this, st->at, st->at + st->size, "a symbol table message"};
    const std::uint64_t tree = c.offset(), heap = c.offset();
    if (!signature(heap, "HEAP")) fail(heap, "not a local heap");
    cursor hc{*this, heap + 4, size(), "a local heap"};
    if (hc.u(1) != 0) fail(heap, "local heap version is not 0");
    hc.skip(3);
    const std::uint64_t data_size = hc.length();
    hc.skip(L);
    const std::uint64_t data = hc.offset();
    need(data, data_size, "a local heap's data");
    std::set<std::uint64_t> seen;
    if (tree != undef) v1_group_tree(tree, data, data_size, *out, -1, seen);
  }
  for (const auto& m : h->messages)
    if (m.type == 0x06) parse_link(m.at, m.size, *out);
  if (const message* info = h->find(0x02)) {
    cursor c{*this, info->at, info->at + info->size, "a link info message"};
    if (c.u(1) != 0) fail(info->at, "link info version is not 0");
    const unsigned flags = unsigned(c.u(1));
    if (flags & 1) c.skip(8);
    const std::uint64_t heap = c.offset(), names = c.offset();
    if (heap != undef) {
      // Dense storage: link messages in a fractal heap, indexed by name in a version 2 B-tree.
      const fractal_heap fh = heap_header(heap);
      btree2_records(names, 5, 4 + fh.id_length, [&](std::uint64_t record) {
        need(record + 4, fh.id_length, "a link name record");
        const auto [at, n] = managed_object(fh, bytes.data() + record + 4);
        parse_link(at, n, *out);
      });
    }
  }
  return groups.emplace(address, std::move(out)).first->second;
}

// ---- fractal heaps and version 2 B-trees (dense groups and attributes) -------------------------

inline fractal_heap file_state::heap_header(std::uint64_t address) const {
  if (!signature(address, "FRHP")) fail(address, "not a fractal heap header");
  cursor c{*this, address + 4, size(), "a fractal heap header"};
  if (c.u(1) != 0) fail(address, "fractal heap version is not 0");
  fractal_heap h;
  h.address = address;
  h.id_length = unsigned(c.u(2));
  const std::uint64_t filter_length = c.u(2);
  const unsigned flags = unsigned(c.u(1));
  h.checksummed = flags & 2;
  const std::uint64_t max_managed = c.u(4);
  c.skip(L);      // next huge ID
  c.skip(O);      // huge objects' B-tree
  c.skip(L + O);  // free space, its manager
  c.skip(8 * L);  // managed space, allocated, iterator; managed objects; huge size, count; tiny size, count
  h.width = unsigned(c.u(2));
  h.start_block = c.length();
  h.max_direct = c.length();
  const unsigned max_heap_bits = unsigned(c.u(2));
  c.skip(2);  // starting rows of the root
  h.root = c.offset();
  h.root_rows = unsigned(c.u(2));
  if (filter_length > 0) fail(address, "a fractal heap with filters is not read");
  check_sum(address, c.pos - address, "a fractal heap header");
  const auto power = [](std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; };
  if (!power(h.width) || h.width > 65536 || !power(h.start_block) || !power(h.max_direct) || h.max_direct < h.start_block ||
      max_heap_bits == 0 || max_heap_bits > 64 || h.id_length == 0 || h.id_length > 64 || h.root_rows > 64)
    fail(address, "a fractal heap of impossible sizes");
  h.start_bits = log2_floor(h.start_block);
  h.first_row_bits = h.start_bits + log2_floor(h.width);
  if (h.first_row_bits >= 63 || h.first_row_bits > max_heap_bits || log2_floor(h.max_direct) >= 63)
    fail(address, "a fractal heap whose first row is larger than the heap");
  h.max_direct_rows = log2_floor(h.max_direct) - h.start_bits + 2;
  h.offset_size = (max_heap_bits + 7) / 8;
  h.length_size = std::min((log2_floor(h.max_direct) + 7) / 8, limit_bytes(max_managed));
  if (1 + h.offset_size + h.length_size > h.id_length) fail(address, "a fractal heap whose IDs cannot hold an offset and a length");
  return h;
}

inline std::pair<std::uint64_t, std::uint64_t> file_state::managed_object(const fractal_heap& h, const std::uint8_t* id) const {
  const unsigned kind = (id[0] >> 4) & 3;
  if ((id[0] >> 6) != 0) fail(h.address, "a heap ID of an undefined version");
  if (kind == 2) {  // tiny: the object is in the ID itself
    const bool wide = h.id_length > 18;
    const std::uint64_t n = wide ? ((std::uint64_t(id[0] & 0x0F) << 8) | id[1]) + 1 : std::uint64_t(id[0] & 0x0F) + 1;
    const std::uint64_t skip = wide ? 2 : 1;
    if (skip + n > h.id_length) fail(h.address, "a tiny heap object longer than its ID");
    return {std::uint64_t(id - bytes.data()) + skip, n};
  }
  if (kind == 1) {  // huge, directly addressed when the ID can hold an address and a length
    if (h.id_length < 1 + O + L) fail(h.address, "a huge heap object found through its B-tree is not read");
    std::uint64_t a = 0, n = 0;
    for (unsigned i = 0; i < O; ++i) a |= std::uint64_t(id[1 + i]) << (8 * i);
    for (unsigned i = 0; i < L; ++i) n |= std::uint64_t(id[1 + O + i]) << (8 * i);
    a = absolute(a);
    need(a, n, "a huge heap object");
    return {a, n};
  }
  if (kind != 0) fail(h.address, "a heap ID of an undefined type");
  std::uint64_t offset = 0, length = 0;
  for (unsigned i = 0; i < h.offset_size; ++i) offset |= std::uint64_t(id[1 + i]) << (8 * i);
  for (unsigned i = 0; i < h.length_size; ++i) length |= std::uint64_t(id[1 + h.offset_size + i]) << (8 * i);
  // Down the indirect blocks to the direct block holding the offset.
  std::uint64_t block = h.root, block_offset = 0, block_size = h.start_block;
  if (h.root_rows > 0) {
    std::uint64_t base = 0;
    unsigned rows = h.root_rows;
    std::set<std::uint64_t> seen;
    for (;;) {
      if (block == undef || !seen.insert(block).second || seen.size() > 64) fail(h.address, "a heap object's indirect blocks are undefined or loop");
      if (!signature(block, "FHIB")) fail(block, "not a fractal heap indirect block");
      const std::uint64_t rel = offset - base;
      if (offset < base) fail(block, "a heap object's offset lies before its block");
      unsigned row = 0;
      if (rel >= h.start_block * h.width) row = log2_floor(rel) - h.first_row_bits + 1;
      if (row >= rows || row >= 63 - h.start_bits) fail(block, "a heap object's offset lies past its indirect block");
      const std::uint64_t col = row == 0 ? rel / h.start_block : (rel - h.row_offset(row)) / h.row_size(row);
      if (col >= h.width) fail(block, "a heap object's offset lies past its indirect block");
      const std::uint64_t direct_entries = std::uint64_t(std::min(rows, h.max_direct_rows)) * h.width;
      const std::uint64_t indirect_entries = rows > h.max_direct_rows ? std::uint64_t(rows - h.max_direct_rows) * h.width : 0;
      const std::uint64_t header = 4 + 1 + O + h.offset_size, entries_size = (direct_entries + indirect_entries) * O;
      if (verified_blocks.insert(block).second) {  // each indirect block's checksum verified once
        try {
          check_sum(block, header + entries_size, "a fractal heap indirect block");
        } catch (...) {
          verified_blocks.erase(block);
          throw;
        }
      }
      const std::uint64_t e = row * std::uint64_t(h.width) + col;
      const std::uint64_t child = absolute(le(block + header + e * O, O));
      const std::uint64_t child_base = base + h.row_offset(row) + col * h.row_size(row);
      if (row < h.max_direct_rows) {
        block = child;
        block_offset = child_base;
        block_size = h.row_size(row);
        break;
      }
      base = child_base;
      if (log2_floor(h.row_size(row)) < h.first_row_bits) fail(block, "a fractal heap indirect block smaller than a row");
      rows = log2_floor(h.row_size(row)) - h.first_row_bits + 1;
      block = child;
    }
  }
  if (block == undef) fail(h.address, "a heap object in an unallocated block");
  if (!signature(block, "FHDB")) fail(block, "not a fractal heap direct block");
  need(block, block_size, "a fractal heap direct block");
  const std::uint64_t header = 4 + 1 + O + h.offset_size + (h.checksummed ? 4 : 0);
  if (h.checksummed && verified_blocks.insert(block).second) {
    spend(block_size, block);
    std::vector<std::uint8_t> copy(bytes.data() + block, bytes.data() + block + block_size);
    const std::uint64_t at = header - 4;
    const std::uint32_t stored = std::uint32_t(le(block + at, 4));
    std::memset(copy.data() + at, 0, 4);
    if (lookup3(copy.data(), copy.size()) != stored) {
      verified_blocks.erase(block);
      fail(block, "a fractal heap direct block: checksum mismatch (the data is damaged)");
    }
  }
  if (offset < block_offset || offset - block_offset < header || offset - block_offset > block_size || length > block_size - (offset - block_offset))
    fail(block, "a heap object (offset " + std::to_string(offset) + ", " + std::to_string(length) + " bytes) outside its block");
  return {block + (offset - block_offset), length};
}

/// Calls record(at) for each record of the version 2 B-tree at address (record_bytes: the record's
/// size its type implies, checked against the header's; 0 when the caller checks its own reads).
inline void file_state::btree2_records(std::uint64_t address, std::uint8_t type, std::uint64_t record_bytes,
                                       const std::function<void(std::uint64_t)>& record) const {
  if (!signature(address, "BTHD")) fail(address, "not a version 2 B-tree header");
  cursor c{*this, address + 4, size(), "a version 2 B-tree header"};
  if (c.u(1) != 0) fail(address, "version 2 B-tree version is not 0");
  if (c.u(1) != type) fail(address, "a version 2 B-tree of another record type");
  const std::uint64_t node_size = c.u(4), record_size = c.u(2), depth = c.u(2);
  c.skip(2);
  const std::uint64_t root = c.offset(), root_records = c.u(2);
  c.skip(L);
  check_sum(address, c.pos - address, "a version 2 B-tree header");
  if (root == undef) return;
  if (record_size == 0 || node_size <= 10 + record_size || depth > 32 || (record_bytes != 0 && record_size != record_bytes))
    fail(address, "a version 2 B-tree of impossible sizes");
  // Per depth: the most records a node holds and the sizes of its child pointers' fields.
  std::vector<std::uint64_t> max_records(depth + 1), total(depth + 1), total_size(depth + 1);
  max_records[0] = total[0] = (node_size - 10) / record_size;
  const unsigned count_size = limit_bytes(max_records[0]);
  for (std::uint64_t d = 1; d <= depth; ++d) {
    const std::uint64_t pointer = O + count_size + (d > 1 ? total_size[d - 1] : 0);
    if (node_size < 10 + pointer) fail(address, "a version 2 B-tree of impossible sizes");
    max_records[d] = (node_size - 10 - pointer) / (record_size + pointer);
    total[d] = (max_records[d] + 1) * total[d - 1] + max_records[d];
    total_size[d] = limit_bytes(total[d]);
  }
  std::set<std::uint64_t> seen;
  const std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> walk = [&](std::uint64_t node, std::uint64_t records, std::uint64_t d) {
    if (node == undef || !seen.insert(node).second) fail(address, "a version 2 B-tree reaches a node twice");
    if (records > max_records[d]) fail(node, "a version 2 B-tree node of more records than it can hold");
    if (!signature(node, d == 0 ? "BTLF" : "BTIN")) fail(node, "not a version 2 B-tree node");
    need(node, 6, "a version 2 B-tree node");
    if (le(node + 4, 1) != 0 || le(node + 5, 1) != type) fail(node, "a version 2 B-tree node of another version or type");
    const std::uint64_t first = node + 6;
    std::uint64_t used = 6 + records * record_size;
    const std::uint64_t pointer = d == 0 ? 0 : O + count_size + (d > 1 ? total_size[d - 1] : 0);
    used += d == 0 ? 0 : (records + 1) * pointer;
    check_sum(node, used, "a version 2 B-tree node");
    const auto child = [&](std::uint64_t i) {
      const std::uint64_t p = first + records * record_size + i * pointer;
      walk(absolute(le(p, O)), le(p + O, count_size), d - 1);
    };
    for (std::uint64_t i = 0; i < records; ++i) {
      if (d > 0) child(i);
      record(first + i * record_size);
    }
    if (d > 0) child(records);
  };
  walk(root, root_records, depth);
}

// ---- attributes ------------------------------------------------------------------------------

inline attribute_ref file_state::parse_attribute(std::uint64_t at, std::uint64_t size_) const {
  spend(size_, at);
  cursor c{*this, at, at + size_, "an attribute message"};
  const std::uint64_t version = c.u(1);
  if (version < 1 || version > 3) fail(at, "attribute message version " + std::to_string(version) + " is not defined");
  const unsigned flags = unsigned(c.u(1));
  const std::uint64_t name_size = c.u(2), type_size = c.u(2), space_size = c.u(2);
  if (version == 3) c.skip(1);
  const auto padded = [&](std::uint64_t n) { return version == 1 ? (n + 7) / 8 * 8 : n; };
  attribute_ref a;
  c.need(padded(name_size));
  const auto* p = reinterpret_cast<const char*>(bytes.data() + c.pos);
  a.name.assign(p, strnlen(p, std::size_t(name_size)));
  c.skip(padded(name_size));
  a.type_at = c.pos, a.type_size = type_size;
  c.skip(padded(type_size));
  a.space_at = c.pos, a.space_size = space_size;
  c.skip(padded(space_size));
  a.data_at = c.pos, a.data_size = c.left();
  a.type_shared = version > 1 && (flags & 1);
  a.space_shared = version > 1 && (flags & 2);
  return a;
}

inline std::shared_ptr<const std::vector<attribute_ref>> file_state::attributes(std::uint64_t address) const {
  if (auto it = attribute_lists.find(address); it != attribute_lists.end()) return it->second;
  const auto h = header(address);
  auto list = std::make_shared<std::vector<attribute_ref>>();
  auto& out = *list;
  for (const auto& m : h->messages) {
    if (m.type != 0x0C) continue;
    if (m.flags & 2) fail(m.at, "a shared attribute message is not read");
    out.push_back(parse_attribute(m.at, m.size));
  }
  if (const message* info = h->find(0x15)) {
    cursor c{*this, info->at, info->at + info->size, "an attribute info message"};
    if (c.u(1) != 0) fail(info->at, "attribute info version is not 0");
    const unsigned flags = unsigned(c.u(1));
    if (flags & 1) c.skip(2);
    const std::uint64_t heap = c.offset(), names = c.offset();
    if (heap != undef) {
      const fractal_heap fh = heap_header(heap);
      btree2_records(names, 8, fh.id_length + 9, [&](std::uint64_t record) {
        need(record, fh.id_length + 1, "an attribute name record");
        if (le(record + fh.id_length, 1) & 2) fail(record, "a shared attribute message is not read");
        const auto [at, n] = managed_object(fh, bytes.data() + record);
        out.push_back(parse_attribute(at, n));
      });
    }
  }
  return attribute_lists.emplace(address, std::move(list)).first->second;
}

// ---- paths -----------------------------------------------------------------------------------

inline std::uint64_t file_state::resolve(std::string_view path, bool must_exist) const {
  std::uint64_t steps = 0;
  return resolve_from(root, path, must_exist, 0, steps);
}

/// The object at path from the group at `at`: a soft link's target is resolved from the root when
/// absolute, from the group holding the link otherwise; every step counts against one budget, so
/// links that name one another cannot multiply the work.
inline std::uint64_t file_state::resolve_from(std::uint64_t at, std::string_view path, bool must_exist, int depth, std::uint64_t& steps) const {
  if (depth > 16) fail(0, "soft links nested more than 16 deep at '" + std::string(path) + "'");
  std::size_t i = 0;
  while (i < path.size()) {
    const std::size_t slash = path.find('/', i);
    const std::string_view part = path.substr(i, slash == std::string_view::npos ? std::string_view::npos : slash - i);
    i = slash == std::string_view::npos ? path.size() : slash + 1;
    if (part.empty() || part == ".") continue;
    if (++steps > 65536) fail(0, "resolving '" + std::string(path) + "' takes more than 65536 steps (soft links that name one another)");
    const auto members = links(at);
    const auto it = members->find(std::string(part));
    if (it == members->end()) {
      if (must_exist) fail(0, "no object '" + std::string(path) + "'");
      return undef;
    }
    if (it->second.external) {
      if (!must_exist) return undef;
      fail(0, "'" + std::string(path) + "' is an external link, to another file");
    }
    if (!it->second.soft.empty()) {
      const std::string& target = it->second.soft;
      at = resolve_from(target.front() == '/' ? root : at, target, must_exist, depth + 1, steps);
      if (at == undef) return undef;
    } else {
      at = it->second.address;
    }
    if (at == undef) fail(0, "'" + std::string(path) + "' links to an undefined address");
  }
  return at;
}

// ---- values ----------------------------------------------------------------------------------

inline std::pair<std::uint64_t, std::uint64_t> file_state::heap_object(std::uint64_t collection, std::uint32_t index) const {
  auto it = global_heaps.find(collection);
  if (it == global_heaps.end()) {
    if (!signature(collection, "GCOL")) fail(collection, "not a global heap collection");
    cursor c{*this, collection + 4, size(), "a global heap collection"};
    if (c.u(1) != 1) fail(collection, "global heap version is not 1");
    c.skip(3);
    const std::uint64_t total = c.length();
    need(collection, total, "a global heap collection");
    spend(total, collection);
    auto g = std::make_shared<global_heap>();
    std::uint64_t p = collection + 8 + L;
    const std::uint64_t end = collection + total;
    while (p < end && end - p >= 8 + L) {
      const std::uint32_t id = std::uint32_t(le(p, 2));
      if (id == 0) break;  // the free space, always last
      const std::uint64_t n = le(p + 8, L);
      const std::uint64_t data = p + 8 + L;
      if (n > end - data) fail(p, "a global heap object runs past its collection");
      g->objects.emplace(id, std::pair{data, n});
      const std::uint64_t padded = (n + 7) / 8 * 8;
      if (padded > end - data) break;
      p = data + padded;
    }
    it = global_heaps.emplace(collection, std::move(g)).first;
  }
  const auto o = it->second->objects.find(index);
  if (o == it->second->objects.end()) fail(collection, "no object " + std::to_string(index) + " in the global heap collection");
  return o->second;
}

inline std::vector<std::string> file_state::strings(const ElementType& t, const ValueInfo& v, std::uint64_t at, std::uint64_t size_) const {
  std::vector<std::string> out;
  const std::uint64_t n = v.count();
  if (t.size != 0 && n > size_ / t.size) fail(at, std::to_string(n) + " strings of " + std::to_string(t.size) + " bytes in " + std::to_string(size_));
  std::uint64_t total = 0;  // the strings' bytes: at most the file's (no object counted twice over)
  const auto produced = [&](std::uint64_t bytes) {
    total += bytes;
    if (total > size()) fail(at, "an attribute's strings come to more bytes than the file holds");
  };
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t e = at + i * t.size;
    if (t.variable_length) {
      const std::uint64_t length = le(e, 4), collection = absolute(le(e + 4, O));
      const std::uint32_t index = std::uint32_t(le(e + 4 + O, 4));
      if (length == 0) {
        out.emplace_back();
        continue;
      }
      const auto [data, stored] = heap_object(collection, index);
      if (length > stored) fail(e, "a string of " + std::to_string(length) + " bytes in a heap object of " + std::to_string(stored));
      const auto* p = reinterpret_cast<const char*>(bytes.data() + data);
      produced(length);
      out.emplace_back(p, strnlen(p, std::size_t(length)));
    } else {
      const auto* p = reinterpret_cast<const char*>(bytes.data() + e);
      std::string s(p, strnlen(p, t.size));
      if (t.string_padding == 2)
        while (!s.empty() && s.back() == ' ') s.pop_back();
      out.push_back(std::move(s));
    }
  }
  return out;
}

/// The number of type t (integer or floating, checked by the caller) at p, as T.
template <class T> T number(const std::uint8_t* p, const ElementType& t) {
  std::uint64_t bits = 0;
  for (std::size_t j = 0; j < t.size; ++j) bits |= std::uint64_t(p[t.big_endian ? t.size - 1 - j : j]) << (8 * j);
  if (t.kind == ElementType::Kind::integer) {
    const unsigned shift = unsigned(64 - 8 * t.size);
    return t.is_signed ? T(std::int64_t(bits << shift) >> shift) : T(bits);
  }
  double v;
  if (t.size == 8) v = std::bit_cast<double>(bits);
  else if (t.size == 4) v = std::bit_cast<float>(std::uint32_t(bits));
  else {  // IEEE half precision
    const int e = int((bits >> 10) & 0x1F);
    const double m = double(bits & 0x3FF);
    v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m == 0 ? HUGE_VAL : NAN) : std::ldexp(m + 1024, e - 25);
    if (bits & 0x8000) v = -v;
  }
  if constexpr (std::is_integral_v<T>) {
    // An integer destination takes only the floating values it can hold (no NaN, no infinity).
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
      throw io_error(std::string(what) + ": a floating value (" + std::to_string(v) + ") read as int64 is out of its range");
  }
  return T(v);
}

/// n numbers of type t at p, converted into dst.
template <class T> void convert(const std::uint8_t* p, const ElementType& t, T* dst, std::uint64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!t.big_endian && t.kind == ElementType::Kind::floating && t.size == sizeof(T)) {
      std::memcpy(dst, p, std::size_t(n * sizeof(T)));
      return;
    }
  }
  for (std::uint64_t i = 0; i < n; ++i, p += t.size) dst[i] = number<T>(p, t);
}

inline std::vector<filter> filters_of(const file_state& f, const object_header& h) {
  std::vector<filter> out;
  const message* m = h.find(0x0B);
  if (!m) return out;
  cursor c{f, m->at, m->at + m->size, "a filter pipeline message"};
  const std::uint64_t version = c.u(1), count = c.u(1);
  if (version != 1 && version != 2) f.fail(m->at, "filter pipeline version " + std::to_string(version) + " is not defined");
  if (count > 32) f.fail(m->at, std::to_string(count) + " filters (at most 32)");
  if (version == 1) c.skip(6);
  for (std::uint64_t i = 0; i < count; ++i) {
    filter x;
    x.id = std::uint16_t(c.u(2));
    const std::uint64_t name_length = version == 1 || x.id >= 256 ? c.u(2) : 0;
    c.skip(2);  // flags
    const std::uint64_t values = c.u(2);
    c.skip(version == 1 ? (name_length + 7) / 8 * 8 : name_length);
    for (std::uint64_t k = 0; k < values; ++k) x.values.push_back(std::uint32_t(c.u(4)));
    if (version == 1 && values % 2) c.skip(4);
    out.push_back(std::move(x));
  }
  return out;
}

inline layout layout_of(const file_state& f, const object_header& h, std::size_t rank) {
  const message* m = h.find(0x08);
  if (!m) f.fail(0, "a dataset without a layout message");
  cursor c{f, m->at, m->at + m->size, "a data layout message"};
  const std::uint64_t version = c.u(1);
  layout l;
  const auto chunk_dims = [&](std::uint64_t dims, unsigned width) {
    if (rank == 0) f.fail(m->at, "a scalar dataset stored in chunks");
    if (dims != rank + 1) f.fail(m->at, "chunks of rank " + std::to_string(dims) + " for a dataset of rank " + std::to_string(rank) + " (plus one)");
    for (std::uint64_t i = 0; i + 1 < dims; ++i) {
      l.chunk.push_back(c.u(width));
      if (l.chunk.back() == 0) f.fail(m->at, "a chunk extent of 0");
    }
    return c.u(width);  // the element size
  };
  if (version == 1 || version == 2) {
    const std::uint64_t dims = c.u(1);
    l.storage = int(c.u(1));
    l.sized = l.storage != 1;
    c.skip(5);
    if (l.storage != 0) l.address = c.offset();
    if (l.storage == 2) {
      l.element = chunk_dims(dims, 4);
    } else {
      c.skip(4 * dims);
      if (l.storage == 0) {
        l.size = c.u(4);
        l.address = c.pos;
        c.need(l.size);
      }
    }
  } else if (version == 3 || version == 4) {
    l.storage = int(c.u(1));
    if (l.storage == 0) {
      l.size = c.u(2);
      l.address = c.pos;
      c.need(l.size);
    } else if (l.storage == 1) {
      l.address = c.offset();
      l.size = c.length();
    } else if (l.storage == 2 && version == 3) {
      const std::uint64_t dims = c.u(1);
      l.address = c.offset();
      l.element = chunk_dims(dims, 4);
    } else if (l.storage == 2) {
      const unsigned flags = unsigned(c.u(1));
      if (flags & ~3u) f.fail(m->at, "chunked layout flags " + std::to_string(flags) + " are not defined");
      l.edge_unfiltered = flags & 1;
      const std::uint64_t dims = c.u(1), width = c.u(1);
      if (width < 1 || width > 8) f.fail(m->at, "chunk extents of " + std::to_string(width) + " bytes");
      l.element = chunk_dims(dims, unsigned(width));
      const std::uint64_t index = c.u(1);
      if (index == 1) {
        l.index = 1;
        if (flags & 2) {
          l.single_filtered = true;
          l.single_size = c.length();
          l.single_mask = std::uint32_t(c.u(4));
        }
      } else if (index == 2) {
        l.index = 2;
      } else if (index == 3) {
        l.index = 3;
        l.page_bits = unsigned(c.u(1));
        if (l.page_bits == 0 || l.page_bits > 32) f.fail(m->at, "a fixed array of pages of 2^" + std::to_string(l.page_bits) + " chunks");
      } else if (index == 5) {
        l.index = 5;
        c.skip(6);  // node size, split and merge percentages: the tree's header repeats them
      } else {
        f.fail(m->at, "chunk index type " + std::to_string(index) +
                          (index == 4 ? " (an extensible array: a dataset with one unlimited extent, written with libver='latest')" : "") +
                          " is not read; rewrite the file with h5py's default libver or without maxshape");
      }
      l.address = c.offset();
    } else {
      f.fail(m->at, "storage class " + std::to_string(l.storage) + " (a virtual or unknown layout) is not read");
    }
  } else {
    f.fail(m->at, "data layout version " + std::to_string(version) + " is not read");
  }
  if (l.storage < 0 || l.storage > 2) f.fail(m->at, "storage class " + std::to_string(l.storage) + " is not defined");
  return l;
}

/// A chunk's bytes after its filters (applied last to first, skipping those its mask names),
/// exactly `bytes` of them.
inline std::vector<std::uint8_t> unfilter(const file_state& f, const std::vector<filter>& filters, std::uint64_t at, std::uint64_t stored,
                                          std::uint32_t mask, std::uint64_t bytes, std::size_t element) {
  f.need(at, stored, "a chunk");
  const auto skipped = [&](std::size_t k) { return (std::uint64_t(mask) >> k) & 1; };
  std::vector<std::uint8_t> data;
  bool copied = false;  // data holds the chunk's bytes yet (a filter's output), or they are still the file's
  const auto input = [&]() -> std::span<const std::uint8_t> {
    return copied ? std::span<const std::uint8_t>(data) : f.bytes.subspan(std::size_t(at), std::size_t(stored));
  };
  for (std::size_t k = filters.size(); k-- > 0;) {
    if (skipped(k)) continue;
    const filter& x = filters[k];
    if (x.id == 1) {
      // deflate: exactly what filter k received when written, the chunk plus the checksums of
      // the Fletcher-32 filters before it (h5py once put Fletcher-32 first)
      std::uint64_t expected = bytes;
      for (std::size_t j = 0; j < k; ++j)
        if (filters[j].id == 3 && !skipped(j)) expected += 4;
      data = ctflow::detail::inflate_exact(input(), 15, expected, what, f.name, at, "a deflated chunk");
      copied = true;
      continue;
    }
    if (!copied) {
      data.assign(input().begin(), input().end());
      copied = true;
    }
    if (x.id == 2) {  // shuffle
      const std::size_t size = x.values.empty() ? element : x.values[0];
      if (size > 1 && data.size() / size > 1) {
        std::vector<std::uint8_t> out(data.size());
        const std::size_t n = data.size() / size;
        for (std::size_t j = 0; j < size; ++j)
          for (std::size_t e = 0; e < n; ++e) out[e * size + j] = data[j * n + e];
        std::copy(data.begin() + std::ptrdiff_t(n * size), data.end(), out.begin() + std::ptrdiff_t(n * size));
        data.swap(out);
      }
    } else if (x.id == 3) {  // Fletcher-32: a checksum of 16-bit big-endian words after the data
      if (data.size() < 4) f.fail(at, "a chunk too short for its Fletcher-32 checksum");
      const std::size_t n = data.size() - 4;
      std::uint32_t s1 = 0, s2 = 0;
      std::size_t i = 0, words = n / 2;
      while (words > 0) {
        const std::size_t run = std::min<std::size_t>(words, 360);
        words -= run;
        for (std::size_t r = 0; r < run; ++r, i += 2) {
          s1 += std::uint32_t(data[i]) << 8 | data[i + 1];
          s2 += s1;
        }
        s1 = (s1 & 0xFFFF) + (s1 >> 16);
        s2 = (s2 & 0xFFFF) + (s2 >> 16);
      }
      if (n % 2) {
        s1 += std::uint32_t(data[n - 1]) << 8;
        s2 += s1;
        s1 = (s1 & 0xFFFF) + (s1 >> 16);
        s2 = (s2 & 0xFFFF) + (s2 >> 16);
      }
      s1 = (s1 & 0xFFFF) + (s1 >> 16);
      s2 = (s2 & 0xFFFF) + (s2 >> 16);
      const std::uint32_t sum = (s2 << 16) | s1;
      const std::uint32_t stored_sum = std::uint32_t(data[n]) | std::uint32_t(data[n + 1]) << 8 | std::uint32_t(data[n + 2]) << 16 | std::uint32_t(data[n + 3]) << 24;
      const std::uint32_t swapped = ((sum & 0x00FF00FF) << 8) | ((sum >> 8) & 0x00FF00FF);
      if (stored_sum != sum && stored_sum != swapped) f.fail(at, "a chunk's Fletcher-32 checksum does not match (the data is damaged)");
      data.resize(n);
    } else {
      static const std::map<int, const char*> names = {{4, "szip"}, {5, "nbit"}, {6, "scaleoffset"}, {32000, "lzf"}, {32001, "blosc"}, {32004, "lz4"}, {32015, "zstd"}};
      const auto it = names.find(x.id);
      f.fail(at, "filter " + std::to_string(x.id) + (it != names.end() ? std::string(" (") + it->second + ")" : std::string()) +
                     " is not read (deflate, shuffle and Fletcher-32 are)");
    }
  }
  if (!copied) data.assign(input().begin(), input().end());
  if (data.size() != bytes) f.fail(at, "a chunk of " + std::to_string(data.size()) + " bytes where " + std::to_string(bytes) + " belong");
  return data;
}

template <class T> void file_state::read_dataset(std::string_view path, T* dst) const {
  const std::uint64_t address = resolve(path, true);
  const auto h = header(address);
  const message* space = h->find(0x01);
  const message* type = h->find(0x03);
  if (!space || !type) fail(address, "'" + std::string(path) + "' is not a dataset");
  const auto [type_at, type_size] = (type->flags & 2) ? shared_message(type->at, type->size, 0x03) : std::pair{type->at, type->size};
  const ElementType t = element_type(type_at, type_size);
  std::vector<std::uint64_t> max_shape;
  const ValueInfo v = dataspace(space->at, space->size, &max_shape);
  const std::uint64_t n = v.count();
  if (n == 0) return;
  if (t.kind != ElementType::Kind::integer && t.kind != ElementType::Kind::floating)
    fail(address, "dataset '" + std::string(path) + "' holds " + t.name() + " elements, not numbers");
  const layout l = layout_of(*this, *h, v.shape.size());
  const std::uint64_t esize = t.size;
  if (n > undef / esize) fail(address, "dataset '" + std::string(path) + "' is larger than 64 bits count");
  const std::uint64_t total = n * esize;
  // Unwritten storage reads as the fill value (zeros unless the file defines one).
  const auto fill = [&] {
    std::vector<std::uint8_t> value(esize, 0);
    if (const message* m = h->find(0x05)) {
      cursor c{*this, m->at, m->at + m->size, "a fill value message"};
      const std::uint64_t version = c.u(1);
      std::uint64_t length = 0;
      bool defined = false;
      if (version == 1 || version == 2) {
        c.skip(2);
        defined = c.u(1) != 0;
        if (defined) length = c.u(4);
      } else if (version == 3) {
        defined = c.u(1) & 0x20;
        if (defined) length = c.u(4);
      }
      if (defined && length == esize) {
        c.need(length);
        std::memcpy(value.data(), bytes.data() + c.pos, std::size_t(esize));
      }
    }
    std::fill_n(dst, n, number<T>(value.data(), t));
  };
  if (l.storage == 0 || l.storage == 1) {
    if (l.address == undef) {
      fill();
      return;
    }
    const std::uint64_t stored = l.sized ? l.size : total;  // versions 1 and 2: as many bytes as the elements need
    if (l.storage == 1 && stored < total) fail(address, "dataset '" + std::string(path) + "' stores " + std::to_string(stored) + " bytes of its " + std::to_string(total));
    if (l.storage == 0 && l.size < total) fail(address, "compact dataset '" + std::string(path) + "' holds " + std::to_string(l.size) + " bytes of its " + std::to_string(total));
    need(l.address, total, "a dataset's data");
    convert(bytes.data() + l.address, t, dst, n);
    return;
  }
  // Chunked: each chunk unfiltered, then the part of it inside the dataset copied to its place.
  const std::size_t rank = v.shape.size();
  std::uint64_t chunk_elements = 1;
  for (auto e : l.chunk) {
    if (chunk_elements > (std::uint64_t(1) << 32) / e) fail(address, "chunks of more than 4 GiB");
    chunk_elements *= e;
  }
  if (chunk_elements > (std::uint64_t(1) << 32) / esize) fail(address, "chunks of more than 4 GiB");
  if (l.element != esize) fail(address, "chunks of " + std::to_string(l.element) + "-byte elements for a type of " + std::to_string(esize));
  const std::uint64_t chunk_bytes = chunk_elements * esize;
  const std::vector<filter> filters = filters_of(*this, *h);
  fill();
  std::vector<std::uint64_t> stride(rank, 1), chunk_stride(rank, 1);
  for (std::size_t k = rank; k-- > 1;) {
    stride[k - 1] = stride[k] * v.shape[k];
    chunk_stride[k - 1] = chunk_stride[k] * l.chunk[k];
  }
  // Each chunk's data is decoded once, each place of the dataset written once, and the chunks'
  // stored bytes come to no more than the file: entries that repeat or overlap cannot multiply
  // the work.
  std::set<std::uint64_t> chunks_read;
  std::set<std::vector<std::uint64_t>> origins_read;
  std::uint64_t stored_total = 0;
  const std::uint64_t all_filters = (std::uint64_t(1) << filters.size()) - 1;
  const auto place = [&](const std::vector<std::uint64_t>& origin, std::uint64_t at, std::uint64_t stored, std::uint32_t mask) {
    bool partial = false;
    for (std::size_t k = 0; k < rank; ++k) {
      if (origin[k] % l.chunk[k] != 0) fail(at, "a chunk at an offset that is not a multiple of the chunk's extent");
      if (origin[k] >= v.shape[k]) return;  // wholly outside the dataset
      partial = partial || v.shape[k] - origin[k] < l.chunk[k];
    }
    if (!chunks_read.insert(at).second) fail(at, "two chunks of '" + std::string(path) + "' at one address");
    if (!origins_read.insert(origin).second) fail(at, "two chunks of '" + std::string(path) + "' at one place of it");
    stored_total += stored;
    if (stored > size() || stored_total > size()) fail(at, "the chunks of '" + std::string(path) + "' claim more bytes than the file holds");
    std::vector<std::uint8_t> decoded;
    std::span<const std::uint8_t> view;
    if (filters.empty() || (std::uint64_t(mask) & all_filters) == all_filters || (partial && l.edge_unfiltered)) {
      if (stored < chunk_bytes) fail(at, "a chunk of " + std::to_string(stored) + " bytes where " + std::to_string(chunk_bytes) + " belong");
      need(at, chunk_bytes, "a chunk");
      view = bytes.subspan(std::size_t(at), std::size_t(chunk_bytes));
    } else {
      decoded = unfilter(*this, filters, at, stored, mask, chunk_bytes, std::size_t(esize));
      view = decoded;
    }
    // Runs along the last axis, for every index of the others inside the dataset.
    const std::uint64_t run = std::min(l.chunk[rank - 1], v.shape[rank - 1] - origin[rank - 1]);
    std::vector<std::uint64_t> idx(rank, 0);
    for (;;) {
      std::uint64_t src_off = 0, dst_off = 0;
      for (std::size_t k = 0; k < rank; ++k) {
        src_off += idx[k] * chunk_stride[k];
        dst_off += (origin[k] + idx[k]) * stride[k];
      }
      convert(view.data() + src_off * esize, t, dst + dst_off, run);
      std::size_t k = rank - 1;
      for (;;) {
        if (k == 0) return;
        --k;
        if (++idx[k] < l.chunk[k] && origin[k] + idx[k] < v.shape[k]) break;
        idx[k] = 0;
      }
    }
  };
  if (l.index == 1) {  // one chunk holding the whole dataset (none yet when undefined: the fill value)
    if (l.address == undef) return;
    place(std::vector<std::uint64_t>(rank, 0), l.address, l.single_filtered ? l.single_size : chunk_bytes, l.single_mask);
    return;
  }
  // The grid of chunks over the maximum extents, in row-major order: the order of an implicit
  // index's chunks and of a fixed array's entries.
  std::vector<std::uint64_t> grid(rank), down(rank, 1);
  std::uint64_t grid_count = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::uint64_t extent = max_shape[k] == undef ? v.shape[k] : max_shape[k];
    grid[k] = extent / l.chunk[k] + (extent % l.chunk[k] != 0);
    if (grid[k] != 0 && grid_count > undef / grid[k]) fail(address, "a grid of more chunks than 64 bits count");
    grid_count *= grid[k];
  }
  for (std::size_t k = rank; k-- > 1;) down[k - 1] = down[k] * grid[k];
  const auto origin_of = [&](std::uint64_t i) {
    std::vector<std::uint64_t> origin(rank);
    for (std::size_t k = 0; k < rank; ++k) origin[k] = (i / down[k]) % grid[k] * l.chunk[k];
    return origin;
  };
  if (l.index == 2) {  // implicit: every chunk, unfiltered, one after the other from the address
    if (l.address == undef) return;
    if (grid_count > size() / chunk_bytes) fail(l.address, "implicitly indexed chunks larger than the file");
    for (std::uint64_t i = 0; i < grid_count; ++i) place(origin_of(i), l.address + i * chunk_bytes, chunk_bytes, 0);
    return;
  }

  // A fixed array or a version 2 B-tree (libver "latest"): each chunk's address, with its stored
  // size and filter mask when the dataset has filters; bytes of the size: one more than the
  // chunk's size needs.
  const unsigned size_bytes = std::min(8u, 1 + (log2_floor(std::max<std::uint64_t>(chunk_bytes, 1)) + 8) / 8);
  const std::uint64_t entry = O + (filters.empty() ? 0 : size_bytes + 4);
  const auto entry_at = [&](std::uint64_t at, const std::vector<std::uint64_t>& origin) {
    const std::uint64_t chunk = absolute(le(at, O));
    if (chunk == undef) return;  // never written: the fill value
    if (filters.empty()) place(origin, chunk, chunk_bytes, 0);
    else place(origin, chunk, le(at + O, size_bytes), std::uint32_t(le(at + O + size_bytes, 4)));
  };
  if (l.index == 3) {
    for (std::size_t k = 0; k < rank; ++k)
      if (max_shape[k] == undef) fail(address, "a fixed array of chunks for an unlimited extent");
    if (!signature(l.address, "FAHD")) fail(l.address, "not a fixed array header");
    cursor c{*this, l.address + 4, size(), "a fixed array header"};
    if (c.u(1) != 0) fail(l.address, "fixed array version is not 0");
    const std::uint64_t client = c.u(1), element = c.u(1), page_bits = c.u(1), count = c.length();
    const std::uint64_t block = c.offset();
    check_sum(l.address, c.pos - l.address, "a fixed array header");
    if (client != (filters.empty() ? 0 : 1) || element != entry || count != grid_count || page_bits != l.page_bits)
      fail(l.address, "a fixed array header that does not fit its dataset");
    if (block == undef) return;
    if (!signature(block, "FADB")) fail(block, "not a fixed array data block");
    if (le(block + 4, 1) != 0 || le(block + 5, 1) != client || absolute(le(block + 6, O)) != l.address)
      fail(block, "a fixed array data block of another version or array");
    const std::uint64_t page = std::uint64_t(1) << l.page_bits;
    const std::uint64_t prefix = 6 + O;
    if (count <= page) {
      if (count > size() / entry) fail(block, "a fixed array larger than the file");
      check_sum(block, prefix + count * entry, "a fixed array data block");
      for (std::uint64_t i = 0; i < count; ++i) entry_at(block + prefix + i * entry, origin_of(i));
      return;
    }
    // Paged: a bitmap of the pages written (most significant bit first), then each page's
    // entries and their checksum.
    const std::uint64_t pages = count / page + (count % page != 0), bitmap = pages / 8 + (pages % 8 != 0);
    check_sum(block, prefix + bitmap, "a fixed array data block");
    std::uint64_t at = block + prefix + bitmap + 4;
    for (std::uint64_t p = 0; p < pages; ++p) {
      const std::uint64_t entries = p + 1 < pages || count % page == 0 ? page : count % page;
      if (entries > size() / entry) fail(at, "a fixed array page larger than the file");
      if (le(block + prefix + p / 8, 1) & (0x80u >> (p % 8))) {
        check_sum(at, entries * entry, "a fixed array page");
        for (std::uint64_t i = 0; i < entries; ++i) entry_at(at + i * entry, origin_of(p * page + i));
      }
      at += entries * entry + 4;
      if (at > size()) fail(block, "a fixed array's pages run past the end of the file");
    }
    return;
  }
  if (l.index == 5) {
    // Records: the chunk's entry, then its origin in chunks, 8 bytes an extent.
    btree2_records(l.address, filters.empty() ? 10 : 11, entry + 8 * rank, [&](std::uint64_t record) {
      std::vector<std::uint64_t> origin(rank);
      for (std::size_t k = 0; k < rank; ++k) {
        const std::uint64_t scaled = le(record + entry + 8 * k, 8);
        if (scaled > v.shape[k] / l.chunk[k]) return;  // past the dataset's extent
        origin[k] = scaled * l.chunk[k];
      }
      entry_at(record, origin);
    });
    return;
  }
  // A version 1 B-tree of chunks: each key holds the chunk's stored size, filter mask and origin.
  if (l.address == undef) return;
  std::set<std::uint64_t> seen;
  const std::uint64_t key_size = 8 + 8 * (rank + 1);
  const std::function<void(std::uint64_t, int)> walk = [&](std::uint64_t node, int level) {
    if (!seen.insert(node).second) fail(node, "a chunk B-tree reaches a node twice");
    if (!signature(node, "TREE")) fail(node, "not a chunk B-tree node");
    cursor c{*this, node + 4, size(), "a chunk B-tree node"};
    if (c.u(1) != 1) fail(node, "a chunk B-tree node is not of type 1");
    const int node_level = int(c.u(1));
    if (level >= 0 && node_level != level) fail(node, "a B-tree node of level " + std::to_string(node_level) + " where " + std::to_string(level) + " belongs");
    const std::uint64_t entries = c.u(2);
    c.skip(2 * O);
    c.need(entries * (key_size + O) + key_size);
    for (std::uint64_t i = 0; i < entries; ++i) {
      const std::uint64_t stored = c.u(4);
      const std::uint32_t mask = std::uint32_t(c.u(4));
      std::vector<std::uint64_t> origin(rank);
      for (std::size_t k = 0; k < rank; ++k) origin[k] = c.u(8);
      c.skip(8);
      const std::uint64_t child = c.offset();
      if (child == undef) fail(node, "a chunk B-tree entry at an undefined address");
      if (node_level > 0) walk(child, node_level - 1);
      else place(origin, child, stored, mask);
    }
  };
  walk(l.address, -1);
}

}  // namespace detail

// ---- File ------------------------------------------------------------------------------------

namespace detail {

inline void open_state(file_state& s) {
  // The superblock: at 0, 512, 1024, 2048, ...
  std::uint64_t at = 0;
  static constexpr std::uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1A, '\n'};
  for (;;) {
    if (at + 8 <= s.size() && std::memcmp(s.bytes.data() + at, sig, 8) == 0) break;
    if (at + 8 > s.size()) s.fail(0, "not an HDF5 file (no HDF5 signature)");
    at = at == 0 ? 512 : at * 2;
  }
  s.base = at;
  cursor c{s, at + 8, s.size(), "the superblock"};
  const std::uint64_t version = c.u(1);
  if (version == 0 || version == 1) {
    c.skip(4);
    s.O = unsigned(c.u(1));
    s.L = unsigned(c.u(1));
    c.skip(1 + 2 + 2 + 4);
    if (version == 1) c.skip(4);
  } else if (version == 2 || version == 3) {
    s.O = unsigned(c.u(1));
    s.L = unsigned(c.u(1));
    c.skip(1);
  } else {
    s.fail(at, "superblock version " + std::to_string(version) + " is not read");
  }
  const auto valid = [](unsigned n) { return n == 2 || n == 4 || n == 8; };
  if (!valid(s.O) || !valid(s.L)) s.fail(at, "sizes of offsets " + std::to_string(s.O) + " and lengths " + std::to_string(s.L) + " (2, 4 or 8)");
  if (version <= 1) {
    c.skip(4 * s.O);  // base, free space, end of file, driver information
    c.skip(s.O);      // the root's link name offset
    s.root = c.offset();
  } else {
    c.skip(3 * s.O);  // base, superblock extension, end of file
    s.root = c.offset();
    s.check_sum(at, c.pos - at, "the superblock");
  }
  if (s.root == undef) s.fail(at, "the root group is at an undefined address");
  s.header(s.root);
}

}  // namespace detail

CTFLOW_DECL File::File(const std::string& path) : s_(std::make_unique<detail::file_state>()) {
  s_->map = ctflow::detail::mapped_file(path, detail::what);
  s_->bytes = s_->map.bytes();
  s_->name = path;
  detail::open_state(*s_);
}

CTFLOW_DECL File::File(std::span<const std::uint8_t> bytes, std::string name) : s_(std::make_unique<detail::file_state>()) {
  s_->bytes = bytes;
  s_->name = std::move(name);
  detail::open_state(*s_);
}

CTFLOW_DECL File::~File() = default;
CTFLOW_DECL File::File(File&&) noexcept = default;
CTFLOW_DECL File& File::operator=(File&&) noexcept = default;

CTFLOW_DECL const std::string& File::name() const { return s_->name; }

CTFLOW_DECL bool File::contains(std::string_view path) const { return s_->resolve(path, false) != detail::undef; }

CTFLOW_DECL bool File::is_group(std::string_view path) const {
  const std::uint64_t a = s_->resolve(path, false);
  if (a == detail::undef) return false;
  const auto h = s_->header(a);
  return h->find(0x11) || h->find(0x02) || h->find(0x06) || (!h->find(0x08) && !h->find(0x03));
}

CTFLOW_DECL bool File::is_dataset(std::string_view path) const {
  const std::uint64_t a = s_->resolve(path, false);
  return a != detail::undef && s_->header(a)->find(0x08) != nullptr;
}

CTFLOW_DECL std::vector<std::string> File::keys(std::string_view group) const {
  std::vector<std::string> out;
  for (const auto& [name, l] : *s_->links(s_->resolve(group, true))) out.push_back(name);
  return out;
}

CTFLOW_DECL std::vector<std::string> File::attribute_names(std::string_view path) const {
  std::vector<std::string> out;
  for (const auto& a : *s_->attributes(s_->resolve(path, true))) out.push_back(a.name);
  return out;
}

CTFLOW_DECL bool File::has_attribute(std::string_view path, std::string_view name) const {
  const std::uint64_t a = s_->resolve(path, false);
  if (a == detail::undef) return false;
  for (const auto& x : *s_->attributes(a))
    if (x.name == name) return true;
  return false;
}

namespace detail {
/// The attribute `name` of the object at path, with its type and space resolved.
inline std::pair<attribute_ref, ValueInfo> find_attribute(const file_state& s, std::string_view path, std::string_view name) {
  const std::uint64_t address = s.resolve(path, true);
  for (const auto& a : *s.attributes(address)) {
    if (a.name != name) continue;
    const auto [type_at, type_size] = a.type_shared ? s.shared_message(a.type_at, a.type_size, 0x03) : std::pair{a.type_at, a.type_size};
    const auto [space_at, space_size] = a.space_shared ? s.shared_message(a.space_at, a.space_size, 0x01) : std::pair{a.space_at, a.space_size};
    ValueInfo v = s.dataspace(space_at, space_size);
    v.type = s.element_type(type_at, type_size);
    const std::uint64_t n = v.count();
    if (n > a.data_size / v.type.size)
      s.fail(a.data_at, "attribute '" + std::string(name) + "' of '" + std::string(path) + "' holds " + std::to_string(a.data_size) + " bytes for " +
                            std::to_string(n) + " elements of " + std::to_string(v.type.size));
    return {a, v};
  }
  s.fail(address, "'" + std::string(path) + "' has no attribute '" + std::string(name) + "'");
}
}  // namespace detail

CTFLOW_DECL ValueInfo File::attribute(std::string_view path, std::string_view name) const { return detail::find_attribute(*s_, path, name).second; }

CTFLOW_DECL std::vector<std::string> File::attribute_strings(std::string_view path, std::string_view name) const {
  const auto [a, v] = detail::find_attribute(*s_, path, name);
  if (v.type.kind != ElementType::Kind::string) return {};
  return s_->strings(v.type, v, a.data_at, a.data_size);
}

CTFLOW_DECL ValueInfo File::dataset(std::string_view path) const {
  const std::uint64_t address = s_->resolve(path, true);
  const auto h = s_->header(address);
  const detail::message* space = h->find(0x01);
  const detail::message* type = h->find(0x03);
  if (!space || !type || !h->find(0x08)) s_->fail(address, "'" + std::string(path) + "' is not a dataset");
  const auto [type_at, type_size] = (type->flags & 2) ? s_->shared_message(type->at, type->size, 0x03) : std::pair{type->at, type->size};
  ValueInfo v = s_->dataspace(space->at, space->size);
  v.type = s_->element_type(type_at, type_size);
  return v;
}

CTFLOW_DECL void File::read(std::string_view path, float* dst) const { s_->read_dataset(path, dst); }
CTFLOW_DECL void File::read(std::string_view path, double* dst) const { s_->read_dataset(path, dst); }
CTFLOW_DECL void File::read(std::string_view path, std::int64_t* dst) const { s_->read_dataset(path, dst); }

}  // namespace ctflow::io::hdf5
