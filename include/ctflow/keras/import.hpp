#pragma once
/// @file
/// @brief keras::import_header (the program `ctflow-import`): a model that Keras wrote, a `.keras`
/// archive or a legacy `.h5` file (its config and its weights), or an ONNX model (opsets 13 to
/// 21), written as the header keras::export_header writes of a model built in C++ — its weights
/// `constexpr` arrays, its network an embedded::Sequential type — with no ctflow model type behind
/// it: the layers are read from the file's config or graph. The file's bytes tell its kind.
///
///     keras::import_header("model.keras", "net.hpp", {.name_space = "net"}, "case.safetensors");
///     keras::import_header("model.onnx", "net.hpp");
///
/// Keras: a Sequential model, or a functional one whose layers form a chain; the layers of
/// export_header's list (Dense, Conv2D, DepthwiseConv2D, the 2-D poolings, Flatten, Reshape,
/// ZeroPadding2D, Rescaling, BatchNormalization, Activation, ReLU, Softmax, Dropout, InputLayer),
/// channels last. ONNX: a graph whose nodes form a chain from one input, [N, C, H, W] or
/// [N, features], of Conv (group 1 or depthwise), Gemm, MatMul (and the Add of its bias),
/// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, BatchNormalization, Flatten, Reshape
/// (to [N, features]), Pad (of H and W, with zeros), Relu, Sigmoid, Tanh, Elu, Selu, Softplus,
/// Softsign, Clip (to [0, 6] or [0, inf)), Softmax and LogSoftmax (over the channels), x * c,
/// x / c, x + c, x - c (c a scalar), Dropout, Identity and Constant; the network is channels last
/// (kernels transposed, a channels-first Flatten's order carried into the next Dense). A layer,
/// node or setting with no embedded form is an io_error naming it and what it has; so is a damaged
/// file. The test case, when given, is a safetensors file of `x` (the inputs, [n, ...], ONNX's
/// channels first) and `y` (the source model's outputs for them): the header holds them, for a
/// program to check itself against (tests/embedded/run_exported.cpp).

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include <ctflow/detail/linkage.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>

namespace ctflow::keras {

/// @brief Writes the model Keras saved at model_path as a header at header_path (atomically),
/// with the test case of the safetensors file test_case (`x`, `y`) when it is given.
CTFLOW_DECL void import_header(const std::string& model_path, const std::string& header_path, const export_options& o = {},
                               const std::string& test_case = "");

namespace detail {
/// The embedded network of a model file's bytes (a .keras archive or a legacy .h5), `name`
/// naming it in errors.
CTFLOW_DECL embedded_model imported_model(std::span<const std::uint8_t> bytes, const std::string& name);
/// The embedded network of a model that save writes as a .keras archive (at a temporary path
/// beside path, removed after): its layers read as the importer reads them, its errors
/// export_header's (a value_error naming the layer and what it has).
CTFLOW_DECL embedded_model archived_model(const std::string& path, const std::function<void(const std::string&)>& save);
/// The embedded network of an ONNX model's bytes (imported_model's, for a file that begins as
/// ONNX's ModelProto does: its ir_version).
CTFLOW_DECL embedded_model onnx_model(std::span<const std::uint8_t> bytes, const std::string& name);
}  // namespace detail

}  // namespace ctflow::keras

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/keras/impl/import.ipp>
#include <ctflow/keras/impl/onnx.ipp>
#endif
