// The readers and writers: CRC32C against published vectors; TFRecord round trips (plain and
// GZIP) and damaged files; tf.train.Example both ways against python3-protobuf with TensorFlow's
// schema; parse errors; CSV; IDX and the Fashion-MNIST loader; PNG and JPEG; image ops.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>

#include <jpeglib.h>
#include <sys/resource.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/data.hpp>

#include <ctflow/io/safetensors.hpp>

#include "../test_files.hpp"

using namespace ctflow;

namespace {

using test_files::slurp;
using test_files::spit;
/// pixels [h, w, channels] (1: gray, 3: RGB) as a JPEG made by libjpeg at a quality, baseline or
/// progressive (jpeg_simple_progression).
std::string jpeg_of(const std::vector<std::uint8_t>& pixels, std::size_t h, std::size_t w, int channels, int quality, bool progressive) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr jerr{};
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &mem, &size);
  cinfo.image_width = JDIMENSION(w);
  cinfo.image_height = JDIMENSION(h);
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<std::uint8_t*>(pixels.data()) + cinfo.next_scanline * w * std::size_t(channels);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(mem), size);
  jpeg_destroy_compress(&cinfo);
  std::free(mem);
  return out;
}

std::string temp_path(const std::string& name) {
  static const std::string dir = test_files::temp_dir("ctflow_readers");
  return dir + "/" + name;
}
std::vector<std::string> records(const std::string& path, const std::string& compression = "") {
  std::vector<std::string> r;
  for (const auto& rec : data::TFRecordDataset(path, compression)) r.push_back(rec);
  return r;
}
int python(const std::string& args) { return std::system((std::string(CTFLOW_PYTHON) + " " + CTFLOW_EXAMPLE_PROTO + " " + args).c_str()); }

/// Record i of the recipe that example_proto.py writes and checks.
io::Example recipe(int i) {
  std::vector<float> image, var;
  for (int k = 0; k < 6; ++k) image.push_back(float(i) + 0.5f * float(k));
  for (int j = 0; j < i; ++j) var.push_back(0.25f * float(j));
  return {{"image", io::float_list(image)},
          {"label", io::int64_list({1000 * std::int64_t(i) - 3})},
          {"name", io::bytes_list({"rec" + std::to_string(i)})},
          {"var", io::float_list(var)}};
}

}  // namespace

TEST_CASE("CRC32C matches the published test vectors (RFC 3720 B.4) and TensorFlow's masking") {
  std::vector<std::uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[std::size_t(i)] = std::uint8_t(i);
    dec[std::size_t(i)] = std::uint8_t(31 - i);
  }
  REQUIRE(io::crc32c(zeros.data(), 32) == 0x8A9136AAu);
  REQUIRE(io::crc32c(ones.data(), 32) == 0x62A8AB43u);
  REQUIRE(io::crc32c(inc.data(), 32) == 0x46DD794Eu);
  REQUIRE(io::crc32c(dec.data(), 32) == 0x113FDB5Cu);
  REQUIRE(io::crc32c("123456789", 9) == 0xE3069283u);
  // The hardware path and the portable one agree on every length and alignment.
  std::vector<std::uint8_t> bytes(300);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i * 131 + 7);
  for (std::size_t off = 0; off < 9; ++off)
    for (std::size_t n = 0; n + off <= bytes.size(); n += 37)
      REQUIRE(~io::detail::crc32c_portable(~0u, bytes.data() + off, n) == io::crc32c(bytes.data() + off, n));
  for (std::uint32_t c : {0u, 1u, 0xDEADBEEFu, 0xFFFFFFFFu}) REQUIRE(io::unmask_crc(io::mask_crc(c)) == c);
}

