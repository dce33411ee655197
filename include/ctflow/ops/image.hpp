#pragma once
/// @brief tf.image for HWC images (rank 3) and NHWC batches (rank 4): flips and rot90 (views:
/// no copy, differentiable), random_crop (a view at seeded offsets), per_image_standardization,
/// and resize (bilinear or nearest, with TensorFlow 2's half-pixel centers).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/ops/array.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/nn/normalization.hpp>
#include <ctflow/ops/random.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::image {

namespace detail {
template <class E> constexpr void check_image_rank() {
  static_assert(shape_t<E>::rank == 3 || shape_t<E>::rank == 4, "ctflow::image: images are [height, width, channels] or [batch, height, width, channels]");
}
/// Is E (a forwarding reference's type) a tensor that no one holds past the call?
template <class E> constexpr bool temporary_tensor() {
  using N = std::remove_cvref_t<E>;
  if constexpr (std::is_lvalue_reference_v<E> || !is_leaf_v<N>) return false;
  else return !N::is_view;
}
}  // namespace detail

/// @brief tf.image.flip_left_right (reverses the width axis).
template <Expression E> auto flip_left_right(E&& e) {
  detail::check_image_rank<E>();
  return reverse<-2>(std::forward<E>(e));
}
/// @brief tf.image.flip_up_down (reverses the height axis).
template <Expression E> auto flip_up_down(E&& e) {
  detail::check_image_rank<E>();
  return reverse<-3>(std::forward<E>(e));
}
/// @brief tf.image.rot90: K quarter turns counter-clockwise (K is part of the type: the height and
/// width swap for odd K).
template <int K = 1, Expression E> auto rot90(E&& e) {
  detail::check_image_rank<E>();
  constexpr int k = ((K % 4) + 4) % 4;
  const auto swap_hw = [](auto&& x) {
    if constexpr (shape_t<E>::rank == 3) return transpose<1, 0, 2>(std::forward<decltype(x)>(x));
    else return transpose<0, 2, 1, 3>(std::forward<decltype(x)>(x));
  };
  if constexpr (k == 0) return reverse<>(std::forward<E>(e));
  else if constexpr (k == 1) return swap_hw(flip_left_right(std::forward<E>(e)));
  else if constexpr (k == 2) return flip_up_down(flip_left_right(std::forward<E>(e)));
  else return flip_left_right(swap_hw(std::forward<E>(e)));
}

/// @brief tf.image.random_crop: a window of static shape Size at offsets drawn from the seed
/// (uniform over every position that fits). A view.
template <ShapeType Size, Expression E> auto random_crop(E&& e, std::uint64_t seed) {
  constexpr std::size_t R = std::size_t(shape_t<E>::rank);
  static_assert(Size::rank == int(R), "ctflow::image::random_crop: the size must have the image's rank");
  const auto d = e.dims();
  std::array<std::size_t, R> begin{};
  for (std::size_t k = 0; k < R; ++k) {
    if (Size::extents[k] > d[k]) throw_shape_error("ctflow::image::random_crop", "crop larger than the image", Size::extents, d);
    const std::size_t room = d[k] - Size::extents[k] + 1;
    begin[k] = std::size_t(random::unit(seed, k) * double(room));
    begin[k] = std::min(begin[k], room - 1);
  }
  return slice<Size>(std::forward<E>(e), begin);
}

/// @brief tf.image.per_image_standardization: (x - mean) / max(stddev, 1/sqrt(N)) over each
/// image's height, width and channels (N elements), as float32: an expression of TensorFlow's
/// own ops (reduce_mean, the standard deviation, maximum), on any device, with their gradient.
/// A temporary tensor (a decoded image) is standardized now: nothing could hold it for later.
template <Expression E> auto per_image_standardization(E&& e) {
  detail::check_image_rank<E>();
  if constexpr (detail::temporary_tensor<E>()) {
    const std::remove_cvref_t<E> held(std::move(e));
    return eval(per_image_standardization(held));
  } else {
    constexpr std::size_t R = std::size_t(shape_t<E>::rank);
    const auto d = e.dims();
    const float min_stddev = 1.0f / std::sqrt(float(d[R - 3] * d[R - 2] * d[R - 1]));
    // e itself where it is float32 (a tensor is then read where it is), else its cast.
    decltype(auto) x = [&]() -> decltype(auto) {
      if constexpr (std::is_same_v<value_t<E>, float>) return (e);
      else return cast<float>(e);
    }();
    const auto [mean, variance] = nn::moments<-3, -2, -1>(x);
    return (x - mean) / maximum(sqrt(variance), min_stddev);
  }
}

