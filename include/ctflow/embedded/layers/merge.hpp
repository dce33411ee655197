#pragma once
/// @file
/// @brief The embedded merge layers, nodes of an embedded::Model that read two or more
/// activations: embedded::Add, Subtract, Multiply, Average, Maximum and Minimum (element-wise,
/// broadcast as keras.layers' merges broadcast, folded from the left as Keras folds them; written
/// over the first input where it has the output's shape and nothing reads it later) and
/// embedded::Concatenate<Axis>.
///
///     embedded::Node<embedded::Add, 2, 0>                 // activation 2 + the network's input
///     embedded::Node<embedded::Concatenate<-1>, 3, 4, 5>  // channels of three branches

#include <cstddef>
#include <tuple>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/math.hpp>

namespace ctflow::embedded {

namespace detail {

/// The shape In... broadcast together, or void where they cannot be.
template <class... In> struct broadcast_all;
template <class S> struct broadcast_all<S> { using type = S; };
template <class A, class B, class... Rest> struct broadcast_all<A, B, Rest...> {
  using type = std::conditional_t<broadcastable_v<A, B>, typename broadcast_all<broadcast_shape_t<A, B>, Rest...>::type, void>;
};

/// An element-wise merge: F folds two operands' expressions into one; Mean divides the sum by
/// the count (Average); Two takes exactly two inputs (Subtract).
template <class F, bool Mean = false, bool Two = false> struct elementwise_merge {
  template <class T, ShapeType... In> struct built {
    static_assert(sizeof...(In) >= 2, "ctflow::embedded: a merge layer reads two activations or more");
    static_assert(!Two || sizeof...(In) == 2, "ctflow::embedded::Subtract: reads exactly two activations");
    using joined = typename broadcast_all<In...>::type;
    static_assert(!std::is_void_v<joined>, "ctflow::embedded: a merge layer's inputs must broadcast together");
    using value_type = T;
    using output_shape = std::conditional_t<std::is_void_v<joined>, std::tuple_element_t<0, std::tuple<In...>>, joined>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = std::is_same_v<std::tuple_element_t<0, std::tuple<In...>>, output_shape> ? placement::in_place : placement::buffer;

    template <class D, class... X> static void run(const std::tuple<X...>& x, TensorView<T, output_shape, D> y) {
      std::apply(
          [&](const auto& first, const auto&... rest) {
            auto folded = fold(first, rest...);
            if constexpr (Mean) y = folded / T(sizeof...(In));
            else y = folded;
          },
          x);
    }

   private:
    template <class A> static auto fold(const A& a) { return a; }
    template <class A, class B, class... R> static auto fold(const A& a, const B& b, const R&... rest) { return fold(F{}(a, b), rest...); }
  };
};

struct plus_fn {
  template <class A, class B> auto operator()(const A& a, const B& b) const { return a + b; }
};
struct minus_fn {
  template <class A, class B> auto operator()(const A& a, const B& b) const { return a - b; }
};
struct times_fn {
  template <class A, class B> auto operator()(const A& a, const B& b) const { return a * b; }
};
struct max_fn {
  template <class A, class B> auto operator()(const A& a, const B& b) const { return maximum(a, b); }
};
struct min_fn {
  template <class A, class B> auto operator()(const A& a, const B& b) const { return minimum(a, b); }
};

}  // namespace detail

/// @brief keras.layers.Add: x0 + x1 + ...
struct Add : detail::elementwise_merge<detail::plus_fn> {};
/// @brief keras.layers.Subtract: x0 - x1.
struct Subtract : detail::elementwise_merge<detail::minus_fn, false, true> {};
/// @brief keras.layers.Multiply: x0 * x1 * ...
struct Multiply : detail::elementwise_merge<detail::times_fn> {};
/// @brief keras.layers.Average: (x0 + x1 + ...) / n.
struct Average : detail::elementwise_merge<detail::plus_fn, true> {};
/// @brief keras.layers.Maximum and Minimum: the element-wise extreme.
struct Maximum : detail::elementwise_merge<detail::max_fn> {};
struct Minimum : detail::elementwise_merge<detail::min_fn> {};

/// @brief keras.layers.Concatenate(axis=Axis): the inputs joined along Axis (negative: from the
/// end; the batch axis is 0), which they agree off.
template <int Axis = -1> struct Concatenate {
  template <class T, ShapeType... In> struct built {
    static_assert(sizeof...(In) >= 2, "ctflow::embedded::Concatenate: reads two activations or more");
    static constexpr int rank = std::tuple_element_t<0, std::tuple<In...>>::rank;
    static constexpr int axis = Axis < 0 ? Axis + rank : Axis;
    static_assert(axis > 0 && axis < rank, "ctflow::embedded::Concatenate: the axis must be one of the inputs' axes other than the batch");
    static_assert(ops::concat_ok<(axis > 0 && axis < rank ? axis : 1), In...>(), "ctflow::embedded::Concatenate: the inputs must agree on every axis but the one joined");
    using value_type = T;
    using output_shape = shape_of<ops::concat_extents<(axis > 0 && axis < rank ? axis : 1), In...>()>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;

    template <class D, class... X> static void run(const std::tuple<X...>& x, TensorView<T, output_shape, D> y) {
      std::apply([&](const auto&... xs) { y = concat<axis>(xs...); }, x);
    }
  };
};

}  // namespace ctflow::embedded
