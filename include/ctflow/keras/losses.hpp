#pragma once
/// @file
/// @brief keras.losses: Keras 3's losses as functions (per-sample values, as
/// `keras.losses.mean_squared_error`) and as classes with Keras's arguments, reductions and
/// sample weights, and the gradient of a loss with respect to the predictions that a model's
/// backward pass takes, derived by the compiler from the loss's expression (fused where the op
/// is: softmax cross-entropy from logits). A loss whose options change what its expression reads
/// (the focal losses from logits, sparse categorical cross-entropy on probabilities) evaluates
/// that input first and carries the adjoint back through it, so that every option shares one
/// expression and one backward pass in the build.
///
///     keras::losses::SparseCategoricalCrossentropy loss{.from_logits = true};
///     const float value = loss(labels, logits);                      // sum_over_batch_size
///     auto [v, dlogits] = loss.value_and_gradient(labels, logits);   // for model.backward
///     keras::losses::MeanSquaredError<keras::losses::Reduction::none> per_sample;  // Keras's reduction="none"
///
/// The reduction is the class's template argument (sum_over_batch_size by default, deduced when
/// omitted): a reduced loss is a number, reduction none gives the per-sample values.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <ctflow/core/errors.hpp>
#include <ctflow/ctflow.hpp>

namespace ctflow::keras::losses {

/// @brief Keras's reductions: the mean over every per-sample value (weighted values summed, then
/// divided by their count), the sum, or none (the per-sample values).
enum class Reduction { sum_over_batch_size, sum, none };

/// @brief Keras's backend epsilon, which its losses clip and divide with.
inline constexpr double epsilon = 1e-7;

namespace detail {
/// y as dtype T: y itself (a reference: no copy) when it has that dtype, else its cast.
template <class T, class Y> decltype(auto) as_dtype(const Y& y) {
  if constexpr (std::is_same_v<value_t<Y>, T>) return (y);
  else return cast<T>(y);
}
}  // namespace detail

// ---- the functions: per-sample values (the last axis reduced), as keras.losses.<name> -----------

/// @brief mean(square(y_true - y_pred)) over the last axis.
template <Expression Y, Expression P> auto mean_squared_error(const Y& y_true, const P& y_pred) {
  return reduce_mean<-1>(square(detail::as_dtype<value_t<P>>(y_true) - y_pred));
}
/// @brief mean(|y_true - y_pred|) over the last axis.
template <Expression Y, Expression P> auto mean_absolute_error(const Y& y_true, const P& y_pred) {
  return reduce_mean<-1>(abs(detail::as_dtype<value_t<P>>(y_true) - y_pred));
}
/// @brief 100 * mean(|(y_true - y_pred) / max(|y_true|, epsilon)|) over the last axis.
template <Expression Y, Expression P> auto mean_absolute_percentage_error(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  decltype(auto) y = detail::as_dtype<T>(y_true);
  return T(100) * reduce_mean<-1>(abs((y - y_pred) / maximum(abs(y), T(epsilon))));
}
/// @brief mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))) over the last axis.
template <Expression Y, Expression P> auto mean_squared_logarithmic_error(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  return reduce_mean<-1>(square(log(maximum(y_pred, T(epsilon)) + T(1)) - log(maximum(detail::as_dtype<T>(y_true), T(epsilon)) + T(1))));
}
/// @brief Huber's loss with threshold delta: 0.5 e^2 where |e| <= delta, delta (|e| - delta / 2)
/// elsewhere, e = y_pred - y_true; the mean over the last axis.
template <Expression Y, Expression P> auto huber(const Y& y_true, const P& y_pred, double delta = 1.0) {
  using T = value_t<P>;
  const auto e = y_pred - detail::as_dtype<T>(y_true);
  return reduce_mean<-1>(where(abs(e) <= T(delta), T(0.5) * square(e), T(delta) * abs(e) - T(0.5 * delta * delta)));
}
/// @brief mean(log(cosh(y_pred - y_true))) over the last axis, as x + softplus(-2x) - log(2).
template <Expression Y, Expression P> auto log_cosh(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  const auto x = y_pred - detail::as_dtype<T>(y_true);
  return reduce_mean<-1>(x + softplus(T(-2) * x) - T(std::log(2.0)));
}
/// @brief sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [epsilon, 1].
template <Expression Y, Expression P> auto kl_divergence(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  const auto y = clip_by_value(detail::as_dtype<T>(y_true), T(epsilon), T(1));
  return reduce_sum<-1>(y * log(y / clip_by_value(y_pred, T(epsilon), T(1))));
}
/// @brief mean(y_pred - y_true * log(y_pred + epsilon)) over the last axis.
template <Expression Y, Expression P> auto poisson(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  return reduce_mean<-1>(y_pred - detail::as_dtype<T>(y_true) * log(y_pred + T(epsilon)));
}
/// @brief max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis.
template <Expression Y, Expression P> auto categorical_hinge(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  decltype(auto) y = detail::as_dtype<T>(y_true);
  return maximum(reduce_max<-1>((T(1) - y) * y_pred) - reduce_sum<-1>(y * y_pred) + T(1), T(0));
}
/// @brief -sum(l2_normalize(y_true) * l2_normalize(y_pred)) over the last axis (Keras's
/// l2_normalize: x / sqrt(max(sum(x^2), 1e-12))).
template <Expression Y, Expression P> auto cosine_similarity(const Y& y_true, const P& y_pred) {
  using T = value_t<P>;
  decltype(auto) y = detail::as_dtype<T>(y_true);
  const auto yn = y * rsqrt(maximum(reduce_sum<-1>(square(y), keepdims), T(1e-12)));
  const auto pn = y_pred * rsqrt(maximum(reduce_sum<-1>(square(y_pred), keepdims), T(1e-12)));
  return -reduce_sum<-1>(yn * pn);
}

namespace detail {

/// The loss's check that y_true fits y_pred (the same shape, as the dense losses take them): one
/// message naming the loss and both shapes.
template <class Loss, class Y, class P> constexpr bool same_shape() {
  using SY = shape_t<Y>;
  using SP = shape_t<P>;
  if constexpr (SY::rank != SP::rank) return false;
  else {
    for (int i = 0; i < SP::rank; ++i) {
      const auto a = SY::extents[std::size_t(i)], b = SP::extents[std::size_t(i)];
      if (a != b && a != dyn && b != dyn) return false;
    }
    return true;
  }
}
template <class Loss, class Y, class P> constexpr auto shape_message() {
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  return concat(fixed_string("ctflow::keras::losses::"), ctflow::detail::fixed_string_of<[] { return Loss::class_name; }>(),
                fixed_string(": y_true "), shape_string_v<shape_t<Y>>, fixed_string(" does not fit y_pred "), shape_string_v<shape_t<P>>,
                fixed_string(" (the same shape; floating predictions)"));
}
template <class Loss, class Y, class P> constexpr bool fits_dense = is_floating_v<value_t<P>> && same_shape<Loss, Y, P>();

/// The shape of the per-sample losses of predictions of shape S: S without its last axis.
template <class S> using per_sample_shape_t = shape_t<decltype(reduce_sum<-1>(std::declval<const TensorView<const float, S>&>()))>;

/// The number of elements of an expression (of its extents).
template <class E> std::size_t count(const E& e) { return product(e.dims()); }

/// Whether sample weights W fit the per-sample losses Per (their rank; a compile error naming
/// both otherwise), and the run-time check of their extents.
template <class W, class Per> constexpr bool weight_fits() {
  using SW = shape_t<W>;
  using SPer = shape_t<Per>;
  constexpr bool fits = SW::rank == SPer::rank;
  CTFLOW_STATIC_CHECK(fits, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::losses: sample_weight "), shape_string_v<SW>,
                                                   ctflow::detail::fixed_string(" must have the per-sample losses' shape "), shape_string_v<SPer>));
  return fits;
}
template <class W, class Per> void check_weight(const W& w, const Per& per) {
  if (w.dims() != per.dims()) throw_shape_error("ctflow::keras::losses: sample_weight", "must have the per-sample losses' shape", w.dims(), per.dims());
}

/// How a loss's per-sample losses read the predictions where they do not read y_pred itself
/// (`with_call` hands it after the count): `input`, an evaluated function of y_pred, whose adjoint
/// `back(d_input)` carries to y_pred's; and `mask`, per-sample weights of the loss's own (0 for
/// the samples it leaves out), or null. The per-sample expression is then the same type whatever
/// the loss's options: its value and gradient are instantiated once.
template <class In, class M, class Back> struct reading {
  const In& input;
  const M* mask;
  Back back;
};
struct straight {
  template <class G> const G& operator()(const G& g) const { return g; }
};
template <class In, class M> reading(const In&, const M*, straight) -> reading<In, M, straight>;

/// The count sum_over_batch_size divides by: the per-sample losses', or those a loss's own mask
/// keeps (null: all).
template <class Per, class M> double kept_count(const Per& per, const M* mask) {
  return mask ? double(item(reduce_sum(*mask))) : double(count(per));
}

/// Hands f the per-sample losses per_of(v) of v, the input expression evaluated (a function of
/// y_pred: the probabilities of logits, the log of probabilities), as a reading of v whose adjoint
/// goes back to y_pred's as back(g, v), with the loss's own mask (null: none). A loss whose
/// options differ in what its expression reads thus differentiates one expression.
template <class E, class Back, class Per, class F, class M = std::nullptr_t>
void through_evaluated(const E& input, Back back, Per per_of, F& f, const M* mask = nullptr) {
  using T = value_t<E>;
  using V = TensorView<const T, shape_t<E>>;
  const Tensor<T, shape_t<E>> held = input;
  const V v(held.data(), held.dims());
  const auto per = per_of(v);
  using Mask = Tensor<T, shape_t<decltype(per)>>;
  const Mask* own = nullptr;
  if constexpr (!std::is_same_v<M, std::nullptr_t>) own = mask;
  const auto to_y_pred = [&](const auto& g) { return back(g, v); };
  f(per, kept_count(per, own), reading<V, Mask, decltype(to_y_pred)>{v, own, to_y_pred});
}

/// The reading a loss handed after its count (how...), or, where it handed none, y_pred read
/// straight with no mask of the loss's own: the one form the weighted and differentiated losses
/// read.
template <class T, class SPer, class V, class... How> auto reading_of(const V& y_pred, const How&... how) {
  if constexpr (sizeof...(How) == 0) return reading<V, Tensor<T, SPer>, straight>{y_pred, nullptr, straight{}};
  else return (how, ...);
}

/// The sample weights w (null: none) times the loss's own mask (null: none) times factor, as one
/// tensor of the per-sample shape: every weighted form of a loss reads weights of this one type.
template <class T, class SPer, class W> Tensor<T, SPer> combined_weight(const W* w, const Tensor<T, SPer>* mask, T factor) {
  if constexpr (std::is_same_v<W, std::nullptr_t>) return *mask * factor;
  else if (mask) return as_dtype<T>(*w) * *mask * factor;
  else return as_dtype<T>(*w) * factor;
}

/// Hands f the per-sample losses of (y_true, y_pred view), weighted where there are sample
/// weights w or the loss masks samples (an expression of one type for both), and the count
/// sum_over_batch_size divides by.
template <class Loss, class Y, class V, class W, class F> void with_weighted(const Loss& loss, const Y& y_true, const V& y_pred, const W* w, F&& f) {
  loss.with_call(y_true, y_pred, [&](const auto& per, double counted, const auto&... how) {
    using T = value_t<V>;
    using SPer = shape_t<decltype(per)>;
    const Tensor<T, SPer>* mask = reading_of<T, SPer>(y_pred, how...).mask;
    if constexpr (std::is_same_v<W, std::nullptr_t>) {
      if (!mask) return f(per, counted);
    } else if constexpr (!weight_fits<W, decltype(per)>()) {
      return;
    } else {
      check_weight(*w, per);
    }
    const Tensor<T, SPer> weight = combined_weight(w, mask, T(1));
    f(per * weight, counted);
  });
}

/// x as a view of contiguous memory: a tensor's or a contiguous view's own, or x evaluated into
/// held (an expression, a strided view).
template <class P, class H> auto prediction_view(const P& x, H& held) {
  using V = TensorView<const value_t<P>, shape_t<P>>;
  if constexpr (is_leaf_v<P>)
    if (x.strides() == row_major_strides(x.dims())) return V(x.data(), x.dims());
  held = x;
  return V(held.data(), held.dims());
}

/// The scale of a reduction: 1 / count for sum_over_batch_size (0 for no values), 1 otherwise.
template <Reduction R> double scale(double counted) {
  if constexpr (R == Reduction::sum_over_batch_size) return counted > 0 ? 1.0 / counted : 0.0;
  else return 1.0;
}

/// Keras's Loss.__call__: the reduced value (a number) or, for none, the per-sample values.
template <class Loss, class Y, class P, class W> auto call(const Loss& loss, const Y& y_true, const P& y_pred, const W* w) {
  using T = value_t<P>;
  Tensor<T, shape_t<P>> held;
  const auto view = prediction_view(y_pred, held);
  if constexpr (Loss::reduction == Reduction::none) {
    Tensor<T, per_sample_shape_t<shape_t<P>>> out;
    with_weighted(loss, y_true, view, w, [&](const auto& per, double) { out = per; });
    return out;
  } else {
    T value{};
    with_weighted(loss, y_true, view, w, [&](const auto& per, double counted) {
      value = T(double(item(reduce_sum(per))) * scale<Loss::reduction>(counted));
    });
    return value;
  }
}

/// The reduced value (for none: the sum) and its gradient with respect to y_pred. Each sample's
/// loss depends on its own predictions only, so the gradient of the weighted, scaled sum is the
/// gradient of the plain sum (derived once per loss, whatever the reduction and the weights) with
/// each sample's row scaled by its weight and the reduction's scale.
template <class Loss, class Y, class P, class W> auto value_and_gradient(const Loss& loss, const Y& y_true, const P& y_pred, const W* w) {
  using T = value_t<P>;
  Tensor<T, shape_t<P>> held;
  const auto view = prediction_view(y_pred, held);
  std::pair<T, Tensor<T, shape_t<P>>> out;
  loss.with_call(y_true, view, [&](const auto& per, double counted, const auto&... how) {
    using SPer = shape_t<decltype(per)>;
    const auto read = reading_of<T, SPer>(view, how...);
    auto [sum, gradient] = ctflow::value_and_grad(reduce_sum(per), unconnected_gradients::zero, read.input);
    const T factor = T(scale<Loss::reduction>(counted));
    const Tensor<T, SPer>* mask = read.mask;
    if constexpr (std::is_same_v<W, std::nullptr_t>) {
      if (!mask) {
        out.first = sum * factor;
        out.second = read.back(gradient) * factor;
        return;
      }
    } else if constexpr (!weight_fits<W, decltype(per)>()) {
      return;
    } else {
      check_weight(*w, per);
    }
    const Tensor<T, SPer> weight = combined_weight(w, mask, factor);
    out.first = T(item(reduce_sum(per * weight)));
    out.second = read.back(gradient) * expand_dims<-1>(weight);
  });
  return out;
}

}  // namespace detail

