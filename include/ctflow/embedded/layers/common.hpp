#pragma once
/// @file
/// @brief What the embedded layers share: a 2-D window's geometry, a weight array read as a
/// tensor of the shape the layer needs (its length and dtype checked by the compiler), and the
/// activation applied over a layer's output where it is written.
///
/// An embedded layer is a spec, its structure and weights as template arguments, whose
/// `built<T, In>` names `value_type`, `output_shape`, `params` (its weights' elements) and
/// `place` (embedded::placement), and runs with `run<D>(x, y)`: input view to output view on
/// device D. A layer evaluates each boundary (matmul, convolution, pooling) straight into its
/// output and the element-wise rest over it, so that no evaluation needs memory of its own.

#include <cstddef>
#include <type_traits>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::embedded {

/// @brief A 2-D window: kernel (or pool) extents, strides, dilation and padding, as
/// tf.nn.conv2d and tf.nn.max_pool2d take them.
struct window {
  std::size_t kh = 1, kw = 1;
  std::size_t sh = 1, sw = 1;
  std::size_t dh = 1, dw = 1;
  nn::padding padding = nn::VALID;
  constexpr bool operator==(const window&) const = default;
};

namespace detail {

/// The static extents of a 2-D window's output over NHWC input In.
template <class In, window W> constexpr std::size_t out_h() { return nn::detail::static_spatial(In::extents[1], W.kh, W.sh, W.dh, W.padding, 0); }
template <class In, window W> constexpr std::size_t out_w() { return nn::detail::static_spatial(In::extents[2], W.kw, W.sw, W.dw, W.padding, 1); }

/// Extents e with the last one replaced by n; extents e after a first one, n.
template <std::size_t R> constexpr dims_t<R> with_last(dims_t<R> e, std::size_t n) {
  e[R - 1] = n;
  return e;
}
template <std::size_t R> constexpr dims_t<R + 1> with_first(std::size_t n, const dims_t<R>& e) {
  dims_t<R + 1> r{n};
  for (std::size_t i = 0; i < R; ++i) r[i + 1] = e[i];
  return r;
}

/// The elements of weight array A (a reference to a C array).
template <const auto& A> inline constexpr std::size_t length = std::extent_v<std::remove_cvref_t<decltype(A)>>;
template <const auto& A> using element_t = std::remove_cvref_t<decltype(A[0])>;

/// Weight array A as a tensor of shape S on device D, for layer Layer: a length or dtype other
/// than the shape's is a compile error naming the layer, the weight and both.
template <ctflow::detail::fixed_string Layer, ctflow::detail::fixed_string Weight, class T, ShapeType S, class D, const auto& A>
TensorView<const T, S, D> weight() {
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  using ctflow::detail::fixed_string_of;
  using ctflow::detail::number_string;
  constexpr bool dtype_ok = std::is_same_v<element_t<A>, T>;
  CTFLOW_STATIC_CHECK(dtype_ok, concat(fixed_string("ctflow::embedded::"), Layer, fixed_string(": its "), Weight,
                                       fixed_string(" is not of the layer's dtype "), fixed_string_of<dtype_name<T>>()));
  constexpr bool length_ok = length<A> == S::static_size;
  CTFLOW_STATIC_CHECK(length_ok, concat(fixed_string("ctflow::embedded::"), Layer, fixed_string(": its "), Weight, fixed_string(" has "),
                                        number_string<length<A>>(), fixed_string(" values; the layer takes "), shape_string_v<S>));
  if constexpr (dtype_ok && length_ok) return TensorView<const T, S, D>(&A[0]);
  else return TensorView<const T, S, D>(static_cast<const T*>(nullptr));
}

/// Whether activation A is the identity (keras.activations.linear).
template <auto A> inline constexpr bool is_linear = std::is_same_v<std::remove_cvref_t<decltype(A)>, keras::activations::linear_t>;

/// Whether expression E is element-wise all through: numbers and tensors combined element by
/// element, with no boundary inside (one that needs memory of its own to evaluate).
template <class E> struct pure_elementwise : std::bool_constant<is_leaf_v<E>> {};
template <class T> struct pure_elementwise<expr::Scalar<T>> : std::true_type {};
template <class F, class E> struct pure_elementwise<expr::Unary<F, E>> : pure_elementwise<std::remove_cvref_t<E>> {};
template <class F, class L, class R> struct pure_elementwise<expr::Binary<F, L, R>>
    : std::bool_constant<pure_elementwise<std::remove_cvref_t<L>>::value && pure_elementwise<std::remove_cvref_t<R>>::value> {};
template <class C, class A, class B> struct pure_elementwise<expr::Select<C, A, B>>
    : std::bool_constant<pure_elementwise<std::remove_cvref_t<C>>::value && pure_elementwise<std::remove_cvref_t<A>>::value &&
                         pure_elementwise<std::remove_cvref_t<B>>::value> {};

/// Whether activation A is element-wise all through over tensors of dtype T and shape S (it can
/// be written over its operand, with no memory of its own); softmax and log_softmax are not.
template <auto A, class T, ShapeType S> inline constexpr bool elementwise_activation =
    pure_elementwise<std::remove_cvref_t<decltype(A(std::declval<const TensorView<const T, S>&>()))>>::value;

/// y = activation(y + bias) (or activation(y), or nothing where both are absent), over y where
/// the layer's boundary wrote it.
template <ctflow::detail::fixed_string Layer, auto A, class T, ShapeType S, class D, const auto&... Bias>
void bias_and_activation(TensorView<T, S, D> y) {
  static_assert(elementwise_activation<A, T, S>,
                "ctflow::embedded: a layer's activation must be element-wise; give softmax as a layer of its own (embedded::Activation)");
  if constexpr (sizeof...(Bias) == 1) {
    constexpr std::size_t units = S::extents[std::size_t(S::rank - 1)];
    const auto b = weight<Layer, ctflow::detail::fixed_string("bias"), T, Shape<extent_t(units)>, D, Bias...>();
    if constexpr (is_linear<A>) y = y + b;
    else y = A(y + b);
  } else if constexpr (!is_linear<A>) {
    y = A(y);
  }
}

}  // namespace detail
}  // namespace ctflow::embedded
