#pragma once
/// @brief What makes a type a ctflow expression, and how nodes hold their operands.

#include <concepts>
#include <type_traits>

#include <ctflow/core/device.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/core/shape.hpp>

namespace ctflow {

/// @brief A ctflow expression: a tensor, a view or a node. It names its dtype (`value_type`),
/// its static shape (`shape_type`) and its device, and reports its run-time extents (`dims()`).
template <class E> concept Expression = requires(const std::remove_cvref_t<E>& e) {
  typename std::remove_cvref_t<E>::ctflow_expression;
  typename std::remove_cvref_t<E>::value_type;
  typename std::remove_cvref_t<E>::shape_type;
  typename std::remove_cvref_t<E>::device_type;
  e.dims();
};

/// @brief An expression's dtype, static shape, device and rank (`value_t<decltype(e)>`).
template <Expression E> using value_t = typename std::remove_cvref_t<E>::value_type;
template <Expression E> using shape_t = typename std::remove_cvref_t<E>::shape_type;
template <Expression E> using device_t = typename std::remove_cvref_t<E>::device_type;
template <Expression E> inline constexpr int rank_v = shape_t<E>::rank;

/// @brief Leaves own or view memory (Tensor, Variable, TensorView); other expressions are nodes.
template <class E> struct is_leaf : std::false_type {};
template <class E> inline constexpr bool is_leaf_v = is_leaf<std::remove_cvref_t<E>>::value;

/// @brief How a node keeps an operand: an lvalue tensor by reference (no copy), anything else by
/// value (nodes are small; an rvalue tensor moves in, so `auto e = make() + x;` cannot dangle).
template <class E> struct stored { using type = std::remove_cvref_t<E>; };
template <class E> requires(is_leaf_v<E> && std::is_lvalue_reference_v<E> && !std::remove_cvref_t<E>::is_view)
struct stored<E> { using type = const std::remove_cvref_t<E>&; };
template <class E> using stored_t = typename stored<E>::type;

/// @brief The number a rank-0 tensor or expression holds, evaluated now: TensorFlow's
/// `float(t)` or `t.numpy()` of a scalar. Every expression of rank 0 also converts to its dtype
/// (`float acc = reduce_mean(x);`, `float(t)`) and has `.item()`, both through this function.
template <Expression E> requires(shape_t<E>::rank == 0) value_t<E> item(const E& e);

/// @brief A C++ number in arithmetic with a tensor (it takes the tensor's dtype).
template <class T> concept Number = std::is_arithmetic_v<std::remove_cvref_t<T>>;

/// @brief An operand of arithmetic with a tensor: an expression or a C++ number.
template <class T> concept Operand = Expression<T> || Number<T>;

}  // namespace ctflow