/// The members every loss class has: its name, class name and reduction; `loss(y_true, y_pred)`
/// and `loss(y_true, y_pred, sample_weight)` (Keras's __call__), and `value_and_gradient` (the
/// loss and its gradient with respect to y_pred, for a model's backward pass).
#define CTFLOW_KERAS_LOSS(CLASS, NAME)                                                                                      \
  std::string name = NAME;                                                                                                  \
  static constexpr const char* class_name = CLASS;                                                                          \
  static constexpr ::ctflow::keras::losses::Reduction reduction = R;                                                        \
  template <::ctflow::Expression Y, ::ctflow::Expression P> auto operator()(const Y& y_true, const P& y_pred) const {       \
    return ::ctflow::keras::losses::detail::call(*this, y_true, y_pred, static_cast<const std::nullptr_t*>(nullptr));        \
  }                                                                                                                         \
  template <::ctflow::Expression Y, ::ctflow::Expression P, ::ctflow::Expression W>                                         \
  auto operator()(const Y& y_true, const P& y_pred, const W& sample_weight) const {                                         \
    return ::ctflow::keras::losses::detail::call(*this, y_true, y_pred, &sample_weight);                                    \
  }                                                                                                                         \
  template <::ctflow::Expression Y, ::ctflow::Expression P> auto value_and_gradient(const Y& y_true, const P& y_pred) const { \
    return ::ctflow::keras::losses::detail::value_and_gradient(*this, y_true, y_pred, static_cast<const std::nullptr_t*>(nullptr)); \
  }                                                                                                                         \
  template <::ctflow::Expression Y, ::ctflow::Expression P, ::ctflow::Expression W>                                         \
  auto value_and_gradient(const Y& y_true, const P& y_pred, const W& sample_weight) const {                                 \
    return ::ctflow::keras::losses::detail::value_and_gradient(*this, y_true, y_pred, &sample_weight);                      \
  }

