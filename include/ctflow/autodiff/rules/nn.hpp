#pragma once
// Gradient rules of tf.nn's kernels and tf.image.resize (its adjoint kernel, float32 images).
// conv2d: TensorFlow's Conv2DBackpropInput and Conv2DBackpropFilter, ops of their own;
// conv2d_transpose (a Conv2DBackpropInput node): conv2d and Conv2DBackpropFilter with the roles of
// image and adjoint swapped. depthwise_conv2d: its two direct backward kernels. fused_batch_norm:
// FusedBatchNormGrad, one kernel per operand. Pooling: max routes the adjoint to each window's
// first element equal to its maximum (under value_and_grad from the positions the forward pass
// saved, MaxPoolGradWithArgmax; in `grad`'s expressions from x and y, MaxPoolGrad), average
// spreads it over the valid elements. Sparse softmax cross-entropy: g * (softmax(x) -
// one_hot(label)), under value_and_grad from the softmax the forward pass saved, in `grad`'s
// expressions from the forward losses; labels take none. (softmax, log_softmax and the other
// losses are compositions of ops with rules of their own.)

#include <ctflow/ops/image.hpp>
#include <ctflow/ops/nn/conv.hpp>
#include <ctflow/ops/nn/depthwise.hpp>
#include <ctflow/ops/nn/losses.hpp>
#include <ctflow/ops/nn/normalization.hpp>
#include <ctflow/ops/nn/pool.hpp>
#include <ctflow/autodiff/rule.hpp>

namespace ctflow::autodiff {

/// A backward kernel K of node n: n's geometry, the extents of n's operand I, over ops.
template <class K, std::size_t I, class N, class... Ops> auto adjoint_node(const N& n, Ops&&... ops) {
  K k;
  k.g = n.k.g;
  k.out_dims = operand<I>(n).dims();
  return expr::make_computed(k, std::forward<Ops>(ops)...);
}

template <class T, class I, class SL, class SX, class L, class X>
struct rule<expr::Computed<nn::detail::sparse_xent_op<T, I, SL, SX>, L, X>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = Op == 1 && is_floating_v<T>;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y& y) {
    static_assert(Op == 1);
    nn::detail::sparse_xent_grad_op<T, I, SL, SX> k;
    k.out_dims = operand<1>(n).dims();
    return expr::make_computed(k, operand<0>(n), operand<1>(n), Y(y), G(g));
  }

  /// From the softmax the forward pass saved (its rows, then a scale per row).
  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&, const T* saved) {
    static_assert(Op == 1);
    nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX> k;
    k.out_dims = operand<1>(n).dims();
    const auto rows = operand<0>(n).dims();
    return expr::make_computed(k, operand<0>(n), TensorView<const T, SX, device_of<N>>(saved, k.out_dims),
                               TensorView<const T, SL, device_of<N>>(saved + product(k.out_dims), rows), G(g));
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P, class X, class F>
struct rule<expr::Computed<nn::detail::conv2d_op<T, SX, SF, P>, X, F>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = true;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    if constexpr (Op == 0) {
      return adjoint_node<nn::detail::conv2d_backprop_input_op<T, SX, SF, P>, 0>(n, G(g), operand<1>(n));
    } else {
      return adjoint_node<nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>, 1>(n, operand<0>(n), G(g));
    }
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P, class DY, class F>
struct rule<expr::Computed<nn::detail::conv2d_backprop_input_op<T, SX, SF, P>, DY, F>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = true;

  // y = conv2d^T(dy, f), so <g, y> = <conv2d(g, f), dy>.
  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    if constexpr (Op == 0) {
      return adjoint_node<nn::detail::conv2d_op<T, SX, SF, P>, 0>(n, G(g), operand<1>(n));
    } else {
      return adjoint_node<nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>, 1>(n, G(g), operand<0>(n));
    }
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P, class X, class F>
struct rule<expr::Computed<nn::detail::depthwise_op<T, SX, SF, P>, X, F>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = true;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    if constexpr (Op == 0) {
      return adjoint_node<nn::detail::depthwise_backprop_input_op<T, SX, SF, P>, 0>(n, G(g), operand<1>(n));
    } else {
      return adjoint_node<nn::detail::depthwise_backprop_filter_op<T, SX, SF, P>, 1>(n, operand<0>(n), G(g));
    }
  }
};

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, nn::padding Pad, bool Max, class X>
struct rule<expr::Computed<nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max>, X>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = true;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y& y) {
    if constexpr (Max) {
      return adjoint_node<nn::detail::max_pool_grad_op<T, SX, KH, KW>, 0>(n, operand<0>(n), y, G(g));
    } else {
      return adjoint_node<nn::detail::avg_pool_grad_op<T, SX>, 0>(n, G(g));
    }
  }
  /// Max pooling under value_and_grad: from the window positions its forward pass saved.
  template <std::size_t Op, class N, class G, class Y, class P> static auto vjp(const N& n, const G& g, const Y&, const P* saved) {
    return adjoint_node<nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW>, 0>(n, G(g), TensorView<const P, shape_t<N>, device_of<N>>(saved, n.dims()));
  }
};

template <class T, class SX, std::size_t H, std::size_t W, class X>
struct rule<expr::Computed<image::detail::resize_op<T, SX, H, W>, X>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = std::is_same_v<T, float>;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    return adjoint_node<image::detail::resize_grad_op<SX>, 0>(n, G(g));
  }
};

template <class T, class SX, class X, class S, class O>
struct rule<expr::Computed<nn::detail::batch_norm_op<T, SX>, X, S, O>> {
  static constexpr bool known = true;
  template <std::size_t Op> static constexpr bool differentiable = true;

  template <std::size_t Op, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    if constexpr (Op == 0) {
      return adjoint_node<nn::detail::batch_norm_input_grad_op<T, SX>, 0>(n, operand<0>(n), operand<1>(n), G(g));
    } else if constexpr (Op == 1) {
      return adjoint_node<nn::detail::batch_norm_scale_grad_op<T, SX, shape_t<S>>, 1>(n, operand<0>(n), G(g));
    } else {
      // The offset's adjoint: the sum of g over every axis but the channels.
      using SG = Shape<dyn, extent_t(shape_t<O>::extents[0])>;
      return reduce_sum<0>(reshape<SG>(G(g), dims_t<2>{n.k.g.rows, n.k.g.c}));
    }
  }
};

}  // namespace ctflow::autodiff
