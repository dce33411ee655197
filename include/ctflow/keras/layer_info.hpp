#pragma once
/// @file
/// @brief A model's layers seen at run time, whatever the model's kind: each layer's name, class,
/// output shape and weights (with their gradients), a nested model's layers under it. Summaries,
/// weight files and a model's variables work on this description, so that they compile once per
/// dtype rather than once per network.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ctflow/keras/detail/naming.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/summary.hpp>
#include <ctflow/keras/variables.hpp>

namespace ctflow::keras {

/// @brief One layer of a model at run time: its name, class, output shape and weights (with the
/// gradients of the last backward pass, where it computed them); a nested model's layers.
template <class T> struct layer_info {
  std::string* name = nullptr;
  bool* trainable = nullptr;
  const char* class_name = "";
  std::vector<std::size_t> input_shape, output_shape;  // dyn extents as ctflow::dyn; input_shape: a one-input layer's
  struct weight {
    std::string name;
    std::vector<std::size_t> shape;
    std::span<T> values;
    bool trainable = true;                 // the variable's own flag (false: BatchNormalization's moving statistics)
    const T* const* gradient = nullptr;    // where the last backward pass leaves its gradient (null there: none)
    const regularizers::Regularizer* regularizer = nullptr;
  };
  std::vector<weight> weights;
  /// @brief Whether the weights are a cell's (an RNN's: Keras files keep them under "cell"), and
  /// the cell's class and name.
  bool cell = false;
  const char* cell_class = "";
  std::string cell_name;
  /// @brief A nested model's (or a custom layer's) layers, and whether this layer is a model.
  std::vector<layer_info> children;
  bool is_model = false;
  /// @brief For model.save: its Keras config (get_config's JSON object; null: a layer that writes
  /// none), an InputLayer's dtype, and in a functional model the inputs of each of its calls
  /// (Keras's inbound_nodes) and, for a nested model, its input_layers and output_layers (JSON).
  const std::string* config = nullptr;
  const char* dtype = "";
  /// @brief A random layer's count of draws (Dropout's seed generator state; null: none), which
  /// train::Checkpoint keeps beside the weights (not the weight files: Keras's hold none).
  std::int64_t* random_state = nullptr;
  std::string inbound_nodes, input_layers, output_layers;
  /// @brief Its parameters, its children's included.
  std::size_t param_count() const {
    std::size_t n = 0;
    for (const auto& w : weights) n += w.values.size();
    for (const auto& c : children) n += c.param_count();
    return n;
  }
};

namespace detail {

/// A weight's run-time description.
template <class T, class V> typename layer_info<T>::weight describe_weight(V& v, const T* const* gradient, const regularizers::Regularizer& r) {
  typename layer_info<T>::weight d;
  d.name = v.name();
  d.shape.assign(v.dims().begin(), v.dims().end());
  d.values = std::span<T>(v.data(), v.size());
  d.trainable = v.trainable();
  d.gradient = gradient;
  d.regularizer = &r;
  return d;
}

/// A layer's description without its weights: its name and flag, class and shapes.
template <class L> layer_info<typename L::value_type> describe_header(std::string* name, bool* trainable) {
  layer_info<typename L::value_type> info;
  info.name = name;
  info.trainable = trainable;
  info.class_name = L::class_name;
  const auto& e = output_shape_t<L>::extents;
  info.output_shape.assign(e.begin(), e.end());
  if constexpr (requires { requires ShapeType<typename L::input_shape>; }) {
    const auto& i = L::input_shape::extents;
    info.input_shape.assign(i.begin(), i.end());
  }
  if constexpr (requires { L::cell_class_name; }) {
    info.cell = true;
    info.cell_class = L::cell_class_name;
    info.cell_name = snake_case(L::cell_class_name);
  }
  return info;
}

/// The run-time description of built layer `layer` named *name (its output shape, its weights in
/// Keras's order, a custom layer's sub-layers as children), `gradients` the slots of its weights'
/// gradients (gradients[i]: where the last backward pass left weight i's, null when it left none).
template <class L> layer_info<typename L::value_type> describe_layer(L& layer, std::string* name, bool* trainable, const typename L::value_type* const* gradients) {
  using T = typename L::value_type;
  auto info = describe_header<L>(name, trainable);
  if constexpr (requires { layer.draws; }) info.random_state = &layer.draws;
  std::vector<layer_info<T>*> open{&info};  // the layer whose weights come next, innermost last
  walk_layer(
      layer, [&]<std::size_t I>(index_t<I>, auto& w, const regularizers::Regularizer& r) { open.back()->weights.push_back(describe_weight<T>(w, gradients + I, r)); },
      [&](auto& s, auto descend) {
        using S = typename std::remove_cvref_t<decltype(s)>::layer_type;
        open.back()->children.push_back(describe_header<S>(&s.name, &s.trainable));
        open.push_back(&open.back()->children.back());
        descend();
        open.pop_back();
      });
  return info;
}

/// The description of a layer instance, with the gradients of its last backward pass.
template <class L> auto describe(layer_instance<L>& in) {
  auto info = describe_layer(in.layer, &in.name, &in.trainable, in.weight_gradients().data());
  info.config = &in.config;
  return info;
}

/// Calls f(layer, weight, trains) for every weight of layers in Keras's order, `layer` the path of
/// the weight's layer (a nested model's under its name: "inner/dense"); `trains` holds when the
/// model, every enclosing layer and the weight itself train.
template <class T, class F> void each_weight(const std::vector<layer_info<T>>& layers, bool trainable, const std::string& prefix, F&& f) {
  for (const auto& l : layers) {
    const bool layer_trains = trainable && *l.trainable;
    for (const auto& w : l.weights) f(prefix + *l.name, w, layer_trains && w.trainable);
    each_weight(l.children, layer_trains, prefix + *l.name + "/", f);
  }
}

/// Gives the layers `to` (a model's copy on another device, of the same layers) the names,
/// trainable flags and random layers' states of `from`, a nested model's and a custom layer's
/// layers included.
template <class T> void copy_layer_states(const std::vector<layer_info<T>>& from, const std::vector<layer_info<T>>& to) {
  for (std::size_t i = 0; i < from.size() && i < to.size(); ++i) {
    *to[i].name = *from[i].name;
    *to[i].trainable = *from[i].trainable;
    if (from[i].random_state && to[i].random_state) *to[i].random_state = *from[i].random_state;
    copy_layer_states(from[i].children, to[i].children);
  }
}

template <class T, class V> void track_layers(const std::vector<layer_info<T>>& layers, V& v);

/// A layer as train::Checkpoint walks it: its weights by their names, then its children (a nested
/// model's layers, a custom layer's sub-layers) by their keys.
template <class T> struct tracked_layer {
  const layer_info<T>& layer;
  template <class V> void track(V& v) const {
    for (const auto& w : layer.weights) {
      variable_ref<T> r{.path = w.name, .shape = w.shape, .values = w.values};
      v(w.name, r);
    }
    if (layer.random_state) v("seed_generator_state", *layer.random_state);
    track_layers(layer.children, v);
  }
};

/// Names each layer of a model to a checkpoint's visitor v by its key in Keras 3's weight files
/// (its class, numbered: "dense", "dense_1"), which the model's structure fixes: a model built
/// again, in this process or another, has the same keys whatever its layers' automatic names.
template <class T, class V> void track_layers(const std::vector<layer_info<T>>& layers, V& v) {
  const auto keys = layer_keys(layers, [](const layer_info<T>& l) { return l.class_name; });
  for (std::size_t i = 0; i < layers.size(); ++i) {
    tracked_layer<T> t{layers[i]};
    v(keys[i], t);
  }
}

/// Keras's model.summary() of a model named name from its layers: a row per layer ("name (Class)",
/// output shape, parameters, and with show_connected its connected[i], "-" when empty), then the
/// totals of the weights that train (the model's flag, each layer's and the weight's) and of the
/// others.
template <class T>
void summarize(const std::string& name, const std::vector<layer_info<T>>& layers, bool trainable, const std::vector<std::string>& connected,
               bool show_connected, const summary_options& options) {
  std::vector<summary_row> rows;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const std::string to = i < connected.size() ? (connected[i].empty() ? "-" : connected[i]) : "";
    rows.push_back({*l.name + " (" + l.class_name + ")", shape_text(l.output_shape), thousands(l.param_count()), to});
  }
  std::size_t trains = 0, others = 0;
  each_weight(layers, trainable, "", [&](const std::string&, const auto& w, bool t) { (t ? trains : others) += w.values.size(); });
  print_summary(name, rows, show_connected, trains, others, sizeof(T), options);
}

}  // namespace detail
}  // namespace ctflow::keras
