#pragma once
/// @file
/// @brief The compiler's checks of a layer's inputs (a spec that cannot take the shape before it,
/// a merge of shapes that do not broadcast): one message each, naming the layers and shapes.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/detail/naming.hpp>

namespace ctflow::keras::detail {


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

}  // namespace ctflow::keras::detail
