#pragma once
// Definitions of keras/detail/embedded_header.hpp (ctflow::keras's compiled part; see
// detail/linkage.hpp): the text of an exported network's header.

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>

namespace ctflow::keras::detail {

namespace embedded_text {

/// A C++ identifier from a Keras name ("conv2d_1/kernel" -> conv2d_1_kernel).
inline std::string identifier(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "w_" + s;
  return s;
}

/// A literal of type `type` (float or double) with value v: exact (9 significant digits give a
/// float back, 17 a double).
inline std::string literal(double v, const std::string& type) {
  if (std::isnan(v)) return "std::numeric_limits<" + type + ">::quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + type + ">::infinity()";
  const bool is_float = type == "float";
  char text[40];
  std::snprintf(text, sizeof text, is_float ? "%.9g" : "%.17g", v);
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += '.';
  return is_float ? s + "f" : s;
}
/// A double as a template argument (Rescaling's scale, an epsilon).
inline std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

/// `alignas(64) inline constexpr <type> id[n] = {...};` (an integer type's values as integers),
/// or with `linkage` "extern const", the definition a weights file holds.
inline void array(std::string& out, const std::string& type, const std::string& id, const std::vector<double>& values,
                  const std::string& linkage = "inline constexpr") {
  const bool integer = type != "float" && type != "double";
  out += "alignas(64) " + linkage + " " + type + " " + id + "[" + std::to_string(values.size()) + "] = {";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += i % (integer ? 16 : 8) == 0 ? "\n    " : " ";
    out += integer ? std::to_string(static_cast<long long>(values[i])) : literal(values[i], type);
    out += ',';
  }
  out += "\n};\n";
}

inline std::string n(std::size_t v) { return std::to_string(v); }
inline std::string window(const embedded_layer& l) {
  return "ctflow::embedded::window{.kh = " + n(l.kh) + ", .kw = " + n(l.kw) + ", .sh = " + n(l.sh) + ", .sw = " + n(l.sw) + ", .dh = " + n(l.dh) +
         ", .dw = " + n(l.dw) + ", .padding = ctflow::nn::" + (l.padding == "same" ? "SAME" : "VALID") + "}";
}

inline bool normalizing(const std::string& a) { return a == "softmax" || a == "log_softmax"; }
inline std::string activation(const std::string& a) { return "ctflow::keras::activations::" + a; }
/// The header of device d's backend, which the exported header includes (the program, not
/// ctflow's device-independent headers, names a backend).
inline std::string backend_header(const std::string& d) { return "ctflow/backend/" + d + "/" + d + ".hpp"; }

}  // namespace embedded_text

// keras::activations' names: every one an embedded layer applies (softmax and log_softmax as
// layers of their own).
CTFLOW_DECL bool embedded_activation(const std::string& a) {
  for (const char* k : {"linear", "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "elu", "selu", "softplus", "softsign", "silu", "swish",
                        "gelu", "exponential", "leaky_relu", "hard_sigmoid", "mish"})
    if (a == k) return true;
  return false;
}

