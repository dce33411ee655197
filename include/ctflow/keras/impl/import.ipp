#pragma once
// Definitions of keras/import.hpp (ctflow::keras's compiled part; see detail/linkage.hpp): the
// config of a file Keras wrote read into an embedded network, layer by layer, with its weights
// from the file's HDF5 (Keras 3's layers/<key>/vars/<i>, or the legacy
// model_weights/<layer>/<weight>, listed by weight_names).

#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/zip.hpp>
#include <ctflow/io/hdf5.hpp>
#include <ctflow/io/safetensors.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/detail/naming.hpp>
#include <ctflow/keras/import.hpp>

namespace ctflow::keras::detail {

namespace import_detail {

using json = nlohmann::json;
inline constexpr const char* what = "ctflow::keras::import_header";

[[noreturn]] inline void fail(const std::string& file, const std::string& why) { throw io_error(std::string(what) + ": " + file + ": " + why); }

/// A Keras file opened: its config (the model's JSON) and where its weights are.
struct model_file {
  std::string name;
  json config;
  std::vector<std::uint8_t> h5_bytes;  // an archive's model.weights.h5 (empty: the file is the HDF5)
  std::span<const std::uint8_t> bytes;
  bool legacy = false;  // weights under model_weights/<layer name>/ (tf.keras's .h5)
};

inline json parse(const std::string& file, const std::string& text, const char* member) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(file, std::string(member) + " is not JSON: " + e.what());
  }
}

/// The layer's field `key` of type T, or fallback where it is absent or null.
template <class T> T field(const std::string& file, const json& layer, const char* key, T fallback) {
  const json& c = layer["config"];
  if (!c.contains(key) || c[key].is_null()) return fallback;
  try {
    return c[key].get<T>();
  } catch (const json::exception&) {
    fail(file, "layer " + layer.value("name", std::string("?")) + ": " + key + " is " + c[key].dump());
  }
}
/// A size of one or two extents (an integer n is n x n; a pair is [h, w]).
inline std::pair<std::size_t, std::size_t> pair_field(const std::string& file, const json& layer, const char* key, std::pair<std::size_t, std::size_t> fallback) {
  const json& c = layer["config"];
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (v.is_number_unsigned()) return {v.get<std::size_t>(), v.get<std::size_t>()};
  if (v.is_array() && v.size() == 2 && v[0].is_number_unsigned() && v[1].is_number_unsigned()) return {v[0].get<std::size_t>(), v[1].get<std::size_t>()};
  fail(file, "layer " + layer.value("name", std::string("?")) + ": " + key + " is " + v.dump() + ", not a size or a pair of sizes");
}

/// A layer's weights, read from the file in the order Keras keeps them.
struct weight_reader {
  const io::hdf5::File& h5;
  bool legacy;
  std::size_t file_bytes;  // the HDF5 file's, which bound what its datasets hold

  std::vector<embedded_layer::weight> read(const std::string& key, const std::string& layer, const std::vector<std::string>& names) const {
    std::vector<std::string> datasets;
    if (legacy) {
      const std::string group = "model_weights/" + layer;
      const auto listed = h5.contains(group) ? h5.attribute_strings(group, "weight_names") : std::vector<std::string>{};
      for (const auto& w : listed) datasets.push_back(group + "/" + w);
    } else {
      for (std::size_t i = 0; h5.contains("layers/" + key + "/vars/" + std::to_string(i)); ++i) datasets.push_back("layers/" + key + "/vars/" + std::to_string(i));
    }
    if (datasets.size() != names.size())
      fail(h5.name(), "layer " + layer + " has " + std::to_string(datasets.size()) + " weights in the file; its config gives " + std::to_string(names.size()));
    std::vector<embedded_layer::weight> out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!h5.is_dataset(datasets[i])) fail(h5.name(), "layer " + layer + ", weight " + names[i] + ": the file lists " + datasets[i] + " and holds none");
      const auto info = h5.dataset(datasets[i]);
      if (info.type.kind != io::hdf5::ElementType::Kind::floating) fail(h5.name(), "layer " + layer + ", weight " + names[i] + ": " + info.type.name() + " values");
      // A dataset holds at most the file's bytes, deflated at DEFLATE's largest ratio (1032 to 1).
      const std::uint64_t most = std::uint64_t(file_bytes) * 1032 / std::max<std::size_t>(info.type.size, 1);
      std::uint64_t count = info.null ? 0 : 1;
      for (auto e : info.shape) count = e == 0 ? 0 : count > most / e ? most + 1 : count * e;
      if (count > most)
        fail(h5.name(), "layer " + layer + ", weight " + names[i] + ": a dataset of shape " + format_dims(info.shape) + ", more than a file of " +
                            std::to_string(file_bytes) + " bytes holds");
      embedded_layer::weight w{names[i], std::vector<std::size_t>(info.shape.begin(), info.shape.end()), std::vector<double>(info.count())};
      h5.read(datasets[i], w.values.data());
      out.push_back(std::move(w));
    }
    return out;
  }
};

