#pragma once
/// @brief tf.nn.max_pool2d and avg_pool2d over NHWC input, with TensorFlow's SAME / VALID /
/// explicit windows (averages are over the elements inside the image only), their gradients, and global
/// average / max pooling:
///
///     auto p = nn::max_pool2d<2, 2>(x);                  // 2x2 windows, strides 2, VALID
///     auto q = nn::avg_pool2d<3, 3, 2, 2, nn::SAME>(x);   // 3x3 windows, strides 2, SAME

#include <algorithm>
#include <limits>
#include <vector>

#include "../reduction.hpp"
#include "conv.hpp"

namespace ctflow::nn {

namespace detail {

struct pool_geometry {
  std::size_t n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl;
  /// The window of output (oy, ox), clipped to the image: [y0, y1) x [x0, x1).
  void window(std::size_t oy, std::size_t ox, std::size_t& y0, std::size_t& y1, std::size_t& x0, std::size_t& x1) const {
    const std::ptrdiff_t ys = std::ptrdiff_t(oy * sh) - std::ptrdiff_t(pt), xs = std::ptrdiff_t(ox * sw) - std::ptrdiff_t(pl);
    y0 = std::size_t(std::max<std::ptrdiff_t>(ys, 0));
    x0 = std::size_t(std::max<std::ptrdiff_t>(xs, 0));
    y1 = std::size_t(std::min<std::ptrdiff_t>(ys + std::ptrdiff_t(kh), std::ptrdiff_t(h)));
    x1 = std::size_t(std::min<std::ptrdiff_t>(xs + std::ptrdiff_t(kw), std::ptrdiff_t(w)));
  }
  /// Whether the input (and so its adjoint) of T elements is too large to stay in the cache.
  template <class T> bool exceeds_cache() const { return n * h * w * c * sizeof(T) >= backend::cpu::cache_bytes; }
};
inline pool_geometry make_pool_geometry(const dims_t<4>& x, std::size_t kh, std::size_t kw, std::size_t sh, std::size_t sw, padding p) {
  const auto gh = spatial(x[1], kh, sh, 1, p, 0), gw = spatial(x[2], kw, sw, 1, p, 1);
  return {x[0], x[1], x[2], x[3], kh, kw, sh, sw, gh.out, gw.out, gh.pad_before, gw.pad_before};
}

/// f(c0, load, store) for the channels [c0, c0 + lanes) of a pixel's c channels: xsimd batches
/// (the last one loaded and stored partially) where the dtype has them, else one channel at a
/// time in its compute type (load and store then also take compute-type pointers). `select(mask,
/// a, b)` works on what `load` returns.
template <class T, class F> [[gnu::always_inline]] inline void each_channel_vector(std::size_t c, F&& f) {
  namespace cpu = backend::cpu;
  if constexpr (cpu::simd_type_v<T>) {
    using B = cpu::batch<T>;
    constexpr std::size_t L = cpu::lanes<T>;
    std::size_t c0 = 0;
    for (; c0 + L <= c; c0 += L)
      f(c0, [](const T* p) { return B::load_unaligned(p); }, [](T* p, const B& v) { v.store_unaligned(p); });
    if (c0 < c) {
      const std::size_t n = c - c0;
      f(c0, [n](const T* p) { return cpu::load_partial(p, n); }, [n](T* p, const B& v) { cpu::store_partial(p, v, n); });
    }
  } else {
    using V = compute_t<T>;
    for (std::size_t c0 = 0; c0 < c; ++c0)
      f(c0, [](const auto* p) { return V(*p); }, [](auto* p, V v) { *p = std::remove_pointer_t<decltype(p)>(v); });
  }
}
template <class B> B select(bool m, const B& a, const B& b) { return m ? a : b; }
using xsimd::select;

/// v > m ? v : m per lane, so that a NaN v never wins. On x86 that is exactly the max
/// instruction (it returns its second operand when either is NaN): one instruction, no
/// compare-and-blend in the chain.
template <class B> B max_of(const B& v, const B& m) {
  if constexpr (backend::cpu::is_batch_v<B>) {
#if defined(__SSE2__)
    return xsimd::max(v, m);
#else
    return xsimd::select(v > m, v, m);
#endif
  } else {
    return v > m ? v : m;
  }
}

/// f(n) for n elements of a window's side: as a compile-time constant when it is the whole side
/// K (every window but those the image's border clips), so that the loops over it unroll.
template <std::size_t K, class F> void on_extent(std::size_t n, F&& f) {
  if (n == K) f(std::integral_constant<std::size_t, K>{});
  else f(n);
}

/// What max pooling saves for its gradient: each output's position in its window, a byte where
/// every position fits (255 for none), else in the compute type (-1 for none).
template <class T, std::size_t KH, std::size_t KW> struct max_pool_saved {
  using saved_type = std::conditional_t<(KH * KW < 255), std::uint8_t, compute_t<T>>;
};
struct nothing_saved {};

/// Stores positions v (what each_channel_vector's `load` gives, n lanes of it) at p: bytes
/// converted here, the compute type through that loop's own `store`.
template <class P, class B, class Store> void store_positions(P* p, const B& v, std::size_t n, Store&& store) {
  if constexpr (!std::is_same_v<P, std::uint8_t>) store(p, v);
  else if constexpr (backend::cpu::is_batch_v<B>) backend::cpu::store_bytes(p, v, n);
  else *p = P(std::int32_t(v));
}
/// The n positions at p as what store_positions took, through the loop's `load` where they are
/// in the compute type.
template <class B, class P, class Load> B load_positions(const P* p, std::size_t n, Load&& load) {
  if constexpr (!std::is_same_v<P, std::uint8_t>) return load(p);
  else if constexpr (backend::cpu::is_batch_v<B>) return backend::cpu::load_bytes<typename B::value_type>(p, n);
  else return B(*p);
}

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, bool Max>
struct pool_kernel : std::conditional_t<Max, max_pool_saved<T, KH, KW>, nothing_saved> {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], KH, SH, 1, Pad, 0),
                                     static_spatial(SX::extents[2], KW, SW, 1, Pad, 1), SX::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  pool_geometry g{};
  std::size_t saved_size() const requires Max { return product(out_dims); }

