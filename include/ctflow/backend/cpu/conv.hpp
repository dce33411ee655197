#pragma once
// Convolution kernels on the CPU, over NHWC images and HWIO filters, in two schemes that the nn
// ops choose between per shape (with a third, Winograd's, in winograd.hpp):
//
// - im2col + GEMM, for any stride: the patch matrix (a row per output pixel, a column per filter
//   tap and channel) times the filters; col2im adds a patch-matrix adjoint back into an image.
// - direct, for a height stride of 1: an image zero-padded to `padded_image` rows puts the window
//   of output pixel q (counted along padded rows) at q * sw * c, so MR consecutive pixels are a
//   matrix with a uniform row stride that a register-blocked micro-kernel reads in place, with no
//   patch matrix in memory. `forward_direct` tiles MR pixels x NR outputs (it is also the stride-1
//   input gradient: a forward convolution of dy with flipped filters), `filter_direct` tiles MR
//   filter taps x NR outputs and sums over the pixels.
//
// Every output element sums its terms in one fixed order whatever the thread count.

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <ctflow/detail/buffer.hpp>
#include <ctflow/ops/nn/conv.hpp>
#include <ctflow/backend/cpu/gemm.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu::conv {

/// A convolution's index arithmetic (ops/nn/conv.hpp).
using geometry = nn::detail::conv_geometry;

/// Whether the window of output pixel (n, oy, ox) lies inside the image with unit width
/// dilation: each of its kh rows is then kw * c contiguous elements, the first at `at`, the next
/// ones dh image rows apart.
inline bool contiguous_window(const geometry& g, std::size_t n, std::size_t oy, std::size_t ox, std::size_t& at) {
  const std::ptrdiff_t y0 = std::ptrdiff_t(oy * g.sh) - std::ptrdiff_t(g.pt), x0 = std::ptrdiff_t(ox * g.sw) - std::ptrdiff_t(g.pl);
  if (g.dw != 1 || y0 < 0 || x0 < 0 || y0 + std::ptrdiff_t((g.kh - 1) * g.dh) >= std::ptrdiff_t(g.h) || x0 + std::ptrdiff_t(g.kw) > std::ptrdiff_t(g.w))
    return false;
  at = ((n * g.h + std::size_t(y0)) * g.w + std::size_t(x0)) * g.c;
  return true;
}

/// Rows [r0, r1) of the patch matrix of x: row (n, oy, ox) holds the taps (ky, kx, c) of its
/// window, zeros where the window leaves the image.
template <class T> void im2col(const geometry& g, const T* x, std::size_t r0, std::size_t r1, T* out) {
  const std::size_t depth = g.depth();
  for (std::size_t r = r0; r < r1; ++r) {
    const std::size_t n = r / (g.oh * g.ow), oy = r / g.ow % g.oh, ox = r % g.ow;
    T* row = out + (r - r0) * depth;
    if (std::size_t at; contiguous_window(g, n, oy, ox, at)) {
      const std::size_t run = g.kw * g.c;
      for (std::size_t ky = 0; ky < g.kh; ++ky) {
        const T* src = x + at + ky * g.dh * g.w * g.c;
        T* dst = row + ky * run;
        for (std::size_t i = 0; i < run; ++i) dst[i] = src[i];
      }
      continue;
    }
    for (std::size_t ky = 0; ky < g.kh; ++ky) {
      const std::ptrdiff_t iy = std::ptrdiff_t(oy * g.sh + ky * g.dh) - std::ptrdiff_t(g.pt);
      for (std::size_t kx = 0; kx < g.kw; ++kx) {
        const std::ptrdiff_t ix = std::ptrdiff_t(ox * g.sw + kx * g.dw) - std::ptrdiff_t(g.pl);
        T* dst = row + (ky * g.kw + kx) * g.c;
        if (iy < 0 || ix < 0 || iy >= std::ptrdiff_t(g.h) || ix >= std::ptrdiff_t(g.w)) {
          std::fill_n(dst, g.c, T(0));
          continue;
        }
        const T* src = x + ((n * g.h + std::size_t(iy)) * g.w + std::size_t(ix)) * g.c;
        if (g.c >= 16) std::memcpy(dst, src, g.c * sizeof(T));
        else for (std::size_t c = 0; c < g.c; ++c) dst[c] = src[c];  // few channels: no call per tap
      }
    }
  }
}

