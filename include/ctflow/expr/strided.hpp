#pragma once
// A view node: its elements are those of its operand read through an offset and strides
// (transpose, slice, strided_slice, reverse, broadcast_to, reshape, expand_dims, squeeze).
// Over a tensor it copies nothing and fuses into the loop that reads it.

#include <array>
#include <cstddef>
#include <type_traits>

#include <ctflow/core/concepts.hpp>

namespace ctflow::expr {

/// Memory seen through extents and element strides (strides may be 0 or negative).
template <class T, std::size_t R> struct strided_view {
  const T* data = nullptr;
  dims_t<R> dims{};
  std::array<std::ptrdiff_t, R> strides{};
  bool contiguous() const { return strides == row_major_strides(dims); }
};

/// M maps the operand's view to the output's: `bool map(in, out) const` returns false when it
/// needs a contiguous operand (reshape of a transposed tensor); it then gets one.
template <class E, class S, class M> struct Strided {
  using ctflow_expression = void;
  using value_type = value_t<E>;
  using shape_type = S;
  using device_type = device_t<E>;
  M m;
  stored_t<E> e;
  dims_t<S::rank> dims() const { return m.out_dims; }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
};

/// Whether node N is a view (Strided).
template <class N> struct is_strided : std::false_type {};
template <class E, class S, class M> struct is_strided<Strided<E, S, M>> : std::true_type {};

}  // namespace ctflow::expr
