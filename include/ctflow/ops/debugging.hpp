#pragma once
/// @brief `ctflow::print` (tf.print) and `ctflow::debugging::check_numerics` (tf.debugging):
///
///     ctflow::print("loss:", loss, "logits:", logits);          // to stderr, like tf.print
///     ctflow::print(x, ctflow::print_options{.summarize = -1}); // every element
///     auto y = debugging::check_numerics(logits, "logits");     // numerics_error on NaN/Inf
///     debugging::enable_check_numerics();                       // every op checks its result

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <ctflow/detail/observe.hpp>
#include <ctflow/core/tensor.hpp>

namespace ctflow {

/// @brief tf.print's options: the stream (stderr by default), separator, end, and how many items
/// at each end of an axis are shown (summarize; -1: all).
struct print_options {
  std::ostream* output_stream = &std::cerr;
  std::string sep = " ";
  std::string end = "\n";
  int summarize = 3;
};

namespace detail {

/// One element as TensorFlow's tf.print shows it: shortest round-trip floats ("1", "0.1"),
/// True / False for bools.
template <class T> std::string print_element(T v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
  else if constexpr (is_floating_v<T>) {
    char buf[64];
    const auto c = compute_t<T>(v);
    if (std::isnan(double(c))) return "nan";
    if (std::isinf(double(c))) return c > 0 ? "inf" : "-inf";
    if constexpr (std::is_same_v<decltype(c), const double>) {
      std::snprintf(buf, sizeof buf, "%.15g", c);
      if (std::strtod(buf, nullptr) != c) std::snprintf(buf, sizeof buf, "%.17g", c);
    } else {
      std::snprintf(buf, sizeof buf, "%.6g", double(c));
      if (std::strtof(buf, nullptr) != float(c)) std::snprintf(buf, sizeof buf, "%.9g", double(c));
    }
    return buf;
  } else {
    return std::to_string(static_cast<long long>(v));
  }
}

template <class A> void append_print(std::string& out, const A& a, const print_options& o, bool& first) {
  if constexpr (std::is_same_v<A, print_options>) {
    return;
  } else {
    if (!first) out += o.sep;
    first = false;
    if constexpr (std::is_convertible_v<const A&, std::string_view>) {
      out += std::string_view(a);
    } else if constexpr (std::is_arithmetic_v<A>) {
      out += print_element(a);
    } else {
      static_assert(Expression<A>, "ctflow::print: prints strings, numbers and tensors");
      const auto t = eval(a);
      const std::size_t edge = o.summarize < 0 ? 0 : std::size_t(o.summarize);
      append_axis(out, t.data(), t.dims(), 0, 0, edge, [](value_t<A> v) { return print_element(v); });
    }
  }
}

}  // namespace detail

/// @brief tf.print: the arguments (strings, numbers, tensors and expressions, which are
/// evaluated) joined by sep and ended by end, written in one piece to the output stream. A
/// print_options among the arguments sets the options.
template <class... A> void print(const A&... args) {
  print_options o;
  ((void)[&] {
    if constexpr (std::is_same_v<A, print_options>) o = args;
  }(), ...);
  std::string s;
  bool first = true;
  (detail::append_print(s, args, o, first), ...);
  s += o.end;
  *o.output_stream << s << std::flush;
}

namespace debugging {

/// @brief tf.debugging.check_numerics: evaluates x and returns it, or throws numerics_error
/// naming message, the op that made x, the first NaN or infinity and its index.
/// On a device whose memory the host does not read, its values are copied to the host first.
template <Expression E> auto check_numerics(const E& x, std::string_view message) {
  auto t = eval(x);
  const std::string& op = ctflow::detail::observe::label<E>();
  const std::string what = "ctflow::debugging::check_numerics: " + std::string(message) + (op.empty() ? "" : " (op " + op + ")");
  if constexpr (host_device_v<device_t<decltype(t)>>) {
    ctflow::detail::observe::check_finite(what, ctflow::detail::observe::result(t.data(), t.dims()));
  } else {
    const auto on_host = to<cpu>(t);
    ctflow::detail::observe::check_finite(what, ctflow::detail::observe::result(on_host.data(), on_host.dims()));
  }
  return t;
}

/// @brief tf.debugging.enable_check_numerics: from now on every op checks its result and the
/// first NaN or infinity throws numerics_error naming the op, its shapes and the index.
inline void enable_check_numerics() { ctflow::detail::profile::observers.fetch_or(ctflow::detail::profile::checking_numerics); }
inline void disable_check_numerics() { ctflow::detail::profile::observers.fetch_and(~unsigned(ctflow::detail::profile::checking_numerics)); }

}  // namespace debugging
}  // namespace ctflow