/// Checks weight w's shape against the config's: `expected`, 0 an extent the config does not
/// give.
inline void check_shape(const std::string& file, const std::string& layer, const embedded_layer::weight& w, const std::vector<std::size_t>& expected) {
  bool ok = w.shape.size() == expected.size();
  for (std::size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] == 0 || expected[i] == w.shape[i];
  if (!ok) {
    std::string e;
    for (auto x : expected) {
      if (!e.empty()) e += ',';
      e += x ? std::to_string(x) : std::string("?");
    }
    fail(file, "layer " + layer + ", weight " + w.name + ": shape " + format_dims(w.shape) + " in the file; its config gives [" + e + "]");
  }
}

inline std::string padding_of(const std::string& file, const json& layer) {
  const std::string p = field<std::string>(file, layer, "padding", "valid");
  if (p != "valid" && p != "same") fail(file, "layer " + layer.value("name", std::string("?")) + ": padding " + p + " (give same or valid)");
  return p;
}

/// The embedded layer of Keras layer `layer` (its config's JSON), its weights read by r under
/// key; false for a layer that is nothing in inference (Dropout).
inline bool layer_of(const std::string& file, const json& layer, const std::string& key, const weight_reader& r, embedded_layer& e) {
  const std::string cls = layer.value("class_name", std::string());
  const std::string name = layer["config"].value("name", key);
  e.kind = cls;
  e.name = name;
  const auto refuse = [&](const std::string& why) { fail(file, "layer " + name + " (" + cls + ") " + why); };
  const auto channels_last = [&] {
    if (field<std::string>(file, layer, "data_format", "channels_last") != "channels_last") refuse("is channels_first: the embedded layers are channels last");
  };
  const auto window = [&](bool pool) {
    const auto k = pair_field(file, layer, pool ? "pool_size" : "kernel_size", {2, 2});
    const auto s = pair_field(file, layer, "strides", pool ? k : std::pair<std::size_t, std::size_t>{1, 1});
    const auto d = pool ? std::pair<std::size_t, std::size_t>{1, 1} : pair_field(file, layer, "dilation_rate", {1, 1});
    e.kh = k.first, e.kw = k.second, e.sh = s.first, e.sw = s.second, e.dh = d.first, e.dw = d.second;
    e.padding = padding_of(file, layer);
    if (!e.kh || !e.kw || !e.sh || !e.sw || !e.dh || !e.dw) refuse("has a window, stride or dilation of 0");
  };
  const auto activation = [&] {
    const json& a = layer["config"].contains("activation") ? layer["config"]["activation"] : json("linear");
    if (!a.is_string()) refuse("has the activation " + a.dump() + ": give one of keras.activations by name");
    e.activation = a.get<std::string>();
    if (!embedded_activation(e.activation)) refuse("has the activation " + e.activation + ", which has no embedded form");
  };
  if (cls == "Dense") {
    e.units = field<std::size_t>(file, layer, "units", 0);
    activation();
    const bool bias = field<bool>(file, layer, "use_bias", true);
    e.weights = r.read(key, name, bias ? std::vector<std::string>{"kernel", "bias"} : std::vector<std::string>{"kernel"});
    check_shape(file, name, e.weights[0], {0, e.units});
    if (bias) check_shape(file, name, e.weights[1], {e.units});
  } else if (cls == "Conv2D" || cls == "DepthwiseConv2D") {
    channels_last();
    window(false);
    activation();
    if (cls == "Conv2D" && field<std::size_t>(file, layer, "groups", 1) != 1) refuse("has groups: the embedded Conv2D has one");
    e.units = cls == "Conv2D" ? field<std::size_t>(file, layer, "filters", 0) : field<std::size_t>(file, layer, "depth_multiplier", 1);
    const bool bias = field<bool>(file, layer, "use_bias", true);
    e.weights = r.read(key, name, bias ? std::vector<std::string>{"kernel", "bias"} : std::vector<std::string>{"kernel"});
    check_shape(file, name, e.weights[0], {e.kh, e.kw, 0, e.units});
    if (bias) check_shape(file, name, e.weights[1], {cls == "Conv2D" ? e.units : e.weights[0].shape[2] * e.units});
  } else if (cls == "Conv2DTranspose") {
    channels_last();
    window(false);
    activation();
    const json& c = layer["config"];
    if (c.contains("output_padding") && !c["output_padding"].is_null()) refuse("has an output_padding: the embedded layer's output is Keras's without one");
    e.units = field<std::size_t>(file, layer, "filters", 0);
    const bool bias = field<bool>(file, layer, "use_bias", true);
    e.weights = r.read(key, name, bias ? std::vector<std::string>{"kernel", "bias"} : std::vector<std::string>{"kernel"});
    check_shape(file, name, e.weights[0], {e.kh, e.kw, e.units, 0});
    if (bias) check_shape(file, name, e.weights[1], {e.units});
  } else if (cls == "LSTM" || cls == "GRU") {
    activation();
    const json& ra = layer["config"].contains("recurrent_activation") ? layer["config"]["recurrent_activation"] : json("sigmoid");
    if (!ra.is_string() || !embedded_activation(ra.get<std::string>())) refuse("has the recurrent activation " + ra.dump() + ", which has no embedded form");
    e.recurrent_activation = ra.get<std::string>();
    if (field<bool>(file, layer, "return_state", false)) refuse("returns its state: the embedded layer returns its output only");
    if (field<bool>(file, layer, "stateful", false)) refuse("is stateful: the embedded layer starts each call from a zero state");
    if (field<bool>(file, layer, "time_major", false)) refuse("is time major: the embedded layer takes [batch, timesteps, features]");
    e.units = field<std::size_t>(file, layer, "units", 0);
    if (e.units == 0) refuse("has no units");
    e.return_sequences = field<bool>(file, layer, "return_sequences", false);
    e.go_backwards = field<bool>(file, layer, "go_backwards", false);
    e.reset_after = cls == "GRU" && field<bool>(file, layer, "reset_after", true);
    const bool bias = field<bool>(file, layer, "use_bias", true);
    const std::size_t gates = (cls == "LSTM" ? 4 : 3) * e.units;
    // Keras 3's archive keeps an RNN's weights under its cell; tf.keras's .h5 lists them.
    e.weights = r.read(r.legacy ? key : key + "/cell", name,
                       bias ? std::vector<std::string>{"kernel", "recurrent_kernel", "bias"} : std::vector<std::string>{"kernel", "recurrent_kernel"});
    check_shape(file, name, e.weights[0], {0, gates});
    check_shape(file, name, e.weights[1], {e.units, gates});
    if (bias) check_shape(file, name, e.weights[2], e.reset_after ? std::vector<std::size_t>{2, gates} : std::vector<std::size_t>{gates});
  } else if (cls == "MaxPooling2D" || cls == "AveragePooling2D") {
    channels_last();
    window(true);
  } else if (cls == "GlobalAveragePooling2D" || cls == "GlobalMaxPooling2D") {
    channels_last();
    if (field<bool>(file, layer, "keepdims", false)) refuse("keeps its dimensions: the embedded layer gives [batch, channels]");
  } else if (cls == "Flatten") {
    channels_last();
  } else if (cls == "Reshape") {
    const json& t = layer["config"].contains("target_shape") ? layer["config"]["target_shape"] : json();
    if (!t.is_array() || t.empty()) refuse("has no target_shape");
    for (const auto& x : t) {
      if (!x.is_number_unsigned()) refuse("has the target_shape " + t.dump() + ": every extent must be given (no -1)");
      e.target.push_back(x.get<std::size_t>());
    }
  } else if (cls == "Permute") {
    const json& d = layer["config"].contains("dims") ? layer["config"]["dims"] : json();
    if (!d.is_array() || d.empty()) refuse("has no dims");
    std::vector<std::size_t> axes(d.size());
    std::iota(axes.begin(), axes.end(), std::size_t(1));
    for (const auto& x : d) e.permutation.push_back(x.is_number_unsigned() ? x.get<std::size_t>() : 0);
    if (!std::is_permutation(e.permutation.begin(), e.permutation.end(), axes.begin()))
      refuse("has the dims " + d.dump() + ": a permutation of the example's axes, 1 to " + std::to_string(d.size()));
  } else if (cls == "ZeroPadding2D") {
    channels_last();
    const json& p = layer["config"].contains("padding") ? layer["config"]["padding"] : json(1);
    std::vector<std::size_t> v;
    if (p.is_number_unsigned()) v = {p.get<std::size_t>(), p.get<std::size_t>(), p.get<std::size_t>(), p.get<std::size_t>()};
    else if (p.is_array() && p.size() == 2 && p[0].is_number_unsigned() && p[1].is_number_unsigned())
      v = {p[0].get<std::size_t>(), p[0].get<std::size_t>(), p[1].get<std::size_t>(), p[1].get<std::size_t>()};
    else if (p.is_array() && p.size() == 2 && p[0].is_array() && p[1].is_array() && p[0].size() == 2 && p[1].size() == 2 &&
             p[0][0].is_number_unsigned() && p[0][1].is_number_unsigned() && p[1][0].is_number_unsigned() && p[1][1].is_number_unsigned())
      v = {p[0][0].get<std::size_t>(), p[0][1].get<std::size_t>(), p[1][0].get<std::size_t>(), p[1][1].get<std::size_t>()};
    else refuse("has the padding " + p.dump());
    e.pads = {v[0], v[1], v[2], v[3]};
  } else if (cls == "Rescaling") {
    const json& c = layer["config"];
    if (c.contains("scale") && !c["scale"].is_number()) refuse("has a scale per channel: the embedded layer takes one number");
    if (c.contains("offset") && !c["offset"].is_number()) refuse("has an offset per channel: the embedded layer takes one number");
    e.scale = field<double>(file, layer, "scale", 1.0);
    e.offset = field<double>(file, layer, "offset", 0.0);
  } else if (cls == "BatchNormalization") {
    const json& axis = layer["config"].contains("axis") ? layer["config"]["axis"] : json(-1);
    if (!(axis == json(-1) || axis == json::array({-1}) || axis == json(3) || axis == json::array({3})))
      refuse("normalizes axis " + axis.dump() + ": the embedded layer normalizes the last");
    e.epsilon = field<double>(file, layer, "epsilon", 1e-3);
    const bool scale = field<bool>(file, layer, "scale", true), center = field<bool>(file, layer, "center", true);
    std::vector<std::string> names;
    if (scale) names.push_back("gamma");
    if (center) names.push_back("beta");
    names.insert(names.end(), {"moving_mean", "moving_variance"});
    auto read = r.read(key, name, names);
    const std::vector<std::size_t> shape = read.back().shape;
    for (const auto& w : read) check_shape(file, name, w, {shape.empty() ? 0 : shape[0]});
    // Without scale or center, the constant Keras applies: gamma 1, beta 0.
    const std::size_t c = read.back().values.size();
    if (!scale) read.insert(read.begin(), {"gamma", shape, std::vector<double>(c, 1.0)});
    if (!center) read.insert(read.begin() + 1, {"beta", shape, std::vector<double>(c, 0.0)});
    e.weights = std::move(read);
  } else if (cls == "Activation") {
    activation();
  } else if (cls == "ReLU") {
    const json& c = layer["config"];
    const bool capped = c.contains("max_value") && !c["max_value"].is_null();
    const bool relu6 = capped && field<double>(file, layer, "max_value", 0.0) == 6;  // MobileNet's
    if ((capped && !relu6) || field<double>(file, layer, "negative_slope", 0.0) != 0 || field<double>(file, layer, "threshold", 0.0) != 0)
      refuse("has a max_value, negative_slope or threshold: only ReLU() and ReLU(6) are imported");
    e.kind = "Activation", e.activation = relu6 ? "relu6" : "relu";
  } else if (cls == "Softmax") {
    const json& axis = layer["config"].contains("axis") ? layer["config"]["axis"] : json(-1);
    if (!(axis == json(-1) || axis == json::array({-1}))) refuse("is over axis " + axis.dump() + ": the embedded softmax is over the last");
    e.kind = "Activation", e.activation = "softmax";
  } else if (cls == "Add" || cls == "Subtract" || cls == "Multiply" || cls == "Average" || cls == "Maximum" || cls == "Minimum") {
    // A merge: the activations it reads are the model's (read_model).
  } else if (cls == "Concatenate") {
    e.axis = field<int>(file, layer, "axis", -1);
    if (e.axis == 0) refuse("joins along the batch axis: the embedded Concatenate joins another");
    // Keras 3's build_config gives the inputs' shapes: the axis and the extents off it are
    // checked here, where the header would stop its compiler.
    const json build = layer.value("build_config", json::object());
    const json shapes = build.is_object() ? build.value("input_shape", json()) : json();
    if (shapes.is_array() && !shapes.empty() && shapes[0].is_array()) {
      const std::size_t rank = shapes[0].size();
      const int axis = e.axis < 0 ? e.axis + int(rank) : e.axis;
      if (axis < 1 || axis >= int(rank))
        refuse("joins along axis " + std::to_string(e.axis) + " of inputs of rank " + std::to_string(rank) + ": an axis other than the batch (" +
               (rank == 2 ? std::string("1 or -1") : "1 to " + std::to_string(rank - 1) + ", or -1 to -" + std::to_string(rank - 1)) + ")");
      for (const json& shape : shapes) {
        bool alike = shape.is_array() && shape.size() == rank;
        for (std::size_t i = 1; alike && i < rank; ++i)
          alike = int(i) == axis || !shape[i].is_number() || !shapes[0][i].is_number() || shape[i] == shapes[0][i];
        if (!alike) refuse("joins inputs of shapes " + shapes[0].dump() + " and " + shape.dump() + ": they must agree off axis " + std::to_string(e.axis));
      }
    }
  } else if (cls == "Dropout" || cls == "SpatialDropout2D" || cls == "GaussianNoise" || cls == "GaussianDropout") {
    return false;  // the identity in inference
  } else {
    refuse("has no embedded form");
  }
  return true;
}

