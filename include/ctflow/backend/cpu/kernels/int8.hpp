#pragma once
// The cpu device's kernel of a quantized network's Dense and Conv2D (keras::quantize): an int8
// GEMM on AVX-512 VNNI, where the target has it. vpdpbusd sums four u8 x s8 products into each
// int32 lane, so the activations go in as u8 (x + 128, the sums corrected by (128 + the input's
// zero point) times each weight column's sum, folded into the bias once) against weights packed
// once as [out / 16][in / 4][16][4]; a convolution reads its windows in place (one dilated
// across gathers them, im2col, a chunk of output pixels at a time); the requantization runs 16
// lanes at a time. Integer arithmetic
// throughout: the results are reference's (embedded/layers/quantized.hpp), bit for bit. Without
// VNNI the cpu device runs reference's loops.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/core/errors.hpp>
#include <ctflow/embedded/layers/quantized.hpp>

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#include <immintrin.h>
#define CTFLOW_CPU_INT8_VNNI 1
#endif

namespace ctflow::embedded::int8_detail {

#if defined(CTFLOW_CPU_INT8_VNNI)

/// acc + the sums of four u8 x s8 products per lane (vpdpbusd). GCC 12's intrinsic copies every
/// accumulator of a register tile on each step (it does not tie the sum to its register): the
/// instruction itself, in place, where GCC compiles it.
[[gnu::always_inline]] inline __m512i dot_u8s8(__m512i acc, __m512i u8, __m512i s8) {
#if defined(__GNUC__) && !defined(__clang__)
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
#else
  return _mm512_dpbusd_epi32(acc, u8, s8);
#endif
}

template <> class linear_kernel<cpu> {
 public:
  /// Weights k [in, out]; a convolution's in is kh * kw * c, kh rows of its window one after
  /// another (HWIO), each row's kw * c weights packed from a quad of their own.
  linear_kernel(const std::int8_t* k, std::size_t in, std::size_t out, const std::int32_t* bias, const requant& q, std::size_t kh = 1)
      : in_(in), out_(out), kh_(kh && in % kh == 0 ? kh : 1), run_(in / kh_), run4_((run_ + 3) / 4 * 4), k4_(kh_ * run4_ / 4),
        blocks_((out + 15) / 16), q_(q) {
    packed_.assign(blocks_ * k4_ * 64, 0);
    bias_.assign(blocks_ * 16, 0);
    multiplier_.assign(blocks_ * 16, 0);
    shift_.assign(blocks_ * 16, 0);
    for (std::size_t n = 0; n < out; ++n) {
      std::int32_t sum = 0;
      for (std::size_t i = 0; i < in; ++i) {
        const std::int8_t w = k[i * out + n];
        const std::size_t p = i / run_ * run4_ + i % run_;
        packed_[((n / 16) * k4_ + p / 4) * 64 + (n % 16) * 4 + p % 4] = w;
        sum += w;
      }
      bias_[n] = bias[n] - (128 + q.in_zero) * sum;
      multiplier_[n] = q.multiplier[n];
      shift_[n] = q.shift[n];
      // The vector requantization covers right shifts of a non-negative multiplier (every
      // scale below 1); a layer with another keeps the scalar one.
      if (q.shift[n] > 0 || q.multiplier[n] < 0) vector_requant_ = false;
      if (q.multiplier[n] < 0) monotonic_ = false;
    }
  }

  /// y [rows, out] from x [rows, in]. One row (a batch of one) reads every weight once, from
  /// memory or the L2 cache rather than registers: its column blocks are split among the threads
  /// instead (each thread's blocks the same call after call, so that they stay in its cache).
  void dense(const std::int8_t* x, std::int8_t* y, std::size_t rows) const {
    if (rows == 1) {
      const ctflow::detail::buffer<std::uint8_t> a(k4_ * 4 + slack, false);
      flip(x, a.data(), in_);
      splat(a.data() + in_, k4_ * 4 - in_, 0);
      const std::uint8_t* at = a.data();
      backend::cpu::parallel_for(blocks_, backend::cpu::grain_for(k4_ * 64), 1,
                                 [&](std::size_t begin, std::size_t end) { row_blocks(operand{&at, 1, 0, k4_}, begin, end, y); });
      return;
    }
    rows_of(rows, 1, y, [&](std::size_t begin) {
      return [this, from = x + begin * in_](std::uint8_t* to) mutable {
        flip(from, to, in_);
        from += in_;
        return to + in_;
      };
    });
  }

  /// y [batch, oh, ow, out] from x [batch, h, w, c], over window g. Without dilation across
  /// (dw = 1), each output pixel's row of the product is read in place (an implicit GEMM): the
  /// input made u8 once, inside a border of the input's zero point wide enough for every window,
  /// each window row's kw * c inputs one run of it (the Fashion-MNIST CNN's first convolution,
  /// 1 channel: 6.0 us gathered, 3.4 us in place). With dilation each output pixel's window is
  /// gathered into a row of kh * kw * c inputs (a padded cell holds the input's zero point).
  void conv(const std::int8_t* x, std::int8_t* y, const geometry& g) const { windows(x, y, g, false); }

  /// Whether conv_max_pool gives conv's output max-pooled: the requantization never decreases
  /// with the sum (no negative multiplier), so that the largest of four outputs is the output of
  /// the largest of their sums.
  bool pools() const { return monotonic_; }
  /// conv followed by a 2x2 max pool of stride 2 without padding, y [batch, oh / 2, ow / 2,
  /// out], in one pass: each pooled pixel's four windows are four rows of one register tile,
  /// the largest of their sums requantized once (a quarter of the requantizations, and no
  /// pass over the convolution's output). Equals pooling conv's output, bit for bit (pools()).
  void conv_max_pool(const std::int8_t* x, std::int8_t* y, const geometry& g) const { windows(x, y, g, true); }

 private:
  // How a tile reads rows of the product's left operand: row r's quads at at[r] + rep * step +
  // 4 j for rep < reps and j < quads (weights quad rep * quads + j): a gathered row is one rep
  // of k4 quads; a row read in place, one rep per window row.
  struct operand {
    const std::uint8_t* const* at;
    std::size_t reps, step, quads;
  };

  void windows(const std::int8_t* x, std::int8_t* y, const geometry& g, bool pooled) const {
    if (g.kh != kh_ || g.kh * g.kw * g.c != in_) {
      ctflow::detail::short_message m;
      m << "ctflow::embedded::int8: a convolution of " << g.kh << "x" << g.kw << "x" << g.c << " windows on a kernel packed for " << kh_
        << " rows of " << run_ << " inputs";
      ctflow::detail::raise<shape_error>(m.c_str());
    }
    const std::size_t ph = pooled ? g.oh / 2 : g.oh, pw = pooled ? g.ow / 2 : g.ow, per = pooled ? 4 : 1;
    const std::uint8_t zero = std::uint8_t(std::int8_t(q_.in_zero)) ^ 0x80;
    // Output pixel (b, oy, ox) of each row in turn from row `begin` on: pixels (b, py, px),
    // each of them, pooled, the four windows (2 py + i, 2 px + j) of its pool, i and j in {0, 1}.
    // (Everything by value: the cursor is a local of each range's loop, its fields in
    // registers, where through references every byte stored would reload them.)
    const auto pixels = [ph, pw, per, pooled](std::size_t begin) {
      const std::size_t p = begin / per;
      return [ph, pw, per, pooled, cell = begin % per, b = p / (ph * pw), py = p / pw % ph, px = p % pw](auto&& f) mutable {
        auto r = pooled ? f(b, 2 * py + cell / 2, 2 * px + cell % 2) : f(b, py, px);
        if (++cell == per) {
          cell = 0;
          if (++px == pw) {
            px = 0;
            if (++py == ph) py = 0, ++b;
          }
        }
        return r;
      };
    };
    if (g.dw == 1) {
      // The padded image: hp x wp pixels an example, the window's reach past each edge the zero
      // point; a window row's run4 bytes from its first pixel on (past kw * c, whatever follows:
      // their weights are zero).
      const std::size_t hp = std::max(g.top + g.h, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1);
      const std::size_t wp = std::max(g.left + g.w, (g.ow - 1) * g.sw + g.kw), line = wp * g.c;
      const ctflow::detail::buffer<std::uint8_t> u(g.batch * hp * line + slack, false);
      std::memset(u.data() + g.batch * hp * line, 0, slack);  // (what the last windows' quads read past their runs)
      for (std::size_t b = 0; b < g.batch; ++b)
        for (std::size_t py = 0; py < hp; ++py) {
          std::uint8_t* to = u.data() + (b * hp + py) * line;
          const std::ptrdiff_t iy = std::ptrdiff_t(py) - std::ptrdiff_t(g.top);
          if (iy < 0 || iy >= std::ptrdiff_t(g.h)) {
            std::memset(to, zero, line);
            continue;
          }
          std::memset(to, zero, g.left * g.c);
          flip(x + (b * g.h + std::size_t(iy)) * g.w * g.c, to + g.left * g.c, g.w * g.c);
          std::memset(to + (g.left + g.w) * g.c, zero, line - (g.left + g.w) * g.c);
        }
      const std::uint8_t* image = u.data();
      const std::size_t image_bytes = hp * line, down = g.sh * line, across = g.sw * g.c;
      split(g.batch * ph * pw * per, per, [&](std::size_t begin, std::size_t, auto&& each) {
        auto next = pixels(begin);
        each([&, image, image_bytes, down, across](const std::uint8_t** at, std::size_t m, std::uint8_t*) {
          for (std::size_t r = 0; r < m; ++r)
            at[r] = next([=](std::size_t b, std::size_t oy, std::size_t ox) { return image + b * image_bytes + oy * down + ox * across; });
          return operand{at, kh_, g.dh * line, run4_ / 4};
        });
      }, false, y);
      return;
    }
    const std::size_t run = g.kw * g.c, n = g.batch * g.h * g.w * g.c, run4 = run4_;
    const ctflow::detail::buffer<std::uint8_t> u(n + slack, false);  // (the cpu device's block cache)
    flip(x, u.data(), n);
    const std::uint8_t* in = u.data();
    // Output pixel (b, oy, ox)'s window into the row at `to`, each window row from a quad of
    // its own, cell by cell (dilated: no two side by side); returns where its inputs end.
    const auto gather = [g, in, zero, run, run4](std::uint8_t* to, std::size_t b, std::size_t oy, std::size_t ox) {
      const std::ptrdiff_t x0 = std::ptrdiff_t(ox * g.sw) - std::ptrdiff_t(g.left);
      for (std::size_t ky = 0; ky < g.kh; ++ky, to += run4) {
        const std::ptrdiff_t iy = std::ptrdiff_t(oy * g.sh + ky * g.dh) - std::ptrdiff_t(g.top);
        if (iy < 0 || iy >= std::ptrdiff_t(g.h)) {
          splat(to, run, zero);
          continue;
        }
        const std::uint8_t* line = in + (b * g.h + std::size_t(iy)) * g.w * g.c;
        for (std::size_t kx = 0; kx < g.kw; ++kx) {
          const std::ptrdiff_t ix = x0 + std::ptrdiff_t(kx * g.dw);
          if (ix < 0 || ix >= std::ptrdiff_t(g.w)) splat(to + kx * g.c, g.c, zero);
          else copy(line + std::size_t(ix) * g.c, to + kx * g.c, g.c);
        }
      }
      return to;
    };
    rows_of(g.batch * ph * pw * per, per, y, [&](std::size_t begin) {
      return [gather, next = pixels(begin)](std::uint8_t* to) mutable {
        return next([&](std::size_t b, std::size_t oy, std::size_t ox) { return gather(to, b, oy, ox); });
      };
    });
  }

  static constexpr std::size_t chunk = 256;  // rows of A listed (and gathered) at a time

  // y's rows [0, rows), `per` of them to an output row (4: the windows of a 2x2 pool, the
  // largest sum kept), split among the cpu device's threads where each range gets task_work's
  // worth (a row's work: its products over 16, as vpdpbusd does 64 at a time, its outputs'
  // requantization and the listing or gathering of its inputs; the CNN's layers at batch 1 ran
  // slower on two threads than on one when every product counted as an element): body(begin,
  // end, each) runs a range, calling each(rows) once, which calls rows(at, m) for every chunk of
  // m rows in turn to list them (at[0, m)) and returns how the tile reads them.
  template <class Body> void split(std::size_t rows, std::size_t per, Body&& body, bool scratch, std::int8_t* y) const {
    const std::size_t lda = k4_ * 4, row_work = lda * blocks_ + blocks_ * 16 + 256;  // (256: a row's listing or gathering)
    const auto range = [&](std::size_t begin, std::size_t end, std::uint8_t* a) {
      body(begin, end, [&](auto&& rows_at) {
        const std::uint8_t* at[chunk];
        for (std::size_t r0 = begin; r0 < end; r0 += chunk) {
          const std::size_t m = std::min(chunk, end - r0);
          const operand o = rows_at(at, m, a);
          if (per == 4) pooled(o, m, y + r0 / 4 * out_);
          else gemm(o, m, y + r0 * out_);
        }
      });
    };
    if (scratch)
      backend::cpu::parallel_for_scratch<std::uint8_t>(rows, backend::cpu::grain_for(row_work), 4, chunk * lda + slack, range);
    else
      backend::cpu::parallel_for(rows, backend::cpu::grain_for(row_work), 4, [&](std::size_t begin, std::size_t end) { range(begin, end, nullptr); });
  }

  // split over rows gathered a chunk at a time into scratch: writer_from(begin) gives the writer
  // of the u8 inputs of the rows from `begin` on, one row a call, which returns where the row's
  // inputs end (the rest of the row, to k4 * 4, is zeros).
  template <class F> void rows_of(std::size_t rows, std::size_t per, std::int8_t* y, F&& writer_from) const {
    const std::size_t lda = k4_ * 4;
    split(rows, per, [&](std::size_t begin, std::size_t, auto&& each) {
      auto write = writer_from(begin);
      each([&](const std::uint8_t** at, std::size_t m, std::uint8_t* a) {
        for (std::size_t r = 0; r < m; ++r) {
          std::uint8_t* row = a + r * lda;
          std::uint8_t* past = write(row);
          if (past != row + lda) splat(past, std::size_t(row + lda - past), 0);
          at[r] = row;
        }
        return operand{at, 1, 0, k4_};
      });
    }, true, y);
  }

  // copy and splat write whole 16- or 64-byte vectors, past n by up to 63 bytes: their source
  // and destination buffers end in `slack` bytes more, and a row's runs are written in order
  // (each one over the previous one's overshoot; the row's tail is zeroed last, its overshoot
  // into the next row, written after it, or the slack).
  static constexpr std::size_t slack = 64;
  // to[0, n) = from[0, n).
  static void copy(const std::uint8_t* from, std::uint8_t* to, std::size_t n) {
    if (n <= 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
      return;
    }
    for (std::size_t i = 0; i < n; i += 64) _mm512_storeu_si512(to + i, _mm512_loadu_si512(from + i));
  }
  // to[0, n) = v.
  static void splat(std::uint8_t* to, std::size_t n, std::uint8_t v) {
    if (n <= 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to), _mm_set1_epi8(char(v)));
      return;
    }
    const __m512i all = _mm512_set1_epi8(char(v));
    for (std::size_t i = 0; i < n; i += 64) _mm512_storeu_si512(to + i, all);
  }
  // to[0, n) = from[0, n) as u8 (x + 128: the top bit flipped), 64 bytes a move.
  static void flip(const std::int8_t* from, std::uint8_t* to, std::size_t n) {
    const __m512i top = _mm512_set1_epi8(char(0x80));
    for (; n >= 64; n -= 64, from += 64, to += 64) _mm512_storeu_si512(to, _mm512_xor_si512(_mm512_loadu_si512(from), top));
    if (n) {
      const __mmask64 mask = (~__mmask64(0)) >> (64 - n);
      _mm512_mask_storeu_epi8(to, mask, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, from), top));
    }
  }

  // y [m, out] from m rows of A: blocks of up to 4 x 16 columns, 4 rows at a time (one row: 8
  // blocks, so that more sums are under way at once).
  void gemm(const operand& a, std::size_t m, std::int8_t* y) const {
    if (m == 1) {
      row_blocks(a, 0, blocks_, y);
      return;
    }
    for (std::size_t n0 = 0; n0 < blocks_; n0 += 4) {
      switch (std::min<std::size_t>(4, blocks_ - n0)) {
        case 4: columns<4>(a, m, n0, y); break;
        case 3: columns<3>(a, m, n0, y); break;
        case 2: columns<2>(a, m, n0, y); break;
        default: columns<1>(a, m, n0, y); break;
      }
    }
  }
  // Column blocks [b0, b1) of the one row y from row 0 of A.
  void row_blocks(const operand& a, std::size_t b0, std::size_t b1, std::int8_t* y) const {
    std::size_t n0 = b0;
    for (; n0 + 8 <= b1; n0 += 8) tile<1, 8>(a, 0, n0, y);
    if (n0 + 4 <= b1) tile<1, 4>(a, 0, n0, y), n0 += 4;
    switch (b1 - n0) {
      case 3: tile<1, 3>(a, 0, n0, y); break;
      case 2: tile<1, 2>(a, 0, n0, y); break;
      case 1: tile<1, 1>(a, 0, n0, y); break;
      default: break;
    }
  }
  // y [m / 4, out] from m rows of A: each 4 rows' largest sums.
  void pooled(const operand& a, std::size_t m, std::int8_t* y) const {
    for (std::size_t n0 = 0; n0 < blocks_; n0 += 4)
      for (std::size_t r = 0; r < m; r += 4) {
        std::int8_t* row = y + r / 4 * out_;
        switch (std::min<std::size_t>(4, blocks_ - n0)) {
          case 4: tile<4, 4, true>(a, r, n0, row); break;
          case 3: tile<4, 3, true>(a, r, n0, row); break;
          case 2: tile<4, 2, true>(a, r, n0, row); break;
          default: tile<4, 1, true>(a, r, n0, row); break;
        }
      }
  }
  template <int NB> void columns(const operand& a, std::size_t m, std::size_t n0, std::int8_t* y) const {
    std::size_t r = 0;
    for (; r + 4 <= m; r += 4) tile<4, NB>(a, r, n0, y);
    switch (m - r) {
      case 3: tile<3, NB>(a, r, n0, y); break;
      case 2: tile<2, NB>(a, r, n0, y); break;
      case 1: tile<1, NB>(a, r, n0, y); break;
      default: break;
    }
  }
  // Rows [r0, r0 + MR) of A by column blocks [n0, n0 + NB): MR x NB accumulators in registers;
  // with Max, the largest of the MR rows' sums into y's row (else y's row r0 + r for row r0 + r).
  template <int MR, int NB, bool Max = false> void tile(const operand& a, std::size_t r0, std::size_t n0, std::int8_t* y) const {
    const std::size_t stride = k4_ * 64;
    const std::int8_t* b = packed_.data() + n0 * stride;
    __m512i acc[MR][NB];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_setzero_si512();
    for (std::size_t rep = 0; rep < a.reps; ++rep) {
      const std::uint8_t* rows[MR];
      for (int r = 0; r < MR; ++r) rows[r] = a.at[r0 + std::size_t(r)] + rep * a.step;
      for (std::size_t kk = 0; kk < a.quads; ++kk, b += 64) {
        __m512i w[NB];
        for (int j = 0; j < NB; ++j) w[j] = _mm512_loadu_si512(b + j * stride);
        for (int r = 0; r < MR; ++r) {
          std::int32_t four;
          std::memcpy(&four, rows[r] + kk * 4, 4);
          const __m512i v = _mm512_set1_epi32(four);
          for (int j = 0; j < NB; ++j) acc[r][j] = dot_u8s8(acc[r][j], v, w[j]);
        }
      }
    }
    for (int j = 0; j < NB; ++j) {
      const std::size_t n = (n0 + std::size_t(j)) * 16;
      const column c = column_at(n);  // (loaded once for the tile's rows: y's stores may alias anything)
      if constexpr (Max) {
        __m512i most = acc[0][j];
        for (int r = 1; r < MR; ++r) most = _mm512_max_epi32(most, acc[r][j]);
        store(most, c, n, y);
      } else {
        for (int r = 0; r < MR; ++r) store(acc[r][j], c, n, y + (r0 + std::size_t(r)) * out_);
      }
    }
  }
  // What the requantization of columns [n, n + 16) reads.
  struct column {
    __m512i bias, multiplier, right, mask, half;
    __mmask16 valid;
  };
  [[gnu::always_inline]] column column_at(std::size_t n) const {
    const std::size_t valid = std::min<std::size_t>(16, out_ - n);
    const __m512i one = _mm512_set1_epi32(1), right = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(shift_.data() + n));
    const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
    return {_mm512_loadu_si512(bias_.data() + n), _mm512_loadu_si512(multiplier_.data() + n), right, mask, _mm512_srai_epi32(mask, 1),
            __mmask16((1u << valid) - 1)};
  }

  // The 16 sums of columns [n, n + 16) into the output row y: bias, requantization, zero point,
  // clamp.
  [[gnu::always_inline]] void store(__m512i acc, const column& c, std::size_t n, std::int8_t* y) const {
    acc = _mm512_add_epi32(acc, c.bias);
    if (!vector_requant_) {
      alignas(64) std::int32_t sums[16];
      _mm512_store_si512(sums, acc);
      for (std::size_t l = 0; l < 16 && n + l < out_; ++l) y[n + l] = q_(sums[l], n + l);
      return;
    }
    // (acc * m + 2^30) >> 31 in 64 bits, even and odd lanes apart: requantize's doubling high
    // multiply, its truncation toward zero of a negative product included.
    const __m512i nudge = _mm512_set1_epi64(std::int64_t(1) << 30);
    const __m512i even = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(acc, c.multiplier), nudge), 31);
    const __m512i odd =
        _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(acc, 32), _mm512_srli_epi64(c.multiplier, 32)), nudge), 31);
    const __m512i high = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
    // The rounding shift right: up when the remainder exceeds half (half itself up for a
    // negative value).
    const __m512i threshold = _mm512_add_epi32(c.half, _mm512_srli_epi32(high, 31));
    __m512i v = _mm512_srav_epi32(high, c.right);
    v = _mm512_mask_add_epi32(v, _mm512_cmpgt_epi32_mask(_mm512_and_si512(high, c.mask), threshold), v, _mm512_set1_epi32(1));
    v = _mm512_add_epi32(v, _mm512_set1_epi32(q_.out_zero));
    v = _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(q_.lo)), _mm512_set1_epi32(q_.hi));
    _mm512_mask_cvtepi32_storeu_epi8(y + n, c.valid, v);
  }

  std::size_t in_, out_, kh_, run_, run4_, k4_, blocks_;  // run: a window row's inputs; run4: its bytes in whole quads
  requant q_;
  bool vector_requant_ = true, monotonic_ = true;
  std::vector<std::int8_t> packed_;                      // [blocks][k4][16][4]
  std::vector<std::int32_t> bias_, multiplier_, shift_;  // per column, padded to blocks * 16
};

#else

template <> class linear_kernel<cpu> : public linear_kernel<reference> {
 public:
  using linear_kernel<reference>::linear_kernel;
};

#endif

}  // namespace ctflow::embedded::int8_detail