/// A loss class over a function of (y_true, y_pred) with y_true of y_pred's shape.
#define CTFLOW_KERAS_DENSE_LOSS(CLASS, NAME, FN)                                                                          \
  template <Reduction R = Reduction::sum_over_batch_size> struct CLASS {                                                  \
    CTFLOW_KERAS_LOSS(#CLASS, NAME);                                                                                      \
    /** @brief Hands the per-sample losses of (y_true, y_pred) and their count to f. */                                  \
    template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {                 \
      CTFLOW_STATIC_CHECK((detail::fits_dense<CLASS, Y, P>), (detail::shape_message<CLASS, Y, P>()));                    \
      if constexpr (detail::fits_dense<CLASS, Y, P>) {                                                                    \
        const auto per = FN(y_true, y_pred);                                                                              \
        f(per, double(detail::count(per)));                                                                               \
      }                                                                                                                   \
    }                                                                                                                     \
  }

/// @brief keras.losses.MeanSquaredError.
CTFLOW_KERAS_DENSE_LOSS(MeanSquaredError, "mean_squared_error", mean_squared_error);
/// @brief keras.losses.MeanAbsoluteError.
CTFLOW_KERAS_DENSE_LOSS(MeanAbsoluteError, "mean_absolute_error", mean_absolute_error);
/// @brief keras.losses.MeanAbsolutePercentageError.
CTFLOW_KERAS_DENSE_LOSS(MeanAbsolutePercentageError, "mean_absolute_percentage_error", mean_absolute_percentage_error);
/// @brief keras.losses.MeanSquaredLogarithmicError.
CTFLOW_KERAS_DENSE_LOSS(MeanSquaredLogarithmicError, "mean_squared_logarithmic_error", mean_squared_logarithmic_error);
/// @brief keras.losses.LogCosh.
CTFLOW_KERAS_DENSE_LOSS(LogCosh, "log_cosh", log_cosh);
/// @brief keras.losses.KLDivergence.
CTFLOW_KERAS_DENSE_LOSS(KLDivergence, "kl_divergence", kl_divergence);
/// @brief keras.losses.Poisson.
CTFLOW_KERAS_DENSE_LOSS(Poisson, "poisson", poisson);
/// @brief keras.losses.CategoricalHinge.
CTFLOW_KERAS_DENSE_LOSS(CategoricalHinge, "categorical_hinge", categorical_hinge);
/// @brief keras.losses.CosineSimilarity (over the last axis).
CTFLOW_KERAS_DENSE_LOSS(CosineSimilarity, "cosine_similarity", cosine_similarity);

#undef CTFLOW_KERAS_DENSE_LOSS

/// @brief keras.losses.Huber(delta=1.0).
template <Reduction R = Reduction::sum_over_batch_size> struct Huber {
  double delta = 1.0;
  CTFLOW_KERAS_LOSS("Huber", "huber_loss");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    CTFLOW_STATIC_CHECK((detail::fits_dense<Huber, Y, P>), (detail::shape_message<Huber, Y, P>()));
    if constexpr (detail::fits_dense<Huber, Y, P>) {
      const auto per = huber(y_true, y_pred, delta);
      f(per, double(detail::count(per)));
    }
  }
};

