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

#include <array>
#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/maybe.hpp>
#include <ctflow/ctflow.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/detail/naming.hpp>
#include <ctflow/keras/detail/reflect.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/regularizers.hpp>

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

/// The snake-case name of a class named by F() (a constexpr function), as a fixed_string.
template <auto F> constexpr auto snake_case_string() {
  constexpr std::size_t n = [] {
    char out[256]{};
    return snake_case_into(F(), out);
  }();
  ctflow::detail::fixed_string<n + 1> r;
  char out[256]{};
  snake_case_into(F(), out);
  for (std::size_t i = 0; i < n; ++i) r.s[i] = out[i];
  return r;
}

/// What made a symbolic tensor, for messages: "conv2d (Conv2D)" for a layer spec or an Input
/// (From), "a layer" when unknown (void).
template <class From> constexpr auto producer_text() {
  using ctflow::detail::fixed_string;
  if constexpr (requires { From::class_name; }) {
    constexpr auto cls = ctflow::detail::fixed_string_of<[] { return From::class_name; }>();
    return ctflow::detail::concat(snake_case_string<[] { return From::class_name; }>(), fixed_string(" ("), cls, fixed_string(")"));
  } else {
    return fixed_string("a layer");
  }
}

/// Whether layer Spec takes inputs of shape S. A spec that declares the rank of its input
/// (`input_rank`, the batch axis included, and `input_form`, its words for it) takes that rank
/// with a static last axis (the channels or features); the others check their input themselves.
template <class Spec, class S> constexpr bool takes_input() {
  if constexpr (requires { Spec::input_rank; }) {
    if constexpr (std::size_t(S::rank) != Spec::input_rank) return false;
    else return S::extents[std::size_t(S::rank) - 1] != dyn;
  } else {
    return true;
  }
}
/// The message of a layer Spec that cannot take its input S made by From ("ctflow::keras::Conv2D:
/// takes [batch, height, width, channels] with static channels; flatten (Flatten) gives it
/// [None,1600]").
template <class Spec, class S, class From> constexpr auto input_message() {
  using ctflow::detail::fixed_string;
  return ctflow::detail::concat(fixed_string("ctflow::keras::"), ctflow::detail::fixed_string_of<[] { return Spec::class_name; }>(), fixed_string(": takes "),
                                ctflow::detail::fixed_string_of<[] { return Spec::input_form; }>(), fixed_string("; "), producer_text<From>(),
                                fixed_string(" gives it "), shape_string_v<S>);
}
/// The static check of Spec's input: a member of this type is the error carrying that message
/// when Spec does not take S (and nothing otherwise).
template <class Spec, class S, class From, bool = takes_input<Spec, S>()> struct input_check {};
template <class Spec, class S, class From> struct input_check<Spec, S, From, false> : ctflow::detail::static_error<input_message<Spec, S, From>()> {};
/// Whether shapes S... broadcast together (Keras's merge rule: equal, or 1 or None on an axis).
template <class S0, class... S> constexpr bool broadcast_together() {
  if constexpr (sizeof...(S) == 0) return true;
  else return []<class S1, class... Rest>(std::type_identity<S1>, std::type_identity<Rest>...) {
    if constexpr (!broadcastable_v<S0, S1>) return false;
    else return broadcast_together<broadcast_shape_t<S0, S1>, Rest...>();
  }(std::type_identity<S>{}...);
}

/// "[None,4] x [None,8]": shapes as messages print them.
template <class... S> constexpr auto shapes_text() {
  return []<class S0, class... Rest>(std::type_identity<S0>, std::type_identity<Rest>...) {
    return ctflow::detail::concat(shape_string_v<S0>, ctflow::detail::concat(ctflow::detail::fixed_string(" x "), shape_string_v<Rest>)...);
  }(std::type_identity<S>{}...);
}

/// The check of a merge layer Spec (one that declares `broadcasts_inputs`, as Add and Multiply)
/// on inputs of shapes S... made by From...: a member of this type is the error when they do not
/// broadcast together ("ctflow::keras::Add: inputs differ: conv2d (Conv2D) [None,14,14,64] x
/// conv2d (Conv2D) [None,14,14,32]").
/// "conv2d (Conv2D) [None,14,14,64]": an input of a merge and what made it.
template <class From, class S> constexpr auto input_text() {
  return ctflow::detail::concat(producer_text<From>(), ctflow::detail::fixed_string(" "), shape_string_v<S>);
}
template <class Spec, class... From, class... S> constexpr auto merge_message(std::tuple<From...>*, std::tuple<S...>*) {
  return [](auto first, auto... rest) {
    return ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::"), ctflow::detail::fixed_string_of<[] { return Spec::class_name; }>(),
                                  ctflow::detail::fixed_string(": inputs differ: "), first,
                                  ctflow::detail::concat(ctflow::detail::fixed_string(" x "), rest)...);
  }(input_text<From, S>()...);
}
template <class Spec, class Froms, class... S> struct merge_check {};
template <class Spec, class... From, class... S>
  requires(requires { Spec::broadcasts_inputs; } && !broadcast_together<S...>())
struct merge_check<Spec, std::tuple<From...>, S...>
    : ctflow::detail::static_error<merge_message<Spec>(static_cast<std::tuple<From...>*>(nullptr), static_cast<std::tuple<S...>*>(nullptr))> {};

