#pragma once
/// @file
/// @brief The element-wise embedded layers, written over their input where it is the network's
/// own memory: embedded::Activation (softmax and log_softmax take memory of their own),
/// embedded::Rescaling and embedded::BatchNormalization (inference: the moving statistics).

#include <cstddef>

#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/nn/normalization.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::embedded {

/// @brief keras.layers.Activation(A), A one of keras::activations: element-wise ones over their
/// input; softmax and log_softmax over the last axis into memory of their own, through the rows'
/// maxima and sums in the network's scratch (as nn::softmax and nn::log_softmax compute them).
template <auto A> struct Activation {
  template <class T, ShapeType In> struct built {
    static constexpr bool softmax = std::is_same_v<std::remove_cvref_t<decltype(A)>, keras::activations::softmax_t>;
    static constexpr bool log_softmax = std::is_same_v<std::remove_cvref_t<decltype(A)>, keras::activations::log_softmax_t>;
    static_assert(softmax || log_softmax || detail::elementwise_activation<A, T, In>,
                  "ctflow::embedded::Activation: an activation of keras::activations, element-wise or softmax / log_softmax");
    using value_type = T;
    using output_shape = In;
    static constexpr std::size_t params = 0;
    static constexpr placement place = softmax || log_softmax ? placement::buffer : placement::in_place;
    /// Per row (the last axis): its maximum, and its sum of exponentials.
    using row_shape = shape_of<detail::with_last(In::extents, 1)>;
    static constexpr std::size_t scratch_bytes = softmax || log_softmax ? 2 * detail::aligned(row_shape::static_size * sizeof(T)) : 0;

    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, In, D> y) { y = A(x); }
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, In, D> y, std::byte* scratch) {
      TensorView<T, row_shape, D> max(reinterpret_cast<T*>(scratch));
      TensorView<T, row_shape, D> sum(reinterpret_cast<T*>(scratch + detail::aligned(row_shape::static_size * sizeof(T))));
      max = reduce_max<-1>(x, keepdims);
      y = exp(x - max);
      sum = reduce_sum<-1>(y, keepdims);
      if constexpr (softmax) y = y / sum;
      else y = (x - max) - log(sum);
    }
  };
};

/// @brief keras.layers.Rescaling(Scale, Offset): x * scale + offset. (Its arguments, as
/// BatchNormalization's epsilon and the int8 layers' scales, are floating-point template
/// arguments: clang takes them from version 18, g++ from 11; clang 14 declares these layers, and
/// the default offset only from 18.)
#if defined(__clang__) && __clang_major__ < 18
template <double Scale, double Offset> struct Rescaling {
#else
template <double Scale, double Offset = 0.0> struct Rescaling {
#endif
  template <class T, ShapeType In> struct built {
    using value_type = T;
    using output_shape = In;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::in_place;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, In, D> y) { y = x * T(Scale) + T(Offset); }
  };
};

/// @brief keras.layers.BatchNormalization in inference, over the last axis: (x - moving_mean) /
/// sqrt(moving_variance + Epsilon) * gamma + beta.
template <double Epsilon, const auto& Gamma, const auto& Beta, const auto& MovingMean, const auto& MovingVariance> struct BatchNormalization {
  template <class T, ShapeType In> struct built {
    using value_type = T;
    using output_shape = In;
    using vector = Shape<extent_t(In::extents[std::size_t(In::rank - 1)])>;
    static constexpr std::size_t params = 4 * vector::static_size;
    static constexpr placement place = placement::in_place;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<T, In, D> y) {
      y = nn::batch_normalization(x, detail::weight<"BatchNormalization", "moving_mean", T, vector, D, MovingMean>(),
                                  detail::weight<"BatchNormalization", "moving_variance", T, vector, D, MovingVariance>(),
                                  detail::weight<"BatchNormalization", "beta", T, vector, D, Beta>(),
                                  detail::weight<"BatchNormalization", "gamma", T, vector, D, Gamma>(), Epsilon);
    }
  };
};

}  // namespace ctflow::embedded