TEST_CASE("TFRecord: round trips plain and GZIP; damaged files give io_error") {
  const std::vector<std::string> recs{"hello", "", std::string(200000, 'x'), std::string("\0\1\2", 3)};
  for (std::string comp : {"", "GZIP"}) {
    const auto path = temp_path("round" + comp + ".tfrecord");
    {
      io::TFRecordWriter w(path, comp);
      for (const auto& r : recs) w.write(r);
    }
    REQUIRE(records(path, comp) == recs);
    REQUIRE(records(path, comp) == recs);  // a second pass
  }
  const auto path = temp_path("round.tfrecord");
  const std::string good = slurp(path);
  REQUIRE(good.size() == 4 * 16 + 5 + 200000 + 3);
  auto damaged = good;
  damaged[12 + 2] ^= 1;  // a byte of the first record
  spit(temp_path("bad_data.tfrecord"), damaged);
  REQUIRE_THROWS_WITH(records(temp_path("bad_data.tfrecord")), Catch::Contains("at offset 0: corrupted record: data CRC mismatch"));
  damaged = good;
  damaged[16 + 5 + 3] ^= 1;  // the length of the second record
  spit(temp_path("bad_len.tfrecord"), damaged);
  REQUIRE_THROWS_WITH(records(temp_path("bad_len.tfrecord")), Catch::Contains("at offset 21: corrupted record: length CRC mismatch"));
  spit(temp_path("short.tfrecord"), good.substr(0, good.size() - 10));
  REQUIRE_THROWS_WITH(records(temp_path("short.tfrecord")), Catch::Contains("truncated record"));
  spit(temp_path("short_header.tfrecord"), good.substr(0, 16 + 5 + 7));
  REQUIRE_THROWS_WITH(records(temp_path("short_header.tfrecord")), Catch::Contains("truncated record header (7 of 12 bytes)"));
  // A header claiming 2^60 bytes with a valid CRC: refused when the bytes do not arrive.
  std::string huge(12, '\0');
  const std::uint64_t n = std::uint64_t(1) << 60;
  for (int i = 0; i < 8; ++i) huge[std::size_t(i)] = char(std::uint8_t(n >> (8 * i)));
  const std::uint32_t crc = io::mask_crc(io::crc32c(huge.data(), 8));
  for (int i = 0; i < 4; ++i) huge[8 + std::size_t(i)] = char(std::uint8_t(crc >> (8 * i)));
  spit(temp_path("huge.tfrecord"), huge + "abc");
  REQUIRE_THROWS_WITH(records(temp_path("huge.tfrecord")), Catch::Contains("truncated record: 3 of 1152921504606846976 bytes"));
  REQUIRE_THROWS_AS(records(temp_path("missing.tfrecord")), io_error);
  REQUIRE_THROWS_AS(records(path, "GZIP"), io_error);  // not gzip data
  REQUIRE_THROWS_AS(data::TFRecordDataset(path, "ZLIB"), value_error);
  // Several files in order; a writer destroyed by an exception leaves no file behind.
  REQUIRE(data::TFRecordDataset({path, path}).take(5).cardinality() == data::unknown_cardinality);
  std::size_t count = 0;
  for (const auto& r : data::TFRecordDataset({path, path})) count += r.size() > 0;
  REQUIRE(count == 6);
  try {
    io::TFRecordWriter w(temp_path("abandoned.tfrecord"));
    w.write("partial");
    throw std::runtime_error("stop");
  } catch (const std::runtime_error&) {
  }
  REQUIRE_FALSE(std::ifstream(temp_path("abandoned.tfrecord")).good());
}

TEST_CASE("tf.train.Example: ctflow's files decode with python3-protobuf and TensorFlow's schema, and back") {
  const auto ours = temp_path("ours.tfrecord");
  {
    io::TFRecordWriter w(ours);
    for (int i = 0; i < 7; ++i) w.write(recipe(i).SerializeToString());
  }
  REQUIRE(python("check " + ours + " 7") == 0);
  REQUIRE(python("check " + ours + " 6") != 0);  // the checker can fail
  const auto theirs = temp_path("theirs.tfrecord");
  REQUIRE(python("write " + theirs + " 7") == 0);
  int i = 0;
  for (const auto& rec : data::TFRecordDataset(theirs)) {
    auto [image, label, name, var] = io::parse_single_example(rec, io::FixedLenFeature<float, Shape<2, 3>>("image"),
                                                              io::FixedLenFeature<std::int64_t>("label"),
                                                              io::FixedLenFeature<std::string>("name"), io::VarLenFeature<float>("var"));
    const auto want = recipe(i);
    REQUIRE(std::vector<float>(image.begin(), image.end()) == want.features.at("image").floats);
    REQUIRE(label.data()[0] == want.features.at("label").int64s[0]);
    REQUIRE(name == want.features.at("name").bytes[0]);
    REQUIRE(std::vector<float>(var.values.begin(), var.values.end()) == want.features.at("var").floats);
    REQUIRE(var.dense_shape[0] == std::size_t(i));
    const auto parsed = io::Example::ParseFromString(rec);
    REQUIRE(parsed.features.at("var").floats == want.features.at("var").floats);
    REQUIRE(parsed.SerializeToString() == want.SerializeToString());
    ++i;
  }
  REQUIRE(i == 7);
}