CTFLOW_DECL std::string embedded_header_text(const embedded_model& m, const export_options& o, std::string* weights_text) {
  using namespace embedded_text;
  const auto refuse = [&](const embedded_layer& l, const std::string& why) {
    throw value_error(m.what + ": layer " + l.name + " (" + l.kind + "): " + why);
  };
  if (o.device != "reference" && o.device != "cpu") throw value_error(m.what + ": device " + o.device + ": give \"reference\" or \"cpu\"");
  if (o.batch == 0) throw value_error(m.what + ": the batch must be positive");
  if (m.dtype != "float" && m.dtype != "double") throw value_error(m.what + ": a model of float32 or float64 weights, not " + m.dtype);
  const std::string& type = m.dtype;

  // The header's nodes: each layer's spec and the header's activations it reads (0: the input;
  // k: node k's output). A softmax split from its layer is a node of its own, so that the
  // header's activation of model layer i's output is out[i + 1].
  std::vector<std::pair<std::string, std::vector<std::size_t>>> nodes;
  std::vector<std::size_t> out{0};
  // The weights' arrays: their definitions in the header, or their declarations there and their
  // definitions (`definitions`) in the weights file.
  const bool separate = !o.weights_file.empty();
  std::string weights, definitions;
  std::size_t params = 0;
  const embedded_layer* current = nullptr;
  bool split_node = false;  // the node of a split softmax, which reads its layer's
  const auto layer = [&](const std::string& text) {
    std::vector<std::size_t> from;
    if (split_node) from = {nodes.size()};
    else if (current->inputs.empty()) from = {out.back()};
    else
      for (std::size_t i : current->inputs) {
        if (i >= out.size()) throw value_error(m.what + ": layer " + current->name + " (" + current->kind + ") reads activation " + n(i) + ", not one before it");
        from.push_back(out[i]);
      }
    nodes.emplace_back(text, std::move(from));
  };
  for (const auto& l : m.layers) {
    current = &l;
    const bool merge = l.kind == "Add" || l.kind == "Subtract" || l.kind == "Multiply" || l.kind == "Average" || l.kind == "Maximum" || l.kind == "Minimum" ||
                       l.kind == "Concatenate";
    if (merge != (l.inputs.size() > 1)) refuse(l, merge ? "reads one activation: a merge reads two or more" : "reads " + n(l.inputs.size()) + " activations: it takes one");
    // Its arrays, named after the layer and the weight, listed in the order the class takes them.
    std::string args;
    for (const auto& w : l.weights) {
      const std::string id = identifier(l.name + "_" + w.name);
      std::string shape;
      std::size_t count = 1;
      for (auto e : w.shape) {
        shape += (shape.empty() ? "" : ", ") + n(e);
        count *= e;
      }
      if (count != w.values.size()) refuse(l, "weight " + w.name + " has " + n(w.values.size()) + " values for a shape [" + shape + "]");
      const std::string element = w.type.empty() ? type : w.type;
      weights += "/// " + l.name + "/" + w.name + " [" + shape + "]\n";
      if (separate) {
        weights += "alignas(64) extern const " + element + " " + id + "[" + n(count) + "];\n";
        array(definitions, element, id, w.values, "extern const");
      } else {
        array(weights, element, id, w.values);
      }
      args += ", weights::" + id;
      params += count;
    }
    if (!embedded_activation(l.activation)) refuse(l, "activation " + l.activation + " has no embedded form");
    const bool recurrent = l.kind == "LSTM" || l.kind == "GRU";
    if (recurrent && (normalizing(l.activation) || normalizing(l.recurrent_activation) || !embedded_activation(l.recurrent_activation)))
      refuse(l, "activations " + l.activation + " and " + l.recurrent_activation + ": a recurrent layer's must be element-wise");
    if (l.padding != "valid" && l.padding != "same") refuse(l, "padding " + l.padding + ": give valid or same");
    // A softmax activation is a layer of its own: it needs the rows' maxima and sums.
    const std::string a = activation(normalizing(l.activation) ? "linear" : l.activation);
    const bool split = normalizing(l.activation) && l.kind != "Activation" && !recurrent;
    if (l.kind == "Dense") layer("ctflow::embedded::Dense<" + n(l.units) + ", " + a + args + ">");
    else if (l.kind == "Conv2D" || l.kind == "DepthwiseConv2D" || l.kind == "Conv2DTranspose") layer("ctflow::embedded::" + l.kind + "<" + n(l.units) + ", " + window(l) + ", " + a + args + ">");
    else if (recurrent) {
      const auto flag = [](bool b) { return b ? "true" : "false"; };
      layer("ctflow::embedded::" + l.kind + "<" + n(l.units) + ", " + activation(l.activation) + ", " + activation(l.recurrent_activation) +
            ", ctflow::embedded::recurrence{.return_sequences = " + flag(l.return_sequences) + ", .go_backwards = " + flag(l.go_backwards) +
            (l.kind == "GRU" ? std::string(", .reset_after = ") + flag(l.reset_after) : std::string()) + "}" + args + ">");
    } else if (l.kind == "MaxPooling2D" || l.kind == "AveragePooling2D") layer("ctflow::embedded::" + l.kind + "<" + window(l) + ">");
    else if (l.kind == "GlobalAveragePooling2D" || l.kind == "GlobalMaxPooling2D" || l.kind == "Flatten") layer("ctflow::embedded::" + l.kind);
    else if (l.kind == "Reshape") {
      std::string target;
      for (auto e : l.target) target += (target.empty() ? "" : ", ") + n(e);
      layer("ctflow::embedded::Reshape<ctflow::Shape<" + target + ">>");
    } else if (l.kind == "Permute") {
      std::string dims;
      for (auto e : l.permutation) dims += (dims.empty() ? "" : ", ") + n(e);
      layer("ctflow::embedded::Permute<" + dims + ">");
    } else if (l.kind == "ZeroPadding2D") layer("ctflow::embedded::ZeroPadding2D<" + n(l.pads[0]) + ", " + n(l.pads[1]) + ", " + n(l.pads[2]) + ", " + n(l.pads[3]) + ">");
    else if (l.kind == "Rescaling") layer("ctflow::embedded::Rescaling<" + number(l.scale) + ", " + number(l.offset) + ">");
    else if (l.kind == "BatchNormalization") layer("ctflow::embedded::BatchNormalization<" + number(l.epsilon) + args + ">");
    else if (l.kind == "Activation") layer("ctflow::embedded::Activation<" + activation(l.activation) + ">");
    else if (l.kind == "Quantize" || l.kind == "Dequantize") layer("ctflow::embedded::" + l.kind + "<" + number(l.scale) + ", " + std::to_string(l.out_zero) + ">");
    else if (l.kind == "QuantizedDense" || l.kind == "QuantizedConv2D" || l.kind == "QuantizedDepthwiseConv2D") {
      const std::string q = std::to_string(l.in_zero) + ", " + std::to_string(l.out_zero) + ", " + std::to_string(l.lo) + ", " + std::to_string(l.hi);
      if (l.kind == "QuantizedDense") layer("ctflow::embedded::QuantizedDense<" + n(l.units) + ", " + q + args + ">");
      else layer("ctflow::embedded::QuantizedConv2D<" + std::string(l.kind == "QuantizedConv2D" ? "false" : "true") + ", " + n(l.units) + ", " + window(l) + ", " + q + args + ">");
    } else if (l.kind == "QuantizedMaxPooling2D" || l.kind == "QuantizedAveragePooling2D")
      layer("ctflow::embedded::QuantizedPooling2D<" + std::string(l.kind == "QuantizedMaxPooling2D" ? "true" : "false") + ", " + window(l) + ">");
    else if (l.kind == "QuantizedGlobalAveragePooling2D") layer("ctflow::embedded::QuantizedGlobalAveragePooling2D");
    else if (l.kind == "Lookup") layer("ctflow::embedded::Lookup<" + args.substr(2) + ">");
    else if (l.kind == "QuantizedZeroPadding2D")
      layer("ctflow::embedded::QuantizedZeroPadding2D<" + n(l.pads[0]) + ", " + n(l.pads[1]) + ", " + n(l.pads[2]) + ", " + n(l.pads[3]) + ", " + std::to_string(l.out_zero) + ">");
    else if (l.kind == "Concatenate") layer("ctflow::embedded::Concatenate<" + std::to_string(l.axis) + ">");
    else if (merge) layer("ctflow::embedded::" + l.kind);
    else refuse(l, "has no embedded form");
    if (split) {
      split_node = true;
      layer("ctflow::embedded::Activation<" + activation(l.activation) + ">");
      split_node = false;
    }
    out.push_back(nodes.size());
  }
  // A chain is a Sequential; any other graph a Model of nodes.
  bool chain = true;
  for (std::size_t k = 0; k < nodes.size(); ++k) chain = chain && nodes[k].second == std::vector<std::size_t>{k};
  std::string layers;
  for (const auto& [spec, from] : nodes) {
    layers += ",\n    ";
    if (chain) {
      layers += spec;
      continue;
    }
    layers += "ctflow::embedded::Node<" + spec;
    for (std::size_t f : from) layers += ", " + n(f);
    layers += ">";
  }

  std::string input = n(o.batch);
  std::size_t per_example = 1;
  for (auto e : m.input) {
    input += ", " + n(e);
    per_example *= e;
  }
  const std::string ns = identifier(o.name_space);
  std::string h = "// " + ns + ": the " + m.framework + " model \"" + m.name + "\" (" + m.class_name + ", " + n(params) +
                  " parameters) for inference, written by " + m.what + ".\n#pragma once\n\n#include <cstddef>\n#include <cstdint>\n#include <limits>\n\n"
                  "#include <ctflow/embedded.hpp>\n#include <" + backend_header(o.device) + ">\n\nnamespace " + ns + " {\n\n" +
                  (separate ? "// Defined in " + std::filesystem::path(o.weights_file).filename().string() + ", which the program compiles once.\n" : "") +
                  "namespace weights {\n" + weights + "}  // namespace weights\n\n";
  if (separate && weights_text)
    *weights_text = "// " + ns + "::weights: the weights of the " + m.framework + " model \"" + m.name + "\" (" + n(params) +
                    " parameters), which its header declares; written by " + m.what +
                    ". Compile it once into the program.\n#include <cstdint>\n#include <limits>\n\nnamespace " + ns + "::weights {\n\n" + definitions +
                    "\n}  // namespace " + ns + "::weights\n";
  h += "/// The network: its input [" + input + "], its layers" + (chain ? "" : " (each a node: its layer and the activations it reads, 0 the input, k node k's output)") +
       ".\nusing model = ctflow::embedded::" + (chain ? "Sequential" : "Model") + "<\n    ctflow::embedded::Input<" + type +
       ", ctflow::Shape<" + input + ">>" + layers + ">;\n/// The device predict runs on.\nusing device = ctflow::" + o.device + ";\n\n";
  h += "/// Runs the network on x (model::input_shape, row-major) into y (model::output_shape), in\n/// model::arena_bytes of static memory.\n"
       "inline void predict(const " + type + "* x, " + type + "* y) { model::predict<device>(x, y); }\n";
  if (!m.test_inputs.empty()) {
    const std::size_t batch_values = o.batch * per_example;
    if (m.test_inputs.size() % batch_values)
      throw shape_error(m.what + ": give test inputs in whole batches of " + n(o.batch));
    const std::size_t count = m.test_inputs.size() / batch_values;
    // Channels-first values ([n, C, H, W]) in the network's order, channels last.
    const auto channels_last = [&](const std::vector<double>& v, const std::vector<std::size_t>& chw) {
      if (chw.empty()) return v;
      const std::size_t c_n = chw[0], hw = chw[1] * chw[2], image = c_n * hw;
      if (v.size() % image) throw shape_error(m.what + ": test values of " + n(v.size()) + " elements are not whole [" + n(c_n) + ", " + n(chw[1]) + ", " + n(chw[2]) + "] images");
      std::vector<double> out(v.size());
      for (std::size_t b = 0; b < v.size(); b += image)
        for (std::size_t c = 0; c < c_n; ++c)
          for (std::size_t p = 0; p < hw; ++p) out[b + p * c_n + c] = v[b + c * hw + p];
      return out;
    };
    h += "\n/// The test case: test_count batches of inputs, and the " + m.framework + " model's outputs for them.\ninline constexpr std::size_t test_count = " + n(count) + ";\n";
    array(h, type, "test_inputs", channels_last(m.test_inputs, m.channels_first_input));
    array(h, type, "test_outputs", channels_last(m.test_outputs, m.channels_first_output));
    h += "static_assert(sizeof(test_outputs) / sizeof(test_outputs[0]) == test_count * model::output_shape::static_size,\n"
         "              \"" + ns + ": the test case's outputs are not the network's\");\n";
  }
  h += "\n}  // namespace " + ns + "\n";
  return h;
}

CTFLOW_DECL void write_embedded_header(const std::string& path, const embedded_model& m, const export_options& o) {
  std::string weights;
  const std::string h = embedded_header_text(m, o, &weights);
  if (!o.weights_file.empty()) {
    ctflow::detail::atomic_output w(o.weights_file, ctflow::detail::compression::none, m.what);
    w.write(weights.data(), weights.size());
    w.commit();
  }
  ctflow::detail::atomic_output out(path, ctflow::detail::compression::none, m.what);
  out.write(h.data(), h.size());
  out.commit();
}

}  // namespace ctflow::keras::detail