/// The layers a functional layer's call reads, in order, from its inbound_nodes (Keras 3's
/// keras_history, or tf.keras's [[name, node, tensor, kwargs]]).
inline std::vector<std::string> inputs_of(const json& layer) {
  std::vector<std::string> from;
  const auto walk = [&](const auto& self, const json& v) -> void {
    if (v.is_object()) {
      if (v.contains("keras_history") && v["keras_history"].is_array() && !v["keras_history"].empty() && v["keras_history"][0].is_string())
        from.push_back(v["keras_history"][0].get<std::string>());
      else
        for (const auto& [k, x] : v.items()) self(self, x);
    } else if (v.is_array()) {
      if (v.size() >= 3 && v[0].is_string() && v[1].is_number() && v[2].is_number()) from.push_back(v[0].get<std::string>());
      else
        for (const auto& x : v) self(self, x);
    }
  };
  if (layer.contains("inbound_nodes")) walk(walk, layer["inbound_nodes"]);
  return from;
}

/// The model's input shape without its batch axis, from its InputLayer (batch_shape, or tf.keras's
/// batch_input_shape) or its first layer's batch_input_shape; its dtype.
inline std::vector<std::size_t> input_shape(const std::string& file, const json& layers, std::string& dtype) {
  for (const auto& l : layers) {
    const json& c = l["config"];
    for (const char* key : {"batch_shape", "batch_input_shape"})
      if (c.contains(key) && c[key].is_array() && !c[key].empty()) {
        std::vector<std::size_t> s;
        for (std::size_t i = 1; i < c[key].size(); ++i) {
          if (!c[key][i].is_number_unsigned()) fail(file, "the model's input " + c[key].dump() + " has an extent other than the batch that is not static");
          s.push_back(c[key][i].get<std::size_t>());
        }
        if (c.contains("dtype") && c["dtype"].is_string()) dtype = c["dtype"].get<std::string>();
        return s;
      }
    break;  // only the first layer (or InputLayer) gives it
  }
  fail(file, "the config gives no input shape (an InputLayer's batch_shape, or the first layer's batch_input_shape)");
}

