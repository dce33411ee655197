#pragma once
/// @file
/// @brief keras.layers.ZeroPadding2D(padding=((top, bottom), (left, right))): zero rows and
/// columns around each image.
///
///     layers::ZeroPadding2D<>                         // one row and column on every side
///     layers::ZeroPadding2D<layers::pads{0, 1, 0, 1}> // bottom and right only

#include <array>
#include <string>
#include <tuple>

#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/options.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::keras::layers {

/// @brief Padding rows and columns: top, bottom, left, right.
struct pads {
  std::size_t top = 1, bottom = 1, left = 1, right = 1;
  constexpr bool operator==(const pads&) const = default;
};

/// @brief keras.layers.ZeroPadding2D(padding).
template <pads P = pads{}> struct ZeroPadding2D {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 4;
  static constexpr const char* input_form = "[batch, height, width, channels]";
  CTFLOW_KERAS_LAYER_SPEC("ZeroPadding2D");
  /// @brief Keras's get_config: padding ((top, bottom), (left, right)) and data_format.
  void get_config(config_dict& c) const {
    const auto pair = [](std::size_t a, std::size_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; };
    c.raw("padding", "[" + pair(P.top, P.bottom) + ", " + pair(P.left, P.right) + "]").set("data_format", "channels_last");
  }
  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 4, "ctflow::keras::ZeroPadding2D: its input must be [batch, height, width, channels]");
    static constexpr const char* class_name = "ZeroPadding2D";
    static constexpr pads padding = P;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    static constexpr auto grow = [](std::size_t e, std::size_t by) { return e == dyn ? std::size_t(dyn) : e + by; };
    using output_shape = Shape<detail::extent<In, 0>, extent_t(grow(In::extents[1], P.top + P.bottom)), extent_t(grow(In::extents[2], P.left + P.right)),
                               detail::extent<In, 3>>;
    explicit built(const ZeroPadding2D&) {}
    auto weights() { return std::tuple<>(); }
    template <class X, class Training> auto call(const X& x, Training) const {
      auto d = x.dims();
      d[1] += P.top + P.bottom;
      d[2] += P.left + P.right;
      return reshape<output_shape>(pad(x, {{{0, 0}, {P.top, P.bottom}, {P.left, P.right}, {0, 0}}}), d);
    }
  };
};

}  // namespace ctflow::keras::layers