/// The shape Spec is built for from S: S when it takes it, else (its check has failed) one it
/// takes, so that the failed check is the only error.
template <class Spec, class S, bool = takes_input<Spec, S>()> struct fitting_input { using type = S; };
template <class Spec, class S> struct fitting_input<Spec, S, false> {
  using type = shape_of<[] {
    std::array<std::size_t, Spec::input_rank> e{};
    e.fill(64);
    e[0] = dyn;
    return e;
  }()>;
};
template <class Spec, class S> using fitting_input_t = typename fitting_input<Spec, S>::type;

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
/// layer's spec, T its dtype, In its input's shape. The built form is an aggregate (no
/// constructor) whose fields the compiler finds: `Variable`s are the layer's own weights
/// (`keras::add_weight` makes them), `keras::sublayer`s its sub-layers, and a field of type Spec
/// first, when there is one, gets the spec's fields; its `call(x, training)` builds the output as
/// an expression of x, the weights and the sub-layers' calls. Its output shape, its weights'
/// list and its parameter count follow, as for the built-in layers.
template <class Spec, DType T, ShapeType In> struct Layer {
  using spec_type = Spec;
  using value_type = T;
  using input_shape = In;
  static constexpr const char* class_name = Spec::class_name;
};

namespace detail {

template <class V> struct is_variable_type : std::false_type {};
template <class T, class S, class D> struct is_variable_type<Variable<T, S, D>> : std::true_type {};
/// A field that is a sub-layer (keras::sublayer).
template <class F> concept sublayer_field = requires(F& f) {
  typename F::layer_type;
  f.layer;
  f.name;
};
/// A built layer that lists its weights itself (the built-in layers).
template <class L> concept lists_weights = requires(L& l) { l.weights(); };
/// A custom layer's built form: an aggregate over keras::Layer.
template <class L> concept custom_layer = !lists_weights<L> && std::is_aggregate_v<L> && requires {
  typename L::spec_type;
  requires std::is_base_of_v<Layer<typename L::spec_type, typename L::value_type, typename L::input_shape>, L>;
};

/// The fields of custom layer l (its base takes an initializer but has none).
template <class L> auto custom_fields(L& l) { return fields<fields_count<std::remove_const_t<L>>() - 1>(l); }

/// Tuples' element types joined: std::tuple_cat's type, without instantiating tuple_cat (whose
/// machinery costs the compiler megabytes for a custom layer's dozen weights).
template <class... T> struct tuple_join { using type = std::tuple<>; };
template <class... A> struct tuple_join<std::tuple<A...>> { using type = std::tuple<A...>; };
template <class... A, class... B, class... Rest> struct tuple_join<std::tuple<A...>, std::tuple<B...>, Rest...> : tuple_join<std::tuple<A..., B...>, Rest...> {};

/// The weights of built layer L (const or not) as a tuple of references: the type of its
/// weights() for a built-in layer; for a custom layer, its own Variables, then its sub-layers'
/// weights, in field order.
template <class L> struct weight_list;
template <class F> struct own_weight { using type = std::tuple<>; };
template <class F> requires is_variable_type<std::remove_const_t<F>>::value struct own_weight<F> { using type = std::tuple<F&>; };
template <class F> struct sub_weight { using type = std::tuple<>; };
template <class F> requires sublayer_field<std::remove_const_t<F>> struct sub_weight<F> {
  using sub = typename std::remove_const_t<F>::layer_type;
  using type = typename weight_list<std::conditional_t<std::is_const_v<F>, const sub, sub>>::type;
};
template <class Fields> struct field_weights;
template <class... F> struct field_weights<std::tuple<F&...>> {
  using type = typename tuple_join<typename own_weight<F>::type..., typename sub_weight<F>::type...>::type;
};
template <class L> struct weight_list { using type = decltype(std::declval<std::remove_const_t<L>&>().weights()); };
template <class L> requires(!lists_weights<std::remove_const_t<L>>) struct weight_list<L> {
  static_assert(custom_layer<std::remove_const_t<L>>,
                "ctflow::keras: a layer lists its weights (weights()) or is a custom layer: an aggregate over keras::Layer<Spec, T, In>");
  using type = typename field_weights<decltype(custom_fields(std::declval<L&>()))>::type;
};

/// The types of a built layer's weights, as a tuple of references.
template <class L> using weights_tuple = typename weight_list<L>::type;

template <class L> constexpr std::size_t weight_count() { return std::tuple_size_v<weights_tuple<L>>; }

/// The addresses of built layer l's weights, in weight_list's order, from out on; returns the end.
template <class L> const void** weight_addresses(L& l, const void** out) {
  if constexpr (lists_weights<std::remove_const_t<L>>) {
    std::apply([&](auto&... w) { ((*out++ = &w), ...); }, const_cast<std::remove_const_t<L>&>(l).weights());
  } else {
    auto f = custom_fields(l);
    std::apply([&](auto&... x) { ([&] { if constexpr (is_variable_type<std::remove_cvref_t<decltype(x)>>::value) *out++ = &x; }(), ...); }, f);
    std::apply([&](auto&... x) { ([&] { if constexpr (sublayer_field<std::remove_cvref_t<decltype(x)>>) out = weight_addresses(x.layer, out); }(), ...); }, f);
  }
  return out;
}

/// The weights of built layer l, as a tuple of references (weights_tuple<L>).
template <class L> weights_tuple<L> weights_of(L& l) {
  if constexpr (lists_weights<std::remove_const_t<L>>) {
    return l.weights();
  } else {
    using W = weights_tuple<L>;
    const void* at[std::tuple_size_v<W> + 1];
    weight_addresses(l, at);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return W(*static_cast<std::remove_reference_t<std::tuple_element_t<I, W>>*>(const_cast<void*>(at[I]))...);
    }(std::make_index_sequence<std::tuple_size_v<W>>{});
  }
}