/// The embedded network of a model file's bytes (imported_model, its JSON's errors aside).
inline embedded_model read_model(std::span<const std::uint8_t> bytes, const std::string& name) {
  // A .keras archive (a zip: config.json and model.weights.h5) or an HDF5 file with its config.
  std::vector<std::uint8_t> h5_bytes;
  std::span<const std::uint8_t> h5_span = bytes;
  json config;
  bool legacy = false;
  std::unique_ptr<io::hdf5::File> h5;
  if (bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K') {
    const ctflow::detail::zip_archive zip(bytes, name, what);
    const auto* c = zip.find("config.json");
    const auto* w = zip.find("model.weights.h5");
    if (!c || !w) fail(name, "a .keras archive holds config.json and model.weights.h5");
    const auto text = zip.read(*c);
    config = parse(name, std::string(text.begin(), text.end()), "config.json");
    h5_bytes = zip.read(*w);
    h5_span = h5_bytes;
    h5 = std::make_unique<io::hdf5::File>(h5_span, name + ": model.weights.h5");
  } else {
    h5 = std::make_unique<io::hdf5::File>(bytes, name);
    const auto text = h5->has_attribute("", "model_config") ? h5->attribute_strings("", "model_config") : std::vector<std::string>{};
    if (text.empty()) fail(name, "an HDF5 file of weights alone (no model_config): the layers are read from a model's config (model.save)");
    config = parse(name, text[0], "model_config");
    legacy = true;
  }
  if (!config.is_object() || !config.contains("config") || !config["config"].is_object() || !config["config"].contains("layers") ||
      !config["config"]["layers"].is_array())
    fail(name, "the config is not a Keras model's (no list of layers)");
  const std::string cls = config.value("class_name", std::string());
  const json& layers = config["config"]["layers"];
  for (const auto& l : layers)
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string() || !l.contains("config") || !l["config"].is_object())
      fail(name, "the config has a layer that is not {class_name, config}");
  if (cls != "Sequential" && cls != "Functional" && cls != "Model") fail(name, "a model of class " + cls + ": give a Sequential or functional model");

  embedded_model m;
  m.what = what;
  m.name = config["config"].value("name", std::string("model"));
  m.class_name = cls;
  std::string dtype = "float32";
  m.input = input_shape(name, layers, dtype);
  if (dtype != "float32") fail(name, "the model's input is " + dtype + ": the embedded networks import float32 models");

  // Keras 3's weight keys: each layer's class in snake case, numbered (layer_keys).
  std::vector<std::string> classes;
  for (const auto& l : layers) classes.push_back(l["class_name"].get<std::string>());
  const auto keys = layer_keys(classes, [](const std::string& c) -> const std::string& { return c; });
  const weight_reader reader{*h5, legacy, h5_span.size()};
  // The activation each layer's output is (0 the input; k the output of the network's layer
  // k - 1): a functional layer reads those of the layers its call names, a Sequential's the one
  // before it; a layer that is nothing in inference (Dropout) is its input's.
  std::map<std::string, std::size_t> activation_of;
  std::size_t previous = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& l = layers[i];
    const std::string layer_name = l["config"].value("name", keys[i]);
    const std::string layer_class = l["class_name"].get<std::string>();
    std::vector<std::size_t> from{previous};
    if (cls != "Sequential") {
      if (layer_class == "InputLayer") {
        if (!activation_of.empty()) fail(name, "layer " + layer_name + ": a second input: the importer takes models of one input");
        activation_of[layer_name] = 0;
        continue;
      }
      from.clear();
      for (const auto& f : inputs_of(l)) {
        const auto it = activation_of.find(f);
        if (it == activation_of.end()) fail(name, "layer " + layer_name + " (" + layer_class + ") reads " + f + ", which is not a layer before it");
        from.push_back(it->second);
      }
      if (from.empty()) fail(name, "layer " + layer_name + " (" + layer_class + ") reads no layer");
    }
    if (layer_class == "InputLayer") continue;
    if (layer_class == "Sequential" || layer_class == "Functional" || layer_class == "Model")
      fail(name, "layer " + layer_name + " is a model of its own: nested models are not imported");
    embedded_layer e;
    if (!layer_of(name, l, keys[i], reader, e)) {
      previous = activation_of[layer_name] = from[0];
      continue;
    }
    e.inputs = from;
    m.layers.push_back(std::move(e));
    previous = activation_of[layer_name] = m.layers.size();
  }
  if (cls != "Sequential") {
    // One output, the last layer's: the network's output is its last layer's.
    const json& outputs = config["config"].contains("output_layers") ? config["config"]["output_layers"] : json();
    std::vector<std::string> names;
    if (outputs.is_array() && outputs.size() == 3 && outputs[0].is_string()) names.push_back(outputs[0].get<std::string>());
    else if (outputs.is_array())
      for (const auto& o : outputs)
        if (o.is_array() && !o.empty() && o[0].is_string()) names.push_back(o[0].get<std::string>());
    if (names.size() != 1) fail(name, "the model has " + std::to_string(names.size()) + " outputs: the importer takes models of one");
    const auto it = activation_of.find(names[0]);
    if (it == activation_of.end() || it->second != m.layers.size() || m.layers.empty())
      fail(name, "the model's output " + names[0] + " is not its last layer's: the network's output is its last layer's");
  }
  return m;
}

}  // namespace import_detail