namespace detail {
/// Keras's hinge labels: {0, 1} labels become {-1, 1} (when every label is 0 or 1), as a
/// multiply-add of the same type either way.
template <class Y, class T> std::pair<T, T> hinge_label_map(const Y& y_true) {
  const bool binary = bool(item(reduce_all(logical_or(equal(as_dtype<T>(y_true), T(0)), equal(as_dtype<T>(y_true), T(1))))));
  return binary ? std::pair<T, T>{T(2), T(-1)} : std::pair<T, T>{T(1), T(0)};
}
}  // namespace detail

/// @brief keras.losses.Hinge: mean(max(1 - y_true * y_pred, 0)) over the last axis ({0, 1}
/// labels taken as {-1, 1}).
template <Reduction R = Reduction::sum_over_batch_size> struct Hinge {
  CTFLOW_KERAS_LOSS("Hinge", "hinge");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<Hinge, Y, P>), (detail::shape_message<Hinge, Y, P>()));
    if constexpr (detail::fits_dense<Hinge, Y, P>) {
      const auto [a, b] = detail::hinge_label_map<Y, T>(y_true);
      const auto per = reduce_mean<-1>(maximum(T(1) - (detail::as_dtype<T>(y_true) * a + b) * y_pred, T(0)));
      f(per, double(detail::count(per)));
    }
  }
};

