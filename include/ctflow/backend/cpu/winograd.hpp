#pragma once
// Winograd's minimal filtering F(2x2, 3x3) for 3x3 convolutions with unit strides and dilations
// over NHWC images (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
// Each 2 x 2 block of output pixels (a tile) comes from the 4 x 4 block of input pixels under it:
//
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
//
// where (.) multiplies element-wise at each of the 16 positions of a transformed tile. Over all
// channels, each position is a matrix product: [tiles x c] (the transformed inputs) times
// [c x o] (the transformed filters), 16 of them with c * o multiply-adds per tile instead of the
// 36 c * o of the direct sum over 4 pixels x 9 taps, 2.25 times fewer.
//
// `forward` transforms a chunk of tiles, multiplies it at each position with the unpacked GEMM
// tiles (gemm::small) while it stays in L2, and transforms the products back into y.
// `filter` is the filter gradient of the same identity turned around (F(3x3, 2x2)):
//
//   dg = G^T [ (A dY A^T) (.) (B^T d B) ] G
//
// summed over all tiles: at each position, [c x tiles] times [tiles x o]. The input gradient is
// either `forward` over dy with the filters flipped and their channel axes swapped (a tile per
// 2 x 2 pixels of dx), or `input_gradient`, forward's adjoint (a tile per 2 x 2 pixels of dy):
// dx = B [ (A dY A^T) U^T ] B^T, added where the 4 x 4 input tiles overlap.
//
// Each output element sums its terms in an order fixed by the shape alone: forward's tiles go to
// threads in multiples of 8, input_gradient's in whole images, and the filter gradient's tiles
// are cut into a number of groups fixed by the shape, added in order.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include <ctflow/detail/buffer.hpp>
#include <ctflow/backend/cpu/conv.hpp>
#include <ctflow/backend/cpu/gemm.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>

