// The readers of other programs' container files: HDF5 (h5py's files in both of libhdf5's
// formats, Keras's weight files) and zip archives (Keras's .keras files): every object read back
// as its writer wrote it, missing, unreadable and malformed files told apart, and every damaged
// copy of a real file (each byte flipped, set to 0xFF or to a wild address; every truncation)
// either read or refused with an io_error, never a crash, a hang or another exception.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/zip.hpp>
#include <ctflow/io/hdf5.hpp>

#include "../test_files.hpp"

using namespace ctflow;
namespace h5 = ctflow::io::hdf5;

namespace {

std::string variants(const std::string& libver) { return std::string(CTFLOW_IO_DATA) + "/hdf5/variants_" + libver + ".h5"; }
std::string keras_file(const std::string& name) { return std::string(CTFLOW_KERAS_DATA) + "/weights/" + name; }

template <class T> std::vector<T> read(const h5::File& f, const std::string& path) {
  std::vector<T> v(f.dataset(path).count());
  f.read(path, v.data());
  return v;
}
template <class T = double> std::vector<T> counting(std::size_t n, double scale = 1) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = T(double(i) * scale);
  return v;
}

/// Everything a reader of f can ask for: each group's members, each object's attributes (their
/// strings), each dataset's shape and (when not huge) its values. Returns the numbers read.
std::size_t walk(const h5::File& f, const std::string& path = "", int depth = 0) {
  std::size_t n = 0;
  for (const auto& a : f.attribute_names(path)) {
    n += f.attribute(path, a).count();
    n += f.attribute_strings(path, a).size();
  }
  if (depth > 8) return n;
  for (const auto& k : f.keys(path)) {
    const std::string p = path.empty() ? k : path + "/" + k;
    if (!f.contains(p) || k == "one_unlimited") continue;  // an external link; an extensible array (not read)
    if (f.is_dataset(p)) {
      const auto info = f.dataset(p);
      if (info.count() < (1u << 20) && (info.type.kind == h5::ElementType::Kind::floating || info.type.kind == h5::ElementType::Kind::integer))
        n += read<double>(f, p).size();
    } else if (f.is_group(p)) {
      n += walk(f, p, depth + 1);
    }
  }
  return n;
}

/// Reads bytes as an HDF5 file through walk(): the number of values read, or -1 for an io_error.
long try_walk(const std::string& bytes) {
  try {
    const h5::File f(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "damaged.h5");
    return long(walk(f));
  } catch (const io_error&) {
    return -1;
  }
}

/// Damages bytes in every way the sweep does, calling check on each copy: every byte flipped
/// (every `step`-th), set to 0xFF, and every 8 bytes from there set to an address near the top
/// of the range; then truncations.
template <class F> void each_damage(const std::string& bytes, std::size_t step, F&& check) {
  for (std::size_t i = 0; i < bytes.size(); i += step) {
    std::string d = bytes;
    d[i] = char(~d[i]);
    check(d);
    d = bytes;
    d[i] = char(0xFF);
    check(d);
    if (i + 8 <= bytes.size()) {
      d = bytes;
      const std::uint64_t wild = 0xfffffffffffffff0ull;
      std::memcpy(d.data() + i, &wild, 8);
      check(d);
    }
  }
  for (std::size_t n = 0; n < bytes.size(); n += std::max<std::size_t>(1, bytes.size() / 200)) check(bytes.substr(0, n));
}

