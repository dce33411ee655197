#pragma once
/// @brief tf.train.Example, built and parsed without protoc: `io::Example` holds named features
/// (bytes, float and int64 lists) and serializes to the protobuf wire format TensorFlow reads;
/// `io::parse_single_example` / `io::parse_example` decode serialized Examples into typed tensors
/// by a spec of `FixedLenFeature<T, Shape<...>>` and `VarLenFeature<T>`:
///
///     auto [image, label] = io::parse_single_example(record,
///         io::FixedLenFeature<float, Shape<28, 28>>("image"),
///         io::FixedLenFeature<std::int64_t>("label", -1));   // default when absent
///
/// Errors read like TensorFlow's: `Key: landmarks. Can't parse serialized Example: expected 212
/// floats, got 210`. Malformed bytes and any mismatch with the spec give io_error.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/detail/linkage.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/protobuf.hpp>

namespace ctflow::io {

/// @brief One feature: exactly one of its three lists is meaningful (tf.train.Feature).
struct Feature {
  enum class kind { bytes_list = 1, float_list = 2, int64_list = 3 };
  kind list = kind::float_list;
  std::vector<std::string> bytes;
  std::vector<float> floats;
  std::vector<std::int64_t> int64s;
};

/// @brief tf.train.Feature(float_list=...) from numbers or a tensor (converted to float).
inline Feature float_list(std::vector<float> v) { return {Feature::kind::float_list, {}, std::move(v), {}}; }
/// @brief tf.train.Feature(int64_list=...).
inline Feature int64_list(std::vector<std::int64_t> v) { return {Feature::kind::int64_list, {}, {}, std::move(v)}; }
/// @brief tf.train.Feature(bytes_list=...).
inline Feature bytes_list(std::vector<std::string> v) { return {Feature::kind::bytes_list, std::move(v), {}, {}}; }
/// @brief float_list and int64_list of a tensor's elements, in row-major order.
template <class T, class S> Feature float_list(const Tensor<T, S>& t) { return float_list(std::vector<float>(t.begin(), t.end())); }
template <class T, class S> Feature int64_list(const Tensor<T, S>& t) {
  static_assert(std::is_integral_v<T>, "ctflow::io::int64_list: the tensor must hold integers");
  return int64_list(std::vector<std::int64_t>(t.begin(), t.end()));
}

/// @brief tf.train.Example: features by name. SerializeToString / ParseFromString as in Python.
struct Example {
  std::map<std::string, Feature> features;

  Example() = default;
  Example(std::initializer_list<std::pair<const std::string, Feature>> f) : features(f) {}

  /// @brief The Example in protobuf wire format, as Python's `SerializeToString()`.
  std::string SerializeToString() const;
  /// @brief Parses serialized bytes (io_error when malformed); Python's `Example.FromString`.
  static Example ParseFromString(std::string_view bytes);
};

namespace detail {

inline constexpr const char* example_what = "ctflow::io::Example";

/// The Feature message of each key (the last one wins, as protobuf merges map entries).
template <class F> void for_each_feature(std::string_view serialized, F&& f) {
  ctflow::detail::pb::reader ex(serialized, example_what);
  std::uint32_t field;
  ctflow::detail::pb::wire w;
  while (ex.next(field, w)) {
    if (field != 1 || w != ctflow::detail::pb::length_type) { ex.skip(w); continue; }
    auto features = ex.sub();
    while (features.next(field, w)) {
      if (field != 1 || w != ctflow::detail::pb::length_type) { features.skip(w); continue; }
      auto entry = features.sub();
      std::string_view key, value;
      while (entry.next(field, w)) {
        if (field == 1 && w == ctflow::detail::pb::length_type) key = entry.bytes();
        else if (field == 2 && w == ctflow::detail::pb::length_type) value = entry.bytes();
        else entry.skip(w);
      }
      f(key, value);
    }
  }
}

/// Which list a Feature message holds (0: none, an empty Feature) and that list's bytes.
CTFLOW_DECL std::pair<int, std::string_view> feature_list(std::string_view feature);

/// Visits the values of a list message: floats (packed or not), int64s (packed or not), bytes.
template <class V> void for_each_value(int kind, std::string_view list, V&& visit) {
  namespace pb = ctflow::detail::pb;
  pb::reader r(list, example_what);
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    if (field != 1) { r.skip(w); continue; }
    if (kind == 1 && w == pb::length_type) visit(r.bytes());
    else if (kind == 2 && w == pb::fixed32_type) visit(std::bit_cast<float>(r.fixed32()));
    else if (kind == 3 && w == pb::varint_type) visit(std::int64_t(r.varint()));
    else if (kind != 1 && w == pb::length_type) {
      auto packed = r.sub();
      if (kind == 2) {
        while (!packed.done()) visit(std::bit_cast<float>(packed.fixed32()));
      } else {
        while (!packed.done()) visit(std::int64_t(packed.varint()));
      }
    } else r.fail("value of the wrong wire type in a feature list");
  }
}

template <class T> constexpr int kind_of() {
  if constexpr (std::is_same_v<T, float>) return 2;
  else if constexpr (std::is_same_v<T, std::int64_t>) return 3;
  else {
    static_assert(std::is_same_v<T, std::string>, "ctflow::io: feature dtypes are float, std::int64_t and std::string (TensorFlow's float32, int64, string)");
    return 1;
  }
}
/// What a feature of dtype T holds: rank-0 string → std::string, other strings → a vector of
/// them, numbers → a Tensor.
template <class T, class S> struct feature_value { using type = Tensor<T, S>; };
template <extent_t... X> struct feature_value<std::string, Shape<X...>> { using type = std::vector<std::string>; };
template <> struct feature_value<std::string, Shape<>> { using type = std::string; };

inline const char* kind_name(int k) { return k == 1 ? "string" : k == 2 ? "float" : k == 3 ? "int64" : "none"; }
inline const char* kind_plural(int k) { return k == 1 ? "bytes values" : k == 2 ? "floats" : "int64s"; }

[[noreturn]] inline void example_error(std::string_view key, const std::string& why) {
  throw io_error("Key: " + std::string(key) + ". " + why);
}

/// Checks a Feature's list kind against the spec; returns the list bytes (empty if no list).
CTFLOW_DECL std::string_view typed_list(std::string_view key, std::string_view feature, int want);

}  // namespace detail


