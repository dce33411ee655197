#pragma once
// CPU kernels of max and average pooling and their gradients (MaxPoolGrad,
// MaxPoolGradWithArgmax, AvgPoolGrad): a pixel's channels in vectors, output rows split among
// threads, accumulators in cache and large results streamed past it.

#include <algorithm>
#include <limits>
#include <vector>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/ops/nn/pool.hpp>

namespace ctflow::backend::cpu {

/// Whether the input of a pooling (and so its adjoint) of T elements is too large to stay in the
/// cache.
template <class T> bool exceeds_cache(const nn::detail::pool_geometry& g) { return g.n * g.h * g.w * g.c * sizeof(T) >= cache_bytes; }

/// f(c0, load, store) for the channels [c0, c0 + lanes) of a pixel's c channels: xsimd batches
/// (the last one loaded and stored partially) where the dtype has them, else one channel at a
/// time in its compute type (load and store then also take compute-type pointers). `select(mask,
/// a, b)` works on what `load` returns.
template <class T, class F> [[gnu::always_inline]] inline void each_channel_vector(std::size_t c, F&& f) {
  if constexpr (simd_type_v<T>) {
    using B = batch<T>;
    constexpr std::size_t L = lanes<T>;
    std::size_t c0 = 0;
    for (; c0 + L <= c; c0 += L)
      f(c0, [](const T* p) { return B::load_unaligned(p); }, [](T* p, const B& v) { v.store_unaligned(p); });
    if (c0 < c) {
      const std::size_t n = c - c0;
      f(c0, [n](const T* p) { return load_partial(p, n); }, [n](T* p, const B& v) { store_partial(p, v, n); });
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
  if constexpr (is_batch_v<B>) {
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

/// Stores positions v (what each_channel_vector's `load` gives, n lanes of it) at p: bytes
/// converted here, the compute type through that loop's own `store`.
template <class P, class B, class Store> void store_positions(P* p, const B& v, std::size_t n, Store&& store) {
  if constexpr (!std::is_same_v<P, std::uint8_t>) store(p, v);
  else if constexpr (is_batch_v<B>) store_bytes(p, v, n);
  else *p = P(std::int32_t(v));
}
/// The n positions at p as what store_positions took, through the loop's `load` where they are
/// in the compute type.
template <class B, class P, class Load> B load_positions(const P* p, std::size_t n, Load&& load) {
  if constexpr (!std::is_same_v<P, std::uint8_t>) return load(p);
  else if constexpr (is_batch_v<B>) return load_bytes<typename B::value_type>(p, n);
  else return B(*p);
}

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
template <class T, class F> void each_output_row_accumulating(const nn::detail::pool_geometry& g, T* out, std::size_t scratch_size, F&& f) {
  using V = compute_t<T>;
  const std::size_t row = g.w * g.c;
  const bool stream = exceeds_cache<T>(g);
  const bool in_place = std::is_same_v<T, V> && !stream;
  const std::size_t slots = g.kh + g.sh;  // the rows in use and those still to move out
  const std::size_t ring_size = in_place ? 0 : slots * row;
  parallel_for_scratch<V>(g.n, grain_for(g.h * row), 1, ring_size + scratch_size, [&](std::size_t b, std::size_t e, V* work) {
    V* const ring = work;  // its rows are zero when free
    V* const scratch = work + ring_size;
    std::fill_n(ring, ring_size, V(0));
    // The rows' accumulators: on the stack for images up to 256 rows (no allocation per call).
    V* stack_rows[256];
    std::vector<V*> heap_rows(g.h > 256 ? g.h : 0);
    V** const rows = g.h > 256 ? heap_rows.data() : stack_rows;
    if (!in_place)
      for (std::size_t y = 0; y < g.h; ++y) rows[y] = ring + (y % slots) * row;
    for (std::size_t n = b; n < e; ++n) {
      T* image = out + n * g.h * row;
      if constexpr (std::is_same_v<T, V>)
        if (in_place)
          for (std::size_t y = 0; y < g.h; ++y) rows[y] = image + y * row;
      // Rows [pending, final) are final and being moved out, their elements [0, moved) already;
      // rows [final, started) are being accumulated; rows from `started` on are untouched yet.
      std::size_t pending = 0, final = 0, moved = 0, started = 0;
      const auto move_to = [&](std::size_t to) {  // the final rows' elements up to `to`
        for (std::size_t y = pending; y < final; ++y) move_out(image + y * row + moved, rows[y] + moved, to - moved, stream);
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
          for (; started < y; ++started) zero_out(image + started * row, row, stream);
          pending = final = started;
        }
      };
      for (std::size_t oy = 0; oy < g.oh; ++oy) {
        const std::ptrdiff_t ys = std::ptrdiff_t(oy * g.sh) - std::ptrdiff_t(g.pt);
        const auto clip = [&](std::ptrdiff_t y) { return std::size_t(std::clamp<std::ptrdiff_t>(y, 0, std::ptrdiff_t(g.h))); };
        final_before(clip(ys));
        for (const std::size_t y1 = clip(ys + std::ptrdiff_t(g.kh)); started < y1; ++started)
          if (in_place) std::fill_n(rows[started], row, V(0));  // ring rows are zero when free
        f(n, oy, rows, scratch, flush);
      }
      final_before(g.h);
      move_to(row);
    }
    stream_fence();
  });
}

/// The kernels of pooling take the geometry at run time; window extents are template arguments
/// (each_channel_vector's loops over a window unroll on them), the input's shape is not.
/// Max (or average) pooling with KH x KW windows, one output row at a time, in two passes that read memory in order: the window's rows are
/// combined into one row (`across`, in cache), then each window's columns of it. A NaN never
/// wins, as in TensorFlow. With `saved` (max pooling under value_and_grad), each window is
/// instead read once, straight from x, and its maximum (its columns' maxima combined, the
/// order of the two passes) and then the position of its first element equal to it, in
/// row-major order, are found from the same loads: (y - y0) * KW + (x - x0) from the window's
/// clipped corner, none where no element is (every one NaN). Every element has to be compared
/// with the maximum anyway, so the `across` pass would only add work. MaxPoolGradWithArgmax
/// then needs neither x nor y.
template <class T, std::size_t KH, std::size_t KW, bool Max, class P>
void pool_forward(const nn::detail::pool_geometry& g, T* out, P* saved, const T* x) {
  using V = compute_t<T>;
  const std::size_t row = g.w * g.c, c = g.c;
  const bool ahead = exceeds_cache<T>(g), direct = Max && saved;
  parallel_for_scratch<V>(g.n * g.oh, grain_for(KH * row), 1, direct ? 0 : row, [&](std::size_t b, std::size_t e, V* across) {
    for (std::size_t r = b; r < e; ++r) {
      const std::size_t n = r / g.oh, oy = r % g.oh;
      std::size_t y0, y1, x0, x1;
      g.window(oy, 0, y0, y1, x0, x1);
      const std::size_t height = y1 - y0;
      const T* first = x + (n * g.h + y0) * row;
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
        next = reinterpret_cast<const char*>(x + (nn * g.h + from) * row);
        next_bytes = ny1 > from ? (ny1 - from) * row * sizeof(T) : 0;
        share = (next_bytes / g.ow + 63) / 64 * 64;
      }
      T* o = out + r * g.ow * c;
      P* at = saved ? saved + r * g.ow * c : nullptr;
      for (std::size_t ox = 0; ox < g.ow; ++ox, o += c) {
        if (ox * share < next_bytes) prefetch(next + ox * share, std::min(share, next_bytes - ox * share));
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
                store_positions(at + ox * step + c0, pos, std::min(lanes<T>, step - c0), store);
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

/// MaxPoolGrad (ops/nn/pool.hpp) with windows KW wide.
template <class T, std::size_t KW>
void max_pool_grad(const nn::detail::pool_geometry& g, T* out, const T* x, const T* y, const T* dy) {
  using V = compute_t<T>;
  const std::size_t row = g.w * g.c, c = g.c, out_row = g.ow * g.c;
  const bool ahead = exceeds_cache<T>(g);
  each_output_row_accumulating(g, out, out_row, [&](std::size_t n, std::size_t oy, V* const* rows, V* left, auto&& flush) {
    const std::size_t at = (n * g.oh + oy) * out_row;
    const bool next_row = at + out_row < g.n * g.oh * out_row;
    each_channel_vector<T>(out_row, [&](std::size_t i, auto load, auto store) { store(left + i, load(dy + at + i)); });
    std::size_t y0, y1, x0, x1;
    g.window(oy, 0, y0, y1, x0, x1);
    for (std::size_t yy = y0; yy < y1; ++yy) {
      const T* in = x + (n * g.h + yy) * row;
      V* const acc_row = rows[yy];
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t wy0, wy1;
        g.window(oy, ox, wy0, wy1, x0, x1);
        if (ahead) {
          prefetch(reinterpret_cast<const char*>(in + x0 * c) + prefetch_distance, g.sw * c * sizeof(T));
          if (yy == y0 && next_row)  // y and dy of the next output row, as this one goes
            for (const T* p : {y, dy}) prefetch(p + at + out_row + ox * c, c * sizeof(T));
        }
        on_extent<KW>(x1 - x0, [&](auto cols) {
          each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
            using B = decltype(load(x));
            // Locals, not captures: the stores below may alias whatever the closures refer to.
            const std::size_t step = c, o = ox * c + c0;
            const T* px = in + x0 * c + c0;
            V* const pa = acc_row + x0 * c + c0;
            V* const pl = left + o;
            const B top = load(y + at + o), zero(0);
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

/// MaxPoolGradWithArgmax where the KH x KW windows tile the image (strides equal to the window,
/// no padding, as Keras's MaxPooling2D(2) has them): each input pixel lies in one window at most,
/// so it is written once, in row order, with dy where its window's maximum was and zero
/// elsewhere (and in the rows and columns past the last window).
template <class T, std::size_t KH, std::size_t KW, class P>
void max_pool_argmax_grad_tiled(const nn::detail::pool_geometry& g, T* out, const T* dy, const P* saved) {
  using V = compute_t<T>;
  const std::size_t c = g.c, row = g.w * g.c, out_row = g.ow * g.c, covered = g.ow * KW * g.c;
  parallel_for(g.n * g.oh, grain_for(KH * row), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) {
      const std::size_t n = r / g.oh, oy = r % g.oh;
      T* const image = out + n * g.h * row;
      const T* const d = dy + r * out_row;
      const P* const s = saved + r * out_row;
      for (std::size_t k = 0; k < KH; ++k) {
        T* const line = image + (oy * KH + k) * row;
        for (std::size_t ox = 0; ox < g.ow; ++ox)
          each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
            using B = decltype(load(dy));
            const std::size_t o = ox * c + c0;
            const B v = load(d + o), pos = load_positions<B>(s + o, std::min(lanes<T>, c - c0), load), zero(V(0));
            for (std::size_t j = 0; j < KW; ++j) store(line + (ox * KW + j) * c + c0, select(pos == B(V(k * KW + j)), v, zero));
          });
        std::fill(line + covered, line + row, T(0));
      }
      if (oy + 1 == g.oh) std::fill(image + g.oh * KH * row, image + g.h * row, T(0));
    }
  });
}

/// MaxPoolGradWithArgmax (ops/nn/pool.hpp) with KH x KW windows, from the positions P the forward pass saved.
template <class T, std::size_t KH, std::size_t KW, class P>
void max_pool_argmax_grad(const nn::detail::pool_geometry& g, T* out, const T* dy, const P* saved) {
  if (g.sh == KH && g.sw == KW && g.pt == 0 && g.pl == 0 && g.oh * KH <= g.h && g.ow * KW <= g.w) return max_pool_argmax_grad_tiled<T, KH, KW, P>(g, out, dy, saved);
  using V = compute_t<T>;
  const std::size_t c = g.c, out_row = g.ow * g.c;
  const bool ahead = exceeds_cache<T>(g);
  each_output_row_accumulating(g, out, 0, [&](std::size_t n, std::size_t oy, V* const* rows, V*, auto&& flush) {
    const std::size_t at = (n * g.oh + oy) * out_row;
    const bool next_row = at + out_row < g.n * g.oh * out_row;
    std::size_t y0, y1, x0, x1;
    g.window(oy, 0, y0, y1, x0, x1);
    V* const* const window_rows = rows + y0;
    for (std::size_t ox = 0; ox < g.ow; ++ox) {
      g.window(oy, ox, y0, y1, x0, x1);
      if (ahead && next_row) {  // the next output row's dy and positions, as this one goes
        prefetch(dy + at + out_row + ox * c, c * sizeof(T));
        prefetch(saved + at + out_row + ox * c, c * sizeof(P));
      }
      on_extent<KH>(y1 - y0, [&](auto height) {
        on_extent<KW>(x1 - x0, [&](auto cols) {
          each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
            using B = decltype(load(dy));
            // Locals, not captures: the stores below may alias whatever the closures refer to.
            const std::size_t step = c, o = at + ox * c + c0, corner = x0 * c + c0;
            const B d = load(dy + o), pos = load_positions<B>(saved + o, std::min(lanes<T>, step - c0), load);
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

/// AvgPoolGrad (ops/nn/pool.hpp).
template <class T> void avg_pool_grad(const nn::detail::pool_geometry& g, T* out, const T* dy) {
  using V = compute_t<T>;
  each_output_row_accumulating(g, out, 0, [&](std::size_t n, std::size_t oy, V* const* rows, V*, auto&& flush) {
    for (std::size_t ox = 0; ox < g.ow; ++ox) {
      std::size_t y0, y1, x0, x1;
      g.window(oy, ox, y0, y1, x0, x1);
      const T* d = dy + ((n * g.oh + oy) * g.ow + ox) * g.c;
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

/// The windows whose kernels are compiled once per program with CTFLOW_SEPARATE_COMPILATION
/// (<ctflow/compiled/core.hpp>): 2 x 2 and 3 x 3, the common ones, for float32 and float64.
#define CTFLOW_POOL_INSTANCES_K(KIND, T, K)                                                                         \
  KIND void pool_forward<T, K, K, true, nn::detail::max_pool_saved<T, K, K>::saved_type>(                           \
      const nn::detail::pool_geometry&, T*, nn::detail::max_pool_saved<T, K, K>::saved_type*, const T*);            \
  KIND void pool_forward<T, K, K, false, nn::detail::max_pool_saved<T, K, K>::saved_type>(                          \
      const nn::detail::pool_geometry&, T*, nn::detail::max_pool_saved<T, K, K>::saved_type*, const T*);            \
  KIND void max_pool_grad<T, K>(const nn::detail::pool_geometry&, T*, const T*, const T*, const T*);                 \
  KIND void max_pool_argmax_grad<T, K, K, nn::detail::max_pool_saved<T, K, K>::saved_type>(                         \
      const nn::detail::pool_geometry&, T*, const T*, const nn::detail::max_pool_saved<T, K, K>::saved_type*);
#define CTFLOW_POOL_INSTANCES(KIND, T)   \
  CTFLOW_POOL_INSTANCES_K(KIND, T, 2)    \
  CTFLOW_POOL_INSTANCES_K(KIND, T, 3)    \
  KIND void avg_pool_grad<T>(const nn::detail::pool_geometry&, T*, const T*);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_POOL_INSTANCES(extern template, float)
CTFLOW_POOL_INSTANCES(extern template, double)
#endif

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, nn::padding Pad, bool Max> struct kernel<nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max>> : nn::detail::pool_op<T, SX, KH, KW, SH, SW, Pad, Max> {
  using saved_positions = typename nn::detail::max_pool_saved<T, KH, KW>::saved_type;
  void run(T* out, const expr::strided_view<T, 4>& x) const { run(out, static_cast<saved_positions*>(nullptr), x); }
  /// With `saved`: max pooling under value_and_grad, which also leaves each window's position.
  void run(T* out, saved_positions* saved, const expr::strided_view<T, 4>& x) const {
    pool_forward<T, KH, KW, Max, saved_positions>(this->g, out, saved, x.data);
  }
};

template <class T, class SX, std::size_t KH, std::size_t KW> struct kernel<nn::detail::max_pool_grad_op<T, SX, KH, KW>> : nn::detail::max_pool_grad_op<T, SX, KH, KW> {
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& y, const expr::strided_view<T, 4>& dy) const {
    max_pool_grad<T, KW>(this->g, out, x.data, y.data, dy.data);
  }
};

template <class T, class SX, std::size_t KH, std::size_t KW> struct kernel<nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW>> : nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW> {
  using typename nn::detail::max_pool_argmax_grad_op<T, SX, KH, KW>::positions;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<positions, 4>& saved) const {
    max_pool_argmax_grad<T, KH, KW, positions>(this->g, out, dy.data, saved.data);
  }
};

template <class T, class SX> struct kernel<nn::detail::avg_pool_grad_op<T, SX>> : nn::detail::avg_pool_grad_op<T, SX> {
  void run(T* out, const expr::strided_view<T, 4>& dy) const { avg_pool_grad<T>(this->g, out, dy.data); }
};

}  // namespace ctflow::backend::cpu