// A zip archive made here: members stored or deflated (raw deflate, as zip holds it).
struct zip_member {
  std::string name, data;
  bool deflate = false;
};
void put16(std::string& s, std::uint32_t v) { s += char(v & 0xFF), s += char((v >> 8) & 0xFF); }
void put32(std::string& s, std::uint32_t v) { put16(s, v & 0xFFFF), put16(s, v >> 16); }
std::string raw_deflate(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
std::string make_zip(const std::vector<zip_member>& members) {
  std::string file, directory;
  for (const auto& m : members) {
    const std::string body = m.deflate ? raw_deflate(m.data) : m.data;
    const std::uint32_t crc = std::uint32_t(crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), uInt(m.data.size())));
    const std::uint32_t offset = std::uint32_t(file.size());
    put32(file, 0x04034b50), put16(file, 20), put16(file, 0), put16(file, m.deflate ? 8 : 0), put32(file, 0), put32(file, crc);
    put32(file, std::uint32_t(body.size())), put32(file, std::uint32_t(m.data.size())), put16(file, std::uint16_t(m.name.size())), put16(file, 0);
    file += m.name + body;
    put32(directory, 0x02014b50), put16(directory, 20), put16(directory, 20), put16(directory, 0), put16(directory, m.deflate ? 8 : 0);
    put32(directory, 0), put32(directory, crc), put32(directory, std::uint32_t(body.size())), put32(directory, std::uint32_t(m.data.size()));
    put16(directory, std::uint16_t(m.name.size())), put16(directory, 0), put16(directory, 0), put16(directory, 0), put16(directory, 0);
    put32(directory, 0), put32(directory, offset);
    directory += m.name;
  }
  const std::uint32_t at = std::uint32_t(file.size());
  file += directory;
  put32(file, 0x06054b50), put16(file, 0), put16(file, 0), put16(file, std::uint16_t(members.size())), put16(file, std::uint16_t(members.size()));
  put32(file, std::uint32_t(directory.size())), put32(file, at), put16(file, 0);
  return file;
}
std::span<const std::uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }
std::string member(const std::string& zip, const std::string& name) {
  const detail::zip_archive a(bytes_of(zip), "test.zip", "test");
  const auto* m = a.find(name);
  if (!m) return "<none>";
  const auto v = a.read(*m);
  return std::string(v.begin(), v.end());
}

}  // namespace

