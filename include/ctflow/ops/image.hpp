#pragma once
/// @brief tf.image for HWC images (rank 3) and NHWC batches (rank 4): flips and rot90 (views:
/// no copy, differentiable), random_crop (a view at seeded offsets), per_image_standardization,
/// and resize (bilinear or nearest, with TensorFlow 2's half-pixel centers).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../core/tensor.hpp"
#include "array.hpp"
#include "math.hpp"
#include "random.hpp"
#include "reduction.hpp"

namespace ctflow::image {

namespace detail {
template <class E> constexpr void check_image_rank() {
  static_assert(shape_t<E>::rank == 3 || shape_t<E>::rank == 4, "ctflow::image: images are [height, width, channels] or [batch, height, width, channels]");
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
/// image's height, width and channels, as float32.
template <Expression E> auto per_image_standardization(const E& e) {
  detail::check_image_rank<E>();
  constexpr int R = shape_t<E>::rank;
  using S = shape_t<E>;
  Tensor<float, S> x = cast<float>(e);
  const auto d = x.dims();
  const std::size_t images = R == 4 ? d[0] : 1, n = x.size() / std::max<std::size_t>(images, 1);
  for (std::size_t b = 0; b < images; ++b) {
    float* p = x.data() + b * n;
    double mean = 0, sq = 0;
    for (std::size_t i = 0; i < n; ++i) mean += p[i];
    mean /= double(n);
    for (std::size_t i = 0; i < n; ++i) sq += (p[i] - mean) * (p[i] - mean);
    const double scale = std::max(std::sqrt(sq / double(n)), 1.0 / std::sqrt(double(n)));
    for (std::size_t i = 0; i < n; ++i) p[i] = float((p[i] - mean) / scale);
  }
  return x;
}

/// @brief tf.image.ResizeMethod.
enum class ResizeMethod { BILINEAR, NEAREST_NEIGHBOR };

namespace detail {

template <class T, std::size_t R, class Out>
void resize_into(const T* in, const dims_t<R>& d, float* out, const Out& od, ResizeMethod method) {
  const std::size_t n = R == 4 ? d[0] : 1, ih = d[R - 3], iw = d[R - 2], c = d[R - 1], oh = od[R - 3], ow = od[R - 2];
  const float sy = float(ih) / float(oh), sx = float(iw) / float(ow);
  for (std::size_t b = 0; b < n; ++b) {
    const T* src = in + b * ih * iw * c;
    float* dst = out + b * oh * ow * c;
    for (std::size_t y = 0; y < oh; ++y) {
      if (method == ResizeMethod::NEAREST_NEIGHBOR) {
        // TensorFlow 2: half-pixel centers, floor, clamped.
        const std::size_t yy = std::min(std::size_t(std::floor((float(y) + 0.5f) * sy)), ih - 1);
        for (std::size_t x = 0; x < ow; ++x) {
          const std::size_t xx = std::min(std::size_t(std::floor((float(x) + 0.5f) * sx)), iw - 1);
          for (std::size_t k = 0; k < c; ++k) dst[(y * ow + x) * c + k] = float(src[(yy * iw + xx) * c + k]);
        }
        continue;
      }
      const float fy = (float(y) + 0.5f) * sy - 0.5f;
      const std::size_t y0 = std::size_t(std::max(std::floor(fy), 0.0f)), y1 = std::min(std::size_t(std::max(std::ceil(fy), 0.0f)), ih - 1);
      const float ly = fy - std::floor(fy);
      for (std::size_t x = 0; x < ow; ++x) {
        const float fx = (float(x) + 0.5f) * sx - 0.5f;
        const std::size_t x0 = std::size_t(std::max(std::floor(fx), 0.0f)), x1 = std::min(std::size_t(std::max(std::ceil(fx), 0.0f)), iw - 1);
        const float lx = fx - std::floor(fx);
        for (std::size_t k = 0; k < c; ++k) {
          const float tl = float(src[(y0 * iw + x0) * c + k]), tr = float(src[(y0 * iw + x1) * c + k]);
          const float bl = float(src[(y1 * iw + x0) * c + k]), br = float(src[(y1 * iw + x1) * c + k]);
          const float top = tl + (tr - tl) * lx, bottom = bl + (br - bl) * lx;
          dst[(y * ow + x) * c + k] = top + (bottom - top) * ly;
        }
      }
    }
  }
}

}  // namespace detail

/// @brief tf.image.resize to a static height H and width W (float32 result, like TensorFlow).
template <std::size_t H, std::size_t W, Expression E> auto resize(const E& e, ResizeMethod method = ResizeMethod::BILINEAR) {
  detail::check_image_rank<E>();
  using S = shape_t<E>;
  const auto x = eval(e);
  const auto d = x.dims();
  if constexpr (S::rank == 3) {
    Tensor<float, Shape<H, W, S::extents[2]>> out({H, W, d[2]});
    detail::resize_into(x.data(), d, out.data(), out.dims(), method);
    return out;
  } else {
    Tensor<float, Shape<S::extents[0], H, W, S::extents[3]>> out({d[0], H, W, d[3]});
    detail::resize_into(x.data(), d, out.data(), out.dims(), method);
    return out;
  }
}

}  // namespace ctflow::image
