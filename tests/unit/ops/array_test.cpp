// Shape ops: views and the ops that build new tensors.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

using namespace ctflow;

namespace {
template <class S> Tensor<float, S> iota() {
  Tensor<float, S> t;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = float(i);
  return t;
}
}  // namespace

TEST_CASE("reshape infers one extent, at compile time when it can") {
  auto a = iota<Shape<2, 3, 4>>();
  auto r = reshape<Shape<dyn, 4>>(a);
  static_assert(std::is_same_v<shape_t<decltype(r)>, Shape<6, 4>>);
  Tensor<float, Shape<6, 4>> t = r;
  REQUIRE(t(5, 3) == 23.f);
  Tensor<float, Shape<dyn, 4>> d({3, 4});
  REQUIRE_THROWS_AS((reshape<Shape<5, dyn>>(d)), shape_error);
  // A reshape of a transposed tensor copies once.
  Tensor<float, Shape<4, 6>> rt = reshape<Shape<4, 6>>(transpose<0, 2, 1>(a));
  REQUIRE(rt(0, 1) == 4.f);
}

TEST_CASE("transpose, expand_dims, squeeze, reverse and broadcast_to are views") {
  auto a = iota<Shape<2, 3>>();
  Tensor<float, Shape<3, 2>> t = transpose(a);
  REQUIRE(t(2, 1) == 5.f);
  Tensor<float, Shape<2, 1, 3>> e = expand_dims<1>(a);
  REQUIRE(e(1, 0, 2) == 5.f);
  Tensor<float, Shape<2, 3>> s = squeeze<1>(e);
  REQUIRE(s(1, 1) == 4.f);
  Tensor<float, Shape<2, 3>> rv = reverse<0, 1>(a);
  REQUIRE(rv(0, 0) == 5.f);
  Tensor<float, Shape<4, 2, 3>> b = broadcast_to<Shape<4, 2, 3>>(a);
  REQUIRE(b(3, 1, 2) == 5.f);
  Tensor<float, Shape<2, 3>> sum = transpose(t) + reverse<1>(reverse<1>(a));
  REQUIRE(sum(1, 2) == 10.f);
  Tensor<float, Shape<dyn, 1>> d({2, 1});
  REQUIRE_THROWS_AS(squeeze<0>(d), shape_error);
}

TEST_CASE("slice and strided_slice check bounds and follow Python semantics") {
  auto a = iota<Shape<4, 5>>();
  Tensor<float, Shape<2, 3>> s = slice<Shape<2, 3>>(a, {1, 2});
  REQUIRE(s(0, 0) == 7.f);
  REQUIRE(s(1, 2) == 14.f);
  Tensor<float, Shape<dyn, dyn>> rest = slice<Shape<dyn, dyn>>(a, {3, 1});
  REQUIRE(rest.dims() == dims_t<2>{1, 4});
  REQUIRE_THROWS_AS((slice<Shape<2, 3>>(a, {3, 0})), shape_error);
  Tensor<float, Shape<dyn, dyn>> ss = strided_slice(a, {0, -1}, {4, -6}, {2, -2});
  REQUIRE(ss.dims() == dims_t<2>{2, 3});
  REQUIRE(ss(0, 0) == 4.f);
  REQUIRE(ss(1, 2) == 10.f);
  REQUIRE_THROWS_AS(strided_slice(a, {0, 0}, {1, 1}, {1, 0}), value_error);
  Tensor<float, Shape<dyn, dyn>> none = strided_slice(a, {3, 0}, {1, 5}, {1, 1});
  REQUIRE(none.size() == 0);
}

TEST_CASE("concat, stack, split, unstack") {
  auto a = iota<Shape<2, 2>>();
  Tensor<float, Shape<2, 3>> b;
  Tensor<float, Shape<2, 5>> c = concat<1>(a, b);
  REQUIRE(c(1, 1) == 3.f);
  REQUIRE(c(1, 4) == 0.f);
  Tensor<float, Shape<4, 2>> c0 = concat<0>(a, a * 2.f);
  REQUIRE(c0(3, 1) == 6.f);
  Tensor<float, Shape<2, 2, 2>> st = stack<1>(a, a + 10.f);
  REQUIRE(st(1, 1, 0) == 12.f);
  auto parts = split<2, 1>(c0);
  Tensor<float, Shape<4, 1>> p1 = parts[1];
  REQUIRE(p1(3, 0) == 6.f);
  auto rows = unstack<0>(a);
  static_assert(rows.size() == 2);
  Tensor<float, Shape<2>> r1 = rows[1];
  REQUIRE(r1(0) == 2.f);
  Tensor<float, Shape<dyn, 2>> d({3, 2});
  Tensor<float, Shape<dyn, 3>> e({2, 3});
  Tensor<float, Shape<dyn, 2>> joined = concat<0>(d, reshape<Shape<dyn, 2>>(e));
  REQUIRE(joined.dims() == dims_t<2>{6, 2});
  REQUIRE_THROWS_AS((concat<0>(d, Tensor<float, Shape<dyn, dyn>>({1, 3}))), shape_error);
}

TEST_CASE("gather, one_hot, pad, tile and decode_raw") {
  auto a = iota<Shape<3, 4>>();
  Tensor<int64_t, Shape<2, 2>> idx;
  idx(0, 0) = 2; idx(0, 1) = 0; idx(1, 0) = 1; idx(1, 1) = 2;
  Tensor<float, Shape<2, 2, 4>> g = gather<0>(a, idx);
  REQUIRE(g(0, 0, 3) == 11.f);
  REQUIRE(g(1, 0, 0) == 4.f);
  Tensor<float, Shape<3, 2, 2>> g1 = gather<1>(a, idx);
  REQUIRE(g1(2, 1, 1) == 10.f);
  idx(1, 1) = 7;
  REQUIRE_THROWS_AS((Tensor<float, Shape<2, 2, 4>>(gather<0>(a, idx))), value_error);
  Tensor<int32_t, Shape<3>> labels;
  labels(0) = 1; labels(1) = -1; labels(2) = 3;
  Tensor<float, Shape<3, 4>> oh = one_hot<4>(labels);
  REQUIRE(oh(0, 1) == 1.f);
  REQUIRE(oh(1, 0) == 0.f);
  REQUIRE(oh(2, 3) == 1.f);
  Tensor<float, Shape<dyn, dyn>> p = pad(a, {{{1, 1}, {0, 2}}}, -1.f);
  REQUIRE(p.dims() == dims_t<2>{5, 6});
  REQUIRE(p(0, 0) == -1.f);
  REQUIRE(p(1, 0) == 0.f);
  REQUIRE(p(3, 3) == 11.f);
  REQUIRE(p(3, 4) == -1.f);
  Tensor<float, Shape<3, 8>> t = tile<1, 2>(a);
  REQUIRE(t(2, 7) == 11.f);
  const std::uint8_t bytes[] = {1, 0, 0, 0, 0, 1, 0, 0};
  auto le = decode_raw<int32_t>(bytes);
  REQUIRE(le(1) == 256);
  auto be = decode_raw<int32_t>(bytes, false);
  REQUIRE(be(0) == 16777216);
  REQUIRE_THROWS_AS(decode_raw<int32_t>(std::span<const std::uint8_t>(bytes, 7)), value_error);
}
