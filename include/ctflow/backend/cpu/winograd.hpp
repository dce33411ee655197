#pragma once
// Winograd's minimal filtering for 3x3 convolutions with unit strides and dilations over NHWC
// images (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), in two
// schemes: F(2x2, 3x3) and F(4x4, 3x3). Each m x m block of output pixels (a tile) comes from
// the a x a block of input pixels under it (a = m + 2):
//
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A
//
// where (.) multiplies element-wise at each of the a^2 positions of a transformed tile. Over all
// channels, each position is a matrix product: [tiles x c] (the transformed inputs) times
// [c x o] (the transformed filters), a^2 of them with c * o multiply-adds per tile instead of the
// 9 m^2 c * o of the direct sum: 2.25 times fewer for F(2x2, 3x3) (16 per 4 pixels), 4 times
// fewer for F(4x4, 3x3) (36 per 16 pixels). F(4x4, 3x3)'s transforms hold larger coefficients
// (up to 8, and 1/24), so its products round a little more; each shape takes the scheme with
// fewer products over its tiles (scheme_for), F(2x2, 3x3) on ties.
//
// A scheme is its six one-dimensional maps (f2x2, f4x4); every two-dimensional transform is one
// of them applied down the columns of a block and then along its rows (transform2d), so the
// kernels below are written once for both.
//
// `forward` transforms a chunk of tiles, multiplies it at each position with the unpacked GEMM
// tiles (gemm::small) while it stays in L2, and transforms the products back into y.
// `filter` is the filter gradient of the same identity turned around (F(3x3, m x m)):
//
//   dg = G^T [ (A dY A^T) (.) (B^T d B) ] G
//
// summed over all tiles: at each position, [c x tiles] times [tiles x o]. The input gradient is
// either `forward` over dy with the filters flipped and their channel axes swapped (a tile per
// m x m pixels of dx), or `input_gradient`, forward's adjoint (a tile per m x m pixels of dy):
// dx = B [ (A dY A^T) U^T ] B^T, added where the a x a input tiles overlap.
//
// Each output element sums its terms in an order fixed by the shape alone: forward's tiles go to
// threads in multiples of 8, input_gradient's in whole images, and the filter gradient's tiles
// are cut into a number of groups fixed by the shape, added in order.

#include <algorithm>
#include <bit>
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

/// F(2x2, 3x3): 4 x 4 input tiles, 2 x 2 output tiles. Its one-dimensional maps, each from
/// vectors `x` into vectors `r`: B^T (input), A^T (output), G (filter), and the adjoints' A
/// (gradient), B (back) and G^T (filter_back).
struct f2x2 {
  static constexpr std::size_t m = 2, a = 4;
  template <class V> static void input(const V* d, V* r) {  // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
    r[0] = d[0] - d[2], r[1] = d[1] + d[2], r[2] = d[2] - d[1], r[3] = d[1] - d[3];
  }
  template <class V> static void output(const V* x, V* r) {  // A^T = [1 1 1 0; 0 1 -1 -1]
    r[0] = x[0] + x[1] + x[2], r[1] = x[1] - x[2] - x[3];
  }
  template <class V> static void filter(const V* g, V* r) {  // G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
    const V half(typename V::value_type(0.5));
    r[0] = g[0], r[1] = half * (g[0] + g[1] + g[2]), r[2] = half * (g[0] - g[1] + g[2]), r[3] = g[2];
  }
  template <class V> static void gradient(const V* y, V* r) { r[0] = y[0], r[1] = y[0] + y[1], r[2] = y[0] - y[1], r[3] = -y[1]; }
  template <class V> static void back(const V* x, V* r) { r[0] = x[0], r[1] = x[1] - x[2] + x[3], r[2] = x[1] + x[2] - x[0], r[3] = -x[3]; }
  template <class V> static void filter_back(const V* x, V* r) {
    const V half(typename V::value_type(0.5));
    r[0] = x[0] + half * (x[1] + x[2]), r[1] = half * (x[1] - x[2]), r[2] = half * (x[1] + x[2]) + x[3];
  }
};

