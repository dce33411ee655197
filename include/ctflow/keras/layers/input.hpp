#pragma once
/// @file
/// @brief keras.Input: a model's input, its dtype and its shape without the batch axis (the batch
/// is `dyn`, Keras's None, unless BatchSize is given): the first type of a Sequential, or the
/// symbolic input of a functional model.
///
///     keras::Input<float, Shape<28, 28, 1>>              // batch_shape (None, 28, 28, 1)

#include <memory>
#include <string>

#include <ctflow/core/shape.hpp>
#include <ctflow/core/dtype.hpp>

namespace ctflow::keras {

namespace detail {
struct graph_node;
template <extent_t Batch, class S> struct with_batch;
template <extent_t Batch, extent_t... E> struct with_batch<Batch, Shape<E...>> { using type = Shape<Batch, E...>; };
}  // namespace detail

/// @brief Shape S with a leading batch axis of extent Batch (dyn: Keras's None).
template <ShapeType S, extent_t Batch = -1> using batched = typename detail::with_batch<Batch, S>::type;

/// @brief keras.Input(shape, batch_size, dtype, name): dtype T, shape S per example.
template <DType T, ShapeType S, extent_t BatchSize = -1> struct Input {
  static constexpr const char* class_name = "InputLayer";
  using value_type = T;
  /// @brief The batch shape: S with the batch axis first.
  using shape_type = batched<S, BatchSize>;
  /// @brief The input layer's name (Keras's automatic input_layer, input_layer_1, ... when empty).
  std::string name{};
  /// The symbolic tensor of the functional API this input stands for, made when a layer is first
  /// called on it; its copies share it.
  mutable std::shared_ptr<detail::graph_node> tensor_{};
};

}  // namespace ctflow::keras