  void run(T* out, const expr::strided_view<T, 4>& x) const { run(out, static_cast<typename max_pool_saved<T, KH, KW>::saved_type*>(nullptr), x); }
  /// One output row at a time, in two passes that read memory in order: the window's rows are
  /// combined into one row (`across`, in cache), then each window's columns of it. A NaN never
  /// wins, as in TensorFlow. With `saved` (max pooling under value_and_grad), each window is
  /// instead read once, straight from x, and its maximum (its columns' maxima combined, the
  /// order of the two passes) and then the position of its first element equal to it, in
  /// row-major order, are found from the same loads: (y - y0) * KW + (x - x0) from the window's
  /// clipped corner, none where no element is (every one NaN). Every element has to be compared
  /// with the maximum anyway, so the `across` pass would only add work. MaxPoolGradWithArgmax
  /// then needs neither x nor y.
  template <class P = typename max_pool_saved<T, KH, KW>::saved_type> void run(T* out, P* saved, const expr::strided_view<T, 4>& x) const {
    using V = compute_t<T>;
    const std::size_t row = g.w * g.c, c = g.c;
    const bool ahead = g.exceeds_cache<T>(), direct = Max && saved;
    backend::cpu::parallel_for(g.n * g.oh, 1, 1, [&](std::size_t b, std::size_t e) {
      ctflow::detail::buffer<V> across_rows(direct ? 0 : row, false);
      V* const across = across_rows.data();
      for (std::size_t r = b; r < e; ++r) {
        const std::size_t n = r / g.oh, oy = r % g.oh;
        std::size_t y0, y1, x0, x1;
        g.window(oy, 0, y0, y1, x0, x1);
        const std::size_t height = y1 - y0;
        const T* first = x.data + (n * g.h + y0) * row;
        if (!direct) on_extent<KH>(height, [&](auto rows) {
          each_channel_vector<T>(row, [&](std::size_t i, auto load, auto store) {
            using B = decltype(load(first));
            const std::size_t pitch = row;  // a local: the store below may alias the captures
            B acc(Max ? -std::numeric_limits<V>::infinity() : V(0));
            for (std::size_t k = 0; k < rows; ++k) {
              const B v = load(first + k * pitch + i);
              if constexpr (Max) acc = max_of(v, acc);
              else acc = acc + v;
            }
            store(across + i, acc);
          });
        });
        // The input rows the next output row adds, prefetched a window's share at a time while
        // this row's windows are computed (when they come from memory).
        const char* next = nullptr;
        std::size_t next_bytes = 0, share = 0;
        if (ahead && r + 1 < e) {
          std::size_t ny0, ny1, nx0, nx1;
          g.window((r + 1) % g.oh, 0, ny0, ny1, nx0, nx1);
          const std::size_t nn = (r + 1) / g.oh, from = nn == n ? std::max(ny0, y1) : ny0;
          next = reinterpret_cast<const char*>(x.data + (nn * g.h + from) * row);
          next_bytes = ny1 > from ? (ny1 - from) * row * sizeof(T) : 0;
          share = (next_bytes / g.ow + 63) / 64 * 64;
        }
        T* o = out + r * g.ow * c;
        P* at = saved ? saved + r * g.ow * c : nullptr;
        for (std::size_t ox = 0; ox < g.ow; ++ox, o += c) {
          if (ox * share < next_bytes) backend::cpu::prefetch(next + ox * share, std::min(share, next_bytes - ox * share));
          g.window(oy, ox, y0, y1, x0, x1);
          if (direct) {
            on_extent<KH>(height, [&](auto rows) {
              on_extent<KW>(x1 - x0, [&](auto cols) {
                each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
                  using B = decltype(load(first));
                  // Locals, not captures: the stores below may alias whatever the closures refer to.
                  const T* const corner = first + x0 * c + c0;
                  const std::size_t step = c, pitch = row;
                  B acc(-std::numeric_limits<V>::infinity());
                  for (std::size_t j = 0; j < cols; ++j) {
                    B column(-std::numeric_limits<V>::infinity());
                    for (std::size_t k = 0; k < rows; ++k) column = max_of(load(corner + k * pitch + j * step), column);
                    acc = j == 0 ? column : max_of(column, acc);
                  }
                  // Backwards, so that the first match in row-major order is the one kept.
                  B pos(V(-1));
                  for (std::size_t k = rows; k-- > 0;)
                    for (std::size_t j = cols; j-- > 0;) pos = select(load(corner + k * pitch + j * step) == acc, B(V(k * KW + j)), pos);
                  store(o + c0, acc);
                  store_positions(at + ox * step + c0, pos, std::min(backend::cpu::lanes<T>, step - c0), store);
                });
              });
            });
            continue;
          }
          const V scale = Max ? V(1) : V(1) / V((y1 - y0) * (x1 - x0));  // the valid elements only, as TensorFlow
          const V* window = across + x0 * c;
          on_extent<KW>(x1 - x0, [&](auto cols) {
            each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
              using B = decltype(load(window));
              const std::size_t step = c;
              B acc = load(window + c0);
              for (std::size_t j = 1; j < cols; ++j) {
                const B v = load(window + j * step + c0);
                if constexpr (Max) acc = max_of(v, acc);
                else acc = acc + v;
              }
              store(o + c0, Max ? acc : acc * B(scale));
            });
          });
        }
      }
    });
  }
};