namespace ctflow::backend::cpu::winograd {

using conv::geometry;
using conv::load_lanes;
using conv::store_lanes;

/// Whether g is a convolution these kernels compute: 3x3 taps, unit strides and dilations, and
/// at least a vector of input and output channels (fewer leave most lanes of every transform and
/// product idle; the direct kernels suit them better).
template <class T> bool suits(const geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.c >= lanes<T> && g.o >= lanes<T> && g.oh > 0 &&
         g.ow > 0 && g.n > 0;
}

/// Tiles per chunk, for cp and op channels (whole vectors) in and out: at most `most`, fewer
/// where the chunk's 16 transformed [tiles x cp] inputs and [tiles x op] products would take more
/// than half of L2. A small forward pass (keeps_filters) takes at most 16: alone, the
/// Fashion-MNIST CNN's second convolution runs at the same speed from 16 to 64, but in the model
/// at batch 1 the smaller buffers leave more of the dense layer's weights in L2 (a microsecond of
/// its 28). A large one takes 64 (ResNet's 56 x 56 x 64 at batch 32 runs 1-2 % faster).
template <class T> std::size_t chunk_tiles(std::size_t cp, std::size_t op, std::size_t most = 64) {
  return std::clamp<std::size_t>(gemm::l2_bytes / 2 / (16 * (cp + op) * sizeof(T)), 4, most);
}

/// The filters' transform U = G g G^T, as 16 matrices [c x o] (position-major), of the HWIO
/// filters w [3][3][c][o].
template <class T> ctflow::detail::buffer<T> transform_filters(std::size_t c, std::size_t o, const T* w) {
  const std::size_t co = c * o;
  ctflow::detail::buffer<T> u(16 * co, false);
  // Explicit vectors over k: left to the compiler, this loop is not vectorised in large
  // translation units.
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  T* out = u.data();
  const V half(T(0.5));
  for (std::size_t k = 0; k < co; k += L) {
    const std::size_t nl = std::min(L, co - k);
    const auto load = [&](std::size_t tap) { return load_lanes(w + tap * co + k, nl); };
    V t[4][3];  // G g: rows of taps into 4 rows
    for (std::size_t j = 0; j < 3; ++j) {
      const V g0 = load(j), g1 = load(3 + j), g2 = load(6 + j);
      t[0][j] = g0;
      t[1][j] = half * (g0 + g1 + g2);
      t[2][j] = half * (g0 - g1 + g2);
      t[3][j] = g2;
    }
    for (std::size_t i = 0; i < 4; ++i) {  // (G g) G^T
      const V r[4] = {t[i][0], half * (t[i][0] + t[i][1] + t[i][2]), half * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
      for (std::size_t j = 0; j < 4; ++j) store_lanes(out + (i * 4 + j) * co + k, r[j], nl, false);
    }
  }
  return u;
}

/// The same transform of filters laid out otherwise (flipped, their channel axes swapped):
/// at(ky, kx, ci, co) for 3x3 taps, c inputs and o outputs.
template <class T, class At> ctflow::detail::buffer<T> transform_filters(std::size_t c, std::size_t o, At&& at) {
  const std::size_t co = c * o;
  ctflow::detail::buffer<T> g(9 * co, false);
  for (std::size_t tap = 0; tap < 9; ++tap)
    for (std::size_t ci = 0; ci < c; ++ci)
      for (std::size_t j = 0; j < o; ++j) g.data()[tap * co + ci * o + j] = at(tap / 3, tap % 3, ci, j);
  return transform_filters<T>(c, o, static_cast<const T*>(g.data()));
}

/// Filter transforms kept between calls, per thread. A convolution over few tiles (a small image
/// at batch 1) spends as long transforming its filters as multiplying with them, and a model
/// served call after call would redo the same transform each time. An entry keeps a copy of the
/// filters it was made from and serves only filters equal to that copy, byte for byte, so no
/// write to them, by any path, leaves it stale: the address only finds the entry. At most
/// `limit_bytes` of copies and transforms are kept; the least recently used entry goes first.
template <class T> class kept_filters {
 public:
  static constexpr std::size_t limit_bytes = std::size_t(16) << 20;

  static kept_filters& local() {
    thread_local kept_filters k;
    return k;
  }

  /// U of the HWIO filters w [3][3][c][o], from an entry or made now (and kept, if it fits).
  const T* get(std::size_t c, std::size_t o, const T* w) {
    const std::size_t co = c * o;
    ++clock_;
    for (entry& e : entries_)
      if (e.source == w && e.co == co && e.c == c) {
        if (std::memcmp(e.copy.data(), w, 9 * co * sizeof(T)) != 0) {
          std::memcpy(static_cast<void*>(e.copy.data()), w, 9 * co * sizeof(T));
          e.u = transform_filters<T>(c, o, w);
        }
        e.used = clock_;
        return e.u.data();
      }
    const std::size_t bytes = entry_bytes(co);
    if (bytes > limit_bytes) return nullptr;
    while (held_ + bytes > limit_bytes) evict();
    entry e{w, c, co, ctflow::detail::buffer<T>(9 * co, false), transform_filters<T>(c, o, w), clock_};
    std::memcpy(static_cast<void*>(e.copy.data()), w, 9 * co * sizeof(T));
    held_ += bytes;
    entries_.push_back(std::move(e));
    return entries_.back().u.data();
  }
  /// Bytes of copies and transforms kept.
  std::size_t held_bytes() const { return held_; }

 private:
  struct entry {
    const T* source;
    std::size_t c, co;
    ctflow::detail::buffer<T> copy, u;
    std::size_t used;
  };
  /// What an entry of c * o filter pairs holds: their 3x3 copy and their 4x4 transform.
  static constexpr std::size_t entry_bytes(std::size_t co) { return (9 + 16) * co * sizeof(T); }
  void evict() {
    const auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const entry& a, const entry& b) { return a.used < b.used; });
    held_ -= entry_bytes(oldest->co);
    entries_.erase(oldest);
  }
  std::vector<entry> entries_;
  std::size_t held_ = 0, clock_ = 0;
};

/// The tiles of g's output: th x tw per image, counted image by image, row by row.
struct tiling {
  std::size_t th, tw, count;
  explicit tiling(const geometry& g) : th((g.oh + 1) / 2), tw((g.ow + 1) / 2), count(g.n * th * tw) {}
  /// Calls f(t, image, ty, tx) for tiles [t0, t0 + nt), t counted from t0.
  template <class F> void each(std::size_t t0, std::size_t nt, F&& f) const {
    std::size_t img = t0 / (th * tw), r = t0 % (th * tw), ty = r / tw, tx = r % tw;
    for (std::size_t t = 0; t < nt; ++t) {
      f(t, img, ty, tx);
      if (++tx == tw) {
        tx = 0;
        if (++ty == th) ty = 0, ++img;
      }
    }
  }
};