TEST_CASE("parse_single_example / parse_example: defaults, TensorFlow's errors, both encodings") {
  const auto ex = recipe(3).SerializeToString();
  REQUIRE_THROWS_WITH(io::parse_single_example(ex, io::FixedLenFeature<float, Shape<212>>("var")),
                      "Key: var. Can't parse serialized Example: expected 212 floats, got 3");
  REQUIRE_THROWS_WITH(io::parse_single_example(ex, io::FixedLenFeature<float>("label")),
                      "Key: label. Data types don't match. Data type: int64 but expected type: float");
  REQUIRE_THROWS_WITH(io::parse_single_example(ex, io::FixedLenFeature<std::int64_t>("nope")),
                      "Feature: nope (data type: int64) is required but could not be found.");
  auto [d, v] = io::parse_single_example(ex, io::FixedLenFeature<std::int64_t, Shape<2>>("nope", 5), io::VarLenFeature<std::string>("zip"));
  REQUIRE((d(0) == 5 && d(1) == 5));
  REQUIRE(v.values.empty());
  // Unpacked repeated floats and int64s (valid protobuf, written by some producers) parse too.
  std::string unpacked;
  {
    ctflow::detail::pb::writer w{unpacked};
    w.message(1, [](auto& fs) {
      fs.message(1, [](auto& e) {
        e.bytes(1, "f");
        e.message(2, [](auto& f) { f.message(2, [](auto& l) { l.float32(1, 1.5f); l.float32(1, -2.f); }); });
      });
      fs.message(1, [](auto& e) {
        e.bytes(1, "i");
        e.message(2, [](auto& f) { f.message(3, [](auto& l) { l.uint64(1, std::uint64_t(-7)); l.uint64(1, 9); }); });
      });
    });
  }
  auto [f, n] = io::parse_single_example(unpacked, io::FixedLenFeature<float, Shape<2>>("f"), io::FixedLenFeature<std::int64_t, Shape<2>>("i"));
  REQUIRE((f(0) == 1.5f && f(1) == -2.f && n(0) == -7 && n(1) == 9));
  // Malformed bytes: io_error, whatever the damage.
  for (std::size_t cut = 1; cut < ex.size(); cut += 3) REQUIRE_THROWS_AS(io::parse_single_example(ex.substr(0, cut), io::FixedLenFeature<float, Shape<6>>("image")), io_error);
  // A batch: fixed-length features stacked, var-length ones as a [batch, longest] SparseTensor.
  std::vector<std::string> batch{recipe(1).SerializeToString(), recipe(3).SerializeToString(), recipe(0).SerializeToString()};
  auto [images, vars] = io::parse_example(batch, io::FixedLenFeature<float, Shape<6>>("image"), io::VarLenFeature<float>("var"));
  static_assert(std::is_same_v<decltype(images), Tensor<float, Shape<dyn, 6>>>);
  REQUIRE(images(1, 5) == 3.f + 2.5f);
  REQUIRE(vars.dense_shape == dims_t<2>{3, 3});
  REQUIRE(vars.indices.dims()[0] == 4);
  REQUIRE((vars.indices(3, 0) == 1 && vars.indices(3, 1) == 2 && vars.values(3) == 0.5f));
}

TEST_CASE("CsvDataset: types, defaults, quotes, select_cols, na_value, GZIP, and errors naming line and column") {
  const auto path = temp_path("a.csv");
  spit(path, "x,n,name\n1.5,2,\"a,b\"\r\n-3e2,,\"say \"\"hi\"\"\"\n\n4,+7,\"multi\nline\"\nNA,1,z\n");
  auto ds = data::CsvDataset<float, std::int64_t, std::string>(path, {9.f, 0, ""}, {.header = true, .na_value = "NA"});
  std::vector<float> xs;
  std::vector<std::int64_t> ns;
  std::vector<std::string> names;
  for (const auto& [x, n, name] : ds) {
    xs.push_back(x.data()[0]);
    ns.push_back(n.data()[0]);
    names.push_back(name);
  }
  REQUIRE(xs == std::vector<float>{1.5f, -300.f, 4.f, 9.f});
  REQUIRE(ns == std::vector<std::int64_t>{2, 0, 7, 1});
  REQUIRE(names == std::vector<std::string>{"a,b", "say \"hi\"", "multi\nline", "z"});
  auto cols = data::CsvDataset<std::string, float>(path, {std::nullopt, std::nullopt}, {.header = true, .select_cols = {1, 2}});
  REQUIRE_THROWS_WITH([&] { for (const auto& e : cols) (void)e; }(), Catch::Contains("a.csv:2: column 2: cannot parse \"a,b\" as float32"));
  auto required = data::CsvDataset<float, std::int64_t, std::string>(path, {std::nullopt, std::nullopt, ""}, {.header = true});
  REQUIRE_THROWS_WITH([&] { for (const auto& e : required) (void)e; }(),
                      Catch::Contains("a.csv:3: column 1: field is empty and the column has no default (record_defaults)"));
  spit(temp_path("b.csv"), "1,2\n3\n");
  REQUIRE_THROWS_WITH([&] { for (const auto& e : data::CsvDataset<double, std::int32_t>(temp_path("b.csv"), {0.0, 0})) (void)e; }(),
                      Catch::Contains("b.csv:2: expected 2 fields, got 1"));
  spit(temp_path("c.csv"), "1,\"open\n");
  REQUIRE_THROWS_WITH([&] { for (const auto& e : data::CsvDataset<double, std::string>(temp_path("c.csv"), {0.0, ""})) (void)e; }(),
                      Catch::Contains("c.csv:1: column 1: unterminated quoted field"));
  spit(temp_path("d.csv"), "99999999999\n");
  REQUIRE_THROWS_WITH([&] { for (const auto& e : data::CsvDataset<std::int32_t>(temp_path("d.csv"), {0})) (void)e; }(),
                      Catch::Contains("cannot parse \"99999999999\" as int32 (out of range)"));
  {
    io::TFRecordWriter unused(temp_path("unused.tfrecord"));  // (the gzip writer of detail::atomic_output)
  }
  ctflow::detail::atomic_output gz(temp_path("e.csv.gz"), ctflow::detail::compression::gzip, "test");
  const std::string body = "1;2\n3;4\n";
  gz.write(body.data(), body.size());
  gz.commit();
  double total = 0;
  for (const auto& [a, b] : data::CsvDataset<double, double>(temp_path("e.csv.gz"), {0.0, 0.0}, {.field_delim = ';', .compression_type = "GZIP"}))
    total += a.data()[0] * b.data()[0];
  REQUIRE(total == 14.0);
  REQUIRE_THROWS_AS(data::CsvDataset<double>(path, {0.0}, {.select_cols = {2, 1}}), value_error);
}