/// Runs f(n, oy, rows, scratch, flush) over every output row, images split among threads, for
/// gradients that add into their input's rows: rows[y] is the accumulator of input row y of image
/// n, zero when first touched, and final once no later window reaches it; rows no window touches
/// are written zero, so `out` is written once and never read. `scratch` is the thread's own
/// `scratch_size` elements.
///
/// The accumulators are out's own rows, zeroed just before the windows that add to them (so
/// that they are in cache), except where `out` is too large for the cache or a 16-bit storage
/// type: then a ring of kh + sh rows in the compute type holds them. Rows that became final
/// before an output row are moved out (streamed past the cache when large, their ring rows left
/// zero) while f works on it: f calls flush(i, parts) after the i-th of `parts` equal steps of its
/// work, which moves the i-th part of every such row, so that writing `out` overlaps reading.
template <class T, class F> void each_output_row_accumulating(const pool_geometry& g, T* out, std::size_t scratch_size, F&& f) {
  namespace cpu = backend::cpu;
  using V = compute_t<T>;
  const std::size_t row = g.w * g.c;
  const bool stream = g.exceeds_cache<T>();
  const bool in_place = std::is_same_v<T, V> && !stream;
  const std::size_t slots = g.kh + g.sh;  // the rows in use and those still to move out
  cpu::parallel_for(g.n, 1, 1, [&](std::size_t b, std::size_t e) {
    ctflow::detail::buffer<V> ring(in_place ? 0 : slots * row, !in_place), scratch(scratch_size, false);
    std::vector<V*> rows(g.h);
    if (!in_place)
      for (std::size_t y = 0; y < g.h; ++y) rows[y] = ring.data() + (y % slots) * row;
    for (std::size_t n = b; n < e; ++n) {
      T* image = out + n * g.h * row;
      if constexpr (std::is_same_v<T, V>)
        if (in_place)
          for (std::size_t y = 0; y < g.h; ++y) rows[y] = image + y * row;
      // Rows [pending, final) are final and being moved out, their elements [0, moved) already;
      // rows [final, started) are being accumulated; rows from `started` on are untouched yet.
      std::size_t pending = 0, final = 0, moved = 0, started = 0;
      const auto move_to = [&](std::size_t to) {  // the final rows' elements up to `to`
        for (std::size_t y = pending; y < final; ++y) cpu::move_out(image + y * row + moved, rows[y] + moved, to - moved, stream);
        moved = to;
      };
      const auto flush = [&](std::size_t i, std::size_t parts) { move_to(row * (i + 1) / parts); };
      // Rows before y: those accumulated become final (to move out), those untouched zero.
      const auto final_before = [&](std::size_t y) {
        move_to(row);
        pending = final;
        final = std::max(final, std::min(y, started));
        if (in_place) pending = final;
        moved = 0;
        if (y > started) {  // rows no window touches: the final ones go out first, then these zero
          move_to(row);
          for (; started < y; ++started) cpu::zero_out(image + started * row, row, stream);
          pending = final = started;
        }
      };
      for (std::size_t oy = 0; oy < g.oh; ++oy) {
        const std::ptrdiff_t ys = std::ptrdiff_t(oy * g.sh) - std::ptrdiff_t(g.pt);
        const auto clip = [&](std::ptrdiff_t y) { return std::size_t(std::clamp<std::ptrdiff_t>(y, 0, std::ptrdiff_t(g.h))); };
        final_before(clip(ys));
        for (const std::size_t y1 = clip(ys + std::ptrdiff_t(g.kh)); started < y1; ++started)
          if (in_place) std::fill_n(rows[started], row, V(0));  // ring rows are zero when free
        f(n, oy, rows.data(), scratch.data(), flush);
      }
      final_before(g.h);
      move_to(row);
    }
    cpu::stream_fence();
  });
}