/// f(tap, input pixel) for every tap of output pixel p = (n, oy, ox) that lies inside the image,
/// taps in row-major order; pixels are indices into NHWC with the channels divided out.
template <class F> void each_tap(const geometry& g, std::size_t p, F&& f) {
  const std::size_t n = p / (g.oh * g.ow), oy = p / g.ow % g.oh, ox = p % g.ow;
  for (std::size_t ky = 0; ky < g.kh; ++ky) {
    const std::ptrdiff_t iy = std::ptrdiff_t(oy * g.sh + ky * g.dh) - std::ptrdiff_t(g.pt);
    if (iy < 0 || iy >= std::ptrdiff_t(g.h)) continue;
    for (std::size_t kx = 0; kx < g.kw; ++kx) {
      const std::ptrdiff_t ix = std::ptrdiff_t(ox * g.sw + kx * g.dw) - std::ptrdiff_t(g.pl);
      if (ix < 0 || ix >= std::ptrdiff_t(g.w)) continue;
      f(ky * g.kw + kx, (n * g.h + std::size_t(iy)) * g.w + std::size_t(ix));
    }
  }
}

/// Adds the rows of a patch-matrix adjoint back into the input adjoint dx (zeroed by the
/// caller), image by image so that threads never share memory.
template <class T> void col2im(const geometry& g, const T* cols, T* dx) {
  const std::size_t depth = g.depth(), per_image = g.oh * g.ow;
  parallel_for(g.n, grain_for(per_image * depth), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t p = b * per_image; p < e * per_image; ++p) {
      if (std::size_t at; contiguous_window(g, p / per_image, p / g.ow % g.oh, p % g.ow, at)) {
        const std::size_t run = g.kw * g.c;
        for (std::size_t ky = 0; ky < g.kh; ++ky) {
          T* dst = dx + at + ky * g.dh * g.w * g.c;
          const T* src = cols + p * depth + ky * run;
          for (std::size_t i = 0; i < run; ++i) dst[i] += src[i];
        }
        continue;
      }
      each_tap(g, p, [&](std::size_t tap, std::size_t pixel) {
        T* dst = dx + pixel * g.c;
        const T* src = cols + p * depth + tap * g.c;
        for (std::size_t c = 0; c < g.c; ++c) dst[c] += src[c];
      });
    }
  });
}

/// The patch matrix of all of x, in memory reused from one call to the next.
template <class T> ctflow::detail::buffer<T> patches(const geometry& g, const T* x) {
  ctflow::detail::buffer<T> p(g.rows() * g.depth(), false);
  parallel_for(g.rows(), grain_for(g.depth()), 1, [&](std::size_t b, std::size_t e) { im2col(g, x, b, e, p.data() + b * g.depth()); });
  return p;
}

// ---- The direct scheme (sh == 1) ----

/// Forward tiles: MR pixels x NV vectors of outputs.
template <class T> struct direct_blocking {
  static constexpr std::size_t MR = 12, NV = 2, NR = NV * lanes<T>;
};