/// @brief tf.image.ResizeMethod.
enum class ResizeMethod { BILINEAR, NEAREST_NEIGHBOR };

namespace detail {

/// Where output coordinate o samples an input axis of `in` elements (TensorFlow 2: half-pixel
/// centers): the nearest element, or the two neighbours and the weight of the second.
struct axis_sample {
  std::size_t i0, i1;
  float t;
};
inline axis_sample sample_axis(std::size_t o, std::size_t in, std::size_t out, ResizeMethod method) {
  const float scale = float(in) / float(out);
  if (method == ResizeMethod::NEAREST_NEIGHBOR) {
    const std::size_t i = std::min(std::size_t(std::floor((float(o) + 0.5f) * scale)), in - 1);
    return {i, i, 0.f};
  }
  const float f = (float(o) + 0.5f) * scale - 0.5f;
  const std::size_t i0 = std::size_t(std::max(std::floor(f), 0.0f)), i1 = std::min(std::size_t(std::max(std::ceil(f), 0.0f)), in - 1);
  return {i0, i1, f - std::floor(f)};
}

/// The geometry of one resize: batch, input and output height and width, channels.
struct resize_geometry {
  std::size_t n, ih, iw, oh, ow, c;
  ResizeMethod method;
  template <std::size_t R> static resize_geometry of(const dims_t<R>& in, std::size_t oh, std::size_t ow, ResizeMethod m) {
    return {R == 4 ? in[0] : 1, in[R - 3], in[R - 2], oh, ow, in[R - 1], m};
  }
};

template <class T, class SX, std::size_t H, std::size_t W> struct resize_op {
  static constexpr std::size_t R = std::size_t(SX::rank);
  static constexpr auto extents = [] {
    auto d = SX::extents;
    d[R - 3] = H;
    d[R - 2] = W;
    return d;
  }();
  using value_type = float;
  using shape_type = shape_of<extents>;
  dims_t<R> out_dims{};
  resize_geometry g{};
};

/// The input adjoint of a resize (TensorFlow's ResizeBilinearGrad / ResizeNearestNeighborGrad):
/// each output's adjoint goes back to the elements it sampled, with their weights; images are
/// split among threads, so no two threads write one element.
template <class SX> struct resize_grad_op {
  static constexpr std::size_t R = std::size_t(SX::rank);
  using value_type = float;
  using shape_type = SX;
  dims_t<R> out_dims{};
  resize_geometry g{};
};

}  // namespace detail

/// @brief tf.image.resize(images, [H, W], method) to a static height H and width W, with
/// TensorFlow 2's half-pixel centers; the result is float32, as TensorFlow's. Differentiable in
/// float32 images.
template <std::size_t H, std::size_t W, Expression E> auto resize(E&& e, ResizeMethod method = ResizeMethod::BILINEAR) {
  detail::check_image_rank<E>();
  static_assert(H > 0 && W > 0, "ctflow::image::resize: the size must be positive");
  using S = shape_t<E>;
  constexpr std::size_t R = std::size_t(S::rank);
  const auto d = e.dims();
  if (d[R - 3] == 0 || d[R - 2] == 0) throw_shape_error("ctflow::image::resize", "cannot resize an empty image", d, dims_t<2>{H, W});
  detail::resize_op<value_t<E>, S, H, W> k;
  k.g = detail::resize_geometry::of(d, H, W, method);
  k.out_dims = d;
  k.out_dims[R - 3] = H;
  k.out_dims[R - 2] = W;
  return expr::make_computed(k, std::forward<E>(e));
}

}  // namespace ctflow::image