template <class L, std::size_t... I> constexpr std::size_t param_count(std::index_sequence<I...>) {
  return (std::size_t(0) + ... + static_size<std::remove_cvref_t<std::tuple_element_t<I, weights_tuple<L>>>>());
}

/// No regularizer (a weight that has none).
inline const regularizers::Regularizer& no_regularizer() {
  static const regularizers::Regularizer none{};
  return none;
}
/// The regularizers of l's weights from out on, parallel to weights_of(l); returns the end.
template <class L> const regularizers::Regularizer** regularizer_addresses(const L& l, const regularizers::Regularizer** out) {
  if constexpr (lists_weights<L>) {
    if constexpr (requires { l.weight_regularizers(); }) std::apply([&](const auto&... r) { ((*out++ = &r), ...); }, l.weight_regularizers());
    else
      for (std::size_t i = 0; i < weight_count<L>(); ++i) *out++ = &no_regularizer();
  } else {
    auto f = custom_fields(l);
    std::apply([&](const auto&... x) { ([&] { if constexpr (is_variable_type<std::remove_cvref_t<decltype(x)>>::value) *out++ = &no_regularizer(); }(), ...); }, f);
    std::apply([&](const auto&... x) { ([&] { if constexpr (sublayer_field<std::remove_cvref_t<decltype(x)>>) out = regularizer_addresses(x.layer, out); }(), ...); }, f);
  }
  return out;
}
/// The regularizers of l's weights, parallel to weights_of(l) (one per weight, no_regularizer()
/// for a weight that has none).
template <class L> std::array<const regularizers::Regularizer*, weight_count<L>()> regularizers_of(const L& l) {
  std::array<const regularizers::Regularizer*, weight_count<L>()> r{};
  regularizer_addresses(l, r.data());
  return r;
}

/// Whether each weight of l trains: its own flag and, in a custom layer, its sub-layer's.
template <class L> void weight_trains(L& l, bool trains, bool* out) {
  if constexpr (lists_weights<L>) {
    std::apply([&](auto&... w) { ((*out++ = trains && w.trainable()), ...); }, l.weights());
  } else {
    auto f = custom_fields(l);
    std::apply([&](auto&... x) { ([&] { if constexpr (is_variable_type<std::remove_cvref_t<decltype(x)>>::value) *out++ = trains && x.trainable(); }(), ...); }, f);
    std::apply([&](auto&... x) {
      ([&] {
        if constexpr (sublayer_field<std::remove_cvref_t<decltype(x)>>) {
          weight_trains(x.layer, trains && x.trainable, out);
          out += weight_count<typename std::remove_cvref_t<decltype(x)>::layer_type>();
        }
      }(), ...);
    }, f);
  }
}

/// The dtype of L's input: its input_value_type where it differs from its output's (Embedding).
template <class L> struct input_value { using type = typename L::value_type; };
template <class L> requires requires { typename L::input_value_type; } struct input_value<L> { using type = typename L::input_value_type; };

/// The views a call of built layer L reads: one of input_shape, or one per shape of input_shapes
/// (the merge layers: Add, Concatenate, Multiply).
template <class L, class Shapes> struct views_of;
template <class L, class... S> struct views_of<L, std::tuple<S...>> {
  using type = std::tuple<TensorView<const typename input_value<L>::type, S>...>;
};
template <class L> struct input_shapes_of { using type = std::tuple<typename L::input_shape>; };
template <class L> requires requires { typename L::input_shapes; } struct input_shapes_of<L> { using type = typename L::input_shapes; };
template <class L> using input_views = typename views_of<L, typename input_shapes_of<L>::type>::type;

/// The shape of L's output: its output_shape, or (a custom layer) the shape of its call's
/// expression.
template <class L, class... V> auto call_result(std::tuple<V...>*) -> decltype(std::declval<const L&>().call(std::declval<const V&>()..., inference_t{}));
template <class L> struct output_shape_of {
  using type = shape_t<decltype(call_result<L>(static_cast<input_views<L>*>(nullptr)))>;
};
template <class L> requires requires { typename L::output_shape; } struct output_shape_of<L> { using type = typename L::output_shape; };
template <class L> using output_shape_t = typename output_shape_of<L>::type;

/// Built layer L made from its spec: L(spec), or for a custom layer, aggregate initialization
/// (the spec into its first field when that field is of the spec's type).
template <class L, class Spec> L construct_layer(const Spec& spec) {
  if constexpr (std::is_constructible_v<L, const Spec&>) {
    return L(spec);
  } else {
    static_assert(custom_layer<L>, "ctflow::keras: a built layer is constructible from its spec, or is a custom layer (an aggregate over keras::Layer)");
    using fields_type = decltype(custom_fields(std::declval<L&>()));
    if constexpr (std::tuple_size_v<fields_type> > 0 && std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, fields_type>>, Spec>) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
      return L{{}, spec};
#pragma GCC diagnostic pop
    } else {
      return L{};
    }
  }
}

