#pragma once
/// @file
/// @brief keras::export_header: a Sequential model written as a C++ header that compiles it into
/// a program for inference, its weights `constexpr` arrays (64-byte aligned, in the layout the
/// kernels read) and its network an embedded::Sequential type. A program that includes only the
/// header and ctflow's core headers runs the model with no heap allocation, no exceptions, no
/// RTTI, no threads and no file system (embedded/network.hpp), on a microcontroller too:
///
///     keras::export_header(model, "net.hpp", {.name_space = "fashion_mnist"});
///     // in the embedded program:
///     #include "net.hpp"
///     fashion_mnist::predict(image, logits);    // fashion_mnist::model::arena_bytes of static memory
///
/// Given test inputs, the header also holds them and the model's outputs for them (`test_count`,
/// `test_inputs`, `test_outputs`), for the program to check itself against on its target.
///
/// Dropout goes (it is the identity in inference); an activation that is not element-wise
/// (softmax) becomes a layer of its own; a layer with no embedded form is a compile error naming
/// it.

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/keras/sequential.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras {

/// @brief export_header's options.
struct export_options {
  /// @brief The namespace the header declares everything in.
  std::string name_space = "net";
  /// @brief The batch of the network's Input: every extent is static in the header.
  std::size_t batch = 1;
  /// @brief The device predict runs on: "reference" (plain loops: any target) or "cpu" (SIMD,
  /// threads; its kernels take memory of their own).
  std::string device = "reference";
};

namespace detail {

/// What export_header writes: the weight arrays and the network's layer types.
class header_writer {
 public:
  explicit header_writer(std::string type_name) : type_(std::move(type_name)) {}

  /// Weight w of layer `layer` as the array weights::<layer>_<name>; returns its name there.
  template <class W> std::string weight(const std::string& layer, const char* name, const W& w) {
    const std::string id = identifier(layer + "_" + name);
    std::string shape;
    for (auto e : w.dims()) shape += (shape.empty() ? "" : ", ") + std::to_string(e);
    weights_ += "/// " + layer + "/" + name + " [" + shape + "]\n";
    array(id, w.data(), w.size(), weights_);
    return "weights::" + id;
  }
  void layer(std::string type) { layers_.push_back(std::move(type)); }
  const std::vector<std::string>& layers() const { return layers_; }
  const std::string& weights() const { return weights_; }
  const std::string& type_name() const { return type_; }

  /// `alignas(64) inline constexpr <type> id[n] = {...};` into out.
  template <class T> void array(const std::string& id, const T* p, std::size_t n, std::string& out) const {
    out += "alignas(64) inline constexpr " + type_ + " " + id + "[" + std::to_string(n) + "] = {";
    for (std::size_t i = 0; i < n; ++i) {
      out += i % 8 == 0 ? "\n    " : " ";
      out += literal(double(p[i]));
      out += ',';
    }
    out += "\n};\n";
  }

  /// A C++ literal of the array type of value v: exact (9 digits for float, 17 for double).
  std::string literal(double v) const {
    const bool is_float = type_ == "float";
    if (std::isnan(v)) return "std::numeric_limits<" + type_ + ">::quiet_NaN()";
    if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + type_ + ">::infinity()";
    char text[40];
    std::snprintf(text, sizeof text, is_float ? "%.9g" : "%.17g", v);
    std::string s = text;
    if (s.find_first_of(".e") == std::string::npos) s += '.';
    return is_float ? s + "f" : s;
  }

  /// A C++ identifier from a Keras name ("conv2d_1/kernel" -> conv2d_1_kernel).
  static std::string identifier(std::string s) {
    for (char& c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "w_" + s;
    return s;
  }

 private:
  std::string type_, weights_;
  std::vector<std::string> layers_;
};

inline bool same_text(std::string_view a, std::string_view b) { return a == b; }

/// The embedded activation of A, and whether it is one to apply as a layer of its own.
template <auto A> std::string activation_text() { return std::string("ctflow::keras::activations::") + std::remove_cvref_t<decltype(A)>::name; }
template <auto A> constexpr bool normalizing() {
  using N = std::remove_cvref_t<decltype(A)>;
  return std::is_same_v<N, activations::softmax_t> || std::is_same_v<N, activations::log_softmax_t>;
}
inline std::string size_text(std::size_t v) { return std::to_string(v); }
inline std::string padding_text(const nn::padding& p) {
  if (p.type == nn::padding::kind::same) return "ctflow::nn::SAME";
  if (p.type == nn::padding::kind::valid) return "ctflow::nn::VALID";
  return "ctflow::nn::explicit_padding(" + size_text(p.top) + ", " + size_text(p.bottom) + ", " + size_text(p.left) + ", " + size_text(p.right) + ")";
}
inline std::string window_text(layers::size2 k, layers::size2 s, layers::size2 d, const nn::padding& p) {
  return "ctflow::embedded::window{.kh = " + size_text(k.h) + ", .kw = " + size_text(k.w) + ", .sh = " + size_text(s.h) + ", .sw = " + size_text(s.w) +
         ", .dh = " + size_text(d.h) + ", .dw = " + size_text(d.w) + ", .padding = " + padding_text(p) + "}";
}
inline std::string double_text(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

/// The class name of built layer L, as a compile-time string.
template <class L> constexpr auto class_string() { return ctflow::detail::fixed_string_of<[] { return L::class_name; }>(); }

/// Writes built layer l (named `name`) as embedded layers into w.
template <class L> void export_layer(header_writer& w, const std::string& name, const L& l) {
  constexpr std::string_view cls = L::class_name;
  if constexpr (cls == "Dense" || cls == "Conv2D" || cls == "DepthwiseConv2D") {
    using S = typename L::spec;
    constexpr auto act = S::activation;
    const std::string kernel = w.weight(name, "kernel", l.kernel);
    std::string bias;
    if constexpr (S::has_bias) bias = ", " + w.weight(name, "bias", l.bias);
    const std::string a = normalizing<act>() ? std::string("ctflow::keras::activations::linear") : activation_text<act>();
    constexpr std::size_t last = std::size_t(L::output_shape::rank - 1);
    if constexpr (cls == "Dense") {
      w.layer("ctflow::embedded::Dense<" + size_text(L::output_shape::extents[last]) + ", " + a + ", " + kernel + bias + ">");
    } else if constexpr (cls == "Conv2D") {
      w.layer("ctflow::embedded::Conv2D<" + size_text(L::output_shape::extents[last]) + ", " + window_text(S::kernel_size, S::stride, S::dilation, S::padding) +
              ", " + a + ", " + kernel + bias + ">");
    } else {
      w.layer("ctflow::embedded::DepthwiseConv2D<" + size_text(S::multiplier) + ", " + window_text(S::kernel_size, S::stride, S::dilation, S::padding) + ", " +
              a + ", " + kernel + bias + ">");
    }
    if constexpr (normalizing<act>()) w.layer("ctflow::embedded::Activation<" + activation_text<act>() + ">");
  } else if constexpr (cls == "MaxPooling2D" || cls == "AveragePooling2D") {
    using S = typename L::spec;
    w.layer(std::string("ctflow::embedded::") + L::class_name + "<" + window_text(S::pool_size, S::stride, layers::size2{1, 1}, S::padding) + ">");
  } else if constexpr (cls == "GlobalAveragePooling2D" || cls == "GlobalMaxPooling2D" || cls == "Flatten") {
    w.layer(std::string("ctflow::embedded::") + L::class_name);
  } else if constexpr (cls == "Reshape") {
    std::string target;
    for (int i = 1; i < L::output_shape::rank; ++i) target += (i > 1 ? ", " : "") + size_text(L::output_shape::extents[std::size_t(i)]);
    w.layer("ctflow::embedded::Reshape<ctflow::Shape<" + target + ">>");
  } else if constexpr (cls == "ZeroPadding2D") {
    w.layer("ctflow::embedded::ZeroPadding2D<" + size_text(L::padding.top) + ", " + size_text(L::padding.bottom) + ", " + size_text(L::padding.left) + ", " +
            size_text(L::padding.right) + ">");
  } else if constexpr (cls == "Rescaling") {
    w.layer("ctflow::embedded::Rescaling<" + double_text(l.scale) + ", " + double_text(l.offset) + ">");
  } else if constexpr (cls == "BatchNormalization") {
    const std::string gamma = w.weight(name, "gamma", l.gamma), beta = w.weight(name, "beta", l.beta);
    const std::string mean = w.weight(name, "moving_mean", l.moving_mean), variance = w.weight(name, "moving_variance", l.moving_variance);
    w.layer("ctflow::embedded::BatchNormalization<" + double_text(l.epsilon) + ", " + gamma + ", " + beta + ", " + mean + ", " + variance + ">");
  } else if constexpr (cls == "Activation") {
    w.layer("ctflow::embedded::Activation<" + activation_text<L::spec::activation>() + ">");
  } else if constexpr (cls == "Softmax") {
    static_assert(L::spec::axis == -1 || L::spec::axis == L::output_shape::rank - 1,
                  "ctflow::keras::export_header: a Softmax layer exports over the last axis only");
    w.layer("ctflow::embedded::Activation<ctflow::keras::activations::softmax>");
  } else if constexpr (cls == "ReLU") {
    if (!(std::isinf(l.f.max_value) && l.f.max_value > 0 && l.f.negative_slope == 0 && l.f.threshold == 0))
      throw value_error("ctflow::keras::export_header: layer " + name + " (ReLU) has a max_value, negative_slope or threshold: only ReLU() exports");
    w.layer("ctflow::embedded::Activation<ctflow::keras::activations::relu>");
  } else if constexpr (cls == "Dropout") {
    // The identity in inference.
  } else {
    CTFLOW_STATIC_CHECK(sizeof(L) == 0, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::export_header: "), class_string<L>(),
                                                                ctflow::detail::fixed_string(" has no embedded form")));
  }
}

/// The header of device d's backend, which the exported header includes (the program, not
/// ctflow's device-independent headers, names a backend).
inline std::string backend_header(const std::string& d) { return "ctflow/backend/" + d + "/" + d + ".hpp"; }

/// The C++ name of dtype T in a header.
template <class T> constexpr const char* cpp_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "ctflow::keras::export_header: a model of float32 or float64 weights");
  return std::is_same_v<T, float> ? "float" : "double";
}

}  // namespace detail