/// @brief keras.losses.SquaredHinge: mean(square(max(1 - y_true * y_pred, 0))) over the last axis.
template <Reduction R = Reduction::sum_over_batch_size> struct SquaredHinge {
  CTFLOW_KERAS_LOSS("SquaredHinge", "squared_hinge");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<SquaredHinge, Y, P>), (detail::shape_message<SquaredHinge, Y, P>()));
    if constexpr (detail::fits_dense<SquaredHinge, Y, P>) {
      const auto [a, b] = detail::hinge_label_map<Y, T>(y_true);
      const auto per = reduce_mean<-1>(square(maximum(T(1) - (detail::as_dtype<T>(y_true) * a + b) * y_pred, T(0))));
      f(per, double(detail::count(per)));
    }
  }
};

/// @brief keras.losses.BinaryCrossentropy(from_logits, label_smoothing): the mean over the last
/// axis of the element-wise cross-entropy (from logits in the stable form).
template <Reduction R = Reduction::sum_over_batch_size> struct BinaryCrossentropy {
  bool from_logits = false;
  double label_smoothing = 0.0;
  CTFLOW_KERAS_LOSS("BinaryCrossentropy", "binary_crossentropy");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<BinaryCrossentropy, Y, P>), (detail::shape_message<BinaryCrossentropy, Y, P>()));
    if constexpr (detail::fits_dense<BinaryCrossentropy, Y, P>) {
      const auto y = detail::as_dtype<T>(y_true) * T(1 - label_smoothing) + T(0.5 * label_smoothing);
      if (from_logits) {
        const auto per = reduce_mean<-1>(nn::sigmoid_cross_entropy_with_logits(y, y_pred));
        f(per, double(detail::count(per)));
      } else {
        const auto per = nn::binary_crossentropy(y, y_pred);
        f(per, double(detail::count(per)));
      }
    }
  }
};