/// The recording of a call of built layer L in mode Mode (training_t, or inference_t for a layer
/// that runs as in inference when frozen), over its input views and its weights.
template <class L, class Inputs, class W, class Mode> struct recording_of;
template <class L, class... In, class... W, class Mode> struct recording_of<L, std::tuple<In...>, std::tuple<W&...>, Mode> {
  using expr = decltype(std::declval<const L&>().call(std::declval<const In&>()..., Mode{}));
  using type = autodiff::recording<expr, In..., W...>;
};

/// An optional R on the heap whose type is completed only where one is made or used: a model
/// that is only built, or only infers, never instantiates its layers' recordings.
template <class R> class lazy_optional {
 public:
  lazy_optional() = default;
  lazy_optional(const lazy_optional&) = delete;
  lazy_optional& operator=(const lazy_optional&) = delete;
  ~lazy_optional() { reset(); }
  template <class... A> R& emplace(A&&... a) {
    reset();
    R* r = new R(std::forward<A>(a)...);
    p_ = r;
    destroy_ = [](void* p) { delete static_cast<R*>(p); };
    return *r;
  }
  void reset() {
    if (p_) destroy_(p_);
    p_ = nullptr;
  }
  explicit operator bool() const { return p_ != nullptr; }
  R* operator->() const { return static_cast<R*>(p_); }
  R& operator*() const { return *static_cast<R*>(p_); }

 private:
  void* p_ = nullptr;
  void (*destroy_)(void*) = nullptr;
};

/// Nothing to record (a layer that differentiates itself; the frozen form of most layers).
struct no_record {};
template <class L, class Mode, bool Use> struct optional_recording { using type = no_record; };
template <class L, class Mode> struct optional_recording<L, Mode, true> {
  using type = lazy_optional<typename recording_of<L, input_views<L>, weights_tuple<L>, Mode>::type>;
};

/// The gradients of a call's backward pass: one optional tensor per input, then one per weight.
template <class Inputs, class W> struct gradients_of;
template <class... In, class... W> struct gradients_of<std::tuple<In...>, std::tuple<W&...>> {
  using type = std::tuple<maybe<Tensor<value_t<In>, shape_t<In>>>..., maybe<Tensor<value_t<W>, shape_t<W>>>...>;
};

/// Whether L computes its own backward pass (forward / backward members taking a `call_state`,
/// what one call keeps for its backward pass, as the recurrent layers) rather than ctflow's from
/// the expression of its call.
template <class L> concept differentiates_itself = requires { L::differentiates_itself; };

/// What a call of L keeps for its backward pass when L differentiates itself.
template <class L> struct call_state_of { using type = no_record; };
template <class L> requires differentiates_itself<L> struct call_state_of<L> { using type = typename L::call_state; };

/// Whether L, frozen (trainable false), runs as in inference even in training (Keras's
/// BatchNormalization). A custom layer holding one runs its training expression: its sub-layers
/// are called as layers are, so a frozen BatchNormalization among them runs as in inference.
template <class L> constexpr bool inference_when_frozen() {
  if constexpr (requires { L::inference_when_frozen; }) return L::inference_when_frozen;
  else return false;
}

/// Whether a call of L in inference mode during training (frozen, or asked for by a custom
/// layer's call) needs a recording of its own: its inference expression is not its training one
/// (BatchNormalization, Dropout, a custom layer that branches on `training`).
template <class L> constexpr bool records_inference() {
  if constexpr (differentiates_itself<L>) {
    return false;
  } else {
    using training_expr = typename recording_of<L, input_views<L>, weights_tuple<L>, training_t>::expr;
    using inference_expr = typename recording_of<L, input_views<L>, weights_tuple<L>, inference_t>::expr;
    return inference_when_frozen<L>() || !std::is_same_v<training_expr, inference_expr>;
  }
}

template <class T, class S> void resize(Tensor<T, S>& t, const dims_t<std::size_t(S::rank)>& d) {
  if (t.dims() != d) t = Tensor<T, S>(d);
}

/// f(s) for each sub-layer s of built layer l (a custom layer's sublayer fields).
template <class L, class F> void each_sublayer(L& l, F&& f) {
  if constexpr (custom_layer<L>) {
    std::apply([&](auto&... x) { ([&] { if constexpr (sublayer_field<std::remove_cvref_t<decltype(x)>>) f(x); }(), ...); }, custom_fields(l));
  }
}

}  // namespace detail

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
  template <class T, class S, class D> operator Variable<T, S, D>() const { return Variable<T, S, D>(initializer.template operator()<T, S>(), name, trainable); }
};

namespace backend {
/// @brief keras.backend.clear_session: restarts Keras's automatic names (dense, dense_1, ...).
inline void clear_session() {
  auto& r = detail::name_registry::instance();
  std::lock_guard lk(r.m);
  r.used.clear();
}
}  // namespace backend