/// F(4x4, 3x3): 6 x 6 input tiles, 4 x 4 output tiles (interpolation points 0, 1, -1, 2, -2 and
/// infinity), with the same six maps, their shared sums taken once.
struct f4x4 {
  static constexpr std::size_t m = 4, a = 6;
  template <class V> static V c(double v) { return V(typename V::value_type(v)); }
  // B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
  template <class V> static void input(const V* d, V* r) {
    const V four = c<V>(4), five = c<V>(5), two = c<V>(2);
    const V t1 = d[4] - four * d[2], t2 = d[3] - four * d[1], t3 = d[4] - d[2], t4 = two * (d[3] - d[1]);
    r[0] = four * d[0] - five * d[2] + d[4];
    r[1] = t1 + t2, r[2] = t1 - t2, r[3] = t3 + t4, r[4] = t3 - t4;
    r[5] = four * d[1] - five * d[3] + d[5];
  }
  // A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
  template <class V> static void output(const V* x, V* r) {
    const V s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    r[0] = x[0] + s12 + s34, r[1] = d12 + c<V>(2) * d34, r[2] = s12 + c<V>(4) * s34, r[3] = d12 + c<V>(8) * d34 + x[5];
  }
  // G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
  template <class V> static void filter(const V* g, V* r) {
    const V s = g[0] + g[2], p = c<V>(1.0 / 24) * g[0] + c<V>(1.0 / 6) * g[2], q = c<V>(1.0 / 12) * g[1], sixth = c<V>(-1.0 / 6);
    r[0] = c<V>(0.25) * g[0], r[1] = sixth * (s + g[1]), r[2] = sixth * (s - g[1]), r[3] = p + q, r[4] = p - q, r[5] = g[2];
  }
  template <class V> static void gradient(const V* y, V* r) {  // A
    const V s02 = y[0] + y[2], s13 = y[1] + y[3], p = y[0] + c<V>(4) * y[2], q = c<V>(2) * y[1] + c<V>(8) * y[3];
    r[0] = y[0], r[1] = s02 + s13, r[2] = s02 - s13, r[3] = p + q, r[4] = p - q, r[5] = y[3];
  }
  template <class V> static void back(const V* x, V* r) {  // B
    const V s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    r[0] = c<V>(4) * x[0];
    r[1] = c<V>(4) * (x[5] - d12) - c<V>(2) * d34;
    r[2] = -(c<V>(5) * x[0] + c<V>(4) * s12 + s34);
    r[3] = d12 + c<V>(2) * d34 - c<V>(5) * x[5];
    r[4] = x[0] + s12 + s34;
    r[5] = x[5];
  }
  template <class V> static void filter_back(const V* x, V* r) {  // G^T
    const V s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    r[0] = c<V>(0.25) * x[0] - c<V>(1.0 / 6) * s12 + c<V>(1.0 / 24) * s34;
    r[1] = c<V>(1.0 / 12) * d34 - c<V>(1.0 / 6) * d12;
    r[2] = c<V>(1.0 / 6) * (s34 - s12) + x[5];
  }
};

/// The schemes, chosen per shape at run time (scheme_for).
enum class scheme { f2x2, f4x4 };

/// f(S{}) for s's scheme type S.
template <class F> decltype(auto) with_scheme(scheme s, F&& f) { return s == scheme::f4x4 ? f(f4x4{}) : f(f2x2{}); }
/// A scheme's output tile side m, and its a^2 positions.
inline std::size_t tile_side(scheme s) { return s == scheme::f4x4 ? f4x4::m : f2x2::m; }
inline std::size_t positions(scheme s) { return s == scheme::f4x4 ? f4x4::a * f4x4::a : f2x2::a * f2x2::a; }

/// F X F^T of an n x n block of vectors (load(i, j)) by the one-dimensional map f (n to k
/// vectors): f down each column, then along each row of the result, each of the k x k results
/// handed to store(i, j, value).
template <std::size_t N, std::size_t K, class V, class F, class Load, class Store> inline void transform2d(F f, Load&& load, Store&& store) {
  V t[K][N];
  for (std::size_t j = 0; j < N; ++j) {
    V col[N], out[K];
    for (std::size_t i = 0; i < N; ++i) col[i] = load(i, j);
    f(col, out);
    for (std::size_t i = 0; i < K; ++i) t[i][j] = out[i];
  }
  for (std::size_t i = 0; i < K; ++i) {
    V out[K];
    f(t[i], out);
    for (std::size_t j = 0; j < K; ++j) store(i, j, out[j]);
  }
}

/// Whether g is a convolution these kernels compute: 3x3 taps, unit strides and dilations, and
/// at least a vector of input and output channels (fewer leave most lanes of every transform and
/// product idle; the direct kernels suit them better).
template <class T> bool suits(const geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.c >= lanes<T> && g.o >= lanes<T> && g.oh > 0 &&
         g.ow > 0 && g.n > 0;
}

