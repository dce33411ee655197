#pragma once
/// @file
/// @brief embedded::Flatten and embedded::Reshape (views of their input's memory, nothing
/// evaluated), embedded::Permute and embedded::ZeroPadding2D.

#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::embedded {

/// @brief keras.layers.Flatten(): [batch, features].
struct Flatten {
  template <class T, ShapeType In> struct built {
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(In::static_size / In::extents[0])>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::view;
  };
};

/// @brief keras.layers.Reshape(target_shape): [batch, target...], Target without the batch axis.
template <ShapeType Target> struct Reshape {
  template <class T, ShapeType In> struct built {
    static_assert(Target::is_static && Target::static_size * In::extents[0] == In::static_size,
                  "ctflow::embedded::Reshape: the target shape must hold as many elements as the input (the batch aside)");
    using value_type = T;
    using output_shape = shape_of<detail::with_first(In::extents[0], Target::extents)>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::view;
  };
};

/// @brief keras.layers.Permute(dims): the example's axes in the order Dims (1-based, as Keras's;
/// the batch axis stays first).
template <int... Dims> struct Permute {
  template <class T, ShapeType In> struct built {
    static_assert(sizeof...(Dims) == std::size_t(In::rank - 1), "ctflow::embedded::Permute: name every axis of the example, 1-based");
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(In::extents[std::size_t(Dims)])...>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) { y = transpose<0, Dims...>(x); }
  };
};

/// @brief keras.layers.ZeroPadding2D(((Top, Bottom), (Left, Right))).
template <std::size_t Top, std::size_t Bottom, std::size_t Left, std::size_t Right> struct ZeroPadding2D {
  template <class T, ShapeType In> struct built {
    static_assert(In::rank == 4, "ctflow::embedded::ZeroPadding2D: its input must be [batch, height, width, channels]");
    using value_type = T;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(In::extents[1] + Top + Bottom), extent_t(In::extents[2] + Left + Right),
                               extent_t(In::extents[3])>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, output_shape, D> y) {
      y = pad(x, {{{0, 0}, {Top, Bottom}, {Left, Right}, {0, 0}}});
    }
  };
};

}  // namespace ctflow::embedded
