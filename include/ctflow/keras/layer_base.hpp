#pragma once
/// @file
/// @brief What a user writes of a Keras layer: a spec's common members, the training argument,
/// the base of a custom layer's built form and its weights (add_weight), and Keras's automatic
/// names.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/detail/naming.hpp>
#include <ctflow/keras/initializers.hpp>

namespace ctflow::keras {

namespace detail {
struct graph_layer_base;
/// A layer spec called on symbolic tensors (the functional API; keras/functional.hpp).
template <class Spec, class... X> auto call_layer(const Spec& spec, const X&... x);
}  // namespace detail

/// The members every layer spec has: Keras's class name, the layer's name (Keras's automatic one
/// when empty) and trainable flag, and the call on symbolic tensors of the functional API,
/// `layers::Dense<8>{}(x)`. The layer a spec builds on its first such call is kept with the spec:
/// its copies share it, so that a spec called twice is one layer called twice (Keras's shared
/// layers), as a Python layer object is.
#define CTFLOW_KERAS_LAYER_SPEC(CLASS)                                                                   \
  static constexpr const char* class_name = CLASS;                                                       \
  std::string name{};                                                                                     \
  bool trainable = true;                                                                                  \
  template <class... X> auto operator()(const X&... x) const { return ::ctflow::keras::detail::call_layer(*this, x...); } \
  mutable std::shared_ptr<::ctflow::keras::detail::graph_layer_base> shared_layer_ {}

/// @brief The `training` argument of a layer's call: a type, so that each mode has its own
/// expression (`if constexpr (training)`).
using training_t = std::true_type;
/// @brief The `training` argument of an inference call.
using inference_t = std::false_type;

namespace detail {

struct name_registry {
  std::mutex m;
  std::map<std::string, int, std::less<>> used;
  static name_registry& instance() {
    static name_registry r;
    return r;
  }
};

/// Keras's automatic names: one process-wide counter per prefix ("dense", "dense_1", ...).
inline std::string auto_name(std::string_view prefix) {
  auto& r = name_registry::instance();
  std::lock_guard lk(r.m);
  auto it = r.used.find(prefix);
  if (it == r.used.end()) {
    r.used.emplace(std::string(prefix), 0);
    return std::string(prefix);
  }
  return std::string(prefix) + "_" + std::to_string(++it->second);
}

/// The static number of elements of a variable type.
template <class V> constexpr std::size_t static_size() {
  using S = shape_t<V>;
  static_assert(S::is_static, "ctflow::keras: a layer's weights must have static shapes");
  return S::static_size;
}

}  // namespace detail

/// @brief The base of a custom layer's built form (Keras's keras.layers.Layer subclass): Spec the
/// layer's spec, T its dtype, In its input's shape, D its device (its weights' and calls': a
/// built form `template <class T, ShapeType In, class D> struct built : keras::Layer<Spec, T, In,
/// D>` with `Variable<T, S, D>` weights runs on any device; one without D, on cpu). The built form is an aggregate (no
/// constructor) whose fields the compiler finds: `Variable`s are the layer's own weights
/// (`keras::add_weight` makes them), `keras::sublayer`s its sub-layers, and a field of type Spec
/// first, when there is one, gets the spec's fields; its `call(x, training)` builds the output as
/// an expression of x, the weights and the sub-layers' calls. Its output shape, its weights'
/// list and its parameter count follow, as for the built-in layers.
template <class Spec, DType T, ShapeType In, class D = cpu> struct Layer {
  using spec_type = Spec;
  using value_type = T;
  using input_shape = In;
  using device_type = D;
  static constexpr const char* class_name = Spec::class_name;
};

/// @brief The spec's fields in a custom layer's built form, as its first field:
/// `keras::config<MyLayer, T> config;` (the spec's type, named through T so that the compiler
/// reads it when the layer is built, once the spec is complete).
template <class Spec, class T> using config = std::conditional_t<sizeof(T) != 0, Spec, Spec>;

/// @brief Keras's add_weight(name, initializer, trainable) as the initializer of a custom layer's
/// Variable field: `Variable<T, Shape<4, 8>> w = keras::add_weight("w");` (the field's dtype and
/// shape are the weight's; glorot_uniform by default, as Keras).
struct add_weight {
  std::string name;
  initializers::Initializer initializer;
  bool trainable = true;
  explicit add_weight(std::string weight_name, initializers::Initializer init = initializers::GlorotUniform(), bool trains = true)
      : name(std::move(weight_name)), initializer(std::move(init)), trainable(trains) {}
  template <class T, class S, class D> operator Variable<T, S, D>() const { return Variable<T, S, D>(initializer.template operator()<T, S, D>(), name, trainable); }
};

namespace backend {
/// @brief keras.backend.clear_session: restarts Keras's automatic names (dense, dense_1, ...).
inline void clear_session() {
  auto& r = detail::name_registry::instance();
  std::lock_guard lk(r.m);
  r.used.clear();
}
}  // namespace backend

}  // namespace ctflow::keras