/// @brief keras.losses.CategoricalCrossentropy(from_logits, label_smoothing): one-hot (or
/// probability) labels over the last axis.
template <Reduction R = Reduction::sum_over_batch_size> struct CategoricalCrossentropy {
  bool from_logits = false;
  double label_smoothing = 0.0;
  CTFLOW_KERAS_LOSS("CategoricalCrossentropy", "categorical_crossentropy");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<CategoricalCrossentropy, Y, P>), (detail::shape_message<CategoricalCrossentropy, Y, P>()));
    if constexpr (detail::fits_dense<CategoricalCrossentropy, Y, P>) {
      const double classes = double(y_pred.dims()[std::size_t(shape_t<P>::rank) - 1]);
      const auto y = detail::as_dtype<T>(y_true) * T(1 - label_smoothing) + T(label_smoothing / classes);
      if (from_logits) {
        const auto per = nn::softmax_cross_entropy_with_logits(y, y_pred);
        f(per, double(detail::count(per)));
      } else {
        const auto per = nn::categorical_crossentropy(y, y_pred);
        f(per, double(detail::count(per)));
      }
    }
  }
};

/// @brief keras.losses.BinaryFocalCrossentropy(apply_class_balancing, alpha, gamma, from_logits,
/// label_smoothing): the binary cross-entropy weighted by (1 - p_t)^gamma (and, balanced, by
/// alpha for positives, 1 - alpha for negatives); the mean over the last axis.
template <Reduction R = Reduction::sum_over_batch_size> struct BinaryFocalCrossentropy {
  bool apply_class_balancing = false;
  double alpha = 0.25;
  double gamma = 2.0;
  bool from_logits = false;
  double label_smoothing = 0.0;
  CTFLOW_KERAS_LOSS("BinaryFocalCrossentropy", "binary_focal_crossentropy");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<BinaryFocalCrossentropy, Y, P>), (detail::shape_message<BinaryFocalCrossentropy, Y, P>()));
    if constexpr (detail::fits_dense<BinaryFocalCrossentropy, Y, P>) {
      const auto y = detail::as_dtype<T>(y_true) * T(1 - label_smoothing) + T(0.5 * label_smoothing);
      // The class weight y * alpha + (1 - y) * (1 - alpha) when balanced, 1 otherwise.
      const T slope = apply_class_balancing ? T(2 * alpha - 1) : T(0), base = apply_class_balancing ? T(1 - alpha) : T(1);
      const auto focal = [&](const auto& p) {
        const auto q = clip_by_value(p, T(epsilon), T(1 - epsilon));
        const auto bce = -(y * log(q) + (T(1) - y) * log(T(1) - q));
        const auto p_t = y * p + (T(1) - y) * (T(1) - p);
        return reduce_mean<-1>((y * slope + base) * pow(T(1) - p_t, T(gamma)) * bce);
      };
      if (from_logits) {
        // Keras's focal loss of sigmoid(logits): the probabilities evaluated, the adjoint carried
        // back through them (sigmoid's rule), and the same per-sample expression as probabilities.
        detail::through_evaluated(sigmoid(y_pred), [](const auto& g, const auto& p) { return g * (p * (T(1) - p)); }, focal, f);
      } else {
        const auto per = focal(y_pred);
        f(per, double(detail::count(per)));
      }
    }
  }
};

