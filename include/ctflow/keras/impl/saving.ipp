#pragma once
// Definitions of keras/detail/weight_files.hpp that read Keras's files (ctflow::keras's compiled
// part; see detail/linkage.hpp): Keras 3's .weights.h5 and tf.keras's legacy .h5 through ctflow's
// own HDF5 reader, the .keras archive (a zip, its members' sizes and CRC-32 checked) and its
// config.json (nlohmann-json), and safetensors. Every load stages each weight's new values and
// writes them into the model only when all of them are read and checked.

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <span>

#include <nlohmann/json.hpp>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/zip.hpp>
#include <ctflow/io/hdf5.hpp>
#include <ctflow/io/safetensors.hpp>
#include <ctflow/keras/detail/naming.hpp>
#include <ctflow/keras/detail/weight_files.hpp>

namespace ctflow::keras::detail {

inline constexpr const char* files_what = "ctflow::keras";

[[noreturn]] inline void files_fail(const std::string& file, const std::string& why) { throw io_error(std::string(files_what) + ": " + file + ": " + why); }

/// New values of weights, each in memory of its own until commit() writes them all into the
/// model: a load that fails before commit changes nothing.
class staged_values {
 public:
  /// Memory for weight w's new values (its dtype, its count).
  void* stage(const saved_layer::weight& w) {
    const std::size_t bytes = w.count() * (w.dtype == 'f' ? sizeof(float) : 8);
    entries_.push_back({&w, std::make_unique<std::byte[]>(bytes), bytes});
    return entries_.back().bytes.get();
  }
  void commit() const {
    for (const auto& e : entries_)
      if (e.size) std::memcpy(e.into->data, e.bytes.get(), e.size);
  }

