#pragma once
// What grad, value_and_grad and jvp check of their arguments at compile time (one error naming
// the first broken rule) and at run time (a variable the loss does not reach).

#include <string>

#include <ctflow/autodiff/custom_gradient.hpp>
#include <ctflow/autodiff/rules/array.hpp>
#include <ctflow/autodiff/rules/elementwise.hpp>
#include <ctflow/autodiff/rules/linalg.hpp>
#include <ctflow/autodiff/rules/nn.hpp>
#include <ctflow/autodiff/rules/reduction.hpp>

namespace ctflow {

/// @brief What a gradient is when a variable is not connected to the loss (TensorFlow's
/// tf.UnconnectedGradients): an error (`none`, the default, since there is no None tensor
/// to return) or zeros.
enum class unconnected_gradients { none, zero };

namespace autodiff {

template <class L, class... V> struct grad_rules {
  static constexpr bool scalar = shape_t<L>::rank == 0;
  static constexpr bool floating = is_floating_v<value_t<L>>;
  static constexpr bool leaves = (is_leaf_v<V> && ...);
  static constexpr bool float_leaves = [] {
    if constexpr (leaves) return (is_floating_v<value_t<V>> && ...);
    else return false;
  }();
  static constexpr bool present = (holds_leaf<L, V>() && ...);
  static constexpr bool ok = scalar && floating && leaves && float_leaves && present;
};

/// Reports the first rule grad's arguments break (one error, naming what is wrong).
template <class L, class... V> constexpr void check_grad() {
  using R = grad_rules<L, V...>;
  CTFLOW_STATIC_CHECK(R::scalar, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::grad: loss must be a scalar, got shape "),
                                                        shape_string_v<shape_t<L>>,
                                                        ctflow::detail::fixed_string("; reduce it with ctflow::reduce_sum or reduce_mean")));
  CTFLOW_STATIC_CHECK(!R::scalar || R::floating, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::grad: loss must be floating, got "),
                                                                        ctflow::detail::fixed_string_of<dtype_name<value_t<L>>>()));
  CTFLOW_STATIC_CHECK(!R::scalar || !R::floating || R::leaves, ctflow::detail::fixed_string("ctflow::grad: differentiate with respect to tensors or variables"));
  CTFLOW_STATIC_CHECK(!R::scalar || !R::floating || !R::leaves || R::float_leaves,
                      ctflow::detail::fixed_string("ctflow::grad: cannot differentiate with respect to an integer or bool tensor"));
  if constexpr (R::scalar && R::floating && R::leaves && R::float_leaves && !R::present) {
    constexpr std::size_t absent = [] {
      constexpr bool held[] = {holds_leaf<L, V>()...};
      std::size_t i = 0;
      while (held[i]) ++i;
      return i;
    }();
    using A = std::tuple_element_t<absent, std::tuple<V...>>;
    CTFLOW_STATIC_CHECK(false, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::grad: no leaf of the loss has the type of argument "),
                                                      ctflow::detail::number_string<absent + 1>(), ctflow::detail::fixed_string(", "),
                                                      ctflow::detail::fixed_string_of<dtype_name<value_t<A>>>(), ctflow::detail::fixed_string(" "),
                                                      shape_string_v<shape_t<A>>));
  }
}

template <class V> std::string describe(const V& v, std::size_t i) {
  if constexpr (requires { v.name(); }) return "variable '" + v.name() + "'";
  else return "argument " + std::to_string(i + 1);
}

[[noreturn]] inline void unconnected(const std::string& what) {
  throw value_error("ctflow::grad: " + what + " is not connected to the loss; pass ctflow::unconnected_gradients::zero to get zeros");
}

}  // namespace autodiff

}  // namespace ctflow
