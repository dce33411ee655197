#pragma once
/// @file
/// @brief Keras's weight files, both ways: Keras 3's `.weights.h5` (`layers/<key>/vars/<i>`, the
/// key the layer's class in snake case, numbered within its model), the legacy tf.keras `.h5`
/// (read: `layer_names` and each layer's `weight_names`), the `.keras` archive (read: its
/// config's layers are checked against the network before its weights load) and safetensors.
/// A mismatch is an error naming the layer, the weight and both shapes, unless skip_mismatch.
///
/// Models call these through their save_weights / load_weights; the files are read and written
/// from the run-time description of a model's layers, by code compiled once.

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/keras/detail/weight_files.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layer_info.hpp>

namespace ctflow::keras {

namespace detail {

/// The weight files' view of layers described at run time (weights of dtype T).
template <class T> std::vector<saved_layer> saved_layers(const std::vector<layer_info<T>>& layers) {
  std::vector<saved_layer> out;
  for (const auto& l : layers) {
    saved_layer s;
    s.class_name = l.class_name;
    s.name = *l.name;
    s.input_shape = l.input_shape;
    s.is_model = l.is_model;
    s.trainable = *l.trainable;
    if (l.config) s.config = *l.config;
    s.inbound_nodes = l.inbound_nodes;
    s.input_layers = l.input_layers;
    s.output_layers = l.output_layers;
    s.dtype = l.dtype;
    s.output_shape = l.output_shape;
    for (const auto& w : l.weights) s.weights.push_back({w.name, w.shape, static_cast<void*>(w.values.data()), sizeof(T) == 4 ? 'f' : 'd'});
    s.children = saved_layers(l.children);
    if (!l.is_model) {
      const auto keys = layer_keys(s.children);
      for (std::size_t i = 0; i < keys.size(); ++i) s.children[i].key = keys[i];
    }
    if (l.cell) {
      saved_layer cell;
      cell.class_name = l.cell_class;
      cell.name = l.cell_name;
      cell.key = "cell";
      cell.weights = std::move(s.weights);
      s.weights.clear();
      s.children.insert(s.children.begin(), std::move(cell));
    }
    out.push_back(std::move(s));
  }
  return out;
}

/// A model's layers as the weight files read and write them (`saved`): their weights where they
/// are when the host reads device D's memory, else copies on the host, taken here and copied back
/// by `store()` (after a load: nothing changes on the device unless the whole load succeeded).
template <class T, class D> class host_layers {
 public:
  explicit host_layers(std::vector<layer_info<T>> layers) {
    if constexpr (!host_device_v<D>) stage(layers);
    saved = saved_layers(layers);
  }
  host_layers(const host_layers&) = delete;
  host_layers& operator=(const host_layers&) = delete;
  std::vector<saved_layer> saved;
  /// Copies the host's values to the device (nothing to do where the host reads it).
  void store() const {
    for (std::size_t i = 0; i < on_device_.size(); ++i)
      ctflow::detail::copy_from_host<D>(on_device_[i].data(), on_host_[i].data(), on_host_[i].size() * sizeof(T));
  }

 private:
  void stage(std::vector<layer_info<T>>& layers) {
    for (auto& l : layers) {
      for (auto& w : l.weights) {
        on_device_.push_back(w.values);
        on_host_.emplace_back(w.values.size());
        ctflow::detail::copy_to_host<D>(on_host_.back().data(), w.values.data(), w.values.size() * sizeof(T));
        w.values = on_host_.back();
      }
      stage(l.children);
    }
  }
  std::vector<std::span<T>> on_device_;
  std::vector<std::vector<T>> on_host_;  // (moving a vector keeps its elements where they are)
};
template <class Model> using model_layers = host_layers<typename Model::value_type, typename Model::device_type>;

}  // namespace detail

/// @brief Saves a model's weights: `.weights.h5` (Keras 3's layout) or `.safetensors`, by the
/// file's extension (Keras 3 accepts only `.weights.h5`).
template <class Model> void save_weights(Model& model, const std::string& path) {
  const detail::model_layers<Model> layers(model.layers());
  if (path.ends_with(".weights.h5")) detail::save_weights_h5(path, model.name, layers.saved);
  else if (path.ends_with(".safetensors")) detail::save_weights_safetensors(path, layers.saved);
  else throw value_error("ctflow::keras::save_weights: the file name must end in .weights.h5 or .safetensors, got " + path);
}

/// @brief Loads a model's weights from a `.weights.h5`, legacy `.h5`, `.keras` or `.safetensors`
/// file. Every shape is checked before any weight changes.
template <class Model> void load_weights(Model& model, const std::string& path, const load_options& options = {}) {
  const detail::model_layers<Model> layers(model.layers());
  if (path.ends_with(".safetensors")) detail::load_weights_safetensors(path, layers.saved, options);
  else detail::load_weights_file(path, layers.saved, options);
  layers.store();
}

/// @brief Loads a PyTorch network's weights: its state_dict saved as safetensors
/// (`safetensors.torch.save_file(net.state_dict(), path)`), with PyTorch's names and layouts.
/// `modules` names the PyTorch module of each of the model's layers with weights, in the model's
/// order (nested models' and custom layers' sub-layers included); a SeparableConv2D takes its
/// depthwise and pointwise modules as "dw+pw". The weights go through ctflow::nn's layout
/// conversions (OIHW filters to HWIO, Linear's [out, in] to a kernel [in, out], a Linear after a
/// Flatten of channels-first activations reordered to a channels-last flattening, LSTM's two
/// biases summed, GRU's gates reordered). Every shape is checked before any weight changes.
template <class Model>
void load_pytorch_weights(Model& model, const std::string& path, const std::vector<std::string>& modules, const load_options& options = {}) {
  const detail::model_layers<Model> layers(model.layers());
  detail::load_weights_pytorch(path, layers.saved, modules, options);
  layers.store();
}

}  // namespace ctflow::keras