/// The zero-padded copy of one image that the direct kernels read: `rows` rows of `width`
/// pixels (a multiple of sw, so that each row holds `per_row` output pixels), then slack that the
/// windows of a last tile's surplus pixels reach into.
struct padded_image {
  std::size_t rows, width, per_row, elements;
  explicit padded_image(const geometry& g, std::size_t max_tile = 12)
      : rows(g.oh + (g.kh - 1) * g.dh),
        width((std::max((g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1, g.ow * g.sw) + g.sw - 1) / g.sw * g.sw),
        per_row(width / g.sw),
        elements((rows * width + max_tile * g.sw + (g.kw - 1) * g.dw + 1) * g.c) {}

  /// Pads image (h x w x c) into out (`elements` long).
  template <class T> void fill(const geometry& g, const T* image, T* out) const {
    const std::size_t c = g.c;
    for (std::size_t y = 0; y < rows; ++y) {
      T* dst = out + y * width * c;
      const std::ptrdiff_t iy = std::ptrdiff_t(y) - std::ptrdiff_t(g.pt);
      const std::size_t left = std::min(g.pl, width), end = std::min(width, g.pl + g.w);
      if (iy < 0 || iy >= std::ptrdiff_t(g.h) || end <= left) {
        std::fill_n(dst, width * c, T(0));
        continue;
      }
      std::fill_n(dst, left * c, T(0));
      std::memcpy(dst + left * c, image + std::size_t(iy) * g.w * c, (end - left) * c * sizeof(T));
      std::fill_n(dst + end * c, (width - end) * c, T(0));
    }
    std::fill(out + rows * width * c, out + elements, T(0));
  }
  /// Offsets of the filter taps (ky, kx) from a window's origin, in elements.
  ctflow::detail::buffer<std::ptrdiff_t> taps(const geometry& g) const {
    ctflow::detail::buffer<std::ptrdiff_t> t(g.kh * g.kw, false);
    for (std::size_t ky = 0; ky < g.kh; ++ky)
      for (std::size_t kx = 0; kx < g.kw; ++kx) t.data()[ky * g.kw + kx] = std::ptrdiff_t((ky * g.dh * width + kx * g.dw) * g.c);
    return t;
  }
};

/// Packs the [depth x o] matrix at(d, j) into panels [o / NR][depth][NR], zero-padded.
template <class T, std::size_t NR, class At> ctflow::detail::buffer<T> pack_panels(std::size_t depth, std::size_t o, At&& at) {
  const std::size_t panels = (o + NR - 1) / NR;
  ctflow::detail::buffer<T> out(panels * depth * NR, false);
  T* p = out.data();
  for (std::size_t j0 = 0; j0 < panels * NR; j0 += NR)
    for (std::size_t d = 0; d < depth; ++d)
      for (std::size_t j = j0; j < j0 + NR; ++j) *p++ = j < o ? at(d, j) : T(0);
  return out;
}

/// The first n lanes at p (all of them when n >= lanes), zero past them.
template <class T> inline batch<T> load_lanes(const T* p, std::size_t n) {
  return n >= lanes<T> ? batch<T>::load_unaligned(p) : load_partial(p, n);
}
/// Stores the first n lanes of r (all of them when n >= lanes) to p, or adds them there.
template <class T> inline void store_lanes(T* p, batch<T> r, std::size_t n, bool accumulate) {
  if (n >= lanes<T>) (accumulate ? r + batch<T>::load_unaligned(p) : r).store_unaligned(p);
  else if (n > 0) store_partial(p, accumulate ? r + load_partial(p, n) : r, n);
}

/// MR pixels (rows rs apart from a) x NV vectors of outputs, summed over taps x c: b is a packed
/// filter panel [taps * c][NV * lanes]. Row i goes to out[i] + col, or nowhere when out[i] is null.
template <class T, std::size_t MR, std::size_t NV>
[[gnu::flatten]] void forward_tile(const T* a, std::ptrdiff_t rs, const std::ptrdiff_t* taps, std::size_t ntaps, std::size_t c, const T* __restrict b,
                  T* const* out, std::size_t col, std::size_t nr) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  V acc[MR][NV];
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
    gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[i][v] = V(T(0)); });
  });
  for (std::size_t t = 0; t < ntaps; ++t) {
    const T* at = a + taps[t];
    for (std::size_t ch = 0; ch < c; ++ch) {
      V bv[NV];
      gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) { bv[v] = V::load_aligned(b + v * L); });
      gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
        const V ai(at[std::ptrdiff_t(i) * rs + std::ptrdiff_t(ch)]);
        gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[i][v] = xsimd::fma(ai, bv[v], acc[i][v]); });
      });
      b += NV * L;
    }
  }
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
    if (out[i])
      gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) {
        if (v * L < nr) store_lanes(out[i] + col + v * L, acc[i][v], nr - v * L, false);
      });
  });
}