/// @brief The parameters of built layer L, known to the compiler (Keras's count_params()).
template <class L> constexpr std::size_t count_params() {
  return detail::param_count<L>(std::make_index_sequence<detail::weight_count<L>()>{});
}

/// @brief One call of a built layer: its input views and output, and in training the recording
/// its backward pass needs (or, for a layer that differentiates itself, what it keeps) and the
/// gradients that pass computed. A layer called twice (shared by two calls of a functional
/// model) has two.
template <class L> class layer_call {
 public:
  using value_type = typename L::value_type;
  using output_shape = detail::output_shape_t<L>;
  using output_view = TensorView<const value_type, output_shape>;
  /// @brief The views of its inputs (one for most layers).
  using inputs = detail::input_views<L>;
  static constexpr std::size_t arity = std::tuple_size_v<inputs>;
  /// @brief The gradients of a backward pass: one optional tensor per input, then per weight.
  using gradient_tensors = typename detail::gradients_of<inputs, detail::weights_tuple<L>>::type;

  layer_call() = default;
  layer_call(const layer_call&) = delete;
  layer_call& operator=(const layer_call&) = delete;

  /// @brief Runs layer on xs (training: recording what backward needs); `trainable` is the
  /// layer's flag (a frozen BatchNormalization runs as in inference); `inference_mode` runs a
  /// training call's layer as in inference, still recorded (Keras's `layer(x, training=False)`
  /// inside a training call). Returns a view of the output, valid until the next forward; the
  /// inputs' memory must stay valid until backward.
  output_view forward(L& layer, bool trainable, const inputs& xs, bool training, bool inference_mode = false) {
    trained_ = false;
    if constexpr (!detail::differentiates_itself<L>) record_.reset();
    if constexpr (detail::records_inference<L>()) inference_record_.reset();
    xs_.emplace(xs);
    detail::each_sublayer(layer, [&](auto& s) { s.begin_call(this, trainable, training); });
    if constexpr (detail::differentiates_itself<L>) {
      layer.forward(std::get<0>(*xs_), out_, training, state_);
      trained_ = training;
    } else if (!training) {
      auto e = std::apply([&](const auto&... x) { return layer.call(x..., inference_t{}); }, *xs_);
      detail::resize(out_, e.dims());
      executor<device_t<decltype(e)>>::assign(out_.data(), out_.dims(), e);
    } else if (inference_mode || (!trainable && detail::inference_when_frozen<L>())) {
      // The inference expression, recorded (the adjoint still flows through); where it has the
      // training expression's type, into the same recording.
      if constexpr (detail::records_inference<L>()) record(layer, inference_record_, inference_t{});
      else record(layer, record_, inference_t{});
    } else {
      record(layer, record_, training_t{});
    }
    return output();
  }

  /// @brief The last output.
  output_view output() const { return output_view(out_.data(), out_.dims()); }
  /// @brief The inputs of the last forward.
  const inputs& input() const { return *xs_; }

  /// @brief The backward pass of the last training forward: from dy (the adjoint of the output),
  /// the gradients of the layer's trainable weights (none when `trainable` is false) and of the
  /// inputs whose flag in want_input is set. `name` is the layer's, for errors.
  gradient_tensors& backward(L& layer, bool trainable, const output_view& dy, const std::array<bool, arity>& want_input, const std::string& name) {
    if (!trained_) throw value_error("ctflow::keras: " + name + ": backward without a training forward pass");
    gradient_tensors& grads = gradients();
    std::array<bool, detail::weight_count<L>() + 1> trains{};
    detail::weight_trains(layer, trainable, trains.data());
    auto targets = [&]<std::size_t... I, std::size_t... W>(std::index_sequence<I...>, std::index_sequence<W...>) {
      [[maybe_unused]] auto w = detail::weights_of(layer);
      return std::tuple{(want_input[I] ? &std::get<I>(*xs_) : nullptr)..., (trains[W] ? &std::get<W>(w) : nullptr)...};
    }(std::make_index_sequence<arity>{}, std::make_index_sequence<detail::weight_count<L>()>{});
    detail::each_sublayer(layer, [&](auto& s) { s.begin_backward(this); });
    if constexpr (detail::differentiates_itself<L>) {
      layer.backward(dy, grads, targets, state_);
    } else if constexpr (detail::records_inference<L>()) {
      grads = std::apply([&](auto*... t) { return record_ ? record_->gradient(dy, t...) : inference_record_->gradient(dy, t...); }, targets);
    } else {
      grads = std::apply([&](auto*... t) { return record_->gradient(dy, t...); }, targets);
    }
    [&]<std::size_t... W>(std::index_sequence<W...>) {
      ((weight_gradients_[W] = std::get<arity + W>(grads) ? std::get<arity + W>(grads)->data() : nullptr), ...);
    }(std::make_index_sequence<detail::weight_count<L>()>{});
    return grads;
  }
  /// @brief The gradients of the last backward pass.
  gradient_tensors& gradients() { return grads_ ? *grads_ : grads_.emplace(); }
  /// @brief The memory of each weight's gradient from the last backward pass (null: none).
  const std::array<const value_type*, detail::weight_count<L>()>& weight_gradients() const { return weight_gradients_; }

 private:
  template <class R, class Mode> void record(L& layer, R& into, Mode mode) {
    auto e = std::apply([&](const auto&... x) { return layer.call(x..., mode); }, *xs_);
    detail::resize(out_, e.dims());
    into.emplace(std::move(e), out_.data());
    trained_ = true;
  }

  maybe<inputs> xs_;  // the expressions recorded refer to these views
  Tensor<value_type, output_shape> out_;
  typename detail::optional_recording<L, training_t, !detail::differentiates_itself<L>>::type record_;
  typename detail::optional_recording<L, inference_t, detail::records_inference<L>()>::type inference_record_;
  typename detail::call_state_of<L>::type state_;
  // Made by the first backward pass (or request): a model that only infers never instantiates
  // its layers' gradient tensors.
  detail::lazy_optional<gradient_tensors> grads_;
  std::array<const value_type*, detail::weight_count<L>()> weight_gradients_{};
  bool trained_ = false;
};