/// @brief tf.io.FixedLenFeature: exactly shape's number of values of dtype T (float,
/// std::int64_t or std::string); when the key is absent, the default (if given) is used.
template <class T, ShapeType S = Shape<>> struct FixedLenFeature {
  static_assert(S::is_static, "ctflow::io::FixedLenFeature: the shape must be fully defined");
  static constexpr int kind = detail::kind_of<T>();
  using value_type = typename detail::feature_value<T, S>::type;

  std::string key;
  std::optional<value_type> default_value;

  explicit FixedLenFeature(std::string k) : key(std::move(k)) {}
  FixedLenFeature(std::string k, value_type d) : key(std::move(k)), default_value(std::move(d)) {}
  /// A default for every element (numbers).
  FixedLenFeature(std::string k, T d) requires(kind != 1) : key(std::move(k)), default_value(Tensor<T, S>()) {
    std::fill(default_value->begin(), default_value->end(), d);
  }

  /// @brief This feature's value from its serialized Feature message (what parse_single_example
  /// calls; present false: the key is absent).
  value_type parse(std::string_view feature, bool present) const {
    if (!present) {
      if (!default_value)
        throw io_error("Feature: " + key + " (data type: " + detail::kind_name(kind) + ") is required but could not be found.");
      return *default_value;
    }
    const auto list = detail::typed_list(key, feature, kind);
    std::size_t n = 0;
    detail::for_each_value(kind, list, [&](auto) { ++n; });
    constexpr std::size_t want = S::static_size;
    if (n != want)
      detail::example_error(key, "Can't parse serialized Example: expected " + std::to_string(want) + " " + detail::kind_plural(kind) +
                                     ", got " + std::to_string(n));
    value_type out{};
    std::size_t i = 0;
    detail::for_each_value(kind, list, [&](auto v) {
      if constexpr (std::is_same_v<decltype(v), std::string_view>) {
        if constexpr (kind == 1 && S::rank == 0) out = std::string(v);
        else if constexpr (kind == 1) out.emplace_back(v);
      } else if constexpr (kind != 1) {
        out.data()[i++] = T(v);
      }
    });
    return out;
  }
};

/// @brief A sparse tensor (TensorFlow's tf.sparse.SparseTensor): indices [nnz, R] (int64),
/// values, dense_shape. What VarLenFeature parses to.
template <class T, int R> struct SparseTensor {
  using values_type = typename detail::feature_value<T, Shape<dyn>>::type;
  Tensor<std::int64_t, Shape<dyn, std::size_t(R)>> indices;
  values_type values;
  dims_t<std::size_t(R)> dense_shape{};
};

