#pragma once
/// @file
/// @brief keras::quantize: post-training int8 quantization as TensorFlow Lite's converter does it
/// (`converter.optimizations = [tf.lite.Optimize.DEFAULT]` with a representative dataset, int8
/// kernels): a Sequential model's weights quantized per output channel (symmetric, int8), its
/// activations per tensor (asymmetric int8, their ranges the minima and maxima the
/// representative inputs reach), biases int32, and the network run with integer kernels between
/// a Quantize of its input and a Dequantize of its output.
///
///     auto q = keras::quantize(model, representative_images);   // [n, 28, 28, 1]
///     std::vector<float> y = q.predict(images.data(), images.dims()[0]);
///     keras::export_header(q, "net_int8.hpp", {.name_space = "net"}, test_images);
///
/// The header runs as export_header's float ones do (embedded::Sequential, no heap), with the
/// int8 layers of embedded/layers/quantized.hpp; predict runs the network on the host's cpu
/// device (an int8 GEMM on AVX-512 VNNI where the machine has it, over the device's threads), 64
/// examples a layer at a time, and computes the same integers as the header's loops, bit for bit.
/// Leading Rescaling layers stay float (the input is quantized after them); a BatchNormalization
/// right after a Dense or a convolution without activation is folded into it; relu and relu6
/// become the output's clamp; other element-wise activations and Rescaling layers become a table
/// of 256 results; a softmax at the end runs on the dequantized output. A layer with no int8
/// form (an activation other than relu or relu6 fused into a Dense or convolution, a
/// BatchNormalization of its own) is a value_error naming it.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/export.hpp>

namespace ctflow::keras {

namespace detail {
/// An int8 network's kernels on the host: its weights as they read them, and their buffers.
struct int8_runner;
}  // namespace detail

/// @brief A quantized network: float input, int8 layers, float output.
struct quantized_model {
  /// @brief The network, layer by layer (keras::export_header writes it).
  detail::embedded_model network;
  /// @brief The float elements of one example's input and output.
  std::size_t input_size = 0, output_size = 0;
  /// @brief Runs the network on n examples x (row-major, channels last) and returns their
  /// outputs; into y (n * output_size floats), with no allocation once warm. One call at a time.
  std::vector<float> predict(const float* x, std::size_t n) const;
  void predict(const float* x, std::size_t n, float* y) const;

  std::shared_ptr<detail::int8_runner> runner;  // keras::quantize's, for predict
};

namespace detail {

/// An activation's range: the least and the largest value it took (0 within it).
struct value_range {
  double lo = 0, hi = 0;
  void add(const float* v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      lo = v[i] < lo ? v[i] : lo;
      hi = v[i] > hi ? v[i] : hi;
    }
  }
};

/// The int8 network of float network m, from the range of its input and of each layer's output.
CTFLOW_DECL embedded_model quantize_network(const embedded_model& m, const value_range& input, const std::vector<value_range>& outputs);
/// The host's runner of int8 network m.
CTFLOW_DECL std::shared_ptr<int8_runner> make_int8_runner(const embedded_model& m);
/// Runs r's network on n examples x into y.
CTFLOW_DECL void run_quantized(int8_runner& r, const float* x, float* y, std::size_t n);
/// The elements of one example of r's network's output.
CTFLOW_DECL std::size_t output_elements(int8_runner& r);

}  // namespace detail

inline void quantized_model::predict(const float* x, std::size_t n, float* y) const {
  if (!runner) throw value_error("ctflow::keras::quantized_model::predict: a network keras::quantize made");
  detail::run_quantized(*runner, x, y, n);
}
inline std::vector<float> quantized_model::predict(const float* x, std::size_t n) const {
  std::vector<float> y(n * output_size);
  predict(x, n, y.data());
  return y;
}

/// @brief Sequential model m quantized to int8, its activations' ranges calibrated on
/// representative_dataset (inputs of the model, [n, ...]), batch_size of them at a time.
template <class Input, class... Specs, class X>
quantized_model quantize(Sequential<Input, Specs...>& m, const X& representative_dataset, std::size_t batch_size = 32) {
  using Model = Sequential<Input, Specs...>;
  using In = typename Model::input_shape;
  static_assert(std::is_same_v<typename Model::value_type, float> && std::is_same_v<typename Model::input_value_type, float>,
                "ctflow::keras::quantize: a model of float32 weights and input");
  const detail::embedded_model network = detail::embedded_model_of(m);
  constexpr std::size_t per_example = detail::example_elements<In>();
  const Tensor<float, Shape<dyn, extent_t(per_example)>> inputs(reshape<Shape<dyn, extent_t(per_example)>>(representative_dataset));
  const std::size_t n = inputs.dims()[0];
  if (n == 0) throw value_error("ctflow::keras::quantize: the representative dataset is empty");
  if (batch_size == 0) throw value_error("ctflow::keras::quantize: the batch size must be positive");
  detail::value_range input;
  std::vector<detail::value_range> outputs(network.layers.size());
  for (std::size_t begin = 0; begin < n; begin += batch_size) {
    const std::size_t count = std::min(batch_size, n - begin);
    auto dims = In::extents;
    dims[0] = count;
    const float* x = inputs.data() + begin * per_example;
    input.add(x, count * per_example);
    m(TensorView<const float, In>(x, dims));
    // Each layer's output as the embedded network has it (Dropout, the identity, has none).
    std::size_t k = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (([&] {
         if constexpr (std::string_view(std::tuple_element_t<I, typename Model::layers_type>::class_name) != "Dropout") {
           const auto y = m.template get_layer<I>().output();
           outputs[k++].add(y.data(), y.size());
         }
       }()),
       ...);
    }(std::make_index_sequence<Model::size>{});
  }
  quantized_model q;
  q.network = detail::quantize_network(network, input, outputs);
  q.runner = detail::make_int8_runner(q.network);
  q.input_size = per_example;
  q.output_size = detail::output_elements(*q.runner);
  return q;
}

/// @brief Writes quantized network q as a header (as export_header writes a model), with the
/// test case of test_inputs ([n, ...]) and q's outputs for them when given.
template <class X = std::nullptr_t>
void export_header(const quantized_model& q, const std::string& path, const export_options& o = {}, const X& test_inputs = nullptr) {
  detail::embedded_model e = q.network;
  if constexpr (!std::is_null_pointer_v<X>) {
    const Tensor<float, Shape<dyn>> x(reshape<Shape<dyn>>(test_inputs));
    if (x.size() % q.input_size) throw shape_error("ctflow::keras::export_header: test inputs of " + std::to_string(x.size()) + " elements are not whole examples");
    const std::vector<float> y = q.predict(x.data(), x.size() / q.input_size);
    e.test_inputs.assign(x.data(), x.data() + x.size());
    e.test_outputs.assign(y.begin(), y.end());
  }
  detail::write_embedded_header(path, e, o);
}

}  // namespace ctflow::keras

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/keras/impl/quantize.ipp>
#endif