namespace detail {
/// Adds the gradients of L's weight regularizers to the weights' gradients in grads (those after
/// the First inputs' that were computed).
template <std::size_t First, class L, class G> void add_regularization(L& layer, G& grads) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    [[maybe_unused]] auto w = weights_of(layer);
    [[maybe_unused]] auto r = regularizers_of(layer);
    ([&] {
      auto& g = std::get<First + I>(grads);
      const regularizers::Regularizer& reg = *r[I];
      if (g && reg.active()) reg.add_gradient(std::get<I>(w).data(), g->data(), g->size());
    }(), ...);
  }(std::make_index_sequence<weight_count<L>()>{});
}
}  // namespace detail

/// @brief A built layer in a model: its Keras name and trainable flag, and its call (the output
/// and, in training, what the backward pass needs).
template <class L> class layer_instance {
 public:
  using layer_type = L;
  using value_type = typename L::value_type;
  using call_type = layer_call<L>;
  using output_shape = detail::output_shape_t<L>;
  using output_view = typename call_type::output_view;
  using gradient_tensors = typename call_type::gradient_tensors;
  static constexpr std::size_t arity = call_type::arity;
  /// @brief The input's dtype, shape and view (of the first input, for a merge layer).
  using input_view = std::tuple_element_t<0, typename call_type::inputs>;
  using input_value_type = value_t<input_view>;
  using input_shape = shape_t<input_view>;

  /// @brief The built layer.
  L layer;
  /// @brief Its name (Keras's automatic one unless the spec gave one) and whether its weights train.
  std::string name;
  bool trainable = true;

  /// @brief Builds the layer from its spec; an empty name is Keras's automatic one, given by
  /// name_if_unnamed() (models call it in layer order).
  template <class Spec> explicit layer_instance(const Spec& spec) : layer(detail::construct_layer<L>(spec)), name(spec.name), trainable(spec.trainable) {}
  layer_instance(const layer_instance&) = delete;
  layer_instance& operator=(const layer_instance&) = delete;

  /// @brief Gives the layer Keras's automatic name (dense, dense_1, ...) if it has none.
  void name_if_unnamed() {
    if (name.empty()) name = detail::auto_name(detail::snake_case(L::class_name));
  }

  /// @brief Runs the layer on its inputs (training: recording what backward needs) and returns a
  /// view of its output, valid until the next forward; the inputs' memory must stay valid until
  /// backward.
  /// `frozen`: the model holding the layer does not train (a BatchNormalization then runs as in
  /// inference, and no weight gets a gradient).
  output_view forward(const typename call_type::inputs& xs, bool training, bool frozen = false) {
    return call_.forward(layer, trainable && !frozen, xs, training);
  }
  output_view forward(const input_view& x, bool training, bool frozen = false) requires(arity == 1) {
    return call_.forward(layer, trainable && !frozen, {x}, training);
  }
  /// @brief The last output.
  output_view output() const { return call_.output(); }

  /// @brief The backward pass of the last training forward: from dy (the adjoint of the output),
  /// the gradients of the trainable weights (with their regularizers': `gradient<I>()`,
  /// `each_gradient`) and, when input_gradient is set, of the input(s), which it returns (for one
  /// input, its gradient; for several, the tuple).
  auto backward(const output_view& dy, bool input_gradient = true, bool frozen = false) {
    std::array<bool, arity> want;
    want.fill(input_gradient);
    auto& g = call_.backward(layer, trainable && !frozen, dy, want, name);
    detail::add_regularization<arity>(layer, g);
    if constexpr (arity == 1) return std::move(std::get<0>(g));
    else return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tuple{std::move(std::get<I>(g))...}; }(std::make_index_sequence<arity>{});
  }

  /// @brief The gradients of the last backward pass, one per weight (empty when the weight does
  /// not train or was not reached).
  template <std::size_t I> const auto& gradient() const { return std::get<arity + I>(const_cast<layer_call<L>&>(call_).gradients()); }
  /// @brief The memory of each weight's gradient from the last backward pass (null: none).
  const auto& weight_gradients() const { return call_.weight_gradients(); }
  /// @brief Calls f(weight, gradient or null) for each weight, in Keras's order.
  template <class F> void each_gradient(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      [[maybe_unused]] auto w = detail::weights_of(layer);
      auto& g = call_.gradients();
      (f(std::get<I>(w), std::get<arity + I>(g) ? &*std::get<arity + I>(g) : nullptr), ...);
    }(std::make_index_sequence<detail::weight_count<L>()>{});
  }

 private:
  layer_call<L> call_;
};

