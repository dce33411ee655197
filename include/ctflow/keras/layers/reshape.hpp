#pragma once
/// @file
/// @brief keras.layers.Reshape and Permute: the example's axes (not the batch) reshaped or
/// reordered.
///
///     layers::Reshape<Shape<7, 7, 32>>      // one extent may be dyn (Keras's -1): inferred
///     layers::Permute<2, 1>                 // 1-based, as Keras: swaps the two axes after the batch

#include <array>
#include <cstddef>
#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/keras/layers/input.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.Reshape(target_shape): Target is the shape of an example.
template <ShapeType Target> struct Reshape {
  CTFLOW_KERAS_LAYER_SPEC("Reshape");
  /// @brief Keras's get_config: target_shape (a dyn extent as -1).
  void get_config(config_dict& c) const {
    std::string t = "[";
    for (std::size_t i = 0; i < Target::extents.size(); ++i) t += (i ? ", " : "") + (Target::extents[i] == dyn ? std::string("-1") : std::to_string(Target::extents[i]));
    c.raw("target_shape", t + "]");
  }
  template <class T, ShapeType In, class D = cpu> struct built {
    static constexpr std::size_t in_size = [] {
      std::size_t n = 1;
      for (int i = 1; i < In::rank; ++i) n = In::extents[std::size_t(i)] == dyn ? std::size_t(dyn) : n * In::extents[std::size_t(i)];
      return n;
    }();
    static_assert(in_size != dyn, "ctflow::keras::Reshape: every axis of the input but the batch must have a static extent");
    // The target with its one dyn extent (if any) inferred from the input's size.
    static constexpr auto target = [] {
      auto e = Target::extents;
      std::size_t known = 1, missing = e.size();
      for (std::size_t i = 0; i < e.size(); ++i) {
        if (e[i] == dyn) missing = i;
        else known *= e[i];
      }
      if (missing < e.size() && known != 0) e[missing] = in_size / known;
      return e;
    }();
    static constexpr bool fits = [] {
      std::size_t n = 1;
      for (auto x : target) n *= x;
      return n == in_size;
    }();
    static_assert(fits, "ctflow::keras::Reshape: the target shape does not hold the input's elements");
    static constexpr const char* class_name = "Reshape";
    /// Its call is a reshape of its input: its output is a view of the input's memory.
    static constexpr bool views_input = true;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = batched<shape_of<target>, In::extents[0] == dyn ? -1 : extent_t(In::extents[0])>;
    explicit built(const Reshape&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const { return reshape<output_shape>(x); }
  };
};

/// @brief keras.layers.Permute(dims): the example's axes in the order Dims (1-based).
template <int... Dims> struct Permute {
  CTFLOW_KERAS_LAYER_SPEC("Permute");
  /// @brief Keras's get_config: dims.
  void get_config(config_dict& c) const { c.set("dims", {std::size_t(Dims)...}); }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(sizeof...(Dims) == std::size_t(In::rank - 1), "ctflow::keras::Permute: name every axis of the example, 1-based");
    static constexpr const char* class_name = "Permute";
    static constexpr std::array<std::size_t, sizeof...(Dims)> dims{std::size_t(Dims)...};
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = Shape<detail::extent<In, 0>, detail::extent<In, std::size_t(Dims)>...>;
    explicit built(const Permute&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const { return transpose<0, Dims...>(x); }
  };
};

}  // namespace ctflow::keras::layers
