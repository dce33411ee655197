#pragma once
// The float32 and float64 instances of the keras code that no model's type enters: the
// initializers' fill, the optimizers' update and build over a model's weight table, and a model's
// bookkeeping of its layers (summary, weight files, checkpoint tracking, batches gathered from
// arrays). A program built with CTFLOW_SEPARATE_COMPILATION declares them `extern template` here
// and compiles them once, in compiled/keras.hpp; every translation unit that trains a model
// would otherwise compile them again (a sixth of the Keras demo's build).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/io/checkpoint.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/layer_info.hpp>
#include <ctflow/keras/optimizers.hpp>
#include <ctflow/keras/saving.hpp>
#include <ctflow/keras/training.hpp>
#include <ctflow/keras/variables.hpp>

/// An optimizer O's update and build over a model's gradients and variables of dtype T (what fit
/// and apply_gradients(model.gradients(), model.trainable_variables()) call).
#define CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, O, T)                                                                            \
  PREFIX void ::ctflow::keras::optimizers::detail::apply<O, std::span<const ::ctflow::TensorView<const T, ::ctflow::Shape<::ctflow::dyn>>>, \
                                                          ::ctflow::keras::variable_list<T>>(                                           \
      O&, ::ctflow::keras::optimizers::detail::optimizer_state&, const std::span<const ::ctflow::TensorView<const T, ::ctflow::Shape<::ctflow::dyn>>>&, \
      const ::ctflow::keras::variable_list<T>&);                                                                                    \
  PREFIX void ::ctflow::keras::optimizers::detail::build<O, ::ctflow::keras::variable_list<T>>(                                     \
      O&, ::ctflow::keras::optimizers::detail::optimizer_state&, const ::ctflow::keras::variable_list<T>&);

/// The rest, for weights of dtype T.
#define CTFLOW_KERAS_INSTANCES(PREFIX, T)                                                                                          \
  PREFIX void ::ctflow::keras::initializers::Initializer::fill<T>(T*, const std::vector<std::size_t>&) const;                       \
  PREFIX void ::ctflow::keras::array_ref::gather<T>(const std::size_t*, std::size_t, T*) const;                                     \
  PREFIX std::vector<::ctflow::keras::detail::saved_layer> ctflow::keras::detail::saved_layers<T>(                                 \
      const std::vector<::ctflow::keras::layer_info<T>>&);                                                                          \
  PREFIX void ::ctflow::keras::detail::summarize<T>(const std::string&, const std::vector<::ctflow::keras::layer_info<T>>&, bool,    \
                                                    const std::vector<std::string>&, bool, const ::ctflow::keras::summary_options&); \
  PREFIX void ::ctflow::keras::detail::track_layers<T, ::ctflow::train::detail::collector>(                                         \
      const std::vector<::ctflow::keras::layer_info<T>>&, ::ctflow::train::detail::collector&);                                     \
  PREFIX void ::ctflow::keras::detail::weight_table<T>::add<std::vector<::ctflow::keras::layer_info<T>>>(                           \
      const std::vector<::ctflow::keras::layer_info<T>>&, std::vector<const bool*>&, const std::string&);                           \
  PREFIX std::vector<::ctflow::keras::variable_ref<T>> ctflow::keras::optimizers::detail::keras_order<T>(                         \
      ::ctflow::keras::optimizers::detail::optimizer_state&);                                                                       \
  PREFIX void ::ctflow::train::detail::collector::operator()<::ctflow::keras::variable_ref<T>>(std::string_view,                  \
                                                                                                ::ctflow::keras::variable_ref<T>&); \
  PREFIX void ::ctflow::train::detail::collector::operator()<std::vector<::ctflow::keras::variable_ref<T>>>(                        \
      std::string_view, std::vector<::ctflow::keras::variable_ref<T>>&);

/// Every optimizer's (float32 only: a float64 model compiles its optimizer's in its own unit).
#define CTFLOW_KERAS_OPTIMIZERS_INSTANCES(PREFIX, T)                                                                              \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::SGD, T)                                                    \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Adam, T)                                                   \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::AdamW, T)                                                  \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::RMSprop, T)                                                \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Adagrad, T)                                                \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Adadelta, T)                                               \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Adamax, T)                                                 \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Nadam, T)                                                  \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Lion, T)                                                   \
  CTFLOW_KERAS_OPTIMIZER_INSTANCES(PREFIX, ::ctflow::keras::optimizers::Ftrl, T)

/// Integer labels gathered from an array (a sparse loss's).
#define CTFLOW_KERAS_LABEL_INSTANCES(PREFIX) \
  PREFIX void ::ctflow::keras::array_ref::gather<std::int32_t>(const std::size_t*, std::size_t, std::int32_t*) const;

#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_KERAS_INSTANCES(extern template, float)
CTFLOW_KERAS_INSTANCES(extern template, double)
CTFLOW_KERAS_LABEL_INSTANCES(extern template)
CTFLOW_KERAS_OPTIMIZERS_INSTANCES(extern template, float)
#endif
