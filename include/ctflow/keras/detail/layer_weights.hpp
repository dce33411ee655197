#pragma once
/// @file
/// @brief A built layer's weights, walked once: walk_layer visits its weights in Keras's order
/// (with their regularizers) and its sub-layers, and everything a model reads of a layer's
/// weights (their tuple, which of them train, their regularizers, its description) follows from
/// that one walk. Also what the compiler derives from a built layer's type: its inputs' views,
/// its output's shape, its construction from a spec.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/detail/reflect.hpp>
#include <ctflow/keras/layer_base.hpp>
#include <ctflow/keras/regularizers.hpp>

namespace ctflow::keras::detail {

template <class V> struct is_variable_type : std::false_type {};
template <class T, class S, class D> struct is_variable_type<Variable<T, S, D>> : std::true_type {};
/// A field that is a sub-layer (keras::sublayer).
template <class F> concept sublayer_field = requires(F& f) {
  typename F::layer_type;
  f.layer;
  f.name;
};
/// The device built layer L runs on: its device_type (cpu where it names none).
template <class L> struct layer_device { using type = cpu; };
template <class L> requires requires { typename L::device_type; } struct layer_device<L> { using type = typename L::device_type; };
template <class L> using layer_device_t = typename layer_device<std::remove_const_t<L>>::type;
/// Spec built for inputs of dtype T and shape In on device D: its `built<T, In, D>`; a spec whose
/// built form takes no device (a custom layer written without one) is built for cpu alone.
template <class Spec, class T, class In, class D> struct built_on {
  static_assert(std::is_same_v<D, cpu>, "ctflow::keras: this layer's built form takes no device (template <class T, ShapeType In, class D> struct built, "
                                        "its weights Variable<T, S, D>), so it runs on cpu alone");
  using type = typename Spec::template built<T, In>;
};
template <class Spec, class T, class In, class D> requires requires { typename Spec::template built<T, In, D>; }
struct built_on<Spec, T, In, D> {
  using type = typename Spec::template built<T, In, D>;
};
template <class Spec, class T, class In, class D> using built_on_t = typename built_on<Spec, T, In, D>::type;
/// A built layer that lists its weights itself (the built-in layers).
template <class L> concept lists_weights = requires(L& l) { l.weights(); };
/// A custom layer's built form: an aggregate over keras::Layer.
template <class L> concept custom_layer = !lists_weights<L> && std::is_aggregate_v<L> && requires {
  typename L::spec_type;
  requires std::is_base_of_v<Layer<typename L::spec_type, typename L::value_type, typename L::input_shape, layer_device_t<L>>, L>;
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
                "ctflow::keras: a layer lists its weights (weights()) or is a custom layer: an aggregate over keras::Layer<Spec, T, In[, D]>");
  using type = typename field_weights<decltype(custom_fields(std::declval<L&>()))>::type;
};

/// The types of a built layer's weights, as a tuple of references.
template <class L> using weights_tuple = typename weight_list<L>::type;

template <class L> constexpr std::size_t weight_count() { return std::tuple_size_v<weights_tuple<L>>; }

/// No regularizer (a weight that has none).
inline const regularizers::Regularizer& no_regularizer() {
  static const regularizers::Regularizer none{};
  return none;
}

template <std::size_t I> using index_t = std::integral_constant<std::size_t, I>;

/// The number of weights field F of a custom layer brings: 1 for a Variable, a sub-layer's count.
template <class F> constexpr std::size_t field_weight_count() {
  if constexpr (is_variable_type<std::remove_const_t<F>>::value) return 1;
  else if constexpr (sublayer_field<std::remove_const_t<F>>) return std::tuple_size_v<typename weight_list<typename std::remove_const_t<F>::layer_type>::type>;
  else return 0;
}
/// Where each field's weights start in a custom layer's list of weights (fields of types F...):
/// its own Variables first, in field order, then its sub-layers' weights, in field order.
template <class... F> constexpr auto field_offsets(std::tuple<F&...>*) {
  constexpr std::size_t n = sizeof...(F);
  constexpr std::array<bool, n + 1> own{is_variable_type<std::remove_const_t<F>>::value..., false};
  constexpr std::array<std::size_t, n + 1> count{field_weight_count<F>()..., 0};
  std::array<std::size_t, n + 1> at{};
  std::size_t next = 0;
  for (std::size_t j = 0; j < n; ++j) next += own[j];
  for (std::size_t j = 0, mine = 0; j < n; ++j) {
    if (own[j]) at[j] = mine++;
    else {
      at[j] = next;
      next += count[j];
    }
  }
  return at;
}

/// The handler of sub-layers that walks into each.
struct into_sublayers {
  template <class S, class D> void operator()(S&, D descend) const { descend(); }
};