TEST_CASE("CsvDataset takes one file name in any string form, or a braced list of names") {
  spit(temp_path("f.csv"), "1,2\n3,4\n");
  spit(temp_path("g.csv"), "5,6\n");
  auto sum = [](auto&& ds) {
    double s = 0;
    for (const auto& [a, b] : ds) s += 10 * a.item() + b.item();
    return s;
  };
  const std::string f = temp_path("f.csv"), g = temp_path("g.csv");
  REQUIRE(sum(data::CsvDataset<double, double>({f}, {0.0, 0.0})) == 12 + 34);
  REQUIRE(sum(data::CsvDataset<double, double>({f, g}, {0.0, 0.0})) == 12 + 34 + 56);
  REQUIRE(sum(data::CsvDataset<double, double>(f.c_str(), {0.0, 0.0})) == 12 + 34);
  REQUIRE(sum(data::CsvDataset<double, double>(std::string_view(g), {0.0, 0.0})) == 56);
  REQUIRE(sum(data::CsvDataset<double, double>(std::filesystem::path(g), {0.0, 0.0})) == 56);
  REQUIRE(sum(data::CsvDataset<double, double>(std::vector<std::string>{g, g}, {0.0, 0.0})) == 112);
}

TEST_CASE("IDX files and the Fashion-MNIST loader") {
  // A big-endian int16 [2, 3] IDX file, gzip'ed and plain.
  std::string idx{0, 0, 0x0B, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (int i = 0; i < 6; ++i) {
    const std::int16_t v = std::int16_t(-300 + 200 * i);
    idx.push_back(char(std::uint16_t(v) >> 8));
    idx.push_back(char(std::uint16_t(v) & 0xFF));
  }
  spit(temp_path("t.idx"), idx);
  const auto t = data::read_idx<std::int16_t, 2>(temp_path("t.idx"));
  REQUIRE(t.dims() == dims_t<2>{2, 3});
  REQUIRE((t(0, 0) == -300 && t(1, 2) == 700));
  REQUIRE_THROWS_WITH((data::read_idx<std::uint8_t, 2>(temp_path("t.idx"))), Catch::Contains("element type code 11 is not that of uint8 (8)"));
  REQUIRE_THROWS_WITH((data::read_idx<std::int16_t, 3>(temp_path("t.idx"))), Catch::Contains("rank 2, expected 3"));
  spit(temp_path("short.idx"), idx.substr(0, idx.size() - 1));
  REQUIRE_THROWS_WITH((data::read_idx<std::int16_t, 2>(temp_path("short.idx"))), Catch::Contains("need 12 bytes of data, the file has 11"));
  std::string lying = idx;
  lying[4] = lying[5] = lying[6] = char(0xFF);  // 2^32-ish rows: no allocation, an error
  spit(temp_path("lying.idx"), lying);
  REQUIRE_THROWS_AS((data::read_idx<std::int16_t, 2>(temp_path("lying.idx"))), io_error);

  auto [train, test] = datasets::fashion_mnist::load_data();
  REQUIRE(train.first.dims() == dims_t<3>{60000, 28, 28});
  REQUIRE(train.second.dims() == dims_t<1>{60000});
  REQUIRE(test.first.dims() == dims_t<3>{10000, 28, 28});
  std::array<int, 10> per_class{};
  for (auto y : train.second) per_class.at(y)++;
  for (int c : per_class) REQUIRE(c == 6000);  // Fashion-MNIST is balanced
  REQUIRE(train.second(0) == 9);                // the first training image is an ankle boot
  REQUIRE_THROWS_AS(datasets::mnist::load_data(temp_path("nowhere")), io_error);
}

TEST_CASE("PNG and JPEG: round trips, channel conversion, corrupt data") {
  for (std::size_t c = 1; c <= 4; ++c) {
    Tensor<std::uint8_t, Shape<dyn, dyn, dyn>> img({5, 7, c});
    for (std::size_t i = 0; i < img.size(); ++i) img.data()[i] = std::uint8_t(i * 37 + c);
    const auto png = io::encode_png(img);
    REQUIRE(png.substr(1, 3) == "PNG");
    const auto back = io::decode_png(png);
    REQUIRE(back.dims() == img.dims());
    REQUIRE(std::equal(back.begin(), back.end(), img.begin()));
  }
  Tensor<std::uint8_t, Shape<1, 2, 3>> rgb;
  const std::uint8_t px[] = {255, 0, 0, 10, 20, 30};
  std::copy(px, px + 6, rgb.data());
  const auto png = io::encode_png(rgb);
  const auto gray = io::decode_png(png, 1);
  REQUIRE((gray(0, 0, 0) == 54 && gray(0, 1, 0) == 19));  // Rec. 709: 0.2126 R + 0.7152 G + 0.0722 B
  const auto rgba = io::decode_png(png, 4);
  REQUIRE((rgba(0, 1, 2) == 30 && rgba(0, 1, 3) == 255));
  REQUIRE_THROWS_AS(io::decode_png(png.substr(0, png.size() / 2)), io_error);
  REQUIRE_THROWS_AS(io::decode_png("not a png"), io_error);
  REQUIRE_THROWS_AS(io::decode_png(png, 5), value_error);

  // A JPEG made with libjpeg at quality 100 decodes close to its source.
  const std::size_t h = 16, w = 24;
  std::vector<std::uint8_t> src(h * w * 3);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t((i / 3 % w) * 6 + (i / 3 / w) * 2 + (i % 3) * 40);  // smooth: no wrap-around
  const std::string jpg = jpeg_of(src, h, w, 3, 100, false);
  const auto dec = io::decode_jpeg(jpg);
  REQUIRE(dec.dims() == dims_t<3>{h, w, 3});
  int worst = 0;
  for (std::size_t i = 0; i < src.size(); ++i) worst = std::max(worst, std::abs(int(dec.data()[i]) - int(src[i])));
  REQUIRE(worst <= 8);
  REQUIRE(io::decode_jpeg(jpg, 1).dims() == dims_t<3>{h, w, 1});
  REQUIRE_THROWS_AS(io::decode_jpeg(jpg.substr(0, 100)), io_error);
  REQUIRE_THROWS_WITH(io::decode_jpeg("garbage!"), Catch::Contains("ctflow::io::decode_jpeg: corrupt JPEG data: Not a JPEG file"));
}

namespace {

/// A JPEG of a gray gradient made by libjpeg: baseline, or progressive.
std::string gray_jpeg(std::size_t h, std::size_t w, bool progressive) {
  std::vector<std::uint8_t> src(h * w);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t(i % w * 7 + i / w * 3);
  return jpeg_of(src, h, w, 1, 75, progressive);
}

/// The JPEG with its frame header's (SOF0 or SOF2) height and width replaced.
std::string claiming(std::string jpg, std::uint16_t height, std::uint16_t width) {
  for (std::size_t i = 2; i + 9 < jpg.size(); ++i)
    if (std::uint8_t(jpg[i]) == 0xFF && (std::uint8_t(jpg[i + 1]) == 0xC0 || std::uint8_t(jpg[i + 1]) == 0xC2)) {
      jpg[i + 5] = char(height >> 8), jpg[i + 6] = char(height & 0xFF), jpg[i + 7] = char(width >> 8), jpg[i + 8] = char(width & 0xFF);
      return jpg;
    }
  FAIL("no frame header");
  return jpg;
}

/// The progressive JPEG with its last scan repeated until it has `scans` in all (libjpeg only
/// warns of the bogus progression a repeated refinement makes).
std::string with_scans(const std::string& jpg, std::size_t scans) {
  std::size_t n = 0;
  for (std::size_t at = jpg.find("\xFF\xDA"); at != std::string::npos; at = jpg.find("\xFF\xDA", at + 2)) ++n;
  const std::size_t last = jpg.rfind("\xFF\xDA"), eoi = jpg.size() - 2;
  std::string out = jpg.substr(0, eoi);
  for (std::size_t i = n; i < scans; ++i) out += jpg.substr(last, eoi - last);
  return out + jpg.substr(eoi);
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("every reader tells a missing file, a directory and a file of another kind apart") {
  const std::string missing = temp_path("missing.bin"), directory = test_files::temp_dir("ctflow_readers_dir");
  spit(temp_path("text.bin"), "not any format at all, only text\n");
  const auto reads = [](auto&& read) {
    try {
      read();
    } catch (const io_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const auto& [name, read] : std::vector<std::pair<std::string, std::function<void(const std::string&)>>>{
           {"TFRecordDataset", [](const std::string& p) { for (const auto& r : data::TFRecordDataset(p)) (void)r; }},
           {"TFRecordDataset GZIP", [](const std::string& p) { for (const auto& r : data::TFRecordDataset(p, "GZIP")) (void)r; }},
           {"CsvDataset", [](const std::string& p) { for (const auto& r : data::CsvDataset<float>(p, {0.f})) (void)r; }},
           {"read_idx", [](const std::string& p) { (void)data::read_idx<std::uint8_t, 1>(p); }},
           {"safetensors", [](const std::string& p) { (void)io::safetensors::File(p); }}}) {
    INFO(name);
    CHECK_THAT(reads([&] { read(missing); }), Catch::Contains("cannot open " + missing + ": the file does not exist"));
    CHECK_THAT(reads([&] { read(directory); }), Catch::Contains("cannot read " + directory + ": it is a directory, not a file"));
    const std::string malformed = reads([&] { read(temp_path("text.bin")); });
    CHECK_THAT(malformed, !Catch::Contains("does not exist") && !Catch::Contains("directory"));
  }
}

TEST_CASE("decode_jpeg on hostile files: sizes checked before decoding, the decoder's memory bounded, truncation an error") {
  const std::string baseline = gray_jpeg(64, 48, false), progressive = gray_jpeg(64, 48, true);
  CHECK(io::decode_jpeg(progressive).dims() == dims_t<3>{64, 48, 1});
  // Data that ends early is an error, as in tf.io.decode_jpeg (libjpeg would pad it with gray).
  CHECK_THROWS_WITH(io::decode_jpeg(baseline.substr(0, baseline.size() - 64)), Catch::Contains("Premature end of JPEG file"));
  CHECK_THROWS_AS(io::decode_jpeg(progressive.substr(0, progressive.size() - 64)), io_error);
  // A few hundred bytes claiming 32768 x 32768: refused before the decoder allocates the image (in
  // color, from the header: 3 GiB) or its coefficients (gray, progressive: 2 bytes a sample).
  const long before = peak_rss_kb();
  CHECK_THROWS_WITH(io::decode_jpeg(claiming(baseline, 32768, 32768), 3), Catch::Contains("image of 32768x32768x3 exceeds max_image_bytes"));
  CHECK_THROWS_WITH(io::decode_jpeg(claiming(progressive, 32768, 32768)), Catch::Contains("cannot hold the 32768x32768 image its header claims"));
  CHECK_THROWS_WITH(io::decode_jpeg(claiming(baseline, 32768, 32768)), Catch::Contains("truncated JPEG data"));
  CHECK(peak_rss_kb() - before < 64 * 1024);
  CHECK_THROWS_WITH(io::decode_jpeg(claiming(baseline, 0, 48)), Catch::Contains("corrupt JPEG data"));
  // Arithmetic coding has no size floor (the coder drops trailing zero bytes, so a plain image
  // codes to next to nothing): a scan of no data is an image of any size, decoded within
  // max_image_bytes as by tf.io.decode_jpeg.
  const auto segment = [](int marker, std::string body) {
    return std::string{'\xFF', char(marker), char((body.size() + 2) >> 8), char((body.size() + 2) & 0xFF)} + body;
  };
  const std::string blank = "\xFF\xD8" + segment(0xDB, std::string(1, '\0') + std::string(64, '\1')) +
                            segment(0xC9, std::string{8, char(2000 >> 8), char(2000 & 0xFF), char(3000 >> 8), char(3000 & 0xFF), 1, 1, 0x11, 0}) +
                            segment(0xDA, std::string{1, 1, 0, 0, 63, 0}) + "\xFF\xD9";
  CHECK(io::decode_jpeg(blank, 3).dims() == dims_t<3>{2000, 3000, 3});
  // Every scan of a progressive file passes over the whole image, and may cost a few bytes: past
  // max_jpeg_scans the file is refused (the image here 64 x 48, so that the test stays short).
  CHECK(io::decode_jpeg(with_scans(progressive, io::max_jpeg_scans)).dims() == dims_t<3>{64, 48, 1});
  CHECK_THROWS_WITH(io::decode_jpeg(with_scans(progressive, io::max_jpeg_scans + 1)),
                    Catch::Equals("ctflow::io::decode_jpeg: a JPEG of more than 1000 scans (max_jpeg_scans)"));
}

TEST_CASE("extract_jpeg_shape reads the header's shape without decoding, as tf.io.extract_jpeg_shape") {
  std::vector<std::uint8_t> rgb(30 * 20 * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = std::uint8_t(i * 13);
  for (const std::string& jpg : {gray_jpeg(64, 48, false), gray_jpeg(64, 48, true), jpeg_of(rgb, 30, 20, 3, 90, false)}) {
    const auto shape = io::extract_jpeg_shape(jpg);
    static_assert(std::is_same_v<decltype(shape), const Tensor<std::int32_t, Shape<3>>>);
    const auto d = io::decode_jpeg(jpg).dims();
    CHECK(shape(0) == std::int32_t(d[0]));
    CHECK(shape(1) == std::int32_t(d[1]));
    CHECK(shape(2) == std::int32_t(d[2]));
  }
  // A header claiming 32768 x 32768 x 3 is only read: no decoding, no allocation of the image.
  const long before = peak_rss_kb();
  const auto big = io::extract_jpeg_shape<std::int64_t>(claiming(jpeg_of(rgb, 30, 20, 3, 90, false), 32768, 32768));
  CHECK(peak_rss_kb() - before < 16 * 1024);
  CHECK((big(0) == 32768 && big(1) == 32768 && big(2) == 3));
  CHECK_THROWS_WITH(io::extract_jpeg_shape("garbage!"), Catch::Equals("ctflow::io::extract_jpeg_shape: corrupt JPEG data: Not a JPEG file: starts with 0x67 0x61"));
  CHECK_THROWS_AS(io::extract_jpeg_shape(gray_jpeg(64, 48, false).substr(0, 40)), io_error);
}

TEST_CASE("per_image_standardization gives TensorFlow's values and gradient, on the CPU and the reference device") {
  // TensorFlow 2.21: x [2, 2, 3, 2] (the second image nearly constant: its stddev is below
  // 1/sqrt(12)), y = tf.image.per_image_standardization(x), g = d sum(y * w) / dx, w = sin(0..23).
  const float xs[24] = {-0.4000000059604645f, -0.030000001192092896f, 0.3400000035762787f, 0.7100000381469727f, -0.21999993920326233f,
                        0.15000006556510925f, 0.5200001001358032f,   0.8900002241134644f,   -0.03999987244606018f, 0.33000001311302185f,
                        0.7000001668930054f,  -0.22999969124794006f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5000001192092896f};
  const float ys[12] = {-1.5542234182357788f, -0.636570394039154f,  0.2810826897621155f, 1.1987358331680298f, -1.1077975034713745f, -0.1901444047689438f,
                        0.7275087833404541f,  1.6451621055603027f,  -0.6613715291023254f, 0.2562812566757202f, 1.1739346981048584f,  -1.1325982809066772f};
  const float gs[24] = {0.4715729057788849f,  2.2299349308013916f, 2.0695478916168213f, -0.1642487347126007f, -1.5652682781219482f, -2.3951659202575684f,
                        -1.038493275642395f,  0.9553115963935852f, 2.605597972869873f,  0.8453540205955505f,  -1.854615569114685f,  -2.1595277786254883f,
                        -2.022886037826538f,  1.291358470916748f,  3.2674219608306885f, 2.0885205268859863f,  -1.1614693403244019f, -3.494521379470825f,
                        -2.765639066696167f,  0.35504698753356934f, 2.998392343521118f, 2.734117269515991f,   -0.19480475783348083f, -3.095536231994629f};
  Tensor<float, Shape<2, 2, 3, 2>> x, w;
  for (std::size_t i = 0; i < 24; ++i) {
    x.data()[i] = xs[i];
    w.data()[i] = std::sin(float(i));
  }
  const Tensor<float, Shape<2, 2, 3, 2>> y = image::per_image_standardization(x);
  for (std::size_t i = 0; i < 12; ++i) CHECK(y.data()[i] == Approx(ys[i]).epsilon(1e-5));
  for (std::size_t i = 12; i < 24; ++i) CHECK(std::abs(y.data()[i]) < 1e-6f);  // TensorFlow: 0 (and 4.1e-7 for the last), by float32 rounding
  const auto [loss, g] = value_and_grad(reduce_sum(image::per_image_standardization(x) * w), x);
  for (std::size_t i = 0; i < 24; ++i) CHECK(g.data()[i] == Approx(gs[i]).epsilon(1e-4).margin(1e-4));
  // The reference device, and a uint8 image of one rank less (its own mean and deviation).
  const auto r = to<reference>(x);
  const Tensor<float, Shape<2, 2, 3, 2>, reference> yr = image::per_image_standardization(r);
  for (std::size_t i = 0; i < 12; ++i) CHECK(yr.data()[i] == Approx(ys[i]).epsilon(1e-5));
  Tensor<std::uint8_t, Shape<dyn, dyn, 1>> u({2, 2, 1});
  for (std::size_t i = 0; i < 4; ++i) u.data()[i] = std::uint8_t(10 * i);  // 0 10 20 30: mean 15, stddev sqrt(125)
  const Tensor<float, Shape<dyn, dyn, 1>> su = image::per_image_standardization(u);
  CHECK(su.data()[0] == Approx(-15.0 / std::sqrt(125.0)));
  CHECK(su.data()[3] == Approx(15.0 / std::sqrt(125.0)));
  // A temporary image (as a decoder returns it), kept in a variable as users keep it.
  auto st = image::per_image_standardization(Tensor<std::uint8_t, Shape<dyn, dyn, 1>>(u));
  CHECK(st.data()[3] == su.data()[3]);
  auto lazy = image::per_image_standardization(x * 2.0f);  // an expression over x: the same image up to scale
  CHECK(Tensor<float, Shape<2, 2, 3, 2>>(lazy).data()[0] == Approx(ys[0]).epsilon(1e-5));
}

TEST_CASE("image ops: flips and rot90 as views, resize with half-pixel centers, standardization, random_crop") {
  Tensor<float, Shape<2, 3, 1>> x = reshape<Shape<2, 3, 1>>(range<float>(1.f, 7.f));  // [[1 2 3] [4 5 6]]
  Tensor<float, Shape<2, 3, 1>> lr = image::flip_left_right(x), ud = image::flip_up_down(x);
  REQUIRE((lr(0, 0, 0) == 3.f && ud(0, 0, 0) == 4.f));
  Tensor<float, Shape<3, 2, 1>> r1 = image::rot90(x);      // counter-clockwise: [[3 6] [2 5] [1 4]]
  REQUIRE((r1(0, 0, 0) == 3.f && r1(0, 1, 0) == 6.f && r1(2, 0, 0) == 1.f));
  Tensor<float, Shape<3, 2, 1>> r3 = image::rot90<3>(x);   // clockwise: [[4 1] [5 2] [6 3]]
  REQUIRE((r3(0, 0, 0) == 4.f && r3(2, 1, 0) == 3.f));
  Tensor<float, Shape<2, 3, 1>> r4 = image::rot90<2>(image::rot90<2>(x));
  REQUIRE(std::equal(r4.begin(), r4.end(), x.begin()));
  Tensor<float, Shape<2, 2, 1>> s = reshape<Shape<2, 2, 1>>(range<float>(1.f, 5.f));
  const auto up = eval(image::resize<4, 4>(s));  // TensorFlow 2: [1, 1.25, 1.75, 2] on the first row
  REQUIRE((up(0, 0, 0) == 1.f && up(0, 1, 0) == 1.25f && up(0, 2, 0) == 1.75f && up(3, 3, 0) == 4.f && up(1, 0, 0) == 1.5f));
  const auto nn = eval(image::resize<3, 3>(s, image::ResizeMethod::NEAREST_NEIGHBOR));
  REQUIRE((nn(0, 1, 0) == 2.f && nn(1, 0, 0) == 3.f && nn(2, 2, 0) == 4.f));
  const Tensor<float, Shape<2, 2, 1>> st = image::per_image_standardization(s);
  double m = 0, v = 0;
  for (float a : st) m += a;
  for (float a : st) v += a * a;
  REQUIRE(std::abs(m) < 1e-6);
  REQUIRE(std::abs(v / 4 - 1) < 1e-6);
  Tensor<float, Shape<1, 2, 1>> c1 = image::random_crop<Shape<1, 2, 1>>(x, 3), c2 = image::random_crop<Shape<1, 2, 1>>(x, 3);
  REQUIRE(std::equal(c1.begin(), c1.end(), c2.begin()));  // seeded
  REQUIRE(c1(0, 1, 0) == c1(0, 0, 0) + 1.f);              // a contiguous window of x
  Tensor<float, Shape<dyn, dyn, 1>> xd({2, 3, 1});  // (a static image too small is a compile error)
  REQUIRE_THROWS_WITH((image::random_crop<Shape<3, 1, 1>>(xd, 1)), "ctflow::image::random_crop: crop larger than the image: [3,1,1] x [2,3,1]");
}