/// The m x m tiles of g's output: th x tw per image, counted image by image, row by row.
struct tiling {
  std::size_t th, tw, count;
  tiling(const geometry& g, std::size_t side) : th((g.oh + side - 1) / side), tw((g.ow + side - 1) / side), count(g.n * th * tw) {}
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

/// The products g takes in scheme s: its tiles times their positions.
inline std::size_t products(const geometry& g, scheme s) { return tiling(g, tile_side(s)).count * positions(s); }
/// The scheme of fewer products over g's tiles; F(2x2, 3x3) on ties (an output of 2 x 2 pixels
/// or fewer, 5 x 5, 6 x 6), where its smaller rounding costs nothing.
inline scheme scheme_for(const geometry& g) { return products(g, scheme::f4x4) < products(g, scheme::f2x2) ? scheme::f4x4 : scheme::f2x2; }

/// Tiles per chunk, for cp and op channels (whole vectors) in and out and p positions: at most
/// `most`, fewer where the chunk's p transformed [tiles x cp] inputs and [tiles x op] products
/// would take more than half of L2. A small forward pass (keeps_filters) takes at most 16: alone,
/// the Fashion-MNIST CNN's second convolution runs at the same speed from 16 to 64, but in the
/// model at batch 1 the smaller buffers leave more of the dense layer's weights in L2 (a
/// microsecond of its 28). A large one takes 64 (ResNet's 56 x 56 x 64 at batch 32 runs 1-2 %
/// faster).
template <class T> std::size_t chunk_tiles(std::size_t p, std::size_t cp, std::size_t op, std::size_t most = 64) {
  return std::clamp<std::size_t>(gemm::l2_bytes / 2 / (p * (cp + op) * sizeof(T)), 4, most);
}

/// The filters' transform U = G g G^T in scheme S, as a^2 matrices [c x o] (position-major) at
/// u, of the HWIO filters w [3][3][c][o].
template <class S, class T> void transform_filters(std::size_t c, std::size_t o, const T* w, T* u) {
  // Explicit vectors over k: left to the compiler, this loop is not vectorised in large
  // translation units.
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  const std::size_t co = c * o;
  for (std::size_t k = 0; k < co; k += L) {
    const std::size_t nl = std::min(L, co - k);
    transform2d<3, S::a, V>([](const V* g, V* r) { S::filter(g, r); }, [&](std::size_t i, std::size_t j) { return load_lanes(w + (i * 3 + j) * co + k, nl); },
                            [&](std::size_t i, std::size_t j, const V& v) { store_lanes(u + (i * S::a + j) * co + k, v, nl, false); });
  }
}
/// The filters' transform in scheme s.
template <class T> ctflow::detail::buffer<T> transform_filters(scheme s, std::size_t c, std::size_t o, const T* w) {
  ctflow::detail::buffer<T> u(positions(s) * c * o, false);
  with_scheme(s, [&](auto k) { transform_filters<decltype(k)>(c, o, w, u.data()); });
  return u;
}

/// The same transform of filters laid out otherwise (flipped, their channel axes swapped):
/// at(ky, kx, ci, co) for 3x3 taps, c inputs and o outputs.
template <class T, class At> ctflow::detail::buffer<T> transform_filters(scheme s, std::size_t c, std::size_t o, At&& at) {
  const std::size_t co = c * o;
  ctflow::detail::buffer<T> g(9 * co, false);
  for (std::size_t tap = 0; tap < 9; ++tap)
    for (std::size_t ci = 0; ci < c; ++ci)
      for (std::size_t j = 0; j < o; ++j) g.data()[tap * co + ci * o + j] = at(tap / 3, tap % 3, ci, j);
  return transform_filters<T>(s, c, o, static_cast<const T*>(g.data()));
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

  /// U in scheme s of the HWIO filters w [3][3][c][o], from an entry or made now (and kept, if
  /// it fits).
  const T* get(scheme s, std::size_t c, std::size_t o, const T* w) {
    const std::size_t co = c * o;
    ++clock_;
    for (entry& e : entries_)
      if (e.source == w && e.co == co && e.c == c && e.s == s) {
        if (std::memcmp(e.copy.data(), w, 9 * co * sizeof(T)) != 0) {
          std::memcpy(static_cast<void*>(e.copy.data()), w, 9 * co * sizeof(T));
          e.u = transform_filters<T>(s, c, o, w);
        }
        e.used = clock_;
        return e.u.data();
      }
    const std::size_t bytes = entry_bytes(s, co);
    if (bytes > limit_bytes) return nullptr;
    while (held_ + bytes > limit_bytes) evict();
    entry e{w, s, c, co, ctflow::detail::buffer<T>(9 * co, false), transform_filters<T>(s, c, o, w), clock_};
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
    scheme s;
    std::size_t c, co;
    ctflow::detail::buffer<T> copy, u;
    std::size_t used;
  };
  /// What an entry of c * o filter pairs holds: their 3x3 copy and their transform.
  static std::size_t entry_bytes(scheme s, std::size_t co) { return (9 + positions(s)) * co * sizeof(T); }
  void evict() {
    const auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const entry& a, const entry& b) { return a.used < b.used; });
    held_ -= entry_bytes(oldest->s, oldest->co);
    entries_.erase(oldest);
  }
  std::vector<entry> entries_;
  std::size_t held_ = 0, clock_ = 0;
};