TEST_CASE("hdf5: the objects h5py writes read back alike in libhdf5's earliest and latest formats") {
  for (const std::string libver : {"earliest", "latest"}) {
    INFO(libver);
    const h5::File f(variants(libver));
    // 20 datasets and 12 attributes in one group: symbol tables, or dense storage in fractal heaps.
    const auto names = f.keys("many");
    REQUIRE(names.size() == 20);
    for (int i = 0; i < 20; ++i) {
      const std::string d = "many/d" + std::string(i < 10 ? "0" : "") + std::to_string(i);
      CHECK(names[std::size_t(i)] == d.substr(5));
      CHECK(f.dataset(d).shape == std::vector<std::uint64_t>{std::uint64_t(i + 1)});
      CHECK(read<double>(f, d) == counting(std::size_t(i + 1), 0.5));
    }
    auto attributes = f.attribute_names("many");
    std::sort(attributes.begin(), attributes.end());
    REQUIRE(attributes.size() == 12);
    for (int i = 0; i < 12; ++i) CHECK(f.attribute_strings("many", attributes[std::size_t(i)]) == std::vector<std::string>{"value " + std::to_string(i)});
    // Chunks: deflated, shuffled and checksummed; plain; a single one; a paged fixed array of
    // 1100; partly written (the rest is the fill value); a version 2 B-tree (two unlimited extents).
    CHECK(f.dataset("chunked").type.name() == "float64");
    CHECK(read<double>(f, "chunked") == counting(70));
    CHECK(read<std::int64_t>(f, "chunked_plain") == counting<std::int64_t>(45));
    CHECK(read<float>(f, "single_chunk") == counting<float>(12));
    CHECK(read<double>(f, "paged") == counting(1100));
    std::vector<double> partial(30, -1.0);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 2; ++c) partial[std::size_t(r * 5 + c)] = 100 + r * 2 + c;
    CHECK(read<double>(f, "partial") == partial);
    CHECK(read<double>(f, "two_unlimited") == counting(12));
    CHECK(read<double>(f, "fletcher_first") == counting(10));  // Fletcher-32 first: deflate holds 4 bytes more
    CHECK(read<double>(f, "early") == counting(12));           // implicit chunks over a larger maximum shape
    CHECK(read<double>(f, "unallocated") == std::vector<double>(4, 3.0));
    // Compact storage, byte orders, half precision, integers, a scalar, nothing, the fill value.
    CHECK(read<double>(f, "compact") == counting(6));
    CHECK(read<double>(f, "big_endian") == counting(5, 0.25));
    CHECK(read<double>(f, "half") == std::vector<double>{0.5, -2.0, 65504, std::ldexp(1.0, -24)});
    CHECK(read<double>(f, "uint8") == std::vector<double>{0, 200, 255});
    CHECK(read<std::int64_t>(f, "int64") == std::vector<std::int64_t>{-5, std::int64_t(1) << 40});
    CHECK(f.dataset("scalar").shape.empty());
    CHECK(read<float>(f, "scalar") == std::vector<float>{3.25f});
    CHECK(f.dataset("empty").count() == 0);
    CHECK(read<float>(f, "unwritten") == std::vector<float>(4, 7.5f));
    CHECK(f.dataset("text").type.kind == h5::ElementType::Kind::string);
    std::vector<double> text(2);
    CHECK_THROWS_WITH(f.read("text", text.data()), Catch::Contains("holds string elements, not numbers"));
    // Attributes: fixed- and variable-length strings, a number, 80 KB of strings (dense storage).
    CHECK(f.attribute_strings("", "fixed") == std::vector<std::string>{"abc", "de"});
    CHECK(f.attribute_strings("/", "vlen") == std::vector<std::string>{"x", "yy", ""});
    CHECK(f.attribute("", "number").type.name() == "int64");
    CHECK(f.attribute_strings("", "number").empty());
    CHECK(f.attribute_strings("", "big") == std::vector<std::string>(800, std::string(100, 'n')));
    CHECK_THROWS_WITH(f.attribute_strings("", "absent"), Catch::Contains("has no attribute 'absent'"));
    // Links: soft (absolute and relative), external (listed, not followed), creation-ordered.
    CHECK(read<double>(f, "soft") == counting(4, 0.5));
    CHECK(read<double>(f, "deep/a/relative") == std::vector<double>{1, 1});
    const auto root = f.keys("");
    CHECK(std::count(root.begin(), root.end(), "external") == 1);
    CHECK_FALSE(f.contains("external"));
    CHECK_THROWS_WITH(f.dataset("external"), Catch::Contains("an external link"));
    CHECK(f.keys("ordered") == std::vector<std::string>{"x", "y", "z"});
    CHECK(read<double>(f, "ordered/y") == std::vector<double>{'y'});
    CHECK_FALSE(f.contains("many/d20"));
    CHECK_FALSE(f.contains("many/d01/below"));
    CHECK_THROWS_WITH(f.dataset("nowhere/x"), Catch::Contains("no object 'nowhere/x'"));
    CHECK((f.is_group("deep/a") && !f.is_dataset("deep/a") && f.is_dataset("deep/a/b/c/leaf")));
  }
  const h5::File latest(variants("latest"));
  std::vector<float> v(4);
  CHECK_THROWS_WITH(latest.read("one_unlimited", v.data()), Catch::Contains("an extensible array"));
}

TEST_CASE("hdf5: links that name one another cannot multiply the work of resolving a path") {
  const h5::File f(std::string(CTFLOW_IO_DATA) + "/hdf5/links.h5");
  CHECK(read<double>(f, "s0/s0/leaf") == counting(3));  // the root, through its link to itself
  CHECK(read<double>(f, "s2/leaf") == counting(3));      // 8 x 8 steps
  CHECK_THROWS_WITH(f.contains("s10"), Catch::Contains("more than 65536 steps"));
}