CTFLOW_DECL embedded_model imported_model(std::span<const std::uint8_t> bytes, const std::string& name) {
  // ONNX's ModelProto begins with its ir_version (field 1, a varint: 0x08); a .keras archive with
  // "PK", an HDF5 file with its signature.
  if (!bytes.empty() && bytes[0] == 0x08) return onnx_model(bytes, name);
  try {
    return import_detail::read_model(bytes, name);
  } catch (const nlohmann::json::exception& e) {
    import_detail::fail(name, std::string("the config is not the one Keras writes: ") + e.what());
  }
}

CTFLOW_DECL embedded_model archived_model(const std::string& path, const std::function<void(const std::string&)>& save) {
  const std::string archive = path + ".export" + std::to_string(::getpid()) + ".keras";
  struct removed {
    const std::string& p;
    ~removed() { std::remove(p.c_str()); }
  } guard{archive};
  save(archive);
  const ctflow::detail::mapped_file f(archive, "ctflow::keras::export_header");
  try {
    embedded_model m = imported_model(f.bytes(), "the model");
    m.what = "ctflow::keras::export_header";
    return m;
  } catch (const io_error& e) {
    // The importer's words for what the model's layers have, as export_header's.
    const std::string prefix = std::string(import_detail::what) + ": the model: ";
    const std::string why = e.what();
    throw value_error("ctflow::keras::export_header: " + (why.starts_with(prefix) ? why.substr(prefix.size()) : why));
  }
}

}  // namespace ctflow::keras::detail

namespace ctflow::keras {

CTFLOW_DECL void import_header(const std::string& model_path, const std::string& header_path, const export_options& o, const std::string& test_case) {
  const ctflow::detail::mapped_file f(model_path, detail::import_detail::what);
  detail::embedded_model m = detail::imported_model(f.bytes(), model_path);
  if (!test_case.empty()) {
    const io::safetensors::File t(test_case);
    for (const char* key : {"x", "y"}) {
      const auto& info = t.info(key);
      if (info.dtype != "F32") detail::import_detail::fail(test_case, std::string(key) + " is " + info.dtype + ", not F32");
      std::size_t count = 1;
      for (auto e : info.shape) count *= std::size_t(e);
      std::vector<float> values(count);
      t.read_into(key, values.data());
      (key[0] == 'x' ? m.test_inputs : m.test_outputs).assign(values.begin(), values.end());
    }
  }
  detail::write_embedded_header(header_path, m, o);
}

}  // namespace ctflow::keras
