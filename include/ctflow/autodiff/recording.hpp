#pragma once
/// @file
/// @brief `autodiff::recording`: value_and_grad for an expression of any shape, in two steps. It
/// evaluates the expression now, keeping what its gradient needs (every boundary computed once,
/// as value_and_grad's forward pass does), and later, given the adjoint g of its value (TensorFlow's
/// `output_gradients`), returns the gradients of <g, e> with respect to chosen leaves: a vector-
/// Jacobian product. Keras's layers train through it: the forward pass of a layer records, the
/// backward pass sends the adjoint of its output back to its input and its weights.

#include <tuple>

#include <ctflow/autodiff/backward.hpp>

namespace ctflow::autodiff {

/// @brief The recorded evaluation of an expression E, and its gradients with respect to leaves of
/// types V... (an input view, variables). Neither copyable nor movable: what it keeps refers to it.
template <class E, class... V> class recording {
 public:
  using value_type = value_t<E>;
  using device = device_of<E>;
  /// @brief One maybe<Tensor> per leaf asked for: empty when none was asked for, or when the
  /// expression does not reach it.
  using gradients = std::tuple<maybe<Tensor<value_t<V>, shape_t<V>, device_t<V>>>...>;

  /// @brief Evaluates e into out (e's extents, contiguous), keeping its boundaries' values.
  recording(E e, value_type* out) : expr_(std::move(e)), frozen_(freeze_into(expr_, ws_, out)) {}
  recording(const recording&) = delete;
  recording& operator=(const recording&) = delete;

  /// @brief The gradients of <g, e> with respect to the leaves vs point to (null: not wanted),
  /// g the adjoint of e's value (e's shape).
  template <Expression G> gradients gradient(const G& g, const V*... vs) { return gradient(nullptr, g, vs...); }
  /// @brief As above, given the memory of g's value (g a view of it) that its owner no longer
  /// needs: the walk may overwrite it with the first adjoint it keeps (the backward pass of an
  /// activation then takes no memory of its own).
  template <Expression G> gradients gradient(value_type* writable_g, const G& g, const V*... vs) { return run([](auto&) {}, frozen_, writable_g, g, vs...); }

  /// @brief Whether E is an activation over a layer's sum whose adjoint reads only the
  /// activation's value (autodiff::activated_sum: relu(conv2d(x, kernel) + bias)). Its adjoint
  /// can then be taken wherever that value is known, and passed on by
  /// `gradient_below_activation`: a max pooling after it takes it at the pooled size, where each
  /// element is its input's value at the one place its gradient reaches.
  static constexpr bool activation_from_value = activated_sum<E>::value;
  /// @brief The activation's adjoint, given g the adjoint of its value y (any extents: y's
  /// elements are values the activation gave).
  template <Expression G, Expression Y> auto activation_adjoint(const G& g, const Y& y) const requires activation_from_value {
    return rule<expr::Unary<decltype(expr_.f), Y>>::template vjp<0>(expr::Unary<decltype(expr_.f), Y>{expr_.f, y}, g, y);
  }
  /// @brief As gradient, given g the adjoint of the activation's operand (activation_adjoint
  /// already taken) as a max pooling's gradient spread it from `pooled`, that adjoint over the
  /// pooled extents: each pooled element's adjoint reaches one element of g, on its channel, so
  /// both sum to the same per channel, and the bias (one value per channel) takes its gradient
  /// from pooled, a quarter of g's elements for 2 x 2 windows.
  template <Expression G, Expression P>
  gradients gradient_below_activation(value_type* writable_g, const G& g, const P& pooled, const V*... vs) requires activation_from_value {
    const auto& sum = expr::nth_operand<0>(frozen_.node);
    using S = std::remove_cvref_t<decltype(sum.node)>;
    constexpr std::size_t bias = is_leaf_v<std::remove_cvref_t<operand_t<0, S>>> ? 0 : 1;
    static_assert(shape_t<operand_t<bias, S>>::rank == 1, "the bias of an activated sum below a max pooling is one value per channel");
    auto bias_gradient = [&](auto& acc) {
      using Acc = std::remove_cvref_t<decltype(acc)>;
      if constexpr (flows<bias, S, Acc>())
        if (live<bias>(sum.node, acc)) backprop(operand<bias>(sum.node), rule<S>::template vjp<bias>(sum.node, pooled, sum.value()), acc);
    };
    const auto& boundary = operand<1 - bias>(sum.node);
    return run(bias_gradient, boundary, writable_g, rule<S>::template vjp<1 - bias>(sum.node, g, sum.value()), vs...);
  }

 private:
  /// Sends g down from root (after `first`, which sends what reads no kept value).
  template <class First, class R, class G> gradients run(First first, const R& root, value_type* writable_g, const G& g, const V*... vs) {
    for (auto& k : ws_.kept) {
      k.expected = k.received = 0;
      k.adjoint = {};
    }
    accumulator<workspace_type, V...> acc{&ws_, {vs...}, {}};
    if (writable_g) {
      acc.donated = writable_g;
      acc.donated_bytes = product(g.dims()) * sizeof(value_type);
    }
    count_reads(root, acc);
    first(acc);
    backprop(root, g, acc);
    return std::move(acc.grads);
  }

  using workspace_type = workspace<slots<E>() + 1, device>;
  using frozen_type = decltype(freeze_into(std::declval<const E&>(), std::declval<workspace_type&>(), static_cast<value_type*>(nullptr)));
  E expr_;
  workspace_type ws_;
  frozen_type frozen_;
};

}  // namespace ctflow::autodiff
