#pragma once
// The header export_header and import_header write, from a run-time description of an embedded
// network (its input, its layers with their structure and weights, a test case), whatever it was
// read from: a model's types (keras/export.hpp) or the config and weights of a file Keras wrote
// (keras/import.hpp). Its text is written by code compiled once (ctflow::keras's compiled part).

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <ctflow/detail/linkage.hpp>

namespace ctflow::keras {

/// @brief export_header's and import_header's options.
struct export_options {
  /// @brief The namespace the header declares everything in.
  std::string name_space = "net";
  /// @brief The batch of the network's Input: every extent is static in the header.
  std::size_t batch = 1;
  /// @brief The device predict runs on: "reference" (plain loops: any target) or "cpu" (SIMD,
  /// threads; its kernels take memory of their own).
  std::string device = "reference";
  /// @brief Where the weights go: empty, into the header as constexpr arrays; a path, into a C++
  /// source file of their definitions, which the program compiles once and links (the header
  /// then declares them), so that a network of many weights does not compile them in every file
  /// that includes its header.
  std::string weights_file = "";
};

namespace detail {

/// A layer of an embedded network: its embedded class (`kind`: "Dense", "Conv2D",
/// "DepthwiseConv2D", "Conv2DTranspose", "LSTM", "GRU", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D",
/// "GlobalMaxPooling2D", "Flatten", "Reshape", "Permute", "ZeroPadding2D", "Rescaling",
/// "BatchNormalization", "Activation"; int8: "Quantize", "Dequantize", "QuantizedDense",
/// "QuantizedConv2D", "QuantizedDepthwiseConv2D", "QuantizedMaxPooling2D",
/// "QuantizedAveragePooling2D", "QuantizedGlobalAveragePooling2D", "Lookup",
/// "QuantizedZeroPadding2D"; merges of two inputs or more: "Add", "Subtract", "Multiply",
/// "Average", "Maximum", "Minimum", "Concatenate"), the Keras layer's name (its arrays are named
/// after it), the activations it reads (none given: the layer before it's), what its class reads
/// of its structure, and its weights in the order the class takes them.
struct embedded_layer {
  struct weight {
    std::string name;  // Keras's: "kernel", "bias", "gamma", ...
    std::vector<std::size_t> shape;
    std::vector<double> values;
    std::string type = "";  // its C++ element type: "" the model's dtype, or "std::int8_t", "std::int32_t"
  };
  std::string kind, name;
  /// The activations it reads: 0 the network's input, k the output of the network's layer k - 1
  /// (empty: the layer before it, or the input for the first).
  std::vector<std::size_t> inputs;
  int axis = -1;  // Concatenate's, the batch axis 0
  std::size_t units = 0;  // Dense's, LSTM's and GRU's units, Conv2D's and Conv2DTranspose's filters, DepthwiseConv2D's depth multiplier
  std::size_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;  // a window
  std::string padding = "valid";  // "valid" or "same", as Keras's layers take it
  std::string activation = "linear";  // a keras::activations name
  // LSTM's and GRU's: their gates' activation and flags.
  std::string recurrent_activation = "sigmoid";
  bool return_sequences = false, go_backwards = false, reset_after = true;
  double scale = 1, offset = 0, epsilon = 1e-3;
  std::array<std::size_t, 4> pads{};  // ZeroPadding2D's top, bottom, left and right
  std::vector<std::size_t> target;    // Reshape's, without the batch axis
  std::vector<std::size_t> permutation;  // Permute's dims: the example's axes, 1-based, as Keras's
  // int8: the input's and output's zero points and the output's clamp; Quantize's and
  // Dequantize's scale is `scale`, their zero point `out_zero`.
  int in_zero = 0, out_zero = 0, lo = -128, hi = 127;
  std::vector<weight> weights;
};

/// An embedded network: the model's framework ("Keras", "ONNX"), name and class, its dtype
/// (float or double), its input's extents without the batch axis, its layers, and a test case
/// (batches of inputs, the model's outputs for them) when it has one; `what` names the writer in
/// errors and in the header. A model read from channels-first data (ONNX's [N, C, H, W]) gives
/// the [C, H, W] of its input and of its output where they are images: its test case's values are
/// in that order, the network's channels last.
struct embedded_model {
  std::string what = "ctflow::keras::export_header";
  std::string framework = "Keras", name, class_name = "Sequential", dtype = "float";
  std::vector<std::size_t> input;
  std::vector<embedded_layer> layers;
  std::vector<double> test_inputs, test_outputs;
  std::vector<std::size_t> channels_first_input, channels_first_output;
};

/// Whether activation a (keras::activations' name) is one an embedded layer applies.
CTFLOW_DECL bool embedded_activation(const std::string& a);
/// The header's text (every layer's kind and activation checked: a value_error naming the
/// layer); with o.weights_file, the weights file's text in *weights.
CTFLOW_DECL std::string embedded_header_text(const embedded_model& m, const export_options& o, std::string* weights = nullptr);
/// Writes it at path, and the weights file where o names one, each atomically.
CTFLOW_DECL void write_embedded_header(const std::string& path, const embedded_model& m, const export_options& o);

}  // namespace detail
}  // namespace ctflow::keras

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/keras/impl/embedded_header.ipp>
#endif
