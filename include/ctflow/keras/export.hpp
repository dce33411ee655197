#pragma once
/// @file
/// @brief keras::export_header: a Sequential or functional model written as a C++ header that compiles it into
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
#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/functional.hpp>
#include <ctflow/keras/import.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/keras/sequential.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::keras {

namespace detail {

/// Weight w of a layer, named as Keras names it, with its values.
template <class W> embedded_layer::weight exported_weight(const char* name, const W& w) {
  return {name, std::vector<std::size_t>(w.dims().begin(), w.dims().end()), std::vector<double>(w.data(), w.data() + w.size())};
}
template <auto A> std::string activation_name() { return std::remove_cvref_t<decltype(A)>::name; }
inline void set_window(embedded_layer& e, layers::size2 k, layers::size2 s, layers::size2 d, const nn::padding& p) {
  e.kh = k.h, e.kw = k.w, e.sh = s.h, e.sw = s.w, e.dh = d.h, e.dw = d.w;
  e.padding = p.type == nn::padding::kind::same ? "same" : "valid";  // Keras's layers take no explicit pads
}

/// The class name of built layer L, as a compile-time string.
template <class L> constexpr auto class_string() { return ctflow::detail::fixed_string_of<[] { return L::class_name; }>(); }

/// Whether built layer L exports as layers of its own (a custom layer of sub-layers, as the
/// applications' residual blocks: `export_embedded(m, name, export_layer)`).
template <class L> concept exports_embedded = requires(const L& l, embedded_model& m) {
  l.export_embedded(m, std::string(), [](const std::string&, const auto&) {});
};

/// Whether built layer L has an embedded form (export_layer's classes, and custom layers that
/// export their own).
template <class L> constexpr bool has_embedded_form() {
  if constexpr (exports_embedded<L>) return true;
  constexpr std::string_view c = L::class_name;
  for (std::string_view k : {"Dense", "Conv2D", "DepthwiseConv2D", "Conv2DTranspose", "LSTM", "GRU", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
                             "Flatten", "Reshape", "Permute", "ZeroPadding2D", "Rescaling", "BatchNormalization", "Activation", "Softmax", "ReLU", "Dropout"})
    if (c == k) return true;
  return false;
}
/// The index of the first layer of tuple Layers with no embedded form (its size if none).
template <class Layers> constexpr std::size_t first_without_embedded_form() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t first = sizeof...(I);
    ((first == sizeof...(I) && !has_embedded_form<std::tuple_element_t<I, Layers>>() ? first = I : first), ...);
    return first;
  }(std::make_index_sequence<std::tuple_size_v<Layers>>{});
}