/// Whether a forward pass of g keeps its filters' transform (kept_filters): where the output is
/// small (at most 1024 pixels over the batch), so that the transform is a notable part of the
/// call (a small image at a small batch).
inline bool keeps_filters(const geometry& g) { return g.n * g.oh * g.ow <= 1024; }

/// B^T d B in scheme S of one a x a input tile, pixel (i, j)'s c channels at at(i, j), into
/// v + pos * vs (pos = a i + j of the transform), a vector of channels at a time.
template <class S, class T, class At> inline void input_tile(At&& at, std::size_t c, T* v, std::size_t vs) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  for (std::size_t ch = 0; ch < c; ch += L) {
    const std::size_t nl = std::min(L, c - ch);
    transform2d<S::a, S::a, V>([](const V* d, V* r) { S::input(d, r); }, [&](std::size_t i, std::size_t j) { return load_lanes(at(i, j) + ch, nl); },
                               [&](std::size_t i, std::size_t j, const V& x) { x.store_aligned(v + (i * S::a + j) * vs + ch); });
  }
}

/// f(at), at(i, j) the channels of pixel (y0 + i, x0 + j) of image (g.h x g.w x g.c), or
/// `outside` for pixels past the image's edge, over an A x A tile: constant strides where the
/// tile lies inside, a table of its pixels at the border.
template <std::size_t A, class P, class F> inline void tile_pixels(const geometry& g, P* image, std::ptrdiff_t y0, std::ptrdiff_t x0, P* outside, F&& f) {
  const std::ptrdiff_t C = std::ptrdiff_t(g.c), W = std::ptrdiff_t(g.w), H = std::ptrdiff_t(g.h), side = std::ptrdiff_t(A);
  if (y0 >= 0 && x0 >= 0 && y0 + side <= H && x0 + side <= W) {
    P* const p = image + (y0 * W + x0) * C;
    f([&](std::size_t i, std::size_t j) { return p + (std::ptrdiff_t(i) * W + std::ptrdiff_t(j)) * C; });
    return;
  }
  P* px[A * A];
  for (std::ptrdiff_t i = 0; i < side; ++i)
    for (std::ptrdiff_t j = 0; j < side; ++j) {
      const bool inside = y0 + i >= 0 && y0 + i < H && x0 + j >= 0 && x0 + j < W;
      px[i * side + j] = inside ? image + ((y0 + i) * W + x0 + j) * C : outside;
    }
  f([&](std::size_t i, std::size_t j) { return px[i * A + j]; });
}

/// Transforms the input tiles [t0, t0 + nt) of x into v[pos * vs + t * cp + channel]. Pixels
/// outside the image read `zeros` (c of them) instead.
template <class S, class T>
void input_tiles(const geometry& g, const tiling& tl, const T* x, std::size_t t0, std::size_t nt, T* v, std::size_t vs, std::size_t cp, const T* zeros) {
  tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
    const std::ptrdiff_t y0 = std::ptrdiff_t(S::m * ty) - std::ptrdiff_t(g.pt), x0 = std::ptrdiff_t(S::m * tx) - std::ptrdiff_t(g.pl);
    tile_pixels<S::a>(g, x + img * g.h * g.w * g.c, y0, x0, zeros, [&](auto&& at) { input_tile<S, T>(at, g.c, v + t * cp, vs); });
  });
}