/// MaxPoolGrad: each g goes to the first element of its window (row-major order, as
/// TensorFlow's CPU kernel) equal to the window's maximum y. Branch-free per channel: g is
/// handed to the first match and is zero after it, a one-instruction dependency per element.
/// The windows of an output row are taken one input row at a time, in order, so that the input
/// and its accumulator stream through the cache; `left` carries each window's unassigned g from
/// one of its rows to the next.
template <class T, class SX, std::size_t KH, std::size_t KW> struct max_pool_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& y, const expr::strided_view<T, 4>& dy) const {
    using V = compute_t<T>;
    const std::size_t row = g.w * g.c, c = g.c, out_row = g.ow * g.c;
    const bool ahead = g.exceeds_cache<T>();
    each_output_row_accumulating(g, out, out_row, [&](std::size_t n, std::size_t oy, V* const* rows, V* left, auto&& flush) {
      const std::size_t at = (n * g.oh + oy) * out_row;
      const bool next_row = at + out_row < g.n * g.oh * out_row;
      each_channel_vector<T>(out_row, [&](std::size_t i, auto load, auto store) { store(left + i, load(dy.data + at + i)); });
      std::size_t y0, y1, x0, x1;
      g.window(oy, 0, y0, y1, x0, x1);
      for (std::size_t yy = y0; yy < y1; ++yy) {
        const T* in = x.data + (n * g.h + yy) * row;
        V* const acc_row = rows[yy];
        for (std::size_t ox = 0; ox < g.ow; ++ox) {
          std::size_t wy0, wy1;
          g.window(oy, ox, wy0, wy1, x0, x1);
          if (ahead) {
            backend::cpu::prefetch(reinterpret_cast<const char*>(in + x0 * c) + backend::cpu::prefetch_distance, g.sw * c * sizeof(T));
            if (yy == y0 && next_row)  // y and dy of the next output row, as this one goes
              for (const T* p : {y.data, dy.data}) backend::cpu::prefetch(p + at + out_row + ox * c, c * sizeof(T));
          }
          on_extent<KW>(x1 - x0, [&](auto cols) {
            each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
              using B = decltype(load(x.data));
              // Locals, not captures: the stores below may alias whatever the closures refer to.
              const std::size_t step = c, o = ox * c + c0;
              const T* px = in + x0 * c + c0;
              V* const pa = acc_row + x0 * c + c0;
              V* const pl = left + o;
              const B top = load(y.data + at + o), zero(0);
              B l = load(pl);
              for (std::size_t j = 0; j < cols; ++j) {
                const auto eq = load(px + j * step) == top;
                store(pa + j * step, load(pa + j * step) + select(eq, l, zero));
                l = select(eq, zero, l);
              }
              store(pl, l);
            });
          });
          if (yy == y0) flush(ox, g.ow);
        }
      }
    });
  }
};

