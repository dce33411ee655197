#pragma once
/// @brief Text of a tensor in TensorFlow's str() form:
/// `ctflow.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)`, summarised past 1000 elements
/// (3 items at each end of an axis, as NumPy and TensorFlow do).

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <ctflow/core/dtype.hpp>
#include <ctflow/core/shape.hpp>

namespace ctflow::detail {

inline constexpr std::size_t print_threshold = 1000;
inline constexpr std::size_t print_edge = 3;

template <class T> auto float_cast(T v) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) return float(v);
  else return v;
}

template <class T> std::string element_string(T v) {
  char buf[64];
  if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
  else if constexpr (is_floating_v<T>) {
    const double d = double(float_cast(v));
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    std::snprintf(buf, sizeof buf, "%.8g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".";
    return s;
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
  }
}

/// Appends the nested-bracket text of the elements below (axis, offset), as NumPy prints arrays:
/// past 2 * edge items an axis shows its first and last `edge` items around "..." (edge 0: all).
template <class T, std::size_t R, class Fmt>
void append_axis(std::string& out, const T* p, const dims_t<R>& d, std::size_t axis, std::size_t offset, std::size_t edge, const Fmt& fmt) {
  if constexpr (R == 0) {
    out += fmt(p[0]);
  } else {
    std::size_t stride = 1;
    for (std::size_t k = axis + 1; k < R; ++k) stride *= d[k];
    const std::size_t n = d[axis];
    out += '[';
    for (std::size_t i = 0; i < n; ++i) {
      if (edge > 0 && n > 2 * edge && i == edge) {
        out += "...";
        i = n - edge - 1;
        if (axis + 1 < R) out += '\n' + std::string(axis + 1, ' ');
        else out += ' ';
        continue;
      }
      if (axis + 1 == R) out += fmt(p[offset + i]);
      else append_axis(out, p, d, axis + 1, offset + i * stride, edge, fmt);
      if (i + 1 < n) out += axis + 1 == R ? std::string(" ") : std::string(R - axis - 1, '\n') + std::string(axis + 1, ' ');
    }
    out += ']';
  }
}

/// The array part alone: "[[1 2]\n [3 4]]", summarised past print_threshold elements.
template <class T, std::size_t R> std::string array_string(const T* p, const dims_t<R>& d) {
  std::string s;
  append_axis(s, p, d, 0, 0, product(d) > print_threshold ? print_edge : 0, [](T v) { return element_string(v); });
  return s;
}

template <class T, std::size_t R> std::string tensor_string(const T* p, const dims_t<R>& d) {
  std::string shape = "(";
  for (std::size_t i = 0; i < R; ++i) shape += (i ? ", " : "") + std::to_string(d[i]);
  shape += R == 1 ? ",)" : ")";
  return "ctflow.Tensor(" + std::string(R > 1 ? "\n" : "") + array_string(p, d) + ", shape=" + shape +
         ", dtype=" + dtype_name<T>() + ")";
}

}  // namespace ctflow::detail