/// A dY A^T in scheme S of the m x m gradient tiles [t0, t0 + nt) of dy [n, oh, ow, o] into
/// d[pos * ds + t * op + output]; zero past the output's edge.
template <class S, class T>
void gradient_tiles(const geometry& g, const tiling& tl, const T* dy, std::size_t t0, std::size_t nt, T* d, std::size_t ds, std::size_t op) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
    const std::size_t rows = std::min(S::m, g.oh - S::m * ty), cols = std::min(S::m, g.ow - S::m * tx);
    const T* gy = dy + ((img * g.oh + S::m * ty) * g.ow + S::m * tx) * g.o;
    for (std::size_t o = 0; o < g.o; o += L) {
      const std::size_t nl = std::min(L, g.o - o);
      transform2d<S::m, S::a, V>(
          [](const V* y, V* r) { S::gradient(y, r); },
          [&](std::size_t i, std::size_t j) { return i >= rows || j >= cols ? V(T(0)) : load_lanes(gy + (i * g.ow + j) * g.o + o, nl); },
          [&](std::size_t i, std::size_t j, const V& x) { x.store_aligned(d + (i * S::a + j) * ds + t * op + o); });
    }
  });
}

/// Rounds n up to whole vectors.
template <class T> constexpr std::size_t vectors(std::size_t n) { return (n + lanes<T> - 1) / lanes<T> * lanes<T>; }

/// y [n, oh, ow, o] = conv(x [n, h, w, c], filters) in scheme S; u from transform_filters.
template <class S, class T> void forward_tiles(const geometry& g, const T* x, const T* u, T* y) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>, P = S::a * S::a;
  const tiling tl(g, S::m);
  // Positions lie a vector more than a chunk apart, so that the streams of a transform do not
  // fall into the same sets of L1.
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), chunk = chunk_tiles<T>(P, cp, op, keeps_filters(g) ? 16 : 64), vs = chunk * cp + L,
                    ms = chunk * op + L;
  // Threads take tiles in multiples of 8, so that every tile meets the same row tile of
  // gemm::small (and so sums in the same order) as on one thread; a task takes at least a chunk
  // and task_work's worth of transformed inputs and products, so that a small call (the CNN's
  // 9 tiles at batch 1) is one task, whose products the threads then share by position.
  parallel_for_scratch<T>(tl.count, std::max(chunk, grain_for(P * (cp + op))), 8, P * vs + cp + P * ms, [&](std::size_t tb, std::size_t te, T* work) {
    T* const v = work;
    T* const m = work + P * vs + cp;
    std::fill_n(v + P * vs, cp, T(0));
    for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
      const std::size_t nt = std::min(chunk, te - t0);
      input_tiles<S>(g, tl, x, t0, nt, v, vs, cp, v + P * vs);
      // The positions' products are independent: where the tiles are too few to split (a call
      // at batch 1), threads take positions instead, each product whole on one thread. Within
      // a task of the tiles' split they run on its thread.
      parallel_for(P, grain_for(nt * g.c * g.o), 1, [&](std::size_t p0, std::size_t p1) {
        for (std::size_t pos = p0; pos < p1; ++pos)
          gemm::small(nt, g.o, g.c, v + pos * vs, std::ptrdiff_t(cp), 1, u + pos * g.c * g.o, std::ptrdiff_t(g.o), m + pos * ms, std::ptrdiff_t(op), false);
      });
      tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
        const std::size_t rows = std::min(S::m, g.oh - S::m * ty), cols = std::min(S::m, g.ow - S::m * tx);
        T* out = y + ((img * g.oh + S::m * ty) * g.ow + S::m * tx) * g.o;
        const T* mt = m + t * op;
        for (std::size_t o = 0; o < g.o; o += L) {
          const std::size_t nl = std::min(L, g.o - o);
          // A^T M A: the pixels inside the output.
          transform2d<S::a, S::m, V>([](const V* x, V* r) { S::output(x, r); }, [&](std::size_t i, std::size_t j) { return V::load_aligned(mt + (i * S::a + j) * ms + o); },
                                     [&](std::size_t i, std::size_t j, const V& r) {
                                       if (i < rows && j < cols) store_lanes(out + (i * g.ow + j) * g.o + o, r, nl, false);
                                     });
        }
      });
    }
  });
}