/// Whether a forward pass of g keeps its filters' transform (kept_filters): where the tiles are
/// few, so that the transform is a notable part of the call (a small image at a small batch).
inline bool keeps_filters(const geometry& g) { return tiling(g).count <= 256; }

/// B^T d B of one 4 x 4 input tile, pixel (i, j)'s c channels at at(i, j), into v + pos * vs
/// (pos = 4 i + j of the transform), a vector of channels at a time.
template <class T, class At> inline void input_tile(At&& at, std::size_t c, T* v, std::size_t vs) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  for (std::size_t ch = 0; ch < c; ch += L) {
    const std::size_t nl = std::min(L, c - ch);
    V d[4][4];
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 4; ++j) d[i][j] = load_lanes(at(i, j) + ch, nl);
    V e[4][4];  // B^T d
    for (std::size_t j = 0; j < 4; ++j) {
      e[0][j] = d[0][j] - d[2][j];
      e[1][j] = d[1][j] + d[2][j];
      e[2][j] = d[2][j] - d[1][j];
      e[3][j] = d[1][j] - d[3][j];
    }
    for (std::size_t i = 0; i < 4; ++i) {  // (B^T d) B
      T* q = v + i * 4 * vs + ch;
      (e[i][0] - e[i][2]).store_aligned(q);
      (e[i][1] + e[i][2]).store_aligned(q + vs);
      (e[i][2] - e[i][1]).store_aligned(q + 2 * vs);
      (e[i][1] - e[i][3]).store_aligned(q + 3 * vs);
    }
  }
}

/// f(at), at(i, j) the channels of pixel (y0 + i, x0 + j) of image (g.h x g.w x g.c), or
/// `outside` for pixels past the image's edge: constant strides where the 4 x 4 tile lies inside,
/// a table of its 16 pixels at the border.
template <class P, class F> inline void tile_pixels(const geometry& g, P* image, std::ptrdiff_t y0, std::ptrdiff_t x0, P* outside, F&& f) {
  const std::ptrdiff_t C = std::ptrdiff_t(g.c), W = std::ptrdiff_t(g.w), H = std::ptrdiff_t(g.h);
  if (y0 >= 0 && x0 >= 0 && y0 + 4 <= H && x0 + 4 <= W) {
    P* const p = image + (y0 * W + x0) * C;
    f([&](std::size_t i, std::size_t j) { return p + (std::ptrdiff_t(i) * W + std::ptrdiff_t(j)) * C; });
    return;
  }
  P* px[16];
  for (std::ptrdiff_t i = 0; i < 4; ++i)
    for (std::ptrdiff_t j = 0; j < 4; ++j) {
      const bool inside = y0 + i >= 0 && y0 + i < H && x0 + j >= 0 && x0 + j < W;
      px[i * 4 + j] = inside ? image + ((y0 + i) * W + x0 + j) * C : outside;
    }
  f([&](std::size_t i, std::size_t j) { return px[i * 4 + j]; });
}

/// Transforms the input tiles [t0, t0 + nt) of x into v[pos * vs + t * cp + channel]. Pixels
/// outside the image read `zeros` (c of them) instead.
template <class T>
void input_tiles(const geometry& g, const tiling& tl, const T* x, std::size_t t0, std::size_t nt, T* v, std::size_t vs, std::size_t cp, const T* zeros) {
  tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
    const std::ptrdiff_t y0 = std::ptrdiff_t(2 * ty) - std::ptrdiff_t(g.pt), x0 = std::ptrdiff_t(2 * tx) - std::ptrdiff_t(g.pl);
    tile_pixels(g, x + img * g.h * g.w * g.c, y0, x0, zeros, [&](auto&& at) { input_tile<T>(at, g.c, v + t * cp, vs); });
  });
}