/// A single output: MR pixels (rows rs apart from a), each the dot product of its window (taps x
/// c, the channels a vector at a time) with the filter column f [taps * c].
template <class T, std::size_t MR>
[[gnu::flatten]] void dot_tile(const T* a, std::ptrdiff_t rs, const std::ptrdiff_t* taps, std::size_t ntaps, std::size_t c, const T* f,
                               T* const* out) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  V acc[MR];
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) { acc[i] = V(T(0)); });
  for (std::size_t t = 0; t < ntaps; ++t, f += c) {
    const T* at = a + taps[t];
    std::size_t ch = 0;
    for (; ch + L <= c; ch += L) {
      const V fv = V::load_unaligned(f + ch);
      gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
        acc[i] = xsimd::fma(V::load_unaligned(at + std::ptrdiff_t(i) * rs + std::ptrdiff_t(ch)), fv, acc[i]);
      });
    }
    if (ch < c) {
      const V fv = load_partial(f + ch, c - ch);
      gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
        acc[i] = xsimd::fma(load_partial(at + std::ptrdiff_t(i) * rs + std::ptrdiff_t(ch), c - ch), fv, acc[i]);
      });
    }
  }
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
    if (out[i]) *out[i] = xsimd::hadd(acc[i]);
  });
}

/// y [n, oh, ow, o] = conv(x [n, h, w, c], filters) for g.sh == 1; `filters` are the [depth, o]
/// filter matrix packed by pack_panels<T, direct_blocking<T>::NR>. Images are split between
/// threads.
template <class T> void forward_direct(const geometry& g, const T* x, const T* filters, T* y) {
  using DB = direct_blocking<T>;
  constexpr std::size_t MR = DB::MR, NR = DB::NR;
  const padded_image pad(g, MR);
  const auto taps = pad.taps(g);
  const std::size_t depth = g.depth(), pixels = g.oh * pad.per_row;
  const std::ptrdiff_t rs = std::ptrdiff_t(g.sw * g.c);
  // One output (a grayscale image's input gradient): dot products over the channels instead of
  // a panel with one lane in use.
  ctflow::detail::buffer<T> column(g.o == 1 ? depth : 0, false);
  for (std::size_t d = 0; d < column.size(); ++d) column.data()[d] = filters[d * NR];
  parallel_for_scratch<T>(g.n, grain_for(g.oh * g.ow * depth * g.o), 1, pad.elements, [&](std::size_t b, std::size_t e, T* image) {
    for (std::size_t n = b; n < e; ++n) {
      pad.fill(g, x + n * g.h * g.w * g.c, image);
      T* const image_out = y + n * g.oh * g.ow * g.o;
      std::size_t oy = 0, ox = 0;  // of pixel q0, counted along padded rows (no division per tile)
      for (std::size_t q0 = 0; q0 < pixels; q0 += MR) {
        T* out[MR];
        for (std::size_t i = 0; i < MR; ++i) {
          out[i] = oy < g.oh && ox < g.ow ? image_out + (oy * g.ow + ox) * g.o : nullptr;
          if (++ox == pad.per_row) ox = 0, ++oy;
        }
        const T* a = image + std::ptrdiff_t(q0) * rs;
        if (g.o == 1) dot_tile<T, MR>(a, rs, taps.data(), taps.size(), g.c, column.data(), out);
        else
          for (std::size_t j = 0; j < g.o; j += NR)
            forward_tile<T, MR, DB::NV>(a, rs, taps.data(), taps.size(), g.c, filters + j * depth, out, j, std::min(NR, g.o - j));
      }
    }
  });
}

/// MR taps (offsets off[i] from a pixel's window origin) x NV vectors of outputs, summed over
/// output rows [oy0, oy1) of one image: c[i * ldc, 0:nr] (+)= sum over pixels of a[off[i]] * dy.
template <class T, std::size_t MR, std::size_t NV>
[[gnu::flatten]] void filter_tile(const T* a, const std::ptrdiff_t* off_, std::size_t oy0, std::size_t oy1, std::size_t ow, std::ptrdiff_t row_stride,
                 std::ptrdiff_t pixel_stride, const T* dy, std::size_t o, T* c, std::size_t ldc, std::size_t mr, std::size_t nr,
                 bool accumulate) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  const bool full = nr == NV * L;
  std::ptrdiff_t off[MR];
  for (std::size_t i = 0; i < MR; ++i) off[i] = off_[i];
  V acc[MR][NV];
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
    gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[i][v] = V(T(0)); });
  });
  for (std::size_t oy = oy0; oy < oy1; ++oy) {
    const T* ap = a + std::ptrdiff_t(oy) * row_stride;
    const T* dp = dy + oy * ow * o;
    for (std::size_t ox = 0; ox < ow; ++ox, ap += pixel_stride, dp += o) {
      V bv[NV];
      gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) {
        if (full || (v + 1) * L <= nr) bv[v] = V::load_unaligned(dp + v * L);
        else bv[v] = v * L < nr ? load_partial(dp + v * L, nr - v * L) : V(T(0));
      });
      gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
        const V ai(ap[off[i]]);
        gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) { acc[i][v] = xsimd::fma(ai, bv[v], acc[i][v]); });
      });
    }
  }
  gemm::unroll(std::make_index_sequence<MR>{}, [&](auto i) {
    if (i < mr)
      gemm::unroll(std::make_index_sequence<NV>{}, [&](auto v) {
        if (v * L < nr) store_lanes(c + i * ldc + v * L, acc[i][v], nr - v * L, accumulate);
      });
  });
}