/// @brief keras.losses.CategoricalFocalCrossentropy(alpha, gamma, from_logits, label_smoothing):
/// sum(alpha * (1 - p)^gamma * -y_true * log(p)) over the last axis, p the normalised, clipped
/// probabilities.
template <Reduction R = Reduction::sum_over_batch_size> struct CategoricalFocalCrossentropy {
  double alpha = 0.25;
  double gamma = 2.0;
  bool from_logits = false;
  double label_smoothing = 0.0;
  CTFLOW_KERAS_LOSS("CategoricalFocalCrossentropy", "categorical_focal_crossentropy");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& y_true, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    CTFLOW_STATIC_CHECK((detail::fits_dense<CategoricalFocalCrossentropy, Y, P>), (detail::shape_message<CategoricalFocalCrossentropy, Y, P>()));
    if constexpr (detail::fits_dense<CategoricalFocalCrossentropy, Y, P>) {
      const double classes = double(y_pred.dims()[std::size_t(shape_t<P>::rank) - 1]);
      const auto y = detail::as_dtype<T>(y_true) * T(1 - label_smoothing) + T(label_smoothing / classes);
      const auto focal = [&](const auto& p) {
        const auto q = clip_by_value(p / reduce_sum<-1>(p, keepdims), T(epsilon), T(1 - epsilon));
        return reduce_sum<-1>(T(alpha) * pow(T(1) - q, T(gamma)) * (-y * log(q)));
      };
      if (from_logits) {
        // Of softmax(logits), likewise (softmax's rule: p * (g - sum(g * p)) over the last axis).
        const auto back = [](const auto& g, const auto& p) { return p * (g - reduce_sum<-1>(g * p, keepdims)); };
        detail::through_evaluated(nn::softmax(y_pred), back, focal, f);
      } else {
        const auto per = focal(y_pred);
        f(per, double(detail::count(per)));
      }
    }
  }
};