/// A dY A^T of the 2 x 2 gradient tiles [t0, t0 + nt) of dy [n, oh, ow, o] into
/// d[pos * ds + t * op + output]; zero past the output's edge.
template <class T>
void gradient_tiles(const geometry& g, const tiling& tl, const T* dy, std::size_t t0, std::size_t nt, T* d, std::size_t ds, std::size_t op) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
    const std::size_t rows = std::min<std::size_t>(2, g.oh - 2 * ty), cols = std::min<std::size_t>(2, g.ow - 2 * tx);
    const T* gy = dy + ((img * g.oh + 2 * ty) * g.ow + 2 * tx) * g.o;
    for (std::size_t o = 0; o < g.o; o += L) {
      const std::size_t nl = std::min(L, g.o - o);
      V q[2][2];
      for (std::size_t a = 0; a < 2; ++a)
        for (std::size_t b = 0; b < 2; ++b) {
          const T* p = gy + (a * g.ow + b) * g.o + o;
          q[a][b] = a >= rows || b >= cols ? V(T(0)) : load_lanes(p, nl);
        }
      // A dY, then (A dY) A^T; A^T = [1 1 1 0; 0 1 -1 -1].
      const V e[4][2] = {{q[0][0], q[0][1]}, {q[0][0] + q[1][0], q[0][1] + q[1][1]}, {q[0][0] - q[1][0], q[0][1] - q[1][1]}, {-q[1][0], -q[1][1]}};
      for (std::size_t i = 0; i < 4; ++i) {
        T* p = d + i * 4 * ds + t * op + o;
        e[i][0].store_aligned(p);
        (e[i][0] + e[i][1]).store_aligned(p + ds);
        (e[i][0] - e[i][1]).store_aligned(p + 2 * ds);
        (-e[i][1]).store_aligned(p + 3 * ds);
      }
    }
  });
}

/// Rounds n up to whole vectors.
template <class T> constexpr std::size_t vectors(std::size_t n) { return (n + lanes<T> - 1) / lanes<T> * lanes<T>; }

/// y [n, oh, ow, o] = conv(x [n, h, w, c], filters) for suits(g); u from transform_filters.
template <class T> void forward(const geometry& g, const T* x, const T* u, T* y) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  const tiling tl(g);
  // Positions lie a vector more than a chunk apart, so that the 16 streams of a transform do not
  // fall into the same sets of L1.
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), chunk = chunk_tiles<T>(cp, op, keeps_filters(g) ? 16 : 64), vs = chunk * cp + L, ms = chunk * op + L;
  // Threads take tiles in multiples of 8, so that every tile meets the same row tile of
  // gemm::small (and so sums in the same order) as on one thread; a task takes at least a chunk
  // and task_work's worth of transformed inputs and products, so that a small call (the CNN's
  // 36 tiles at batch 1) stays on one thread.
  parallel_for_scratch<T>(tl.count, std::max(chunk, grain_for(16 * (cp + op))), 8, 16 * vs + cp + 16 * ms, [&](std::size_t tb, std::size_t te, T* work) {
    T* const v = work;
    T* const m = work + 16 * vs + cp;
    std::fill_n(v + 16 * vs, cp, T(0));
    for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
      const std::size_t nt = std::min(chunk, te - t0);
      input_tiles(g, tl, x, t0, nt, v, vs, cp, v + 16 * vs);
      for (std::size_t pos = 0; pos < 16; ++pos)
        gemm::small(nt, g.o, g.c, v + pos * vs, std::ptrdiff_t(cp), 1, u + pos * g.c * g.o, std::ptrdiff_t(g.o), m + pos * ms, std::ptrdiff_t(op), false);
      tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
        const std::size_t rows = std::min<std::size_t>(2, g.oh - 2 * ty), cols = std::min<std::size_t>(2, g.ow - 2 * tx);
        T* out = y + ((img * g.oh + 2 * ty) * g.ow + 2 * tx) * g.o;
        const T* mt = m + t * op;
        for (std::size_t o = 0; o < g.o; o += L) {
          const std::size_t nl = std::min(L, g.o - o);
          V s[2][4];  // A^T M
          for (std::size_t j = 0; j < 4; ++j) {
            const V m0 = V::load_aligned(mt + j * ms + o), m1 = V::load_aligned(mt + (4 + j) * ms + o),
                    m2 = V::load_aligned(mt + (8 + j) * ms + o), m3 = V::load_aligned(mt + (12 + j) * ms + o);
            s[0][j] = m0 + m1 + m2;
            s[1][j] = m1 - m2 - m3;
          }
          for (std::size_t a = 0; a < rows; ++a) {  // (A^T M) A, the pixels inside the output
            const V r0 = s[a][0] + s[a][1] + s[a][2], r1 = s[a][1] - s[a][2] - s[a][3];
            T* p = out + a * g.ow * g.o + o;
            store_lanes(p, r0, nl, false);
            if (cols > 1) store_lanes(p + g.o, r1, nl, false);
          }
        }
      });
    }
  });
}

