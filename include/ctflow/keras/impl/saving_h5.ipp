#pragma once
// Definitions of keras/detail/weight_files.hpp that write HDF5 (ctflow::keras's compiled part;
// see detail/linkage.hpp): Keras 3's .weights.h5, through libhdf5's C API. Files are read by
// ctflow's own reader (io/hdf5.hpp), which trusts nothing in them; libhdf5 only writes.

#include <hdf5.h>
#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include <ctflow/core/errors.hpp>
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
    handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    const hid_t type = w.dtype == 'f' ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
    handle d(H5Dcreate2(f_.get(), path.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!d || H5Dwrite(d.get(), w.dtype == 'f' ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data) < 0)
      fail(name_, "cannot write '" + path + "'");
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

CTFLOW_DECL void save_weights_h5(const std::string& path, const std::string& model_name, const std::vector<saved_layer>& layers) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  try {
    {
      const auto f = h5::file::create(tmp);
      write_layers(f, "", layers);
      const auto vars = f.group("vars");
      f.string_attribute(vars.get(), "name", model_name);
    }
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

}  // namespace ctflow::keras::detail
