#pragma once
/// @file
/// @brief What a Keras layer is in ctflow, and how a model runs one.
///
/// A layer has two forms. Its *spec* is what a user writes and configures: the class template of
/// keras::layers with its structure as template arguments and its numbers as fields
/// (`layers::Dense<128, activations::relu>{.kernel_initializer = initializers::HeNormal(1)}`).
/// Its *built* form is `Spec::built<T, In>`, the layer for inputs of dtype T and static shape In
/// (batch first, usually `dyn`): the compiler computes its weights' shapes and its output shape
/// from In, so the user never repeats an input size and a layer that cannot take its input does
/// not compile. A built layer
///
///   - names `value_type`, `input_shape`, `output_shape` and `class_name` (Keras's class);
///   - holds its weights as Variables and lists them in Keras's order (trainable ones, then the
///     others) with `weights()`, a tuple of references;
///   - builds its output as an expression of its input with `call(x, training)`, `training` being
///     `std::true_type` or `std::false_type` (a layer that behaves differently in training, such
///     as Dropout, returns another expression: `if constexpr (training)`).
///
/// A model holds each built layer in a `layer_instance`, which gives it Keras's name and
/// `trainable` flag, evaluates its expression into the layer's output (one fused loop past the
/// layer's boundaries) and, in training, records it (autodiff::recording), so that the backward
/// pass sends the adjoint of the output to the input and the weights through the rules ctflow
/// derives from the expression's type. Layers are boundaries of a model: a deep network is a
/// sequence of small expression types, not one large one.

#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/detail/layer_checks.hpp>
#include <ctflow/keras/detail/layer_weights.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/layer_base.hpp>
#include <ctflow/keras/layer_call.hpp>
#include <ctflow/keras/regularizers.hpp>
#include <ctflow/keras/sublayer.hpp>
