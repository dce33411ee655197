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
#include <ctflow/core/device.hpp>
#include <ctflow/core/dtype.hpp>

namespace ctflow::keras {

namespace detail {
struct graph_node;
template <extent_t Batch, class S> struct with_batch;
template <extent_t Batch, extent_t... E> struct with_batch<Batch, Shape<E...>> { using type = Shape<Batch, E...>; };
}  // namespace detail

/// @brief Shape S with a leading batch axis of extent Batch (dyn: Keras's None).
template <ShapeType S, extent_t Batch = -1> using batched = typename detail::with_batch<Batch, S>::type;

/// @brief keras.Input(shape, batch_size, dtype, name): dtype T, shape S per example, on device D
/// (the model's: its weights, calls and backward passes; `keras::Input<float, Shape<784>, dyn,
/// reference>`).
template <DType T, ShapeType S, extent_t BatchSize = -1, class D = cpu> struct Input {
  static constexpr const char* class_name = "InputLayer";
  using value_type = T;
  using device_type = D;
  /// @brief The batch shape: S with the batch axis first.
  using shape_type = batched<S, BatchSize>;
  /// @brief The input layer's name (Keras's automatic input_layer, input_layer_1, ... when empty).
  std::string name{};
  /// The symbolic tensor of the functional API this input stands for, made when a layer is first
  /// called on it; its copies share it.
  mutable std::shared_ptr<detail::graph_node> tensor_{};
};

namespace detail {
/// Input spec I on device To.
template <class I, class To> struct input_on;
template <class T, class S, extent_t B, class D, class To> struct input_on<Input<T, S, B, D>, To> { using type = Input<T, S, B, To>; };
template <class I, class To> using input_on_t = typename input_on<I, To>::type;
}  // namespace detail

}  // namespace ctflow::keras