/// @brief keras.losses.SparseCategoricalCrossentropy(from_logits, ignore_class): integer labels
/// of y_pred's shape without its last axis; a label out of range is an error naming it and the
/// class count; labels equal to ignore_class count for nothing (the mean is over the others).
template <Reduction R = Reduction::sum_over_batch_size> struct SparseCategoricalCrossentropy {
  bool from_logits = false;
  std::optional<std::int64_t> ignore_class{};
  CTFLOW_KERAS_LOSS("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy");
  /// @brief Hands the per-sample losses and their count to f.
  template <class Y, class P, class F> void with_call(const Y& labels, const P& y_pred, F&& f) const {
    using T = value_t<P>;
    using I = value_t<Y>;
    static_assert(is_integer_v<I>, "ctflow::keras::losses::SparseCategoricalCrossentropy: labels are integers (class indices)");
    using S = shape_t<Y>;
    // The labels as a view (ignore_class's read as class 0, and masked out: the mean is over the
    // others), so that every option gives the same per-sample expression.
    Tensor<I, S> held;
    Tensor<T, S> kept;
    const Tensor<T, S>* mask = nullptr;
    if (ignore_class) {
      const I ignored = I(*ignore_class);
      held = where(equal(labels, ignored), I(0), labels);
      kept = cast<T>(not_equal(labels, ignored));
      mask = &kept;
    }
    const TensorView<const I, S> l = ignore_class ? TensorView<const I, S>(held.data(), held.dims()) : detail::prediction_view(labels, held);
    if (from_logits) {
      const auto per = nn::sparse_softmax_cross_entropy_with_logits(l, y_pred);
      f(per, detail::kept_count(per, mask), detail::reading{y_pred, mask, detail::straight{}});
      return;
    }
    // Probabilities: Keras's backend takes log(clip(y_pred, eps, 1 - eps)) as the logits. They are
    // evaluated once and the adjoint carried back through them: 1 / y_pred within the clip's
    // bounds (inclusive, as TensorFlow's ClipByValue passes it), 0 outside.
    const auto back = [&](const auto& g, const auto&) {
      return where(logical_and(y_pred >= T(epsilon), y_pred <= T(1 - epsilon)), g / y_pred, T(0));
    };
    const auto per = [&](const auto& logits) { return nn::sparse_softmax_cross_entropy_with_logits(l, logits); };
    detail::through_evaluated(log(clip_by_value(y_pred, T(epsilon), T(1 - epsilon))), back, per, f, mask);
  }
};

}  // namespace ctflow::keras::losses