/// MaxPoolGradWithArgmax: each g added to the element of its window at the position the forward
/// pass saved (nowhere where it saved none), one window at a time: dy and the positions are read
/// once, in order, and the accumulators of the window's rows are in cache.
template <class T, class SX, std::size_t KH, std::size_t KW> struct max_pool_argmax_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  using positions = typename max_pool_saved<T, KH, KW>::saved_type;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<positions, 4>& saved) const {
    using V = compute_t<T>;
    const std::size_t c = g.c, out_row = g.ow * g.c;
    const bool ahead = g.exceeds_cache<T>();
    each_output_row_accumulating(g, out, 0, [&](std::size_t n, std::size_t oy, V* const* rows, V*, auto&& flush) {
      const std::size_t at = (n * g.oh + oy) * out_row;
      const bool next_row = at + out_row < g.n * g.oh * out_row;
      std::size_t y0, y1, x0, x1;
      g.window(oy, 0, y0, y1, x0, x1);
      V* const* const window_rows = rows + y0;
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        g.window(oy, ox, y0, y1, x0, x1);
        if (ahead && next_row) {  // the next output row's dy and positions, as this one goes
          backend::cpu::prefetch(dy.data + at + out_row + ox * c, c * sizeof(T));
          backend::cpu::prefetch(saved.data + at + out_row + ox * c, c * sizeof(positions));
        }
        on_extent<KH>(y1 - y0, [&](auto height) {
          on_extent<KW>(x1 - x0, [&](auto cols) {
            each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
              using B = decltype(load(dy.data));
              // Locals, not captures: the stores below may alias whatever the closures refer to.
              const std::size_t step = c, o = at + ox * c + c0, corner = x0 * c + c0;
              const B d = load(dy.data + o), pos = load_positions<B>(saved.data + o, std::min(backend::cpu::lanes<T>, step - c0), load);
              for (std::size_t k = 0; k < height; ++k) {
                V* const pa = window_rows[k] + corner;
                for (std::size_t j = 0; j < cols; ++j) {  // a masked add: the other lanes keep their bits
                  const B acc = load(pa + j * step);
                  store(pa + j * step, select(pos == B(V(k * KW + j)), acc + d, acc));
                }
              }
            });
          });
        });
        flush(ox, g.ow);
      }
    });
  }
};