 private:
  struct entry {
    const saved_layer::weight* into;
    std::unique_ptr<std::byte[]> bytes;
    std::size_t size;
  };
  std::vector<entry> entries_;
};

// ---- HDF5: Keras 3's layout and the legacy one -----------------------------------------------

/// One weight to read: the dataset's path, the destination, and its layer (for messages).
struct planned_read {
  std::string dataset;
  const saved_layer::weight* into;
  std::string layer;
};

/// Checks every dataset against its weight and reads it into staging memory, then writes all.
inline void read_planned(const io::hdf5::File& f, const std::vector<planned_read>& plan, const load_options& options) {
  staged_values staged;
  for (const auto& p : plan) {
    const auto info = f.dataset(p.dataset);
    const std::vector<std::size_t> shape(info.shape.begin(), info.shape.end());
    if (shape != p.into->shape) {
      if (options.skip_mismatch) continue;
      throw shape_error(std::string(files_what) + ": " + f.name() + ": layer " + p.layer + ", weight " + p.into->name + ": shape " + format_dims(shape) +
                        " in the file, " + format_dims(p.into->shape) + " in the model");
    }
    if (info.type.kind != io::hdf5::ElementType::Kind::floating && info.type.kind != io::hdf5::ElementType::Kind::integer)
      files_fail(f.name(), "layer " + p.layer + ", weight " + p.into->name + ": '" + p.dataset + "' holds " + info.type.name() + " values, not numbers");
    void* dst = staged.stage(*p.into);
    if (p.into->dtype == 'f') f.read(p.dataset, static_cast<float*>(dst));
    else if (p.into->dtype == 'l') f.read(p.dataset, static_cast<std::int64_t*>(dst));
    else f.read(p.dataset, static_cast<double*>(dst));
  }
  staged.commit();
}

inline void plan_layer(const io::hdf5::File& f, const std::string& at, const saved_layer& l, const load_options& options, std::vector<planned_read>& plan);

/// The reads of Keras 3's layout for layers under `base`.
inline void plan_layers(const io::hdf5::File& f, const std::string& base, const std::vector<saved_layer>& layers, const load_options& options,
                        std::vector<planned_read>& plan) {
  const auto keys = layer_keys(layers);
  for (std::size_t i = 0; i < layers.size(); ++i) plan_layer(f, base + "layers/" + keys[i], layers[i], options, plan);
}

/// The reads of layer l at group `at`: its vars, its children's.
inline void plan_layer(const io::hdf5::File& f, const std::string& at, const saved_layer& l, const load_options& options, std::vector<planned_read>& plan) {
  if (l.is_model) {
    plan_layers(f, at + "/", l.children, options, plan);
    return;
  }
  for (std::size_t k = 0; k < l.weights.size(); ++k) {
    const std::string d = at + "/vars/" + std::to_string(k);
    if (!f.is_dataset(d)) {
      if (options.skip_mismatch) continue;
      files_fail(f.name(), "layer " + l.name + " (" + l.class_name + "): no weight " + l.weights[k].name + " at '" + d + "'");
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

/// The strings of a legacy file's attribute `key` of `object`, which tf.keras splits into key0,
/// key1, ... when they pass HDF5's 64 KB limit for an attribute.
inline std::vector<std::string> legacy_strings(const io::hdf5::File& f, const std::string& object, const std::string& key) {
  if (f.has_attribute(object, key)) return f.attribute_strings(object, key);
  std::vector<std::string> out;
  int chunk = 0;
  for (; f.has_attribute(object, key + std::to_string(chunk)); ++chunk) {
    auto part = f.attribute_strings(object, key + std::to_string(chunk));
    out.insert(out.end(), part.begin(), part.end());
  }
  if (chunk == 0) files_fail(f.name(), "'" + object + "' has no attribute '" + key + "'");
  return out;
}

/// The legacy tf.keras layout: layer_names (under model_weights/ for a whole saved model), each
/// layer's weight_names, matched to the model's weighted layers in order (as Keras loads them).
inline void plan_legacy(const io::hdf5::File& f, const std::vector<saved_layer>& layers, std::vector<planned_read>& plan) {
  const std::string root = f.is_group("model_weights") ? "model_weights" : "/";
  std::vector<std::pair<std::string, std::vector<std::string>>> file_layers;
  for (const auto& name : legacy_strings(f, root, "layer_names")) {
    const std::string group = (root == "/" ? "" : root + "/") + name;
    if (!f.is_group(group)) files_fail(f.name(), "layer_names names '" + name + "', which the file does not hold");
    auto names = legacy_strings(f, group, "weight_names");
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
    files_fail(f.name(), std::to_string(file_layers.size()) + " layers with weights in the file, " + std::to_string(with_weights.size()) + " in the model");
  for (std::size_t i = 0; i < with_weights.size(); ++i) {
    const saved_layer& l = *with_weights[i];
    std::vector<const saved_layer::weight*> ws;
    all_weights(l, ws);
    const auto& [group, names] = file_layers[i];
    if (names.size() != ws.size())
      files_fail(f.name(), "layer " + l.name + " (" + l.class_name + "): " + std::to_string(names.size()) + " weights in the file's '" + group + "', " +
                               std::to_string(ws.size()) + " in the model");
    for (std::size_t k = 0; k < ws.size(); ++k) {
      const std::string d = group + "/" + names[k];
      if (!f.is_dataset(d)) files_fail(f.name(), "layer " + l.name + " (" + l.class_name + "): weight_names names '" + names[k] + "', which '" + group + "' does not hold");
      plan.push_back({d, ws[k], l.name});
    }
  }
}

/// The reads of a weight file's layers: Keras 3's layout, or the legacy one.
inline void plan_weights(const io::hdf5::File& f, const std::vector<saved_layer>& layers, const load_options& options, std::vector<planned_read>& plan) {
  if (f.contains("layers") || f.contains("vars")) plan_layers(f, "", layers, options, plan);
  else plan_legacy(f, layers, plan);
}

inline void load_h5(const io::hdf5::File& f, const std::vector<saved_layer>& layers, const load_options& options) {
  std::vector<planned_read> plan;
  plan_weights(f, layers, options, plan);
  read_planned(f, plan, options);
}

// ---- the .keras archive: a zip of metadata.json, config.json and model.weights.h5 ------------

/// Checks the archive's config.json against the model's layers: the same layers in the same
/// order (InputLayers aside, on both sides: a Sequential's config lists none, a functional
/// model's lists its inputs), each of the same class, built for the same input shape
/// (build_config's, where the layer has one input); the first difference is the error, naming the
/// layers of both. Names are not compared: automatic names count the layers made before (dense_4
/// for the fifth Dense of a session), and Keras's own load_weights reads an archive by structure
/// as well. JSON of another shape than Keras writes is an io_error like any damage.
inline void check_config(const std::string& name, const std::vector<std::uint8_t>& text, const std::vector<saved_layer>& all_layers) {
  struct file_layer {
    std::string class_name, name;
    nlohmann::json input_shape;
  };
  std::vector<file_layer> file_layers;
  try {
    const nlohmann::json config = nlohmann::json::parse(text.begin(), text.end());
    if (!config.is_object()) files_fail(name, "config.json is not a JSON object");
    const auto c = config.value("config", nlohmann::json::object());
    if (!c.is_object() || !c.contains("layers") || !c["layers"].is_array()) files_fail(name, "config.json has no list of layers");
    for (const auto& l : c["layers"]) {
      if (!l.is_object()) files_fail(name, "config.json: a layer is not an object");
      const std::string cls = l.value("class_name", "");
      if (cls == "InputLayer") continue;
      const auto build = l.value("build_config", nlohmann::json::object());
      const auto layer_config = l.value("config", nlohmann::json::object());
      file_layers.push_back({cls, layer_config.is_object() ? layer_config.value("name", "") : "",
                             build.is_object() ? build.value("input_shape", nlohmann::json()) : nlohmann::json()});
    }
  } catch (const nlohmann::json::exception& e) {
    files_fail(name, std::string("config.json is not the configuration Keras writes: ") + e.what());
  }
  std::vector<const saved_layer*> layers;
  for (const auto& l : all_layers)
    if (l.class_name != "InputLayer") layers.push_back(&l);
  const auto shape_text = [](const nlohmann::json& s) {
    std::string t = "[";
    for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + (s[i].is_null() ? std::string("None") : s[i].dump());
    return t + "]";
  };
  for (std::size_t i = 0; i < std::max(file_layers.size(), layers.size()); ++i) {
    if (i >= file_layers.size()) files_fail(name, "the model has more layers than the archive's " + std::to_string(file_layers.size()) + ": " + layers[i]->name);
    if (i >= layers.size())
      files_fail(name, "the archive has more layers than the model's " + std::to_string(layers.size()) + ": " + file_layers[i].name + " (" +
                           file_layers[i].class_name + ")");
    const auto& f = file_layers[i];
    const saved_layer& m = *layers[i];
    if (f.class_name != m.class_name)
      files_fail(name, "layer " + std::to_string(i) + " is " + f.name + " (" + f.class_name + ") in the archive, " + m.name + " (" + m.class_name + ") in the model");
    const auto& s = f.input_shape;
    const bool flat = s.is_array() && std::all_of(s.begin(), s.end(), [](const auto& e) { return e.is_null() || e.is_number_unsigned(); });
    if (!flat || m.input_shape.empty()) continue;
    bool same = s.size() == m.input_shape.size();
    for (std::size_t k = 0; same && k < s.size(); ++k) same = s[k].is_null() ? m.input_shape[k] == dyn : m.input_shape[k] == s[k].get<std::size_t>();
    if (!same)
      files_fail(name, "layer " + m.name + " (" + m.class_name + ") is built for inputs " + shape_text(s) + " in the archive, " + format_dims(m.input_shape) +
                           " in the model");
  }
}

/// The archive's members config.json and model.weights.h5 (an io_error naming what it holds
/// instead when either is missing).
inline std::pair<const ctflow::detail::zip_archive::member*, const ctflow::detail::zip_archive::member*> archive_members(const ctflow::detail::zip_archive& zip,
                                                                                                                          const std::string& name) {
  const auto* config = zip.find("config.json");
  const auto* weights = zip.find("model.weights.h5");
  if (!config || !weights) {
    std::string members;
    for (const auto& m : zip.members()) members += (members.empty() ? "" : ", ") + m.name;
    files_fail(name, "a .keras archive holds config.json and model.weights.h5; this one holds " + (members.empty() ? std::string("nothing") : members));
  }
  return {config, weights};
}

/// Loads a .keras archive's bytes into the layers (its config checked against them first) and,
/// when optimizer_variables is not null, into those (optimizer/vars/<i>): all or nothing.
inline void load_archive(std::span<const std::uint8_t> bytes, const std::string& name, const std::vector<saved_layer>& layers,
                         const std::vector<saved_layer::weight>* optimizer_variables, const load_options& options) {
  const ctflow::detail::zip_archive zip(bytes, name, files_what);
  const auto [config, weights] = archive_members(zip, name);
  check_config(name, zip.read(*config), layers);
  const std::vector<std::uint8_t> h5 = zip.read(*weights);
  const io::hdf5::File f(h5, name + "/model.weights.h5");
  std::vector<planned_read> plan;
  plan_weights(f, layers, options, plan);
  if (optimizer_variables) {
    std::size_t in_file = 0;
    while (f.is_dataset("optimizer/vars/" + std::to_string(in_file))) ++in_file;
    if (in_file != optimizer_variables->size())
      files_fail(name, "the archive's optimizer has " + std::to_string(in_file) + " variables, the model's " + std::to_string(optimizer_variables->size()) +
                           " (another optimizer, or other options)");
    for (std::size_t i = 0; i < in_file; ++i) plan.push_back({"optimizer/vars/" + std::to_string(i), &(*optimizer_variables)[i], "optimizer"});
  }
  read_planned(f, plan, options);
}

CTFLOW_DECL std::string archive_compile_config(const std::string& path) {
  const ctflow::detail::mapped_file m(path, files_what);
  const ctflow::detail::zip_archive zip(m.bytes(), path, files_what);
  const auto text = zip.read(*archive_members(zip, path).first);
  try {
    const auto config = nlohmann::ordered_json::parse(text.begin(), text.end());
    if (!config.is_object() || !config.contains("compile_config") || config["compile_config"].is_null()) return {};
    if (!config["compile_config"].is_object()) files_fail(path, "config.json's compile_config is not an object");
    return config["compile_config"].dump();
  } catch (const nlohmann::json::exception& e) {
    files_fail(path, std::string("config.json is not JSON: ") + e.what());
  }
}

CTFLOW_DECL void load_model_archive(const std::string& path, const std::vector<saved_layer>& layers, const std::vector<saved_layer::weight>* optimizer_variables,
                                    const load_options& options) {
  const ctflow::detail::mapped_file m(path, files_what);
  load_archive(m.bytes(), path, layers, optimizer_variables, options);
}

// ---- config.json as Keras 3 writes it ----------------------------------------------------------

/// Keras's own layer classes (any other is a user's, registered as "Custom>Class").
inline bool keras_layer_class(std::string_view c) {
  static constexpr std::string_view known[] = {"Activation", "ReLU", "LeakyReLU", "Softmax", "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum",
                                               "AveragePooling2D", "MaxPooling2D", "BatchNormalization", "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose",
                                               "Dense", "DepthwiseConv2D", "SeparableConv2D", "Dropout", "Embedding", "Flatten", "GlobalAveragePooling2D",
                                               "GlobalMaxPooling2D", "GRU", "LSTM", "LayerNormalization", "Rescaling", "Reshape", "Permute", "UpSampling2D",
                                               "ZeroPadding2D", "InputLayer"};
  return std::find(std::begin(known), std::end(known), c) != std::end(known);
}

inline nlohmann::ordered_json shape_json(const std::vector<std::size_t>& shape) {
  auto j = nlohmann::ordered_json::array();
  for (const auto e : shape) j.push_back(e == dyn ? nlohmann::ordered_json() : nlohmann::ordered_json(e));
  return j;
}

inline nlohmann::ordered_json dtype_policy(const std::string& dtype) {
  return {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", dtype}}}, {"registered_name", nullptr}};
}

inline nlohmann::ordered_json input_layer_json(const std::string& name, const std::vector<std::size_t>& batch_shape, const std::string& dtype) {
  return {{"module", "keras.layers"},
          {"class_name", "InputLayer"},
          {"config", {{"batch_shape", shape_json(batch_shape)}, {"dtype", dtype}, {"sparse", false}, {"ragged", false}, {"name", name}, {"optional", false}}},
          {"registered_name", nullptr}};
}

inline nlohmann::ordered_json model_json(const saved_model& m, const std::vector<saved_layer>& layers);

/// A layer's entry in its model's "layers" (functional: with its name and inbound_nodes).
inline nlohmann::ordered_json layer_json(const saved_layer& l, const std::string& dtype, bool functional) {
  nlohmann::ordered_json j;
  if (l.class_name == "InputLayer") j = input_layer_json(l.name, l.output_shape, l.dtype.empty() ? dtype : l.dtype);
  else if (l.is_model) {
    saved_model inner;
    inner.class_name = l.class_name;
    inner.name = l.name;
    inner.trainable = l.trainable;
    inner.dtype = dtype;
    inner.input_layers = l.input_layers;
    inner.output_layers = l.output_layers;
    if (l.class_name == "Sequential") {
      inner.input_shape = l.input_shape;
      inner.input_dtype = dtype;
      inner.input_name = l.name + "_input";
    }
    j = model_json(inner, l.children);
  } else {
    nlohmann::ordered_json c = {{"name", l.name}, {"trainable", l.trainable}, {"dtype", dtype_policy(dtype)}};
    if (!l.config.empty()) {
      const auto own = nlohmann::ordered_json::parse(l.config);
      for (const auto& [k, v] : own.items()) c[k] = v;
    }
    const bool builtin = keras_layer_class(l.class_name);
    j = {{"module", builtin ? nlohmann::ordered_json("keras.layers") : nlohmann::ordered_json()},
         {"class_name", l.class_name},
         {"config", c},
         {"registered_name", builtin ? nlohmann::ordered_json() : nlohmann::ordered_json("Custom>" + l.class_name)}};
    if (!l.input_shape.empty()) j["build_config"] = {{"input_shape", shape_json(l.input_shape)}};
  }
  if (functional) {
    j["name"] = l.name;
    j["inbound_nodes"] = l.inbound_nodes.empty() ? nlohmann::ordered_json::array() : nlohmann::ordered_json::parse(l.inbound_nodes);
    // A merge layer is built for the list of its inputs' shapes (those of its first call).
    const auto& calls = j["inbound_nodes"];
    if (!calls.empty() && calls[0]["args"][0].is_array()) {
      auto shapes = nlohmann::ordered_json::array();
      for (const auto& t : calls[0]["args"][0]) shapes.push_back(t["config"]["shape"]);
      j["build_config"] = {{"input_shape", shapes}};
    }
  }
  return j;
}

inline nlohmann::ordered_json model_json(const saved_model& m, const std::vector<saved_layer>& layers) {
  const bool functional = m.class_name == "Functional";
  nlohmann::ordered_json config = {{"name", m.name}, {"trainable", m.trainable}};
  if (!functional) config["dtype"] = dtype_policy(m.dtype);
  auto list = nlohmann::ordered_json::array();
  if (!functional) list.push_back(input_layer_json(m.input_name, m.input_shape, m.input_dtype));
  for (const auto& l : layers) list.push_back(layer_json(l, m.dtype, functional));
  config["layers"] = list;
  nlohmann::ordered_json j;
  if (functional) {
    config["input_layers"] = nlohmann::ordered_json::parse(m.input_layers);
    config["output_layers"] = nlohmann::ordered_json::parse(m.output_layers);
    j = {{"module", "keras.src.models.functional"}, {"class_name", "Functional"}, {"config", config}, {"registered_name", "Functional"},
         {"build_config", {{"input_shape", nullptr}}}};
  } else {
    config["build_input_shape"] = shape_json(m.input_shape);
    j = {{"module", "keras"}, {"class_name", "Sequential"}, {"config", config}, {"registered_name", nullptr}, {"build_config", {{"input_shape", shape_json(m.input_shape)}}}};
  }
  return j;
}

CTFLOW_DECL std::string model_config_json(const saved_model& model, const std::vector<saved_layer>& layers) {
  auto j = model_json(model, layers);
  if (!model.compile_config.empty()) j["compile_config"] = nlohmann::ordered_json::parse(model.compile_config);
  return j.dump();
}

CTFLOW_DECL void load_weights_bytes(std::span<const std::uint8_t> bytes, const std::string& name, const std::vector<saved_layer>& layers,
                                    const load_options& options) {
  // A zip begins with a local header (or, empty, with its end record); anything else is HDF5's to judge.
  const bool zip = bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && ((bytes[2] == 3 && bytes[3] == 4) || (bytes[2] == 5 && bytes[3] == 6));
  if (zip) load_archive(bytes, name, layers, nullptr, options);
  else load_h5(io::hdf5::File(bytes, name), layers, options);
}

CTFLOW_DECL void load_weights_file(const std::string& path, const std::vector<saved_layer>& layers, const load_options& options) {
  const ctflow::detail::mapped_file m(path, files_what);
  load_weights_bytes(m.bytes(), path, layers, options);
}

// ---- safetensors -----------------------------------------------------------------------------

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
  std::vector<std::pair<std::string, const saved_layer::weight*>> names;
  safetensors_names(layers, "", names);
  staged_values staged;
  for (const auto& [key, w] : names) {
    if (!f.contains(key)) {
      if (options.skip_mismatch) continue;
      files_fail(path, "no weight '" + key + "'");
    }
    const auto& info = f.info(key);
    const std::vector<std::size_t> shape(info.shape.begin(), info.shape.end());
    if (shape != w->shape || info.dtype != (w->dtype == 'f' ? "F32" : "F64")) {
      if (options.skip_mismatch) continue;
      throw shape_error(std::string(files_what) + ": " + path + ": weight " + key + ": " + info.dtype + " " + format_dims(shape) + " in the file, " +
                        format_dims(w->shape) + " in the model");
    }
    f.read_into(key, staged.stage(*w));
  }
  staged.commit();
}

}  // namespace ctflow::keras::detail
