#pragma once
// Definitions of keras/detail/weight_files.hpp that write HDF5 (ctflow::keras's compiled part;
// see detail/linkage.hpp): Keras 3's .weights.h5, through libhdf5's C API. Files are read by
// ctflow's own reader (io/hdf5.hpp), which trusts nothing in them; libhdf5 only writes.

#include <hdf5.h>
#include <fcntl.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <ctime>
#include <span>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/keras/detail/weight_files.hpp>

namespace ctflow::keras::detail {

namespace h5 {

inline constexpr const char* what = "ctflow::keras";

/// An HDF5 identifier, closed by its own close function.
class handle {
 public:
  handle() = default;
  handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  handle(handle&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  handle& operator=(handle&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  ~handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

/// HDF5's own messages go nowhere: failures become io_errors naming the file and the object.
inline void quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

[[noreturn]] inline void fail(const std::string& file, const std::string& why) { throw io_error(std::string(what) + ": " + file + ": " + why); }

/// A new HDF5 file, open for writing.
class file {
 public:
  static file create(const std::string& path) {
    quiet();
    file f;
    f.name_ = path;
    f.f_ = handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!f.f_) fail(path, "cannot create the HDF5 file");
    return f;
  }
  handle group(const std::string& path) const {
    handle g(H5Gcreate2(f_.get(), path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g) fail(name_, "cannot create group '" + path + "'");
    return g;
  }
  /// A scalar UTF-8 string attribute of an object.
  void string_attribute(hid_t object, const std::string& key, const std::string& value) const {
    handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    handle space(H5Screate(H5S_SCALAR), H5Sclose);
    handle a(H5Acreate2(object, key.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const char* text = value.c_str();
    if (!a || H5Awrite(a.get(), type.get(), &text) < 0) fail(name_, "cannot write attribute '" + key + "'");
  }
  void write_dataset(const std::string& path, const saved_layer::weight& w) const {
    std::vector<hsize_t> dims(w.shape.begin(), w.shape.end());
    handle space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    const hid_t type = w.dtype == 'f' ? H5T_IEEE_F32LE : w.dtype == 'l' ? H5T_STD_I64LE : H5T_IEEE_F64LE;
    const hid_t memory = w.dtype == 'f' ? H5T_NATIVE_FLOAT : w.dtype == 'l' ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
    handle d(H5Dcreate2(f_.get(), path.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!d || H5Dwrite(d.get(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data) < 0) fail(name_, "cannot write '" + path + "'");
  }

 private:
  std::string name_;
  handle f_;
};

}  // namespace h5

/// Writes layer l at group `at` in Keras 3's layout: its vars, then its children (a nested
/// model's layers under at/layers/, a cell or sub-layer under at/<its key>).
inline void write_layer(const h5::file& f, const std::string& at, const saved_layer& l);

/// Writes `layers` under group `base` (e.g. "" or "layers/sequential/") in Keras 3's layout.
inline void write_layers(const h5::file& f, const std::string& base, const std::vector<saved_layer>& layers) {
  f.group(base + "layers");
  const auto keys = layer_keys(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) write_layer(f, base + "layers/" + keys[i], layers[i]);
}

inline void write_layer(const h5::file& f, const std::string& at, const saved_layer& l) {
  f.group(at);
  if (l.is_model) write_layers(f, at + "/", l.children);
  const auto vars = f.group(at + "/vars");
  f.string_attribute(vars.get(), "name", l.name);
  for (std::size_t k = 0; k < l.weights.size(); ++k) f.write_dataset(at + "/vars/" + std::to_string(k), l.weights[k]);
  if (!l.is_model)
    for (const auto& child : l.children) write_layer(f, at + "/" + child.key, child);
}

/// Writes Keras 3's weight file of a model (its layers, its optimizer's variables when it has a
/// name) to path.
inline void write_weights_file(const std::string& path, const std::string& model_name, const std::vector<saved_layer>& layers,
                               const std::string& optimizer_name = {}, const std::vector<saved_layer::weight>& optimizer_variables = {}) {
  const auto f = h5::file::create(path);
  write_layers(f, "", layers);
  if (!optimizer_name.empty()) {
    f.group("optimizer");
    const auto vars = f.group("optimizer/vars");
    f.string_attribute(vars.get(), "name", optimizer_name);
    for (std::size_t i = 0; i < optimizer_variables.size(); ++i) f.write_dataset("optimizer/vars/" + std::to_string(i), optimizer_variables[i]);
  }
  const auto vars = f.group("vars");
  f.string_attribute(vars.get(), "name", model_name);
}

CTFLOW_DECL void save_weights_h5(const std::string& path, const std::string& model_name, const std::vector<saved_layer>& layers) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  try {
    write_weights_file(tmp, model_name, layers);
    // Durable, then in place: a reader sees the old file or the whole new one.
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      if (fd >= 0) ::close(fd);
      h5::fail(path, "cannot sync " + tmp);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) h5::fail(path, "cannot rename " + tmp + " to it");
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

/// A zip archive of stored members (what Python's zipfile reads), written as it is built to a file
/// that appears whole or not at all.
class zip_writer {
 public:
  explicit zip_writer(const std::string& path) : name_(path), out_(path, ctflow::detail::compression::none, h5::what) {
    const std::time_t now = std::time(nullptr);
    std::tm t{};
    ::localtime_r(&now, &t);
    time_ = std::uint16_t(t.tm_hour << 11 | t.tm_min << 5 | t.tm_sec / 2);
    date_ = std::uint16_t((std::max(t.tm_year, 80) - 80) << 9 | (t.tm_mon + 1) << 5 | t.tm_mday);
  }
  void add(const std::string& member, std::span<const std::uint8_t> data) {
    begin(member, std::uint32_t(::crc32(::crc32(0, nullptr, 0), data.data(), uInt(data.size()))), data.size());
    put(data.data(), data.size());
  }
  /// The file at `path` as a member, read twice 64 KiB at a time (its CRC goes before it; a
  /// training run's saves add little to its peak memory).
  void add_file(const std::string& member, const std::string& path) {
    std::vector<std::uint8_t> chunk(std::size_t(64) << 10);
    auto each_chunk = [&](auto&& f) {
      ctflow::detail::input_file in(path, ctflow::detail::compression::none, h5::what);
      std::size_t total = 0;
      while (const std::size_t n = in.read(chunk.data(), chunk.size())) f(chunk.data(), n), total += n;
      return total;
    };
    uLong crc = ::crc32(0, nullptr, 0);
    const std::size_t size = each_chunk([&](const std::uint8_t* p, std::size_t n) { crc = ::crc32(crc, p, uInt(n)); });
    begin(member, std::uint32_t(crc), size);
    if (each_chunk([&](const std::uint8_t* p, std::size_t n) { put(p, n); }) != size) h5::fail(name_, path + " changed while it was archived");
  }
  /// The central directory and its end record; then the archive replaces `path`.
  void finish() {
    const auto directory = std::uint32_t(offset_);
    for (const auto& e : entries_) {
      header(0x02014b50, e, true);
      put(e.name.data(), e.name.size());
    }
    const auto size = std::uint32_t(offset_ - directory), count = std::uint32_t(entries_.size());
    fields end;
    end.u32(0x06054b50).u16(0).u16(0).u16(std::uint16_t(count)).u16(std::uint16_t(count)).u32(size).u32(directory).u16(0);
    put(end.b, end.n);
    out_.commit();
  }

 private:
  struct entry {
    std::string name;
    std::uint32_t crc, size, offset;
  };
  /// A member's local header and name; its data follows.
  void begin(const std::string& member, std::uint32_t crc, std::size_t size) {
    if (size >= 0xFFFFFFFFu || offset_ >= 0xFFFFFFFFu - size - 1024)
      h5::fail(name_, "a .keras archive over 4 GiB needs ZIP64, which this writer does not write");
    entries_.push_back({member, crc, std::uint32_t(size), std::uint32_t(offset_)});
    header(0x04034b50, entries_.back(), false);
    put(member.data(), member.size());
  }
  void put(const void* p, std::size_t n) {
    out_.write(p, n);
    offset_ += n;
  }
  /// A header's little-endian fields, gathered to be written at once.
  struct fields {
    std::uint8_t b[64];
    std::size_t n = 0;
    fields& u16(std::uint16_t v) { b[n++] = std::uint8_t(v), b[n++] = std::uint8_t(v >> 8); return *this; }
    fields& u32(std::uint32_t v) { return u16(std::uint16_t(v)).u16(std::uint16_t(v >> 16)); }
  };
  /// A local header (central: false) or a central directory entry, up to the name.
  void header(std::uint32_t signature, const entry& e, bool central) {
    fields f;
    f.u32(signature);
    if (central) f.u16(20);                                          // made by
    f.u16(20).u16(0).u16(0).u16(time_).u16(date_);                   // needed, flags, stored, time, date
    f.u32(e.crc).u32(e.size).u32(e.size).u16(std::uint16_t(e.name.size())).u16(0);
    if (central) f.u16(0).u16(0).u16(0).u32(0).u32(e.offset);        // comment, disk, attributes, offset
    put(f.b, f.n);
  }
  std::string name_;
  ctflow::detail::atomic_output out_;
  std::uint16_t time_ = 0, date_ = 0;
  std::size_t offset_ = 0;
  std::vector<entry> entries_;
};

CTFLOW_DECL void save_model_archive(const std::string& path, const saved_model& model, const std::vector<saved_layer>& layers) {
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  ::localtime_r(&now, &t);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d@%H:%M:%S", &t);
  // The Keras version whose format this is (Keras compares it with its own only to warn).
  const std::string metadata = std::string(R"({"keras_version": "3.15.1", "date_saved": ")") + date + "\"}";
  const std::string config = model_config_json(model, layers);
  // The weights go through a temporary HDF5 file beside the archive (libhdf5 writes files).
  const std::string tmp = path + ".weights.tmp" + std::to_string(::getpid());
  try {
    write_weights_file(tmp, model.name, layers, model.optimizer_name, model.optimizer_variables);
    zip_writer zip(path);
    zip.add("metadata.json", std::span(reinterpret_cast<const std::uint8_t*>(metadata.data()), metadata.size()));
    zip.add("config.json", std::span(reinterpret_cast<const std::uint8_t*>(config.data()), config.size()));
    zip.add_file("model.weights.h5", tmp);
    zip.finish();
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  ::unlink(tmp.c_str());
}

}  // namespace ctflow::keras::detail