TEST_CASE("hdf5: a missing file, a directory and a file of another kind are told apart") {
  CHECK_THROWS_WITH(h5::File("/nonexistent/model.weights.h5"), Catch::Contains("cannot open /nonexistent/model.weights.h5: the file does not exist"));
  CHECK_THROWS_WITH(h5::File(std::filesystem::temp_directory_path().string()), Catch::Contains("it is a directory, not a file"));
  CHECK_THROWS_WITH(h5::File(std::string(CTFLOW_KERAS_DATA) + "/networks.json"), Catch::Contains("not an HDF5 file (no HDF5 signature)"));
  CHECK_THROWS_AS(h5::File(std::span<const std::uint8_t>(), "empty.h5"), io_error);
}

TEST_CASE("hdf5: every damaged copy of Keras's files and of h5py's latest format is read or refused with an io_error") {
  // Keras 3's .weights.h5, tf.keras's legacy whole-model .h5 (vlen strings in the global heap,
  // where libhdf5 itself crashed or spun on such damage), and the latest format (checksums,
  // fractal heaps, version 2 B-trees, fixed arrays).
  for (const auto& [path, step] : {std::pair{keras_file("batch_normalization.weights.h5"), std::size_t(1)},
                                   std::pair{keras_file("batch_normalization.h5"), std::size_t(1)}, std::pair{variants("latest"), std::size_t(61)}}) {
    INFO(path);
    const std::string bytes = test_files::slurp(path);
    const long intact = try_walk(bytes);
    REQUIRE(intact > 0);
    std::size_t refused = 0, read_ = 0;
    each_damage(bytes, step, [&](const std::string& d) { (try_walk(d) < 0 ? refused : read_) += 1; });
    CHECK(refused > 0);
    CHECK(read_ > 0);  // damage to unused bytes (padding, free space) changes nothing
  }
}

TEST_CASE("zip: members stored and deflated read back; sizes, CRC-32 and structure checked before use") {
  const std::string text(5000, 'a'), other = "{\"x\": 1}";
  const std::string zip = make_zip({{"config.json", other, false}, {"model.weights.h5", text, true}});
  CHECK(member(zip, "config.json") == other);
  CHECK(member(zip, "model.weights.h5") == text);
  CHECK(member(zip, "absent") == "<none>");
  // A flipped byte in a member's data: Python's zipfile says "Bad CRC-32 for file".
  std::string bad = zip;
  bad[30 + 11 + 3] ^= 0x20;  // inside config.json's data
  CHECK_THROWS_WITH(member(bad, "config.json"), Catch::Contains("bad CRC-32 for zip member 'config.json'"));
  // A deflated member whose directory claims 2 GiB: refused from the sizes alone, before any
  // memory is taken (the deflate format cannot reach that ratio from so few bytes).
  std::string bomb = zip;
  const std::size_t dir = bomb.size() - 22 - (46 + 11) - (46 + 16);
  const std::uint32_t huge = 0x7fffffff;
  std::memcpy(bomb.data() + dir + 46 + 11 + 24, &huge, 4);
  CHECK_THROWS_WITH(detail::zip_archive(bytes_of(bomb), "bomb.zip", "test"), Catch::Contains("more than deflate can hold"));
  // A directory size smaller than what the stream holds, and larger: both refused.
  for (std::uint32_t size : {4000u, 6000u}) {
    std::string wrong = zip;
    std::memcpy(wrong.data() + dir + 46 + 11 + 24, &size, 4);
    CHECK_THROWS_AS(member(wrong, "model.weights.h5"), io_error);
  }
  // Not a zip, an encrypted member, a truncated file, and every damaged copy.
  CHECK_THROWS_WITH(member("not a zip file at all, no end record here....", "x"), Catch::Contains("no end of central directory record"));
  std::string encrypted = zip;
  encrypted[dir + 8] = 1;
  CHECK_THROWS_WITH(member(encrypted, "x"), Catch::Contains("is encrypted"));
  std::size_t refused = 0;
  each_damage(zip, 1, [&](const std::string& d) {
    try {
      member(d, "config.json");
      member(d, "model.weights.h5");
    } catch (const io_error&) {
      ++refused;
    }
  });
  CHECK(refused > 0);
}