/// @brief Writes Sequential model m as a C++ header at path (atomically): its weights, its
/// network type (`<name_space>::model`, an embedded::Sequential), `<name_space>::device` and
/// `<name_space>::predict(x, y)`. With test_inputs (inputs of the model, [n, ...]), also
/// `test_count`, `test_inputs` and `test_outputs`: the model's outputs for them, computed here.
template <class Input, class... Specs, class X = std::nullptr_t>
void export_header(Sequential<Input, Specs...>& m, const std::string& path, const export_options& o = {}, const X& test_inputs = nullptr) {
  using Model = Sequential<Input, Specs...>;
  using T = typename Model::value_type;
  using In = typename Model::input_shape;
  static_assert(std::is_same_v<typename Model::input_value_type, T>, "ctflow::keras::export_header: the model's input must be of its weights' dtype");
  if (o.device != "reference" && o.device != "cpu")
    throw value_error("ctflow::keras::export_header: device " + o.device + ": give \"reference\" or \"cpu\"");
  if (o.batch == 0) throw value_error("ctflow::keras::export_header: the batch must be positive");
  for (int i = 1; i < In::rank; ++i)
    if (In::extents[std::size_t(i)] == dyn) throw shape_error("ctflow::keras::export_header: every extent of the model's input but the batch must be static");
  if (In::extents[0] != dyn && In::extents[0] != o.batch)
    throw shape_error("ctflow::keras::export_header: the model's batch is " + std::to_string(In::extents[0]) + "; the options give " + std::to_string(o.batch));

  detail::header_writer w(detail::cpp_type<T>());
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (detail::export_layer(w, m.template get_layer<I>().name, m.template get_layer<I>().layer), ...);
  }(std::make_index_sequence<Model::size>{});

  std::string input_shape = std::to_string(o.batch);
  for (int i = 1; i < In::rank; ++i) input_shape += ", " + std::to_string(In::extents[std::size_t(i)]);
  constexpr std::size_t per_example = [] {
    std::size_t n = 1;
    for (int i = 1; i < In::rank; ++i) n *= In::extents[std::size_t(i)] == dyn ? 0 : In::extents[std::size_t(i)];
    return n;
  }();
  const std::string ns = detail::header_writer::identifier(o.name_space);
  std::string h = "// " + ns + ": the Keras model \"" + m.name + "\" (Sequential, " + std::to_string(Model::count_params()) +
                  " parameters) for inference, written by ctflow::keras::export_header.\n"
                  "#pragma once\n\n#include <cstddef>\n#include <limits>\n\n#include <ctflow/embedded.hpp>\n#include <" +
                  detail::backend_header(o.device) + ">\n\nnamespace " + ns + " {\n\nnamespace weights {\n" + w.weights() + "}  // namespace weights\n\n";
  h += "/// The network: its input [" + input_shape + "], its layers.\nusing model = ctflow::embedded::Sequential<\n    ctflow::embedded::Input<" +
       w.type_name() + ", ctflow::Shape<" + input_shape + ">>";
  for (const auto& l : w.layers()) h += ",\n    " + l;
  h += ">;\n/// The device predict runs on.\nusing device = ctflow::" + o.device + ";\n\n";
  h += "/// Runs the network on x (model::input_shape, row-major) into y (model::output_shape), in\n"
       "/// model::arena_bytes of static memory.\ninline void predict(const " + w.type_name() + "* x, " + w.type_name() +
       "* y) { model::predict<device>(x, y); }\n";

  if constexpr (!std::is_null_pointer_v<X>) {
    const Tensor<T, Shape<dyn, extent_t(per_example)>> inputs(reshape<Shape<dyn, extent_t(per_example)>>(test_inputs));
    const std::size_t n = inputs.dims()[0];
    if (n == 0 || n % o.batch) throw shape_error("ctflow::keras::export_header: give test inputs in whole batches of " + std::to_string(o.batch));
    auto dims = In::extents;
    dims[0] = n;
    const TensorView<const T, In> x(inputs.data(), dims);
    const auto y = m(x);
    h += "\n/// The test case: test_count batches of inputs, and the Keras model's outputs for them (on\n/// the CPU that wrote this header).\n";
    h += "inline constexpr std::size_t test_count = " + std::to_string(n / o.batch) + ";\n";
    w.array("test_inputs", inputs.data(), inputs.size(), h);
    w.array("test_outputs", y.data(), y.size(), h);
  }
  h += "\n}  // namespace " + ns + "\n";

  ctflow::detail::atomic_output out(path, ctflow::detail::compression::none, "ctflow::keras::export_header");
  out.write(h.data(), h.size());
  out.commit();
}

}  // namespace ctflow::keras