namespace detail {

/// One call of a sub-layer in its custom layer's call: the sub-layer's own layer_call (its output
/// and what its backward pass needs), its input kept for that pass, the adjoint of its output,
/// and how it runs: whether the sub-layer's weights train, whether it is recorded (its custom
/// layer's call is, or it was called with training_t), whether it runs as in inference.
template <class L> struct sublayer_slot {
  using input_view = std::tuple_element_t<0, input_views<L>>;
  layer_call<L> call;
  Tensor<value_t<input_view>, shape_t<input_view>> x;
  Tensor<typename L::value_type, output_shape_t<L>> dy;
  bool trainable = true, training = false, inference_mode = false, backward_done = false;
};

/// A sub-layer's calls in one call of its custom layer (its sublayer_slots, made on the first
/// such call), and how that call runs.
struct sublayer_calls {
  std::vector<void*> slots;
  std::size_t used = 0;
  bool trainable = true, training = false;
};

/// A sub-layer's calls for each call of its custom layer (keyed by the custom layer's
/// layer_call: a custom layer shared by two calls of a model, or called twice by another custom
/// layer, keeps each call's own until its backward pass), and the index of the call being built.
/// A copy starts empty. One type for every sub-layer: the slots' type (and with it the
/// sub-layer's layer_call) is completed only where the sub-layer is called, and `destroy`, set
/// there, deletes them.
struct sublayer_state {
  std::vector<std::pair<const void*, sublayer_calls>> tables;  // a model has one or two owners
  std::size_t current = 0;
  void (*destroy)(void*) = nullptr;
  sublayer_state() = default;
  sublayer_state(const sublayer_state&) {}
  sublayer_state& operator=(const sublayer_state&) { return *this; }
  ~sublayer_state() {
    for (auto& t : tables)
      for (void* s : t.second.slots) destroy(s);
  }
  /// The index of owner's table (made on its first call).
  std::size_t index(const void* owner) {
    std::size_t i = 0;
    while (i < tables.size() && tables[i].first != owner) ++i;
    if (i == tables.size()) tables.emplace_back(owner, sublayer_calls{});
    return i;
  }
};

/// The op of a sub-layer's call in its custom layer's expression (a boundary that runs itself):
/// its operands are the sub-layer's input and weights, so that autodiff sends the adjoint of the
/// output through it to both.
template <class S> struct sublayer_op {
  static constexpr bool runs_itself = true;
  using value_type = typename S::value_type;
  using shape_type = typename S::output_shape;
  dims_t<std::size_t(shape_type::rank)> out_dims{};
  const S* sub = nullptr;
  sublayer_slot<typename S::layer_type>* slot = nullptr;
  template <class X, class... W> void run(value_type* out, const X& x, const W&...) const { sub->run_call(*slot, out, x.data, x.dims); }
};

/// The extents of built layer L's output for an input of extents d.
template <class L, std::size_t R> auto output_dims(const L& l, const dims_t<R>& d) {
  if constexpr (differentiates_itself<L>) return L::output_dims(d);
  else return l.call(std::tuple_element_t<0, input_views<L>>(nullptr, d), inference_t{}).dims();
}

}  // namespace detail