/// Adds B M B^T in scheme S of one tile's products (position pos's c channels at mt + pos * ms)
/// into the a x a input pixels at(i, j), a vector of channels at a time.
template <class S, class T, class At> inline void add_input_tile(At&& at, const T* mt, std::size_t ms, std::size_t c) {
  using V = batch<T>;
  constexpr std::size_t L = lanes<T>;
  for (std::size_t ch = 0; ch < c; ch += L) {
    const std::size_t nl = std::min(L, c - ch);
    transform2d<S::a, S::a, V>([](const V* x, V* r) { S::back(x, r); }, [&](std::size_t i, std::size_t j) { return V::load_aligned(mt + (i * S::a + j) * ms + ch); },
                               [&](std::size_t i, std::size_t j, const V& r) { store_lanes(at(i, j) + ch, r, nl, true); });
  }
}

/// dx [n, h, w, c] = the input gradient of the convolution g given dy [n, oh, ow, o], in scheme
/// S: forward's adjoint, tile by tile. Each output tile's A dY A^T meets ut (the filters'
/// transform with their channel axes swapped: a^2 matrices [o x c]), and B (.) B^T of the
/// products is added into the a x a input tile under it; input tiles overlap by 2 pixels, and
/// pixels of the padding are dropped. Threads take whole images (groups of them, fixed by the
/// shape), so that no two write the same pixel and every pixel adds its tiles in tile order.
template <class S, class T> void input_gradient_tiles(const geometry& g, const T* dy, const T* ut, T* dx) {
  constexpr std::size_t L = lanes<T>, P = S::a * S::a;
  const tiling tl(g, S::m);
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), chunk = chunk_tiles<T>(P, cp, op), ds = chunk * op + L, ms = chunk * cp + L;
  const std::size_t per_image = tl.th * tl.tw, images = std::max<std::size_t>(1, chunk / per_image), image_size = g.h * g.w * g.c;
  parallel_for_scratch<T>((g.n + images - 1) / images, 1, 1, P * ds + P * ms + cp, [&](std::size_t gb, std::size_t ge, T* work) {
    T* const d = work;
    T* const m = work + P * ds;
    T* const sink = m + P * ms;
    const std::size_t n0 = gb * images, n1 = std::min(g.n, ge * images);
    std::fill(dx + n0 * image_size, dx + n1 * image_size, T(0));
    for (std::size_t group = gb; group < ge; ++group) {
      const std::size_t tb = group * images * per_image, te = std::min(g.n, (group + 1) * images) * per_image;
      for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
        const std::size_t nt = std::min(chunk, te - t0);
        gradient_tiles<S>(g, tl, dy, t0, nt, d, ds, op);
        for (std::size_t pos = 0; pos < P; ++pos)  // [tiles x o] x [o x c]
          gemm::small(nt, g.c, g.o, d + pos * ds, std::ptrdiff_t(op), 1, ut + pos * g.o * g.c, std::ptrdiff_t(g.c), m + pos * ms, std::ptrdiff_t(cp), false);
        tl.each(t0, nt, [&](std::size_t t, std::size_t img, std::size_t ty, std::size_t tx) {
          const std::ptrdiff_t y0 = std::ptrdiff_t(S::m * ty) - std::ptrdiff_t(g.pt), x0 = std::ptrdiff_t(S::m * tx) - std::ptrdiff_t(g.pl);
          // Pixels in the padding add into `sink`, which nothing reads.
          tile_pixels<S::a>(g, dx + img * image_size, y0, x0, sink, [&](auto&& at) { add_input_tile<S, T>(at, m + t * cp, ms, g.c); });
        });
      }
    }
  });
}

