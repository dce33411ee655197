// cuBLASLt's descriptors of every matmul form, built without a GPU and read back: ctflow's
// row-major product as cuBLASLt's column-major one (operands swapped, each read as stored),
// transposes, batches with strides (0 where the batch broadcasts an operand), dtypes and
// epilogues.
#include <catch2/catch.hpp>

#include <ctflow/backend/cuda/cublaslt.hpp>

#include <cstdint>

namespace cuda = ctflow::backend::cuda;
using api = cuda::cublaslt_api;

namespace {
struct shape {
  std::uint64_t rows, cols;
  std::int64_t ld;
  std::int32_t batch;
  std::int64_t stride;
};
shape read(const cuda::matmul_descriptors& d, void* layout) {
  shape s{d.layout_attribute<std::uint64_t>(layout, api::layout_rows), d.layout_attribute<std::uint64_t>(layout, api::layout_cols),
          d.layout_attribute<std::int64_t>(layout, api::layout_ld), d.layout_attribute<std::int32_t>(layout, api::layout_batch_count),
          d.layout_attribute<std::int64_t>(layout, api::layout_batch_stride)};
  return s;
}
}  // namespace

TEST_CASE("cuda: cuBLASLt descriptors of every matmul form, without a GPU") {
  if (!cuda::cublaslt_available()) {
    WARN("skipped: cuBLASLt is not installed here");
    return;
  }
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("transpose_a " << ta << ", transpose_b " << tb);
      cuda::matmul_problem p;
      p.transpose_a = ta;
      p.transpose_b = tb;
      p.m = 5;
      p.n = 7;
      p.k = 3;
      const cuda::matmul_descriptors d(p);
      CHECK(d.op_attribute<std::int32_t>(api::desc_compute_type) == api::compute_32f);
      CHECK(d.op_attribute<std::int32_t>(api::desc_scale_type) == api::r_32f);
      // cuBLASLt's A is our B, its B our A.
      CHECK(d.op_attribute<std::int32_t>(api::desc_transa) == (tb ? api::op_t : api::op_n));
      CHECK(d.op_attribute<std::int32_t>(api::desc_transb) == (ta ? api::op_t : api::op_n));
      CHECK(d.op_attribute<std::uint32_t>(api::desc_epilogue) == 1);
      const shape a = read(d, d.a()), b = read(d, d.b()), c = read(d, d.c());
      // Our B: [K, N] -> column-major N x K; transposed, [N, K] -> K x N.
      CHECK(a.rows == (tb ? 3u : 7u));
      CHECK(a.cols == (tb ? 7u : 3u));
      CHECK(a.ld == std::int64_t(a.rows));
      // Our A: [M, K] -> K x M; transposed, [K, M] -> M x K.
      CHECK(b.rows == (ta ? 5u : 3u));
      CHECK(b.cols == (ta ? 3u : 5u));
      CHECK(b.ld == std::int64_t(b.rows));
      // The product: row-major [M, N] is column-major N x M.
      CHECK(c.rows == 7u);
      CHECK(c.cols == 5u);
      CHECK(c.ld == 7);
      CHECK(c.batch == 1);
    }
  SECTION("a batch that broadcasts B, in float64") {
    cuda::matmul_problem p;
    p.dtype = cuda::matmul_problem::type_of<double>();
    p.m = 4;
    p.n = 6;
    p.k = 2;
    p.batch = 9;
    p.a_batch_stride = 8;
    p.b_batch_stride = 0;
    const cuda::matmul_descriptors d(p);
    CHECK(d.op_attribute<std::int32_t>(api::desc_compute_type) == api::compute_64f);
    CHECK(d.layout_attribute<std::int32_t>(d.a(), api::layout_type) == api::r_64f);
    const shape a = read(d, d.a()), b = read(d, d.b()), c = read(d, d.c());
    CHECK(a.batch == 9);
    CHECK(a.stride == 0);
    CHECK(b.batch == 9);
    CHECK(b.stride == 8);
    CHECK(c.batch == 9);
    CHECK(c.stride == 24);
  }
  SECTION("16-bit dtypes compute in float; epilogues") {
    for (const auto& [type, ep, code] : {std::tuple{cuda::matmul_problem::type_of<ctflow::bfloat16>(), cuda::epilogue::bias, 4u},
                                         std::tuple{cuda::matmul_problem::type_of<ctflow::float16>(), cuda::epilogue::relu_bias, 6u},
                                         std::tuple{cuda::matmul_problem::type_of<float>(), cuda::epilogue::relu, 2u}}) {
      cuda::matmul_problem p;
      p.dtype = type;
      p.m = p.n = p.k = 8;
      p.ep = ep;
      cuda::matmul_descriptors d(p);
      CHECK(d.op_attribute<std::int32_t>(api::desc_compute_type) == api::compute_32f);
      CHECK(d.layout_attribute<std::int32_t>(d.c(), api::layout_type) == type);
      CHECK(d.op_attribute<std::uint32_t>(api::desc_epilogue) == code);
      // A bias epilogue's bias is the same for every matrix of a batch.
      if (ep != cuda::epilogue::relu) CHECK(d.op_attribute<std::int64_t>(api::desc_bias_batch_stride) == 0);
      float bias[8] = {};
      d.set_bias(bias);
      CHECK(d.op_attribute<const void*>(api::desc_bias_pointer) == bias);
    }
  }
}