/// @brief A sub-layer of a custom layer (a field: Keras's `self.dense = Dense(64)` in
/// `__init__`): Spec built for inputs of dtype T and shape In, with its name (Keras's automatic
/// one when the spec has none) and trainable flag. `sub(x, training)` calls it, in training mode
/// for `keras::training_t` and in inference mode for `keras::inference_t` (Keras's
/// `self.bn(x, training=False)` inside a training call: still recorded, so the adjoint reaches x).
///
/// A sub-layer's call is a boundary of its custom layer's expression: the sub-layer runs as the
/// layers of a model do (its own expression evaluated, recorded for its own backward pass in
/// training), and the custom layer's backward pass sends the adjoint of the call's output
/// through it. So the compiler sees each layer's expression once, however deep the nesting,
/// and a sub-layer called twice is one layer with two calls (its weights' gradients summed).
template <class Spec, DType T, ShapeType In> struct sublayer {
  using spec_type = Spec;
  using layer_type = typename Spec::template built<T, In>;
  using value_type = typename layer_type::value_type;
  using output_shape = detail::output_shape_t<layer_type>;
  using input_view = std::tuple_element_t<0, detail::input_views<layer_type>>;
  std::string name;
  bool trainable = true;
  layer_type layer;

  sublayer() : sublayer(Spec{}) {}
  explicit sublayer(const Spec& spec)
      : name(spec.name.empty() ? detail::auto_name(detail::snake_case(Spec::class_name)) : spec.name),
        trainable(spec.trainable),
        layer(detail::construct_layer<layer_type>(spec)) {}

  /// @brief The sub-layer's call on x (an expression of the custom layer's input, weights and
  /// other calls): a node of the custom layer's expression.
  template <class X, class Training> auto operator()(const X& x, Training training) const {
    using S = shape_t<input_view>;
    CTFLOW_STATIC_CHECK((std::is_same_v<value_t<X>, value_t<input_view>> && ctflow::detail::same_extents<S, shape_t<X>>()),
                        ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::"), ctflow::detail::fixed_string_of<[] { return Spec::class_name; }>(),
                                               ctflow::detail::fixed_string(": a sub-layer's input must have the dtype and shape it was built for: "),
                                               shape_string_v<S>, ctflow::detail::fixed_string(" x "), shape_string_v<shape_t<X>>));
    if constexpr (std::is_same_v<value_t<X>, value_t<input_view>> && ctflow::detail::same_extents<S, shape_t<X>>()) {
      auto& l = const_cast<layer_type&>(layer);  // a model's layers are its own: call() is const by convention
      const auto d = x.dims();
      if (!matches_static<S>(d)) throw_shape_error(("ctflow::keras: " + name).c_str(), "its input is not of the shape it was built for", S::extents, d);
      if (state_.tables.empty()) state_.current = state_.index(nullptr);  // a call outside any model's
      auto& calls = state_.tables[state_.current].second;
      if (calls.used == calls.slots.size()) calls.slots.push_back(nullptr);
      if (!calls.slots[calls.used]) {
        state_.destroy = [](void* p) { delete static_cast<slot_type*>(p); };
        calls.slots[calls.used] = new slot_type();
      }
      slot_type& s = *static_cast<slot_type*>(calls.slots[calls.used++]);
      s.trainable = calls.trainable;
      s.training = calls.training || training;
      s.inference_mode = !training;
      const detail::sublayer_op<sublayer> op{detail::output_dims(l, d), this, &s};
      return std::apply([&](auto&... w) { return expr::make_computed(op, x, w...); }, detail::weights_of(l));
    }
  }

 private:
  template <class> friend class layer_call;
  template <class> friend struct detail::sublayer_op;
  template <class> friend struct autodiff::rule;
  using slot_type = detail::sublayer_slot<layer_type>;

  /// Starts a call of the custom layer by owner (its layer_call): the sub-layer's weights train
  /// when `trains` (its custom layer's do) and its flag say so; `training` records its calls.
  void begin_call(const void* owner, bool trains, bool training) {
    state_.current = state_.index(owner);
    auto& calls = state_.tables[state_.current].second;
    calls.used = 0;
    calls.trainable = trains && trainable;
    calls.training = training;
  }
  /// Starts a backward pass of owner's call.
  void begin_backward(const void* owner) {
    auto& calls = state_.tables[state_.index(owner)].second;
    for (std::size_t i = 0; i < calls.used; ++i) static_cast<slot_type*>(calls.slots[i])->backward_done = false;
  }

  /// Runs call s on input x (memory of extents d) into out.
  template <std::size_t R> void run_call(slot_type& s, value_type* out, const value_t<input_view>* x, const dims_t<R>& d) const {
    input_view in(x, d);
    if (s.training) {  // kept until the backward pass (x may be the evaluator's scratch memory)
      detail::resize(s.x, d);
      executor<device_t<input_view>>::assign(s.x.data(), d, in);
      in = input_view(s.x.data(), d);
    }
    const auto y = s.call.forward(const_cast<layer_type&>(layer), s.trainable, {in}, s.training, s.inference_mode);
    executor<device_t<decltype(y)>>::assign(out, y.dims(), y);
  }

  /// The gradient for operand I of call s (0: its input, then its weights) given the adjoint g
  /// of its output: the call's backward pass runs on the first request of a pass.
  template <std::size_t I, class G> auto gradient(slot_type& s, const G& g) const {
    if (!s.backward_done) backward_call(s, g);
    const auto& r = std::get<I>(s.call.gradients());
    if (!r) throw value_error("ctflow::keras: " + name + ": no gradient for operand " + std::to_string(I) + " of its call");
    return TensorView<const value_t<decltype(*r)>, shape_t<decltype(*r)>, device_t<decltype(*r)>>(r->data(), r->dims());
  }

  template <class G> void backward_call(slot_type& s, const G& g) const {
    detail::resize(s.dy, g.dims());
    executor<device_t<G>>::assign(s.dy.data(), s.dy.dims(), g);
    backward_call(s);
  }
  void backward_call(slot_type& s) const {
    s.call.backward(const_cast<layer_type&>(layer), s.trainable, TensorView<const value_type, output_shape>(s.dy.data(), s.dy.dims()), {true}, name);
    s.backward_done = true;
  }
  mutable detail::sublayer_state state_;
};
/// @brief The sub-layer of Spec that takes Prev's output (a sublayer or a built layer).
template <class Prev, class Spec> using sublayer_after = sublayer<Spec, typename Prev::value_type, typename Prev::output_shape>;

namespace detail {
/// The place of an optional sub-layer that a custom layer's form does not have
/// (`std::conditional_t<projects, sublayer<...>, keras::detail::no_layer>`).
struct no_layer {};
}  // namespace detail

}  // namespace ctflow::keras

namespace ctflow::autodiff {

/// A sub-layer's call sends the adjoint of its output to its input (unless integer) and weights
/// through the sub-layer's own backward pass.
template <class S, class... Ops> struct rule<expr::Computed<keras::detail::sublayer_op<S>, Ops...>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = I > 0 || is_floating_v<value_t<typename S::input_view>>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) { return n.k.sub->template gradient<I>(*n.k.slot, g); }
};

}  // namespace ctflow::autodiff