/// @brief tf.io.VarLenFeature: any number of values of dtype T, as a SparseTensor.
template <class T> struct VarLenFeature {
  static constexpr int kind = detail::kind_of<T>();
  using value_type = SparseTensor<T, 1>;
  std::string key;
  explicit VarLenFeature(std::string k) : key(std::move(k)) {}

  /// @brief This feature's values from its serialized Feature message (what parse_single_example
  /// calls; present false: none).
  value_type parse(std::string_view feature, bool present) const {
    const auto list = present ? detail::typed_list(key, feature, kind) : std::string_view{};
    std::size_t n = 0;
    detail::for_each_value(kind, list, [&](auto) { ++n; });
    value_type out{Tensor<std::int64_t, Shape<dyn, 1>>({n, 1}), {}, {n}};
    if constexpr (kind == 1) out.values.reserve(n);
    else out.values = Tensor<T, Shape<dyn>>({n});
    std::size_t i = 0;
    detail::for_each_value(kind, list, [&](auto v) {
      out.indices.data()[i] = std::int64_t(i);
      if constexpr (std::is_same_v<decltype(v), std::string_view>) {
        if constexpr (kind == 1) out.values.emplace_back(v);
      } else if constexpr (kind != 1) {
        out.values.data()[i] = T(v);
      }
      ++i;
    });
    return out;
  }
};

/// @brief tf.io.parse_single_example: one serialized Example into a tuple of the specs' values.
template <class... Spec> auto parse_single_example(std::string_view serialized, const Spec&... spec) {
  static_assert(sizeof...(Spec) > 0, "ctflow::io::parse_single_example: give at least one feature");
  std::array<std::string_view, sizeof...(Spec)> found{};
  std::array<bool, sizeof...(Spec)> present{};
  const std::array<const std::string*, sizeof...(Spec)> keys{&spec.key...};
  detail::for_each_feature(serialized, [&](std::string_view key, std::string_view value) {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (*keys[i] == key) { found[i] = value; present[i] = true; }
  });
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<typename Spec::value_type...>{spec.parse(found[I], present[I])...};
  }(std::index_sequence_for<Spec...>{});
}

namespace detail {

template <class Spec> struct batch_value;
template <class T, class S> struct batch_value<FixedLenFeature<T, S>> {
  template <extent_t... X> static auto stacked(Shape<X...>) -> typename feature_value<T, Shape<dyn, X...>>::type;
  using type = std::conditional_t<FixedLenFeature<T, S>::kind == 1, std::vector<typename FixedLenFeature<T, S>::value_type>,
                                  decltype(stacked(S{}))>;
  static type stack(std::vector<typename FixedLenFeature<T, S>::value_type>&& parts) {
    if constexpr (FixedLenFeature<T, S>::kind == 1) return std::move(parts);
    else {
      dims_t<std::size_t(S::rank) + 1> d{};
      d[0] = parts.size();
      for (int k = 0; k < S::rank; ++k) d[std::size_t(k) + 1] = S::extents[std::size_t(k)];
      type out(d);
      for (std::size_t i = 0; i < parts.size(); ++i) std::copy(parts[i].begin(), parts[i].end(), out.data() + i * S::static_size);
      return out;
    }
  }
};
template <class T> struct batch_value<VarLenFeature<T>> {
  using type = SparseTensor<T, 2>;
  static type stack(std::vector<SparseTensor<T, 1>>&& parts) {
    std::size_t nnz = 0, longest = 0;
    for (const auto& p : parts) { nnz += p.dense_shape[0]; longest = std::max(longest, p.dense_shape[0]); }
    type out{Tensor<std::int64_t, Shape<dyn, 2>>({nnz, 2}), {}, {parts.size(), longest}};
    if constexpr (std::is_same_v<T, std::string>) out.values.reserve(nnz);
    else out.values = Tensor<T, Shape<dyn>>({nnz});
    std::size_t at = 0;
    for (std::size_t b = 0; b < parts.size(); ++b)
      for (std::size_t j = 0; j < parts[b].dense_shape[0]; ++j, ++at) {
        out.indices.data()[2 * at] = std::int64_t(b);
        out.indices.data()[2 * at + 1] = std::int64_t(j);
        if constexpr (std::is_same_v<T, std::string>) out.values.push_back(parts[b].values[j]);
        else out.values.data()[at] = parts[b].values.data()[j];
      }
    return out;
  }
};

}  // namespace detail

/// @brief tf.io.parse_example: a batch of serialized Examples; fixed-length features are
/// stacked along a new first axis, var-length ones become [batch, longest] SparseTensors.
template <class... Spec> auto parse_example(std::span<const std::string> serialized, const Spec&... spec) {
  std::tuple<std::vector<typename Spec::value_type>...> parts;
  std::apply([&](auto&... p) { (p.reserve(serialized.size()), ...); }, parts);
  for (const auto& s : serialized) {
    auto one = parse_single_example(s, spec...);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::get<I>(parts).push_back(std::move(std::get<I>(one))), ...);
    }(std::index_sequence_for<Spec...>{});
  }
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<typename detail::batch_value<Spec>::type...>{detail::batch_value<Spec>::stack(std::move(std::get<I>(parts)))...};
  }(std::index_sequence_for<Spec...>{});
}

}  // namespace ctflow::io

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/data/impl/example.ipp>
#endif