/// Built layer l (named `name`) as an embedded layer into m (none for Dropout, the identity in
/// inference).
template <class L> void export_layer(embedded_model& m, const std::string& name, const L& l) {
  constexpr std::string_view cls = L::class_name;
  embedded_layer e;
  e.kind = L::class_name;
  e.name = name;
  if constexpr (exports_embedded<L>) {
    l.export_embedded(m, name, [&](const std::string& n, const auto& sub) { export_layer(m, n, sub); });
    return;
  } else if constexpr (cls == "Dense" || cls == "Conv2D" || cls == "DepthwiseConv2D" || cls == "Conv2DTranspose") {
    using S = typename L::spec;
    e.activation = activation_name<S::activation>();
    if constexpr (cls == "DepthwiseConv2D") e.units = S::multiplier;
    else e.units = std::size_t(L::output_shape::extents[std::size_t(L::output_shape::rank - 1)]);
    if constexpr (cls != "Dense") set_window(e, S::kernel_size, S::stride, S::dilation, S::padding);
    e.weights.push_back(exported_weight("kernel", l.kernel));
    if constexpr (S::has_bias) e.weights.push_back(exported_weight("bias", l.bias));
  } else if constexpr (cls == "LSTM" || cls == "GRU") {
    using S = typename L::spec;
    e.units = L::units;
    e.activation = activation_name<S::activation>();
    e.recurrent_activation = activation_name<S::recurrent_activation>();
    e.return_sequences = S::sequences, e.go_backwards = S::backwards;
    if constexpr (cls == "GRU") e.reset_after = S::after;
    e.weights = {exported_weight("kernel", l.kernel), exported_weight("recurrent_kernel", l.recurrent_kernel)};
    if constexpr (S::has_bias) e.weights.push_back(exported_weight("bias", l.bias));
  } else if constexpr (cls == "MaxPooling2D" || cls == "AveragePooling2D") {
    using S = typename L::spec;
    set_window(e, S::pool_size, S::stride, layers::size2{1, 1}, S::padding);
  } else if constexpr (cls == "GlobalAveragePooling2D" || cls == "GlobalMaxPooling2D" || cls == "Flatten") {
  } else if constexpr (cls == "Reshape") {
    for (int i = 1; i < L::output_shape::rank; ++i) e.target.push_back(L::output_shape::extents[std::size_t(i)]);
  } else if constexpr (cls == "Permute") {
    e.permutation.assign(L::dims.begin(), L::dims.end());
  } else if constexpr (cls == "ZeroPadding2D") {
    e.pads = {L::padding.top, L::padding.bottom, L::padding.left, L::padding.right};
  } else if constexpr (cls == "Rescaling") {
    e.scale = l.scale, e.offset = l.offset;
  } else if constexpr (cls == "BatchNormalization") {
    e.epsilon = l.epsilon;
    e.weights = {exported_weight("gamma", l.gamma), exported_weight("beta", l.beta), exported_weight("moving_mean", l.moving_mean),
                 exported_weight("moving_variance", l.moving_variance)};
  } else if constexpr (cls == "Activation") {
    e.activation = activation_name<L::spec::activation>();
  } else if constexpr (cls == "Softmax") {
    static_assert(L::spec::axis == -1 || L::spec::axis == L::output_shape::rank - 1,
                  "ctflow::keras::export_header: a Softmax layer exports over the last axis only");
    e.kind = "Activation", e.activation = "softmax";
  } else if constexpr (cls == "ReLU") {
    const bool relu6 = l.f.max_value == 6;  // MobileNet's
    if (!((relu6 || (std::isinf(l.f.max_value) && l.f.max_value > 0)) && l.f.negative_slope == 0 && l.f.threshold == 0))
      throw value_error("ctflow::keras::export_header: layer " + name + " (ReLU) has a max_value, negative_slope or threshold: only ReLU() and ReLU(6) export");
    e.kind = "Activation", e.activation = relu6 ? "relu6" : "relu";
  } else {  // Dropout (has_embedded_form names the rest)
    return;
  }
  m.layers.push_back(std::move(e));
}

/// The elements of one example of input shape In (its extents but the batch).
template <class In> constexpr std::size_t example_elements() {
  std::size_t n = 1;
  for (int i = 1; i < In::rank; ++i) n *= In::extents[std::size_t(i)] == dyn ? 0 : In::extents[std::size_t(i)];
  return n;
}

/// Sequential model m as an embedded network: its name, dtype, input and layers.
template <class Input, class... Specs> embedded_model embedded_model_of(Sequential<Input, Specs...>& m) {
  using Model = Sequential<Input, Specs...>;
  using T = typename Model::value_type;
  using In = typename Model::input_shape;
  embedded_model e;
  e.name = m.name;
  e.dtype = std::is_same_v<T, float> ? "float" : "double";
  for (int i = 1; i < In::rank; ++i) e.input.push_back(In::extents[std::size_t(i)]);
  constexpr std::size_t missing = first_without_embedded_form<typename Model::layers_type>();
  if constexpr (missing < Model::size) {
    CTFLOW_STATIC_CHECK(missing == Model::size,
                        ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::export_header: "),
                                               class_string<std::tuple_element_t<missing, typename Model::layers_type>>(),
                                               ctflow::detail::fixed_string(" has no embedded form")));
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (detail::export_layer(e, m.template get_layer<I>().name, m.template get_layer<I>().layer), ...);
    }(std::make_index_sequence<Model::size>{});
  }
  return e;
}