/// Adds B M B^T of one tile's products (position pos's c channels at mt + pos * ms) into the
/// 4 x 4 input pixels at(i, j), a vector of channels at a time.
template <class T, class At> inline void add_input_tile(At&& at, const T* mt, std::size_t ms, std::size_t c) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  for (std::size_t ch = 0; ch < c; ch += L) {
    const std::size_t nl = std::min(L, c - ch);
    V e[4][4];  // B M; B = [1 0 0 0; 0 1 -1 1; -1 1 1 0; 0 0 0 -1]
    for (std::size_t j = 0; j < 4; ++j) {
      const V m0 = V::load_aligned(mt + j * ms + ch), m1 = V::load_aligned(mt + (4 + j) * ms + ch), m2 = V::load_aligned(mt + (8 + j) * ms + ch),
              m3 = V::load_aligned(mt + (12 + j) * ms + ch);
      e[0][j] = m0;
      e[1][j] = m1 - m2 + m3;
      e[2][j] = m1 + m2 - m0;
      e[3][j] = -m3;
    }
    for (std::size_t i = 0; i < 4; ++i) {  // (B M) B^T
      const V r[4] = {e[i][0], e[i][1] - e[i][2] + e[i][3], e[i][1] + e[i][2] - e[i][0], -e[i][3]};
      for (std::size_t j = 0; j < 4; ++j) store_lanes(at(i, j) + ch, r[j], nl, true);
    }
  }
}

/// dx [n, h, w, c] = the input gradient of the convolution g given dy [n, oh, ow, o], for
/// suits(g): forward's adjoint, tile by tile. Each output tile's A dY A^T meets ut (the filters'
/// transform with their channel axes swapped: 16 matrices [o x c]), and B (.) B^T of the products
/// is added into the 4 x 4 input tile under it; input tiles overlap by 2 pixels, and pixels of the
/// padding are dropped. Threads take whole images (groups of them, fixed by the shape), so that no
/// two write the same pixel and every pixel adds its tiles in tile order.
template <class T> void input_gradient(const geometry& g, const T* dy, const T* ut, T* dx) {
  constexpr std::size_t L = lanes<T>;
  const tiling tl(g);
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), chunk = chunk_tiles<T>(cp, op), ds = chunk * op + L, ms = chunk * cp + L;
  const std::size_t per_image = tl.th * tl.tw, images = std::max<std::size_t>(1, chunk / per_image), image_size = g.h * g.w * g.c;
  parallel_for_scratch<T>((g.n + images - 1) / images, 1, 1, 16 * ds + 16 * ms + cp, [&](std::size_t gb, std::size_t ge, T* work) {
    T* const d = work;
    T* const m = work + 16 * ds;
    T* const sink = m + 16 * ms;
    const std::size_t n0 = gb * images, n1 = std::min(g.n, ge * images);
    std::fill(dx + n0 * image_size, dx + n1 * image_size, T(0));
    for (std::size_t group = gb; group < ge; ++group) {
      const std::size_t tb = group * images * per_image, te = std::min(g.n, (group + 1) * images) * per_image;
      for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
        const std::size_t nt = std::min(chunk, te - t0);
        gradient_tiles(g, tl, dy, t0, nt, d, ds, op);
        for (std::size_t pos = 0; pos < 16; ++pos)  // [tiles x o] x [o x c]
          gemm::small(nt, g.c, g.o, d + pos * ds, std::ptrdiff_t(op), 1, ut + pos * g.o * g.c, std::ptrdiff_t(g.c), m + pos * ms, std::ptrdiff_t(cp), false);
        tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
          const std::ptrdiff_t y0 = std::ptrdiff_t(2 * ty) - std::ptrdiff_t(g.pt), x0 = std::ptrdiff_t(2 * tx) - std::ptrdiff_t(g.pl);
          // Pixels in the padding add into `sink`, which nothing reads.
          tile_pixels(g, dx + img * image_size, y0, x0, sink, [&](auto&& at) { add_input_tile<T>(at, m + t * cp, ms, g.c); });
        });
      }
    }
  });
}

