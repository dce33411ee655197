#pragma once
// Keras's weight files as their readers and writers see a model: a run-time description of its
// layers and weights (saved_layer), with no layer template behind it, so that the files' code
// compiles once (ctflow::keras's compiled part) and their fuzz targets build without the layers.
// Every load reads and checks all of a file's weights before the first one changes.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ctflow/detail/linkage.hpp>
#include <ctflow/keras/detail/naming.hpp>

namespace ctflow::keras {

/// @brief How load_weights treats a weight whose shape differs from the file's: an error
/// (Keras's default) or skipped (skip_mismatch=True).
struct load_options {
  bool skip_mismatch = false;
};

namespace detail {

/// A layer (or a nested model) as the weight files see it: its class and name, its weights in
/// Keras's order, and its children: an RNN's cell (key "cell"), a custom layer's sub-layers (keys
/// as a model's: their classes in snake case, numbered), a nested model's layers.
struct saved_layer {
  struct weight {
    std::string name;
    std::vector<std::size_t> shape;
    void* data = nullptr;
    char dtype = 'f';  // 'f' float32, 'd' float64, 'l' int64 (an optimizer's iteration count)
    std::size_t count() const {
      std::size_t n = 1;
      for (auto e : shape) n *= e;
      return n;
    }
  };
  std::string class_name, name, key;
  std::vector<std::size_t> input_shape;  // a one-input layer's, dyn extents as ctflow::dyn
  std::vector<weight> weights;
  std::vector<saved_layer> children;
  bool is_model = false;  // children are a model's layers (layers/<key>/...)
  // For a .keras archive's config.json: the layer's trainable flag, its get_config (JSON object;
  // empty: none), an InputLayer's output shape and dtype, in a functional model the inputs of its
  // calls (inbound_nodes), a nested functional model's input_layers and output_layers (JSON).
  bool trainable = true;
  std::string config, inbound_nodes, input_layers, output_layers, dtype;
  std::vector<std::size_t> output_shape;
};

/// A model as a .keras archive holds it beside its layers: its class ("Sequential" or
/// "Functional"), name, flag and dtype policy, a Sequential's input (batch shape, dtype, name), a
/// functional model's input_layers and output_layers (JSON), and when compiled its compile_config
/// (JSON) and its optimizer's name and variables (optimizer/vars/<i>, in Keras's order).
struct saved_model {
  std::string class_name, name;
  bool trainable = true;
  std::string dtype = "float32";
  std::vector<std::size_t> input_shape;
  std::string input_dtype = "float32", input_name;
  std::string input_layers, output_layers;
  std::string compile_config, optimizer_name;
  std::vector<saved_layer::weight> optimizer_variables;
};

/// The config.json Keras 3 writes for the model (dyn extents as null).
CTFLOW_DECL std::string model_config_json(const saved_model& model, const std::vector<saved_layer>& layers);
/// Writes a .keras archive (metadata.json, config.json, model.weights.h5 with the optimizer's
/// variables), atomically.
CTFLOW_DECL void save_model_archive(const std::string& path, const saved_model& model, const std::vector<saved_layer>& layers);
/// The compile_config of the .keras archive at path (JSON; empty when it holds none).
CTFLOW_DECL std::string archive_compile_config(const std::string& path);
/// Loads a .keras archive into the layers (its config checked against them first) and, when
/// optimizer_variables is not null, into those (optimizer/vars/<i>, their count and shapes
/// checked): all of them or nothing.
CTFLOW_DECL void load_model_archive(const std::string& path, const std::vector<saved_layer>& layers, const std::vector<saved_layer::weight>* optimizer_variables,
                                    const load_options& options);

/// The keys of Keras 3's weight files for these layers (naming.hpp's layer_keys).
inline std::vector<std::string> layer_keys(const std::vector<saved_layer>& layers) {
  return layer_keys(layers, [](const saved_layer& l) -> const std::string& { return l.class_name; });
}

/// Writes Keras 3's `.weights.h5` of a model named `model_name` (atomically).
CTFLOW_DECL void save_weights_h5(const std::string& path, const std::string& model_name, const std::vector<saved_layer>& layers);
/// Reads weights from a Keras 3 `.weights.h5` file, a legacy `.h5` file (tf.keras's
/// save_weights, or a whole model saved by model.save("x.h5")) or a `.keras` archive, chosen by
/// what the file holds.
CTFLOW_DECL void load_weights_file(const std::string& path, const std::vector<saved_layer>& layers, const load_options& options);
/// The same for a file's bytes held in memory (a `.keras` archive when they are a zip), `name`
/// naming it in errors. Either every weight changes or none: a failed load leaves them as they were.
CTFLOW_DECL void load_weights_bytes(std::span<const std::uint8_t> bytes, const std::string& name, const std::vector<saved_layer>& layers,
                                    const load_options& options);
/// Writes the weights as a safetensors file, one tensor per weight named by its path of keys
/// ("dense_1/kernel").
CTFLOW_DECL void save_weights_safetensors(const std::string& path, const std::vector<saved_layer>& layers);
/// Reads weights from a safetensors file written by save_weights_safetensors.
CTFLOW_DECL void load_weights_safetensors(const std::string& path, const std::vector<saved_layer>& layers, const load_options& options);

/// Reads a PyTorch state_dict saved as safetensors into the layers, modules[i] naming the PyTorch
/// module of the i-th layer with weights.
CTFLOW_DECL void load_weights_pytorch(const std::string& path, const std::vector<saved_layer>& layers, const std::vector<std::string>& modules,
                                      const load_options& options);


}  // namespace detail
}  // namespace ctflow::keras

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/keras/impl/pytorch.ipp>
#include <ctflow/keras/impl/saving.ipp>
#include <ctflow/keras/impl/saving_h5.ipp>
#endif