/// Writes model m (of dtype T and input shape In), read as embedded network e, at path with
/// the test case of test_inputs (none: nullptr).
template <class T, class In, class M, class X> void write_exported(M& m, embedded_model e, const std::string& path, const export_options& o, const X& test_inputs) {
  if constexpr (!std::is_null_pointer_v<X>) {
    constexpr std::size_t per_example = example_elements<In>();
    const Tensor<T, Shape<dyn, extent_t(per_example)>> inputs(reshape<Shape<dyn, extent_t(per_example)>>(test_inputs));
    if (inputs.dims()[0] % o.batch) throw shape_error("ctflow::keras::export_header: give test inputs in whole batches of " + std::to_string(o.batch));
    auto dims = In::extents;
    dims[0] = inputs.dims()[0];
    const auto y = m(TensorView<const T, In>(inputs.data(), dims));
    e.test_inputs.assign(inputs.data(), inputs.data() + inputs.size());
    e.test_outputs.assign(y.data(), y.data() + y.size());
  }
  write_embedded_header(path, e, o);
}
/// The checks of an exported model's dtype T, input (of dtype I, shape In) and batch.
template <class T, class I, class In> void check_exported(const export_options& o) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "ctflow::keras::export_header: a model of float32 or float64 weights");
  static_assert(std::is_same_v<I, T>, "ctflow::keras::export_header: the model's input must be of its weights' dtype");
  if (o.batch == 0) throw value_error("ctflow::keras::export_header: the batch must be positive");
  if (In::extents[0] != dyn && In::extents[0] != o.batch)
    throw shape_error("ctflow::keras::export_header: the model's batch is " + std::to_string(In::extents[0]) + "; the options give " + std::to_string(o.batch));
  for (int i = 1; i < In::rank; ++i)
    if (In::extents[std::size_t(i)] == dyn) throw shape_error("ctflow::keras::export_header: every extent of the model's input but the batch must be static");
}

}  // namespace detail

/// @brief Writes Sequential model m as a C++ header at path (atomically): its weights, its
/// network type (`<name_space>::model`, an embedded::Sequential), `<name_space>::device` and
/// `<name_space>::predict(x, y)`. With test_inputs (inputs of the model, [n, ...]), also
/// `test_count`, `test_inputs` and `test_outputs`: the model's outputs for them, computed here.
template <class Input, class... Specs, class X = std::nullptr_t>
void export_header(Sequential<Input, Specs...>& m, const std::string& path, const export_options& o = {}, const X& test_inputs = nullptr) {
  using M = Sequential<Input, Specs...>;
  detail::check_exported<typename M::value_type, typename M::input_value_type, typename M::input_shape>(o);
  detail::write_exported<typename M::value_type, typename M::input_shape>(m, detail::embedded_model_of(m), path, o, test_inputs);
}

/// @brief Writes functional model m (one input, one output: its last layer's) as a C++ header at
/// path the same way, its network an embedded::Model of nodes (each layer and the activations it
/// reads: residual sums, concatenations). Its layers are read from the `.keras` archive m.save
/// writes, as ctflow-import reads one; a layer with no embedded form is a value_error naming it.
template <class Inputs, class Outputs, class X = std::nullptr_t>
void export_header(Model<Inputs, Outputs>& m, const std::string& path, const export_options& o = {}, const X& test_inputs = nullptr) {
  using M = Model<Inputs, Outputs>;
  static_assert(M::input_count == 1 && M::output_count == 1, "ctflow::keras::export_header: a functional model of one input and one output");
  using In = typename M::input_type::shape_type;
  detail::check_exported<typename M::value_type, std::remove_const_t<typename M::input_type::value_type>, In>(o);
  detail::write_exported<typename M::value_type, In>(m, detail::archived_model(path, [&](const std::string& archive) { m.save(archive); }), path, o,
                                                     test_inputs);
}

}  // namespace ctflow::keras