/// df [depth, o] = sum over pixels of the patches of x [n, h, w, c] times dy [n, oh, ow, o], for
/// g.sh == 1. The images are cut into a number of chunks fixed by the shape; each chunk's sum is
/// computed on one thread and the chunks are added in order, so the result does not depend on
/// the thread count.
template <class T, std::size_t MR, std::size_t NV> void filter_direct(const geometry& g, const T* x, const T* dy, T* df) {
  constexpr std::size_t NR = NV * lanes<T>;
  if (g.n == 0 || g.oh == 0 || g.ow == 0) {
    std::fill_n(df, g.depth() * g.o, T(0));
    return;
  }
  const padded_image pad(g);
  const auto taps = pad.taps(g);
  const std::size_t depth = g.depth(), size = depth * g.o, chunks = std::min<std::size_t>(g.n, 16);
  // Offsets of the tiles' taps: tap d is channel d % c of filter tap d / c.
  ctflow::detail::buffer<std::ptrdiff_t> off((depth + MR - 1) / MR * MR);
  for (std::size_t d = 0; d < depth; ++d) off.data()[d] = taps.data()[d / g.c] + std::ptrdiff_t(d % g.c);
  // Output rows per block: about 64 pixels, whose dy rows stay in L1 while every tile meets them.
  const std::size_t block = std::max<std::size_t>(1, 64 / g.ow);
  reduce::sum_in_chunk_order(chunks, size, df, [&](std::size_t chunk, T* sum, T* image) {
    bool first = true;
    for (std::size_t n = g.n * chunk / chunks; n < g.n * (chunk + 1) / chunks; ++n) {
      pad.fill(g, x + n * g.h * g.w * g.c, image);
      const T* dyn = dy + n * g.oh * g.ow * g.o;
      for (std::size_t oy = 0; oy < g.oh; oy += block, first = false)
        for (std::size_t d = 0; d < depth; d += MR)
          for (std::size_t j = 0; j < g.o; j += NR)
            filter_tile<T, MR, NV>(image, off.data() + d, oy, std::min(g.oh, oy + block), g.ow, std::ptrdiff_t(pad.width * g.c),
                                   std::ptrdiff_t(g.sw * g.c), dyn + j, g.o, sum + d * g.o + j, g.o, std::min(MR, depth - d),
                                   std::min(NR, g.o - j), !first);
    }
  }, pad.elements);
}

/// filter_direct with the tile that suits the number of outputs: few outputs take more taps to a
/// tile instead of idle lanes.
template <class T> void filter_direct(const geometry& g, const T* x, const T* dy, T* df) {
  // Few outputs: more taps to a tile instead of idle lanes.
  if (g.o <= 2 * lanes<T>) filter_direct<T, 12, 2>(g, x, dy, df);
  else filter_direct<T, 6, 4>(g, x, dy, df);
}

// The float32 and float64 instances of this file's entry points are compiled once per program,
// by <ctflow/compiled/core.hpp>, where it is built with CTFLOW_SEPARATE_COMPILATION; its other
// translation units only call them.
#define CTFLOW_CONV_INSTANCES(KIND, T)                                                          \
  KIND void col2im<T>(const geometry&, const T*, T*);                                           \
  KIND ctflow::detail::buffer<T> patches<T>(const geometry&, const T*);                         \
  KIND void forward_direct<T>(const geometry&, const T*, const T*, T*);                         \
  KIND void filter_direct<T>(const geometry&, const T*, const T*, T*);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_CONV_INSTANCES(extern template, float)
CTFLOW_CONV_INSTANCES(extern template, double)
#endif

}  // namespace ctflow::backend::cpu::conv