/// The one walk over built layer l's weights and sub-layers. For each weight w, in Keras's order,
/// `on_weight(index_t<I>{}, w, regularizer)`, I its place in weights_of(l) (from First: the place
/// of l's first weight in an enclosing custom layer's list); for each sub-layer field s of a
/// custom layer, after its own Variables, `on_sublayer(s, descend)`, descend() walking s's layer
/// (by default, every sub-layer is walked).
template <std::size_t First = 0, class L, class W, class S = into_sublayers> void walk_layer(L& l, W&& on_weight, S&& on_sublayer = {}) {
  using M = std::remove_const_t<L>;
  if constexpr (lists_weights<M>) {
    auto& m = const_cast<M&>(l);  // a built-in layer's weights() is not const
    auto w = m.weights();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (requires { m.weight_regularizers(); }) {
        const auto r = m.weight_regularizers();
        (on_weight(index_t<First + I>{}, std::get<I>(w), static_cast<const regularizers::Regularizer&>(std::get<I>(r))), ...);
      } else {
        (on_weight(index_t<First + I>{}, std::get<I>(w), no_regularizer()), ...);
      }
    }(std::make_index_sequence<std::tuple_size_v<decltype(w)>>{});
  } else {
    auto f = custom_fields(l);
    using fields_type = decltype(custom_fields(std::declval<L&>()));
    static constexpr auto at = field_offsets(static_cast<fields_type*>(nullptr));
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      ([&] {
        if constexpr (is_variable_type<std::remove_cvref_t<std::tuple_element_t<J, fields_type>>>::value)
          on_weight(index_t<First + at[J]>{}, std::get<J>(f), no_regularizer());
      }(), ...);
      ([&] {
        if constexpr (sublayer_field<std::remove_cvref_t<std::tuple_element_t<J, fields_type>>>) {
          auto& s = std::get<J>(f);
          on_sublayer(s, [&] { walk_layer<First + at[J]>(s.layer, on_weight, on_sublayer); });
        }
      }(), ...);
    }(std::make_index_sequence<std::tuple_size_v<fields_type>>{});
  }
}

/// The weights of built layer l, as a tuple of references (weights_tuple<L>).
template <class L> weights_tuple<L> weights_of(L& l) {
  if constexpr (lists_weights<std::remove_const_t<L>>) {
    return const_cast<std::remove_const_t<L>&>(l).weights();
  } else {
    using W = weights_tuple<L>;
    auto at = []<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<std::remove_reference_t<std::tuple_element_t<I, W>>*...>{};
    }(std::make_index_sequence<std::tuple_size_v<W>>{});
    walk_layer(l, [&]<std::size_t I>(index_t<I>, auto& w, const regularizers::Regularizer&) { std::get<I>(at) = &w; });
    return std::apply([](auto*... p) { return W(*p...); }, at);
  }
}

template <class L, std::size_t... I> constexpr std::size_t param_count(std::index_sequence<I...>) {
  return (std::size_t(0) + ... + static_size<std::remove_cvref_t<std::tuple_element_t<I, weights_tuple<L>>>>());
}

/// The regularizers of l's weights, parallel to weights_of(l) (one per weight, no_regularizer()
/// for a weight that has none).
template <class L> std::array<const regularizers::Regularizer*, weight_count<L>()> regularizers_of(const L& l) {
  std::array<const regularizers::Regularizer*, weight_count<L>()> r{};
  walk_layer(l, [&]<std::size_t I>(index_t<I>, auto&, const regularizers::Regularizer& reg) { r[I] = &reg; });
  return r;
}

/// Whether each weight of l trains (out[i] for weight i), given whether l does: its own flag and,
/// in a custom layer, its sub-layer's.
template <class L> void weight_trains(L& l, bool trains, bool* out) {
  walk_layer(
      l, [&]<std::size_t I>(index_t<I>, auto& w, const regularizers::Regularizer&) { out[I] = trains && w.trainable(); },
      [&](auto& s, auto descend) {
        const bool outer = trains;
        trains = trains && s.trainable;
        descend();
        trains = outer;
      });
}

/// f(s) for each sub-layer s of built layer l (a custom layer's sublayer fields; not theirs).
template <class L, class F> void each_sublayer(L& l, F&& f) {
  walk_layer(l, [](auto, auto&, const regularizers::Regularizer&) {}, [&](auto& s, auto) { f(s); });
}

/// The dtype of L's input: its input_value_type where it differs from its output's (Embedding).
template <class L> struct input_value { using type = typename L::value_type; };
template <class L> requires requires { typename L::input_value_type; } struct input_value<L> { using type = typename L::input_value_type; };

/// The views a call of built layer L reads: one of input_shape, or one per shape of input_shapes
/// (the merge layers: Add, Concatenate, Multiply).
template <class L, class Shapes> struct views_of;
template <class L, class... S> struct views_of<L, std::tuple<S...>> {
  using type = std::tuple<TensorView<const typename input_value<L>::type, S, layer_device_t<L>>...>;
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

}  // namespace ctflow::keras::detail

namespace ctflow::keras {
/// @brief The parameters of built layer L, known to the compiler (Keras's count_params()).
template <class L> constexpr std::size_t count_params() {
  return detail::param_count<L>(std::make_index_sequence<detail::weight_count<L>()>{});
}
}  // namespace ctflow::keras
