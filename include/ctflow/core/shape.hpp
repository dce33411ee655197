#pragma once
/// @brief Shapes in types: `Shape<64, 28, 28, 1>`, with `dyn` for an extent known at run time
/// (TensorFlow's None), and the compile-time shape algebra ops use (broadcasting, formatting).

#include <array>
#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include <ctflow/core/errors.hpp>

namespace ctflow {

/// @brief The type of Shape's template arguments. It is signed so that a `dyn` extent shows as
/// -1 in what the compiler prints of a type (`Shape<-1, 784>`), not as 18446744073709551615.
using extent_t = std::ptrdiff_t;

/// @brief The type of `dyn`: -1 as a Shape argument (extent_t), the largest std::size_t among
/// run-time extents (dims_t), and equal to either.
struct dyn_t {
  constexpr operator extent_t() const { return -1; }
  constexpr operator std::size_t() const { return static_cast<std::size_t>(-1); }
  template <std::integral I> friend constexpr bool operator==(I v, dyn_t) {
    if constexpr (std::is_signed_v<I>) return v == -1;
    else return std::size_t(v) == static_cast<std::size_t>(-1);
  }
};

/// @brief An extent known only at run time (TensorFlow's None).
inline constexpr dyn_t dyn{};
/// @brief The largest rank an expression may have.
inline constexpr int max_rank = 8;

/// @brief Run-time extents of a rank-R tensor (what `dims()` and `shape()` return).
template <std::size_t R> using dims_t = std::array<std::size_t, R>;

/// @brief A tensor shape: its extents as template arguments, each a number or `dyn`.
template <extent_t... E> struct Shape {
  static constexpr int rank = int(sizeof...(E));
  static_assert(rank <= max_rank, "ctflow::Shape: rank above ctflow::max_rank");
  static_assert(((E >= 0 || E == dyn) && ...), "ctflow::Shape: an extent is a number or dyn");
  static constexpr dims_t<sizeof...(E)> extents{std::size_t(E)...};
  static constexpr bool is_static = ((E != dyn) && ...);
  static constexpr std::size_t static_size = is_static ? (std::size_t(1) * ... * std::size_t(E)) : std::size_t(dyn);
};

/// @brief Whether S is a Shape<...> (the concept ShapeType).
template <class S> struct is_shape : std::false_type {};
template <extent_t... E> struct is_shape<Shape<E...>> : std::true_type {};
template <class S> concept ShapeType = is_shape<S>::value;

namespace detail {

template <auto A, class = std::make_index_sequence<A.size()>> struct shape_from_array;
template <auto A, std::size_t... I> struct shape_from_array<A, std::index_sequence<I...>> {
  using type = Shape<extent_t(A[I])...>;
};

}  // namespace detail

/// @brief The Shape whose extents are the constexpr array A.
template <auto A> using shape_of = typename detail::shape_from_array<A>::type;

/// @brief Row-major element strides of the given extents.
template <std::size_t R> constexpr std::array<std::ptrdiff_t, R> row_major_strides(const dims_t<R>& d) {
  std::array<std::ptrdiff_t, R> s{};
  std::ptrdiff_t acc = 1;
  for (std::size_t i = R; i-- > 0;) { s[i] = acc; acc *= std::ptrdiff_t(d[i]); }
  return s;
}

/// @brief The number of elements of the given extents.
template <std::size_t R> constexpr std::size_t product(const dims_t<R>& d) {
  std::size_t p = 1;
  for (auto e : d) p *= e;
  return p;
}

/// @brief Normalises a possibly negative axis (TensorFlow's -1 = last); out of range gives -1.
constexpr int normalize_axis(int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  return (a >= 0 && a < rank) ? a : -1;
}

// ---- formatting: "[4,5]" at compile time and at run time, "None" for dyn, as TensorFlow prints it

namespace detail {

template <class S> struct shape_string;
template <extent_t... E> struct shape_string<Shape<E...>> {
  template <extent_t V> static constexpr auto one() {
    if constexpr (V == dyn) return fixed_string("None");
    else return number_string<std::size_t(V)>();
  }
  static constexpr auto join() {
    if constexpr (sizeof...(E) == 0) return fixed_string("[]");
    else {
      auto body = concat(concat(one<E>(), fixed_string(","))...);
      fixed_string<body.size()> trimmed;  // drop the last comma
      std::copy_n(body.s, body.size() - 1, trimmed.s);
      return concat(fixed_string("["), trimmed, fixed_string("]"));
    }
  }
  static constexpr auto value = join();
};

}  // namespace detail

/// @brief "[4,5]" for Shape<4,5>, "[None,3]" for Shape<dyn,3>, as a compile-time string.
template <class S> inline constexpr auto shape_string_v = detail::shape_string<S>::value;

/// @brief "[4,5]" for run-time extents (a dims_t, or any sequence of them: a vector, a span),
/// "None" for dyn.
template <class Dims> std::string format_dims(const Dims& d) {
  std::string s = "[";
  bool first = true;
  for (const auto e : d) {
    if (!first) s += ',';
    s += std::size_t(e) == dyn ? std::string("None") : std::to_string(e);
    first = false;
  }
  return s + "]";
}

namespace detail {
/// format_dims(d) appended to m.
template <std::size_t R> short_message& operator<<(short_message& m, const dims_t<R>& d) {
  m << "[";
  for (std::size_t i = 0; i < R; ++i) {
    if (i) m << ",";
    if (d[i] == dyn) m << "None";
    else m << d[i];
  }
  return m << "]";
}
}  // namespace detail

/// @brief Throws shape_error "<op>: <what>: [a] x [b]", the run-time twin of a static message
/// (its text built with no heap).
template <std::size_t R1, std::size_t R2>
[[noreturn]] void throw_shape_error(const char* op, const char* what, const dims_t<R1>& a, const dims_t<R2>& b) {
  detail::short_message m;
  m << op << ": " << what << ": " << a << " x " << b;
  ctflow::detail::raise<shape_error>(m.c_str());
}

// ---- broadcasting (NumPy/TensorFlow rules), static part -----------------------------------------

namespace detail {

/// Extents of A and B aligned right; 1 stretches, dyn defers the check to run time.
template <class A, class B> struct broadcast_shapes {
  static constexpr int rank = A::rank > B::rank ? A::rank : B::rank;
  static constexpr std::size_t at(const auto& ext, int r, int i) {
    const int j = i - (rank - r);
    return j < 0 ? 1 : ext[std::size_t(j)];
  }
  static constexpr bool compatible = [] {
    for (int i = 0; i < rank; ++i) {
      const auto a = at(A::extents, A::rank, i), b = at(B::extents, B::rank, i);
      if (a != b && a != 1 && b != 1 && a != dyn && b != dyn) return false;
    }
    return true;
  }();
  static constexpr dims_t<std::size_t(rank)> result = [] {
    dims_t<std::size_t(rank)> r{};
    for (int i = 0; i < rank; ++i) {
      const auto a = at(A::extents, A::rank, i), b = at(B::extents, B::rank, i);
      // A known non-1 extent wins; dyn against 1 or dyn stays dyn.
      r[std::size_t(i)] = (a == 1) ? b : (b == 1) ? a : (a == dyn) ? b : a;
    }
    return r;
  }();
  using type = shape_of<result>;
};

}  // namespace detail

/// @brief The static shape of A and B broadcast together, and whether they can be.
template <class A, class B> using broadcast_shape_t = typename detail::broadcast_shapes<A, B>::type;
template <class A, class B> inline constexpr bool broadcastable_v = detail::broadcast_shapes<A, B>::compatible;

/// @brief Whether two run-time extents lists broadcast together.
template <std::size_t RA, std::size_t RB> bool can_broadcast(const dims_t<RA>& a, const dims_t<RB>& b) {
  for (std::size_t i = 0; i < RA && i < RB; ++i) {
    const std::size_t ea = a[RA - 1 - i], eb = b[RB - 1 - i];
    if (ea != eb && ea != 1 && eb != 1) return false;
  }
  return true;
}

/// @brief Run-time broadcast of two extents lists; throws shape_error naming the op.
template <std::size_t RA, std::size_t RB>
auto broadcast_dims(const char* op, const dims_t<RA>& a, const dims_t<RB>& b) {
  constexpr std::size_t R = RA > RB ? RA : RB;
  dims_t<R> r{};
  for (std::size_t i = 0; i < R; ++i) {
    const std::size_t ea = i + RA < R ? 1 : a[i + RA - R];
    const std::size_t eb = i + RB < R ? 1 : b[i + RB - R];
    if (ea != eb && ea != 1 && eb != 1) throw_shape_error(op, "shapes cannot be broadcast", a, b);
    r[i] = ea == 1 ? eb : ea;
  }
  return r;
}

/// @brief Static extents of S agree with run-time extents d (dyn matches anything).
template <class S> bool matches_static(const dims_t<std::size_t(S::rank)>& d) {
  for (int i = 0; i < S::rank; ++i)
    if (S::extents[std::size_t(i)] != dyn && S::extents[std::size_t(i)] != d[std::size_t(i)]) return false;
  return true;
}

}  // namespace ctflow