/// AvgPoolGrad: each g spread evenly over the valid elements of its window.
template <class T, class SX> struct avg_pool_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& dy) const {
    using V = compute_t<T>;
    each_output_row_accumulating(g, out, 0, [&](std::size_t n, std::size_t oy, V* const* rows, V*, auto&& flush) {
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        const T* d = dy.data + ((n * g.oh + oy) * g.ow + ox) * g.c;
        const V scale = V(1) / V((y1 - y0) * (x1 - x0));
        for (std::size_t yy = y0; yy < y1; ++yy)
          for (std::size_t xx = x0; xx < x1; ++xx) {
            V* o = rows[yy] + xx * g.c;
            for (std::size_t c = 0; c < g.c; ++c) o[c] += V(d[c]) * scale;
          }
        flush(ox, g.ow);
      }
    });
  }
};

template <bool Max, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, class X> auto pool2d(X&& input) {
  using T = value_t<X>;
  using SX = shape_t<X>;
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  static_assert(KH > 0 && KW > 0 && SH > 0 && SW > 0, "ctflow::nn::pool2d: window and strides must be positive");
  constexpr bool rank_ok = SX::rank == 4;
  CTFLOW_STATIC_CHECK(rank_ok, concat(fixed_string("ctflow::nn::pool2d: input must be [n,h,w,c]: "), shape_string_v<SX>));
  CTFLOW_STATIC_CHECK(is_floating_v<T>, fixed_string("ctflow::nn::pool2d: input must be floating"));
  if constexpr (rank_ok && is_floating_v<T>) {
    // Every window must hold an element of the image: explicit pads stay below the window.
    static_assert(Pad.top < KH && Pad.bottom < KH && Pad.left < KW && Pad.right < KW,
                  "ctflow::nn::pool2d: explicit padding must be smaller than the window");
    constexpr bool window_ok = window_fits(SX::extents[1], KH, 1, Pad, 0) && window_fits(SX::extents[2], KW, 1, Pad, 1);
    CTFLOW_STATIC_CHECK(window_ok, concat(fixed_string("ctflow::nn::pool2d: the window is larger than the input with its padding: "), shape_string_v<SX>));
    if constexpr (window_ok) {
      const auto d = input.dims();
      if (!window_fits(d[1], KH, 1, Pad, 0) || !window_fits(d[2], KW, 1, Pad, 1))
        throw_shape_error("ctflow::nn::pool2d", "the window is larger than the input with its padding", d, dims_t<2>{KH, KW});
      pool_kernel<T, SX, KH, KW, SH, SW, Pad, Max> k;
      k.g = make_pool_geometry(d, KH, KW, SH, SW, Pad);
      k.out_dims = {k.g.n, k.g.oh, k.g.ow, k.g.c};
      return expr::make_computed(k, std::forward<X>(input));
    }
  }
}

}  // namespace detail

/// @brief tf.nn.max_pool2d(input, ksize, strides, padding) over NHWC input: `max_pool2d<kh, kw,
/// stride_h = kh, stride_w = kw, SAME or VALID = VALID>(x)`.
template <std::size_t KH, std::size_t KW = KH, std::size_t SH = KH, std::size_t SW = KW, padding Pad = VALID, Expression X>
auto max_pool2d(X&& input) {
  return detail::pool2d<true, KH, KW, SH, SW, Pad>(std::forward<X>(input));
}

/// @brief tf.nn.avg_pool2d over NHWC input; with SAME, windows average the elements inside the
/// image only.
template <std::size_t KH, std::size_t KW = KH, std::size_t SH = KH, std::size_t SW = KW, padding Pad = VALID, Expression X>
auto avg_pool2d(X&& input) {
  return detail::pool2d<false, KH, KW, SH, SW, Pad>(std::forward<X>(input));
}

/// @brief Keras's GlobalAveragePooling2D: the mean over height and width, [n, c].
template <Expression X> auto global_avg_pool2d(X&& input) { return reduce_mean<1, 2>(std::forward<X>(input)); }
/// @brief Keras's GlobalMaxPooling2D: the maximum over height and width, [n, c].
template <Expression X> auto global_max_pool2d(X&& input) { return reduce_max<1, 2>(std::forward<X>(input)); }

}  // namespace ctflow::nn