/// df [3, 3, c, o] = the filter gradient of the convolution g of x [n, h, w, c] given dy
/// [n, oh, ow, o], for suits(g).
template <class T> void filter(const geometry& g, const T* x, const T* dy, T* df) {
  constexpr std::size_t L = lanes<T>;
  const tiling tl(g);
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), chunk = chunk_tiles<T>(cp, op), vs = chunk * cp + L, ds = chunk * op + L;
  const std::size_t co = g.c * g.o;
  // Groups of at least 8 chunks: each adds its 16 [c x o] products in place, chunk by chunk.
  const std::size_t groups = std::clamp<std::size_t>(tl.count / (8 * chunk), 1, 16);
  ctflow::detail::buffer<T> sum(16 * co, false);
  reduce::sum_in_chunk_order(groups, 16 * co, sum.data(), [&](std::size_t group, T* part, T* work) {
    T* const v = work;
    T* const d = work + 16 * vs + cp;
    std::fill_n(v + 16 * vs, cp, T(0));
    const std::size_t tb = tl.count * group / groups, te = tl.count * (group + 1) / groups;
    for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
      const std::size_t nt = std::min(chunk, te - t0);
      input_tiles(g, tl, x, t0, nt, v, vs, cp, v + 16 * vs);
      gradient_tiles(g, tl, dy, t0, nt, d, ds, op);
      for (std::size_t pos = 0; pos < 16; ++pos)  // [c x tiles] x [tiles x o]
        gemm::small(g.c, g.o, nt, v + pos * vs, 1, std::ptrdiff_t(cp), d + pos * ds, std::ptrdiff_t(op), part + pos * co, std::ptrdiff_t(g.o), t0 > tb);
    }
  }, 16 * vs + cp + 16 * ds);
  // G^T M G, vectors over k (as transform_filters).
  using V = batch<T>;
  const T* m = sum.data();
  const V half(T(0.5));
  for (std::size_t k = 0; k < co; k += L) {
    const std::size_t nl = std::min(L, co - k);
    const auto load = [&](std::size_t pos) { return load_lanes(m + pos * co + k, nl); };
    V s[3][4];  // G^T M; G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1]
    for (std::size_t j = 0; j < 4; ++j) {
      const V m0 = load(j), m1 = load(4 + j), m2 = load(8 + j), m3 = load(12 + j);
      s[0][j] = m0 + half * (m1 + m2);
      s[1][j] = half * (m1 - m2);
      s[2][j] = half * (m1 + m2) + m3;
    }
    for (std::size_t i = 0; i < 3; ++i) {  // (G^T M) G
      const V r[3] = {s[i][0] + half * (s[i][1] + s[i][2]), half * (s[i][1] - s[i][2]), half * (s[i][1] + s[i][2]) + s[i][3]};
      for (std::size_t j = 0; j < 3; ++j) store_lanes(df + (i * 3 + j) * co + k, r[j], nl, false);
    }
  }
}

// The float32 and float64 instances of this file's entry points are compiled once per program,
// by <ctflow/compiled/core.hpp>, where it is built with CTFLOW_SEPARATE_COMPILATION; its other
// translation units only call them.
#define CTFLOW_WINOGRAD_INSTANCES(KIND, T)                           \
  KIND ctflow::detail::buffer<T> transform_filters<T>(std::size_t, std::size_t, const T*); \
  KIND void forward<T>(const geometry&, const T*, const T*, T*);     \
  KIND void input_gradient<T>(const geometry&, const T*, const T*, T*); \
  KIND void filter<T>(const geometry&, const T*, const T*, T*);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_WINOGRAD_INSTANCES(extern template, float)
CTFLOW_WINOGRAD_INSTANCES(extern template, double)
#endif

}  // namespace ctflow::backend::cpu::winograd