/// df [3, 3, c, o] = the filter gradient of the convolution g of x [n, h, w, c] given dy
/// [n, oh, ow, o], in scheme S.
template <class S, class T> void filter_tiles(const geometry& g, const T* x, const T* dy, T* df) {
  constexpr std::size_t L = lanes<T>, P = S::a * S::a;
  const tiling tl(g, S::m);
  const std::size_t cp = vectors<T>(g.c), op = vectors<T>(g.o), co = g.c * g.o;
  // The tiles are cut into groups, each adding its a^2 [c x o] products in place, chunk by chunk:
  // a power of two of them (so that 2, 4, 8 or 16 threads take equal shares), each of at least
  // two chunks of forward's size (so that the passes' scratch blocks are of one size class, which
  // the block cache hands from one to the next); the chunks of a group are then made equal. The
  // products' inner dimension is the chunk's tiles: the longer, the faster, but the larger the
  // scratch (F(4x4, 3x3) over the Fashion-MNIST CNN's second convolution at batch 64, 576 tiles:
  // 4 groups of 4 chunks of 36, 0.74 ms; 2 groups of 4 chunks of 72, 0.71 ms with 2 MB more
  // resident; F(2x2, 3x3), 0.86 ms).
  const std::size_t most = chunk_tiles<T>(P, cp, op), groups = std::bit_floor(std::clamp<std::size_t>(tl.count / (2 * most), 1, 16));
  const std::size_t per_group = (tl.count + groups - 1) / groups, chunks = (per_group + most - 1) / most, chunk = (per_group + chunks - 1) / chunks;
  const std::size_t vs = chunk * cp + L, ds = chunk * op + L;
  ctflow::detail::buffer<T> sum(P * co, false);
  reduce::sum_in_chunk_order(groups, P * co, sum.data(), [&](std::size_t group, T* part, T* work) {
    T* const v = work;
    T* const d = work + P * vs + cp;
    std::fill_n(v + P * vs, cp, T(0));
    const std::size_t tb = tl.count * group / groups, te = tl.count * (group + 1) / groups;
    for (std::size_t t0 = tb; t0 < te; t0 += chunk) {
      const std::size_t nt = std::min(chunk, te - t0);
      input_tiles<S>(g, tl, x, t0, nt, v, vs, cp, v + P * vs);
      gradient_tiles<S>(g, tl, dy, t0, nt, d, ds, op);
      for (std::size_t pos = 0; pos < P; ++pos)  // [c x tiles] x [tiles x o]
        gemm::small(g.c, g.o, nt, v + pos * vs, 1, std::ptrdiff_t(cp), d + pos * ds, std::ptrdiff_t(op), part + pos * co, std::ptrdiff_t(g.o), t0 > tb);
    }
  }, P * vs + cp + P * ds);
  // G^T M G, vectors over k (as transform_filters).
  using V = batch<T>;
  const T* m = sum.data();
  for (std::size_t k = 0; k < co; k += L) {
    const std::size_t nl = std::min(L, co - k);
    transform2d<S::a, 3, V>([](const V* x, V* r) { S::filter_back(x, r); }, [&](std::size_t i, std::size_t j) { return load_lanes(m + (i * S::a + j) * co + k, nl); },
                            [&](std::size_t i, std::size_t j, const V& r) { store_lanes(df + (i * 3 + j) * co + k, r, nl, false); });
  }
}

/// y = conv(x, filters) for suits(g) in scheme s, u the filters' transform in s.
template <class T> void forward(scheme s, const geometry& g, const T* x, const T* u, T* y) {
  with_scheme(s, [&](auto k) { forward_tiles<decltype(k)>(g, x, u, y); });
}
/// dx = the input gradient of g for suits(g) in scheme s, ut the filters' transform in s with
/// their channel axes swapped.
template <class T> void input_gradient(scheme s, const geometry& g, const T* dy, const T* ut, T* dx) {
  with_scheme(s, [&](auto k) { input_gradient_tiles<decltype(k)>(g, dy, ut, dx); });
}
/// df = the filter gradient of g for suits(g), in g's scheme.
template <class T> void filter(const geometry& g, const T* x, const T* dy, T* df) {
  with_scheme(scheme_for(g), [&](auto k) { filter_tiles<decltype(k)>(g, x, dy, df); });
}

// The float32 and float64 instances of this file's entry points are compiled once per program,
// by <ctflow/compiled/core.hpp>, where it is built with CTFLOW_SEPARATE_COMPILATION; its other
// translation units only call them.
#define CTFLOW_WINOGRAD_INSTANCES(KIND, T)                                                        \
  KIND ctflow::detail::buffer<T> transform_filters<T>(scheme, std::size_t, std::size_t, const T*); \
  KIND void forward<T>(scheme, const geometry&, const T*, const T*, T*);                          \
  KIND void input_gradient<T>(scheme, const geometry&, const T*, const T*, T*);                   \
  KIND void filter<T>(const geometry&, const T*, const T*, T*);
#if defined(CTFLOW_SEPARATE_COMPILATION)
CTFLOW_WINOGRAD_INSTANCES(extern template, float)
CTFLOW_WINOGRAD_INSTANCES(extern template, double)
#endif

}  // namespace ctflow::backend::cpu::winograd
