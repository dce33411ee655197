#pragma once
// Definitions of keras/saving.hpp (ctflow::keras's compiled part; see detail/linkage.hpp): the
// HDF5 files through libhdf5's C API, the .keras archive's zip container (stored or deflated
// members, through zlib) and its config.json (nlohmann-json); PyTorch's state_dicts in
// safetensors, converted through ctflow::nn's layout conversions.

#include <hdf5.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include <ctflow/detail/file.hpp>
#include <ctflow/io/safetensors.hpp>
#include <ctflow/keras/saving.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/nn/layout.hpp>

namespace ctflow::keras::detail {

CTFLOW_DECL std::vector<std::string> layer_keys(const std::vector<saved_layer>& layers) {
  std::map<std::string, int> used;
  std::vector<std::string> keys;
  for (const auto& l : layers) {
    const std::string base = snake_case(l.class_name);
    auto [it, fresh] = used.emplace(base, 0);
    keys.push_back(fresh ? base : base + "_" + std::to_string(++it->second));
  }
  return keys;
}

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

/// An HDF5 file, open for writing (a new file) or reading (from disk or from bytes in memory).
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
  static file open(const std::string& path) {
    quiet();
    file f;
    f.name_ = path;
    if (H5Fis_hdf5(path.c_str()) <= 0) fail(path, "not an HDF5 file");
    f.f_ = handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!f.f_) fail(path, "cannot open the HDF5 file");
    return f;
  }
  /// A file held in memory (the .keras archive's model.weights.h5), read through HDF5's core driver.
  static file open_image(std::span<const std::uint8_t> bytes, const std::string& name) {
    quiet();
    file f;
    f.name_ = name;
    handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (!fapl || H5Pset_fapl_core(fapl.get(), 1 << 20, 0) < 0 ||
        H5Pset_file_image(fapl.get(), const_cast<std::uint8_t*>(bytes.data()), bytes.size()) < 0)
      fail(name, "cannot read the HDF5 image");
    f.f_ = handle(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!f.f_) fail(name, "not an HDF5 file");
    return f;
  }
  const std::string& name() const { return name_; }
  hid_t id() const { return f_.get(); }

  bool exists(const std::string& path) const {
    // Each link of the path must exist before the next is asked about.
    std::size_t at = 0;
    while (true) {
      const std::size_t slash = path.find('/', at + 1);
      const std::string prefix = path.substr(0, slash);
      if (H5Lexists(f_.get(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
      if (slash == std::string::npos) return true;
      at = slash;
    }
  }
  handle group(const std::string& path, bool create) const {
    handle g(create ? H5Gcreate2(f_.get(), path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : H5Gopen2(f_.get(), path.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g) fail(name_, std::string(create ? "cannot create" : "no group") + " '" + path + "'");
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
  /// The strings of an attribute (scalar or 1-D, variable- or fixed-length); an attribute of
  /// another type (the empty float64 array tf.keras writes for no weights) has none.
  std::vector<std::string> strings(const std::string& object, const std::string& key) const {
    std::vector<std::string> out;
    if (H5Aexists_by_name(f_.get(), object.c_str(), key.c_str(), H5P_DEFAULT) <= 0) fail(name_, "'" + object + "' has no attribute '" + key + "'");
    handle a(H5Aopen_by_name(f_.get(), object.c_str(), key.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    handle type(H5Aget_type(a.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) return out;
    handle space(H5Aget_space(a.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0 || n > (1 << 24)) fail(name_, "attribute '" + key + "' of '" + object + "' has a bad size");
    if (H5Tis_variable_str(type.get()) > 0) {
      handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> raw(std::size_t(n), nullptr);
      if (H5Aread(a.get(), mem.get(), raw.data()) < 0) fail(name_, "cannot read attribute '" + key + "' of '" + object + "'");
      for (char* s : raw) out.emplace_back(s ? s : "");
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
    } else {
      const std::size_t size = H5Tget_size(type.get());
      if (size == 0 || size > (1 << 20)) fail(name_, "attribute '" + key + "' of '" + object + "' has a bad string size");
      std::vector<char> raw(std::size_t(n) * size);
      if (H5Aread(a.get(), type.get(), raw.data()) < 0) fail(name_, "cannot read attribute '" + key + "' of '" + object + "'");
      for (hssize_t i = 0; i < n; ++i) {
        const char* s = raw.data() + std::size_t(i) * size;
        out.emplace_back(s, strnlen(s, size));
      }
    }
    return out;
  }
  void write_dataset(const std::string& path, const saved_layer::weight& w) const {
    std::vector<hsize_t> dims(w.shape.begin(), w.shape.end());
    handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
    const hid_t type = w.dtype == 'f' ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
    handle d(H5Dcreate2(f_.get(), path.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
    if (!d || H5Dwrite(d.get(), w.dtype == 'f' ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data) < 0)
      fail(name_, "cannot write '" + path + "'");
  }
  /// The shape of dataset path.
  std::vector<std::size_t> shape(const std::string& path) const {
    handle d(H5Dopen2(f_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d) fail(name_, "no dataset '" + path + "'");
    handle space(H5Dget_space(d.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 32) fail(name_, "dataset '" + path + "' has a bad rank");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    return std::vector<std::size_t>(dims.begin(), dims.end());
  }
  /// Reads dataset path into w (converted to w's dtype; its shape checked by the caller).
  void read_dataset(const std::string& path, const saved_layer::weight& w) const {
    handle d(H5Dopen2(f_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d || H5Dread(d.get(), w.dtype == 'f' ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data) < 0)
      fail(name_, "cannot read '" + path + "'");
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
  f.group(base + "layers", true);
  const auto keys = layer_keys(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) write_layer(f, base + "layers/" + keys[i], layers[i]);
}

inline void write_layer(const h5::file& f, const std::string& at, const saved_layer& l) {
  f.group(at, true);
  if (l.is_model) write_layers(f, at + "/", l.children);
  const auto vars = f.group(at + "/vars", true);
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
      const auto vars = f.group("vars", true);
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

/// One weight to read: the dataset's path, the destination, and where it is in the model (for messages).
struct planned_read {
  std::string dataset;
  const saved_layer::weight* into;
  std::string layer;
};

/// Checks the shapes of every dataset against its weight (all before any weight changes), then reads.
inline void read_planned(const h5::file& f, const std::vector<planned_read>& plan, const load_options& options) {
  std::vector<const planned_read*> ok;
  for (const auto& p : plan) {
    const auto shape = f.shape(p.dataset);
    if (shape != p.into->shape) {
      if (options.skip_mismatch) continue;
      throw shape_error(std::string(h5::what) + ": " + f.name() + ": layer " + p.layer + ", weight " + p.into->name + ": shape " +
                        format_dims(shape) + " in the file, " + format_dims(p.into->shape) + " in the model");
    }
    ok.push_back(&p);
  }
  for (const planned_read* p : ok) f.read_dataset(p->dataset, *p->into);
}

inline void plan_layer(const h5::file& f, const std::string& at, const saved_layer& l, const load_options& options, std::vector<planned_read>& plan);

/// The reads of Keras 3's layout for layers under `base`.
inline void plan_layers(const h5::file& f, const std::string& base, const std::vector<saved_layer>& layers, const load_options& options,
                        std::vector<planned_read>& plan) {
  const auto keys = layer_keys(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) plan_layer(f, base + "layers/" + keys[i], layers[i], options, plan);
}

/// The reads of layer l at group `at`: its vars, its children's.
inline void plan_layer(const h5::file& f, const std::string& at, const saved_layer& l, const load_options& options, std::vector<planned_read>& plan) {
  if (l.is_model) {
    plan_layers(f, at + "/", l.children, options, plan);
    return;
  }
  for (std::size_t k = 0; k < l.weights.size(); ++k) {
    const std::string d = at + "/vars/" + std::to_string(k);
    if (!f.exists(d)) {
      if (options.skip_mismatch) continue;
      h5::fail(f.name(), "layer " + l.name + " (" + l.class_name + "): no weight " + l.weights[k].name + " at '" + d + "'");
    }
    plan.push_back({d, &l.weights[k], l.name});
  }
  for (const auto& child : l.children) plan_layer(f, at + "/" + child.key, child, options, plan);
}

/// The layers of a model that own weights (their own, their cells' or their sub-layers'), nested
/// models' flattened, in order.
inline void weighted(const std::vector<saved_layer>& layers, std::vector<const saved_layer*>& out) {
  for (const auto& l : layers) {
    if (l.is_model) weighted(l.children, out);
    else out.push_back(&l);
  }
}
/// A layer's weights and its children's, in order.
inline void all_weights(const saved_layer& l, std::vector<const saved_layer::weight*>& out) {
  for (const auto& w : l.weights) out.push_back(&w);
  for (const auto& c : l.children) all_weights(c, out);
}

/// The legacy tf.keras layout: layer_names (under model_weights/ for a whole saved model), each
/// layer's weight_names, matched to the model's weighted layers in order (as Keras loads them).
inline void plan_legacy(const h5::file& f, const std::vector<saved_layer>& layers, const load_options& options, std::vector<planned_read>& plan) {
  const std::string root = f.exists("model_weights") ? "model_weights" : "/";
  std::vector<std::pair<std::string, std::vector<std::string>>> file_layers;
  for (const auto& name : f.strings(root, "layer_names")) {
    const std::string group = (root == "/" ? "" : root + "/") + name;
    auto names = f.strings(group, "weight_names");
    if (!names.empty()) file_layers.emplace_back(group, std::move(names));
  }
  std::vector<const saved_layer*> model_layers;
  weighted(layers, model_layers);
  std::vector<const saved_layer*> with_weights;
  for (const saved_layer* l : model_layers) {
    std::vector<const saved_layer::weight*> ws;
    all_weights(*l, ws);
    if (!ws.empty()) with_weights.push_back(l);
  }
  if (file_layers.size() != with_weights.size())
    h5::fail(f.name(), std::to_string(file_layers.size()) + " layers with weights in the file, " + std::to_string(with_weights.size()) + " in the model");
  for (std::size_t i = 0; i < with_weights.size(); ++i) {
    const saved_layer& l = *with_weights[i];
    std::vector<const saved_layer::weight*> ws;
    all_weights(l, ws);
    const auto& [group, names] = file_layers[i];
    if (names.size() != ws.size())
      h5::fail(f.name(), "layer " + l.name + " (" + l.class_name + "): " + std::to_string(names.size()) + " weights in the file's '" + group + "', " +
                             std::to_string(ws.size()) + " in the model");
    for (std::size_t k = 0; k < ws.size(); ++k) plan.push_back({group + "/" + names[k], ws[k], l.name});
  }
  (void)options;
}

inline void load_h5(const h5::file& f, const std::vector<saved_layer>& layers, const load_options& options) {
  std::vector<planned_read> plan;
  if (f.exists("layers") || f.exists("vars")) plan_layers(f, "", layers, options, plan);
  else plan_legacy(f, layers, options, plan);
  read_planned(f, plan, options);
}

// ---- the .keras archive: a zip of metadata.json, config.json and model.weights.h5 ------------

/// The members of a zip held in memory (stored or deflated), by name.
inline std::map<std::string, std::vector<std::uint8_t>> unzip(std::span<const std::uint8_t> z, const std::string& name) {
  const auto u16 = [&](std::size_t at) -> std::uint32_t {
    if (at + 2 > z.size()) h5::fail(name, "zip structure runs past the end of the file");
    return std::uint32_t(z[at]) | std::uint32_t(z[at + 1]) << 8;
  };
  const auto u32 = [&](std::size_t at) -> std::uint32_t { return u16(at) | u16(at + 2) << 16; };
  // The end-of-central-directory record: within the last 64 KiB + 22 bytes.
  if (z.size() < 22) h5::fail(name, "not a zip file (too short)");
  std::size_t eocd = z.size() - 22;
  while (u32(eocd) != 0x06054b50) {
    if (eocd == 0 || z.size() - eocd > 65557) h5::fail(name, "not a zip file (no end of central directory)");
    --eocd;
  }
  const std::size_t entries = u16(eocd + 10);
  std::size_t at = u32(eocd + 16);
  std::map<std::string, std::vector<std::uint8_t>> out;
  for (std::size_t e = 0; e < entries; ++e) {
    if (u32(at) != 0x02014b50) h5::fail(name, "corrupt zip central directory at offset " + std::to_string(at));
    const std::uint32_t method = u16(at + 10), csize = u32(at + 20), usize = u32(at + 24);
    const std::size_t nlen = u16(at + 28), elen = u16(at + 30), clen = u16(at + 32), local = u32(at + 42);
    if (at + 46 + nlen > z.size()) h5::fail(name, "zip entry name runs past the end of the file");
    const std::string member(reinterpret_cast<const char*>(z.data() + at + 46), nlen);
    at += 46 + nlen + elen + clen;
    if (u32(local) != 0x04034b50) h5::fail(name, "corrupt zip entry '" + member + "'");
    const std::size_t data = local + 30 + u16(local + 26) + u16(local + 28);
    if (data > z.size() || csize > z.size() - data) h5::fail(name, "zip entry '" + member + "' runs past the end of the file");
    std::vector<std::uint8_t> bytes;
    if (method == 0) {
      bytes.assign(z.begin() + std::ptrdiff_t(data), z.begin() + std::ptrdiff_t(data + csize));
    } else if (method == 8) {
      if (usize > (std::uint32_t(1) << 31)) h5::fail(name, "zip entry '" + member + "' is too large");
      bytes.resize(usize);
      z_stream s{};
      inflateInit2(&s, -15);
      s.next_in = const_cast<Bytef*>(z.data() + data);
      s.avail_in = csize;
      s.next_out = bytes.data();
      s.avail_out = usize;
      const int rc = inflate(&s, Z_FINISH);
      inflateEnd(&s);
      if (rc != Z_STREAM_END || s.total_out != usize) h5::fail(name, "corrupt deflated zip entry '" + member + "'");
    } else {
      h5::fail(name, "zip entry '" + member + "' uses compression method " + std::to_string(method) + " (stored and deflated are read)");
    }
    out.emplace(member, std::move(bytes));
  }
  return out;
}

/// Checks the archive's config.json against the model's layers: the same layers in the same
/// order, each of the same class, built for the same input shape (build_config's, where the layer
/// has one input); the first difference is the error, naming the layers of both. Names are not
/// compared: automatic names count the layers made before (dense_4 for the fifth Dense of a
/// session), and Keras's own load_weights reads an archive by structure as well.
inline void check_config(const std::string& name, const std::vector<std::uint8_t>& text, const std::vector<saved_layer>& layers) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    h5::fail(name, std::string("config.json is not valid JSON: ") + e.what());
  }
  const auto& c = config.value("config", nlohmann::json::object());
  if (!c.contains("layers") || !c["layers"].is_array()) h5::fail(name, "config.json has no list of layers");
  struct file_layer {
    std::string class_name, name;
    nlohmann::json input_shape;
  };
  std::vector<file_layer> file_layers;
  for (const auto& l : c["layers"]) {
    if (!l.is_object()) h5::fail(name, "config.json: a layer is not an object");
    const std::string cls = l.value("class_name", "");
    if (cls == "InputLayer") continue;
    const auto build = l.value("build_config", nlohmann::json::object());
    file_layers.push_back({cls, l.value("config", nlohmann::json::object()).value("name", ""), build.value("input_shape", nlohmann::json())});
  }
  const auto shape_text = [](const nlohmann::json& s) {
    std::string t = "[";
    for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + (s[i].is_null() ? std::string("None") : s[i].dump());
    return t + "]";
  };
  for (std::size_t i = 0; i < std::max(file_layers.size(), layers.size()); ++i) {
    if (i >= file_layers.size()) h5::fail(name, "the model has more layers than the archive's " + std::to_string(file_layers.size()) + ": " + layers[i].name);
    if (i >= layers.size())
      h5::fail(name, "the archive has more layers than the model's " + std::to_string(layers.size()) + ": " + file_layers[i].name + " (" +
                         file_layers[i].class_name + ")");
    const auto& f = file_layers[i];
    const auto& m = layers[i];
    if (f.class_name != m.class_name)
      h5::fail(name, "layer " + std::to_string(i) + " is " + f.name + " (" + f.class_name + ") in the archive, " + m.name + " (" + m.class_name +
                         ") in the model");
    const auto& s = f.input_shape;
    const bool flat = s.is_array() && std::all_of(s.begin(), s.end(), [](const auto& e) { return e.is_null() || e.is_number_unsigned(); });
    if (!flat || m.input_shape.empty()) continue;
    bool same = s.size() == m.input_shape.size();
    for (std::size_t k = 0; same && k < s.size(); ++k)
      same = s[k].is_null() ? m.input_shape[k] == dyn : m.input_shape[k] == s[k].get<std::size_t>();
    if (!same) h5::fail(name, "layer " + m.name + " (" + m.class_name + ") is built for inputs " + shape_text(s) + " in the archive, " + format_dims(m.input_shape) + " in the model");
  }
}

/// The safetensors names of a layer's weights: its path of keys then the weight's name
/// ("conv2d_1/kernel", "lstm/cell/kernel", "sequential/dense/bias").
inline void safetensors_names(const saved_layer& l, const std::string& at, std::vector<std::pair<std::string, const saved_layer::weight*>>& out);

/// The same for the layers of a model under prefix.
inline void safetensors_names(const std::vector<saved_layer>& layers, const std::string& prefix,
                              std::vector<std::pair<std::string, const saved_layer::weight*>>& out) {
  const auto keys = layer_keys(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) safetensors_names(layers[i], prefix + keys[i], out);
}

inline void safetensors_names(const saved_layer& l, const std::string& at, std::vector<std::pair<std::string, const saved_layer::weight*>>& out) {
  if (l.is_model) {
    safetensors_names(l.children, at + "/", out);
    return;
  }
  for (const auto& w : l.weights) out.emplace_back(at + "/" + w.name, &w);
  for (const auto& c : l.children) safetensors_names(c, at + "/" + c.key, out);
}

CTFLOW_DECL void load_weights_file(const std::string& path, const std::vector<saved_layer>& layers, const load_options& options) {
  if (path.ends_with(".keras")) {
    const ctflow::detail::mapped_file m(path, h5::what);
    const auto members = unzip(m.bytes(), path);
    const auto config = members.find("config.json");
    const auto weights = members.find("model.weights.h5");
    if (config == members.end() || weights == members.end()) h5::fail(path, "a .keras archive holds config.json and model.weights.h5");
    check_config(path, config->second, layers);
    const auto f = h5::file::open_image(weights->second, path + "/model.weights.h5");
    load_h5(f, layers, options);
    return;
  }
  const auto f = h5::file::open(path);
  load_h5(f, layers, options);
}

CTFLOW_DECL void save_weights_safetensors(const std::string& path, const std::vector<saved_layer>& layers) {
  std::vector<std::pair<std::string, const saved_layer::weight*>> names;
  safetensors_names(layers, "", names);
  std::vector<std::pair<std::string, io::tensor_ref>> tensors;
  for (const auto& [key, w] : names)
    tensors.emplace_back(key, io::tensor_ref(w->dtype == 'f' ? "F32" : "F64", std::vector<std::uint64_t>(w->shape.begin(), w->shape.end()), w->data,
                                             w->count() * (w->dtype == 'f' ? 4 : 8)));
  io::safetensors::save_file(tensors, path, {{"format", "ctflow.keras"}});
}

CTFLOW_DECL void load_weights_safetensors(const std::string& path, const std::vector<saved_layer>& layers, const load_options& options) {
  const io::safetensors::File f(path);
  std::vector<std::pair<std::string, const saved_layer::weight*>> names, reads;
  safetensors_names(layers, "", names);
  for (const auto& [key, w] : names) {
    if (!f.contains(key)) {
      if (options.skip_mismatch) continue;
      h5::fail(path, "no weight '" + key + "'");
    }
    const auto& info = f.info(key);
    const std::vector<std::size_t> shape(info.shape.begin(), info.shape.end());
    if (shape != w->shape || info.dtype != (w->dtype == 'f' ? "F32" : "F64")) {
      if (options.skip_mismatch) continue;
      throw shape_error(std::string(h5::what) + ": " + path + ": weight " + key + ": " + info.dtype + " " + format_dims(shape) +
                        " in the file, " + format_dims(w->shape) + " in the model");
    }
    reads.emplace_back(key, w);
  }
  for (const auto& [key, w] : reads) f.read_into(key, w->data);
}

// ---- PyTorch's state_dict ------------------------------------------------------------------

namespace torch {

inline constexpr const char* what = "ctflow::keras::load_pytorch_weights";

/// A tensor of the file, or one converted from it, in double (the file's F32 or F64).
struct values {
  std::vector<std::size_t> shape;
  std::vector<double> v;
};

inline values read(const io::safetensors::File& f, const std::string& key) {
  const auto& info = f.info(key);
  values out{std::vector<std::size_t>(info.shape.begin(), info.shape.end()), {}};
  std::size_t n = 1;
  for (auto e : out.shape) n *= e;
  out.v.resize(n);
  if (info.dtype == "F64") f.read_into(key, out.v.data());
  else if (info.dtype == "F32") {
    std::vector<float> tmp(n);
    f.read_into(key, tmp.data());
    std::copy(tmp.begin(), tmp.end(), out.v.begin());
  } else
    throw io_error(std::string(what) + ": " + f.name() + ": tensor '" + key + "' is " + info.dtype + ", not F32 or F64");
  return out;
}

template <std::size_t R>
using dyn_shape = std::conditional_t<R == 2, Shape<dyn, dyn>, std::conditional_t<R == 3, Shape<dyn, dyn, dyn>, Shape<dyn, dyn, dyn, dyn>>>;

/// x laid out as `dims` (as many elements as x has) then rearranged by f (one of ctflow::nn's
/// layout conversions, or a transpose): the values of the expression f(view of x as dims).
template <std::size_t R, class F> values rearranged(const values& x, const dims_t<R>& dims, F&& f) {
  using S = dyn_shape<R>;
  const TensorView<const double, S> view(x.v.data(), dims);
  const Tensor<double, S> t = f(view);
  return {std::vector<std::size_t>(t.dims().begin(), t.dims().end()), std::vector<double>(t.begin(), t.end())};
}
template <std::size_t R> dims_t<R> dims_of(const values& x) {
  dims_t<R> d{};
  std::copy_n(x.shape.begin(), R, d.begin());
  return d;
}

/// A tensor that cannot be what its layer needs: the shape error names the layer, the weight,
/// the tensor and why.
struct malformed {
  const saved_layer& l;
  const saved_layer::weight& w;
  [[noreturn]] void operator()(const std::string& tensor, const values& x, const std::string& why) const {
    throw shape_error(std::string(what) + ": layer " + l.name + " (" + l.class_name + "), weight " + w.name + ": tensor " + tensor + " " +
                      format_dims(x.shape) + ": " + why);
  }
};

/// [out, in] -> [in, out] (Linear's weight as a Dense kernel, an RNN's weights as Keras's).
inline values transposed(const values& x) {
  return rearranged<2>(x, dims_of<2>(x), [](const auto& v) { return transpose(v); });
}
/// Conv1d's [out, in, k] -> Conv1D's [k, in, out].
inline values oiw_to_wio(const values& x) {
  return rearranged<3>(x, dims_of<3>(x), [](const auto& v) { return transpose<2, 1, 0>(v); });
}
/// Conv2d's [out, in, kh, kw] -> Conv2D's [kh, kw, in, out] (and ConvTranspose2d's [in, out,
/// kh, kw] -> Conv2DTranspose's [kh, kw, out, in], the same permutation).
inline values oihw_to_hwio(const values& x) {
  return rearranged<4>(x, dims_of<4>(x), [](const auto& v) { return nn::oihw_to_hwio(v); });
}
/// The channels-first order of the rows of a Linear after a Flatten, as Keras's channels-last
/// one: PyTorch flattens [c, h, w] (or [c, t]), Keras [h, w, c] (or [t, c]). `flat` is the
/// Flatten's input without its batch axis, channels last.
inline values flattened_kernel(const values& x, const std::vector<std::size_t>& flat) {
  const std::size_t out = x.shape[0];
  values k = flat.size() == 3 ? rearranged<4>(x, dims_t<4>{out, flat[2], flat[0], flat[1]}, [](const auto& v) { return nn::oihw_to_hwio(v); })
                              : rearranged<3>(x, dims_t<3>{out, flat[1], flat[0]}, [](const auto& v) { return transpose<2, 1, 0>(v); });
  k.shape = {x.shape[1], out};
  return k;
}

/// The model's layers as PyTorch's modules line up with them: nested models' and custom layers'
/// sub-layers in order, an RNN with its cell (its weights), weightless layers kept.
inline bool is_rnn(const saved_layer& l) { return !l.children.empty() && l.children.front().key == "cell"; }
inline void leaves(const std::vector<saved_layer>& layers, std::vector<const saved_layer*>& out) {
  for (const auto& l : layers) {
    if (l.is_model) leaves(l.children, out);
    else {
      out.push_back(&l);
      if (!is_rnn(l)) leaves(l.children, out);
    }
  }
}
inline const std::vector<saved_layer::weight>& weights_of(const saved_layer& l) { return is_rnn(l) ? l.children.front().weights : l.weights; }

/// Where a Dense's input was flattened from channels-first activations in PyTorch: the input of
/// the Flatten before it (weightless layers of flat input in between), without its batch axis,
/// when that input is an image [h, w, c], or a sequence [t, c] made by a Conv1D (PyTorch's
/// Conv1d gives [c, t]; its RNNs and Embedding give [t, c], as Keras). Empty otherwise.
inline std::vector<std::size_t> flattened_from(const std::vector<const saved_layer*>& all, std::size_t dense) {
  std::size_t i = dense;
  while (i > 0 && weights_of(*all[i - 1]).empty() && all[i - 1]->class_name != "Flatten" && all[i - 1]->input_shape.size() == 2) --i;
  if (i == 0 || all[i - 1]->class_name != "Flatten") return {};
  const std::vector<std::size_t>& in = all[i - 1]->input_shape;
  const std::vector<std::size_t> flat(in.begin() + (in.empty() ? 0 : 1), in.end());
  if (std::find(flat.begin(), flat.end(), std::size_t(dyn)) != flat.end()) return {};
  if (flat.size() == 3) return flat;
  if (flat.size() != 2) return {};
  std::size_t j = i - 1;  // the Flatten; what made its input:
  while (j > 0 && weights_of(*all[j - 1]).empty() && all[j - 1]->input_shape.size() == 3) --j;
  return j > 0 && all[j - 1]->class_name == "Conv1D" ? flat : std::vector<std::size_t>{};
}

/// The values weight w of layer l (class l.class_name) takes from PyTorch's module(s) m, or
/// nothing where the file lacks a tensor it needs (`missing` names it). `flat`: where the input
/// of a Dense was flattened from (flattened_from).
inline std::optional<values> source(const io::safetensors::File& f, const saved_layer& l, const std::vector<std::size_t>& flat,
                                     const saved_layer::weight& w, const std::vector<std::string>& m, std::string& missing) {
  const malformed bad{l, w};
  const auto key = [&](std::size_t i, const std::string& name) { return m[std::min(i, m.size() - 1)] + "." + name; };
  const auto get = [&](std::size_t i, const std::string& name) -> std::optional<values> {
    if (!f.contains(key(i, name))) {
      missing = key(i, name);
      return std::nullopt;
    }
    return read(f, key(i, name));
  };
  // The file's tensor of rank r converted; other ranks as they are, for the shape check to report.
  const auto ranked = [&](std::optional<values> x, std::size_t r, auto convert) -> std::optional<values> {
    if (!x || x->shape.size() != r) return x;
    return convert(*x);
  };
  const std::string& c = l.class_name;
  if (c == "Dense" && w.name == "kernel")
    return ranked(get(0, "weight"), 2, [&](const values& x) {
      std::size_t n = 1;
      for (auto e : flat) n *= e;
      return !flat.empty() && x.shape[1] == n ? flattened_kernel(x, flat) : transposed(x);
    });
  if (c == "Conv1D" && w.name == "kernel") return ranked(get(0, "weight"), 3, oiw_to_wio);
  if ((c == "Conv2D" || c == "Conv2DTranspose") && w.name == "kernel") return ranked(get(0, "weight"), 4, oihw_to_hwio);
  if ((c == "DepthwiseConv2D" && w.name == "kernel") || (c == "SeparableConv2D" && w.name == "depthwise_kernel"))
    return ranked(get(0, "weight"), 4, [&](const values& x) {
      // [channels * multiplier, 1, kh, kw]: output channel ch * multiplier + j of PyTorch is Keras's (ch, j).
      const std::size_t channels = w.shape.size() == 4 ? w.shape[2] : 0;
      if (x.shape[1] != 1 || channels == 0 || x.shape[0] % channels != 0)
        bad(key(0, "weight"), x, "a depthwise Conv2d's weight is [" + std::to_string(channels) + " * multiplier, 1, kh, kw]");
      return rearranged<4>(x, dims_t<4>{channels, x.shape[0] / channels, x.shape[2], x.shape[3]}, [](const auto& v) { return transpose<2, 3, 0, 1>(v); });
    });
  if (c == "SeparableConv2D" && w.name == "pointwise_kernel") return ranked(get(1, "weight"), 4, oihw_to_hwio);
  if (c == "SeparableConv2D" && w.name == "bias") {
    // The pointwise bias, plus what a depthwise bias becomes through the pointwise filters.
    auto b = get(1, "bias");
    if (!b || !f.contains(key(0, "bias"))) return b;
    const values d = read(f, key(0, "bias")), p = read(f, key(1, "weight"));
    const std::size_t o = b->v.size(), k = d.v.size();
    if (p.v.size() != o * k) bad(key(1, "weight"), p, "does not take the depthwise bias " + format_dims(d.shape) + " to " + format_dims(b->shape));
    for (std::size_t i = 0; i < o; ++i)
      for (std::size_t j = 0; j < k; ++j) b->v[i] += p.v[i * k + j] * d.v[j];
    return b;
  }
  if (c == "BatchNormalization" || c == "LayerNormalization") {
    static const std::pair<const char*, const char*> names[] = {
        {"gamma", "weight"}, {"beta", "bias"}, {"moving_mean", "running_mean"}, {"moving_variance", "running_var"}};
    for (const auto& [keras, pt] : names)
      if (w.name == keras) return get(0, pt);
  }
  if (c == "Embedding" && w.name == "embeddings") return get(0, "weight");
  if (c == "LSTM" || c == "GRU") {
    const bool gru = c == "GRU";
    // PyTorch's gate blocks along axis 0 in Keras's order: LSTM's (i, f, g, o) are Keras's
    // (i, f, c, o); GRU's (r, z, n) become (z, r, h).
    const auto gates = [&](const std::string& name) -> std::optional<values> {
      auto x = get(0, name);
      if (!x) return x;
      const std::size_t blocks = gru ? 3 : 4;
      if (x->shape.empty() || x->shape.size() > 2 || x->shape[0] % blocks != 0)
        bad(key(0, name), *x, std::string("PyTorch's ") + c + " stacks " + std::to_string(blocks) + " gates along its first axis");
      if (gru) {
        const std::size_t block = x->v.size() / 3;
        std::swap_ranges(x->v.begin(), x->v.begin() + std::ptrdiff_t(block), x->v.begin() + std::ptrdiff_t(block));
      }
      return x;
    };
    if (w.name == "kernel") return ranked(gates("weight_ih_l0"), 2, transposed);
    if (w.name == "recurrent_kernel") return ranked(gates("weight_hh_l0"), 2, transposed);
    if (w.name == "bias") {
      auto bi = gates("bias_ih_l0");
      const auto bh = gates("bias_hh_l0");
      if (!bi || !bh) return std::nullopt;
      if (bi->shape.size() != 1 || bh->shape != bi->shape) bad(key(0, "bias_hh_l0"), *bh, "differs from " + key(0, "bias_ih_l0") + " " + format_dims(bi->shape));
      if (!gru) {  // Keras's LSTM has one bias: the sum of PyTorch's two
        for (std::size_t i = 0; i < bi->v.size(); ++i) bi->v[i] += bh->v[i];
        return bi;
      }
      // reset_after: an input bias and a recurrent one, as PyTorch's; without it there is one.
      if (w.shape.size() != 2)
        throw value_error(std::string(what) + ": layer " + l.name + " (GRU): PyTorch's GRU applies its reset gate after the "
                          "recurrent product; the layer needs layers::reset_after<true> (Keras's default)");
      bi->shape = {2, bi->v.size()};
      bi->v.insert(bi->v.end(), bh->v.begin(), bh->v.end());
      return bi;
    }
  }
  return get(0, w.name);  // a custom layer's own weights: by their names, as they are
}

}  // namespace torch

CTFLOW_DECL void load_weights_pytorch(const std::string& path, const std::vector<saved_layer>& layers, const std::vector<std::string>& modules,
                                      const load_options& options) {
  const io::safetensors::File f(path);
  std::vector<const saved_layer*> all;
  torch::leaves(layers, all);
  std::vector<std::size_t> weighted;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!torch::weights_of(*all[i]).empty()) weighted.push_back(i);
  if (weighted.size() != modules.size()) {
    std::string names;
    for (std::size_t i : weighted) names += (names.empty() ? "" : ", ") + all[i]->name;
    throw value_error(std::string(torch::what) + ": " + path + ": the model has " + std::to_string(weighted.size()) +
                      " layers with weights (" + names + "), " + std::to_string(modules.size()) + " module names were given");
  }
  std::vector<std::pair<const saved_layer::weight*, torch::values>> plan;
  for (std::size_t k = 0; k < weighted.size(); ++k) {
    const saved_layer& l = *all[weighted[k]];
    std::vector<std::string> m;
    for (std::size_t b = 0, e; b <= modules[k].size(); b = e + 1) {
      e = std::min(modules[k].find('+', b), modules[k].size());
      m.push_back(modules[k].substr(b, e - b));
    }
    const auto& weights = torch::weights_of(l);
    const bool has_bias = std::any_of(weights.begin(), weights.end(), [](const auto& w) { return w.name == "bias"; });
    if (l.class_name == "SeparableConv2D" && !has_bias && f.contains(m[0] + ".bias") && !options.skip_mismatch)
      throw value_error(std::string(torch::what) + ": " + path + ": layer " + l.name + " (SeparableConv2D) has no bias to hold " + m[0] +
                        ".bias; give it layers::use_bias<true>");
    const std::vector<std::size_t> flat = l.class_name == "Dense" ? torch::flattened_from(all, weighted[k]) : std::vector<std::size_t>{};
    for (const auto& w : weights) {
      std::string missing;
      std::optional<torch::values> x;
      try {
        x = torch::source(f, l, flat, w, m, missing);
      } catch (const shape_error&) {
        if (options.skip_mismatch) continue;
        throw;
      }
      if (!x) {
        if (options.skip_mismatch) continue;
        throw io_error(std::string(torch::what) + ": " + path + ": no tensor '" + missing + "' for layer " + l.name + " (" + l.class_name + "), weight " +
                       w.name);
      }
      if (x->shape != w.shape) {
        if (options.skip_mismatch) continue;
        throw shape_error(std::string(torch::what) + ": " + path + ": layer " + l.name + " (" + l.class_name + "), weight " + w.name + ": module " +
                          modules[k] + " gives " + format_dims(x->shape) + " in Keras's layout, the model's is " + format_dims(w.shape));
      }
      plan.emplace_back(&w, std::move(*x));
    }
  }
  for (const auto& [w, x] : plan) {
    if (w->dtype == 'f') std::copy(x.v.begin(), x.v.end(), static_cast<float*>(w->data));
    else std::copy(x.v.begin(), x.v.end(), static_cast<double*>(w->data));
  }
}

}  // namespace ctflow::keras::detail
