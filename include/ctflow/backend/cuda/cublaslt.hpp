#pragma once
/// @file
/// @brief Matmul through cuBLASLt (libcublasLt.so, loaded on first use): a product of ctflow's
/// row-major operands described as cuBLASLt's column-major one, batched with strides (0 for an
/// operand the batch broadcasts), transposes, and bias and relu epilogues. The descriptors need no
/// GPU (the tests build and read back every form here); the handle, the algorithm search and
/// the product itself do.
///
/// Row-major C[M, N] = A[M, K] B[K, N] is, read column-major, C^T = B^T A^T: cuBLASLt's A is our B
/// and its B our A, each read as stored (a row-major [K, N] is a column-major N x K with leading
/// dimension N) and transposed where ours is.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include <ctflow/backend/cuda/library.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/core/errors.hpp>

namespace ctflow::backend::cuda {

/// @brief The algorithm cuBLASLt picked (cublasLtMatmulAlgo_t) and its heuristic's answer
/// (cublasLtMatmulHeuristicResult_t), as their ABI lays them out.
struct lt_algorithm {
  std::uint64_t data[8];
};
struct lt_heuristic {
  lt_algorithm algo;
  std::size_t workspace_bytes;
  int state;
  float waves;
  int reserved[4];
};

/// @brief The entry points of cuBLASLt that ctflow calls (handles and descriptors are pointers,
/// statuses ints: 0 is success).
struct cublaslt_api {
  using status = int;
  const char* (*cublasLtGetStatusString)(status s);
  status (*cublasLtCreate)(void** handle);
  status (*cublasLtDestroy)(void* handle);
  status (*cublasLtMatmulDescCreate)(void** desc, int compute_type, int scale_type);
  status (*cublasLtMatmulDescDestroy)(void* desc);
  status (*cublasLtMatmulDescSetAttribute)(void* desc, int attribute, const void* value, std::size_t bytes);
  status (*cublasLtMatmulDescGetAttribute)(void* desc, int attribute, void* value, std::size_t bytes, std::size_t* written);
  status (*cublasLtMatrixLayoutCreate)(void** layout, int type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld);
  status (*cublasLtMatrixLayoutDestroy)(void* layout);
  status (*cublasLtMatrixLayoutSetAttribute)(void* layout, int attribute, const void* value, std::size_t bytes);
  status (*cublasLtMatrixLayoutGetAttribute)(void* layout, int attribute, void* value, std::size_t bytes, std::size_t* written);
  status (*cublasLtMatmulPreferenceCreate)(void** preference);
  status (*cublasLtMatmulPreferenceDestroy)(void* preference);
  status (*cublasLtMatmulPreferenceSetAttribute)(void* preference, int attribute, const void* value, std::size_t bytes);
  status (*cublasLtMatmulAlgoGetHeuristic)(void* handle, void* op, void* a, void* b, void* c, void* d, void* preference, int requested,
                                           lt_heuristic* results, int* returned);
  status (*cublasLtMatmul)(void* handle, void* op, const void* alpha, const void* a, void* a_layout, const void* b, void* b_layout,
                           const void* beta, const void* c, void* c_layout, void* d, void* d_layout, const lt_algorithm* algo,
                           void* workspace, std::size_t workspace_bytes, void* stream);

  // cublasLt.h's and library_types.h's values.
  static constexpr int layout_type = 0, layout_rows = 2, layout_cols = 3, layout_ld = 4, layout_batch_count = 5, layout_batch_stride = 6;
  static constexpr int desc_compute_type = 0, desc_scale_type = 1, desc_transa = 3, desc_transb = 4, desc_epilogue = 7, desc_bias_pointer = 8,
                       desc_bias_batch_stride = 10, desc_bias_data_type = 26;
  static constexpr int preference_max_workspace = 1;
  static constexpr int op_n = 0, op_t = 1;
  static constexpr int compute_32f = 68, compute_64f = 70;
  static constexpr int r_32f = 0, r_64f = 1, r_16f = 2, r_16bf = 14;

  /// @brief Throws device_error naming `call` and cuBLASLt's message where s is not success.
  void check(status s, const char* call) const {
    if (s == 0) return;
    const char* text = cublasLtGetStatusString ? cublasLtGetStatusString(s) : nullptr;
    throw device_error(std::string("ctflow::cuda: ") + call + " failed (" + (text ? text : "status " + std::to_string(s)) + ")");
  }
};

/// @brief cuBLASLt, loaded on first use (or why it could not be).
inline const lazy_api<cublaslt_api>& cublaslt_library() {
  static const lazy_api<cublaslt_api> l([](std::optional<shared_library>& library, cublaslt_api& api) {
    library.emplace("cuBLASLt", std::initializer_list<const char*>{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
    const shared_library& s = *library;
#define CTFLOW_LT(NAME) api.NAME = s.function<decltype(api.NAME)>(#NAME)
    CTFLOW_LT(cublasLtGetStatusString);
    CTFLOW_LT(cublasLtCreate);
    CTFLOW_LT(cublasLtDestroy);
    CTFLOW_LT(cublasLtMatmulDescCreate);
    CTFLOW_LT(cublasLtMatmulDescDestroy);
    CTFLOW_LT(cublasLtMatmulDescSetAttribute);
    CTFLOW_LT(cublasLtMatmulDescGetAttribute);
    CTFLOW_LT(cublasLtMatrixLayoutCreate);
    CTFLOW_LT(cublasLtMatrixLayoutDestroy);
    CTFLOW_LT(cublasLtMatrixLayoutSetAttribute);
    CTFLOW_LT(cublasLtMatrixLayoutGetAttribute);
    CTFLOW_LT(cublasLtMatmulPreferenceCreate);
    CTFLOW_LT(cublasLtMatmulPreferenceDestroy);
    CTFLOW_LT(cublasLtMatmulPreferenceSetAttribute);
    CTFLOW_LT(cublasLtMatmulAlgoGetHeuristic);
    CTFLOW_LT(cublasLtMatmul);
#undef CTFLOW_LT
  });
  return l;
}
/// @brief Whether cuBLASLt loads here.
inline bool cublaslt_available() { return cublaslt_library().available(); }
/// @brief cuBLASLt's entry points; device_error where it is not installed.
inline const cublaslt_api& cublaslt() { return cublaslt_library().get(); }

/// @brief A matmul's epilogue: what cuBLASLt applies to the product before it stores it (the
/// bias is a vector over the output's columns, N).
enum class epilogue { none, bias, relu, relu_bias };

/// @brief One matmul: D[batch][M, N] = op(A)[batch] op(B)[batch] (+ bias, relu), row-major, each
/// operand's matrices `*_batch_stride` elements apart (0: one matrix the batch shares).
struct matmul_problem {
  int dtype = cublaslt_api::r_32f;
  bool transpose_a = false, transpose_b = false;
  std::uint64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t a_batch_stride = 0, b_batch_stride = 0;
  epilogue ep = epilogue::none;

  /// @brief The cuBLASLt data type of dtype T.
  template <class T> static constexpr int type_of() {
    if constexpr (std::is_same_v<T, double>) return cublaslt_api::r_64f;
    else if constexpr (std::is_same_v<T, bfloat16>) return cublaslt_api::r_16bf;
    else if constexpr (std::is_same_v<T, float16>) return cublaslt_api::r_16f;
    else return cublaslt_api::r_32f;
  }
  friend bool operator<(const matmul_problem& x, const matmul_problem& y) {
    auto key = [](const matmul_problem& p) {
      return std::tuple(p.dtype, p.transpose_a, p.transpose_b, p.m, p.n, p.k, p.batch, p.a_batch_stride, p.b_batch_stride, int(p.ep));
    };
    return key(x) < key(y);
  }
};

/// @brief The descriptors of one matmul_problem: the operation (compute type, transposes,
/// epilogue) and the layouts of cuBLASLt's A (our B), B (our A) and C = D. Built without a GPU.
class matmul_descriptors {
 public:
  explicit matmul_descriptors(const matmul_problem& p) : lt_(cublaslt()) {
    try {
      const bool dbl = p.dtype == cublaslt_api::r_64f;
      const int scale = dbl ? cublaslt_api::r_64f : cublaslt_api::r_32f;
      lt_.check(lt_.cublasLtMatmulDescCreate(&op_, dbl ? cublaslt_api::compute_64f : cublaslt_api::compute_32f, scale), "cublasLtMatmulDescCreate");
      set_op(cublaslt_api::desc_transa, p.transpose_b ? cublaslt_api::op_t : cublaslt_api::op_n);  // cuBLASLt's A is our B
      set_op(cublaslt_api::desc_transb, p.transpose_a ? cublaslt_api::op_t : cublaslt_api::op_n);
      set_op(cublaslt_api::desc_epilogue, p.ep == epilogue::none ? 1 : p.ep == epilogue::relu ? 2 : p.ep == epilogue::bias ? 4 : 6);
      if (p.ep == epilogue::bias || p.ep == epilogue::relu_bias) {  // one bias for every matrix of the batch
        const std::int64_t none = 0;
        lt_.check(lt_.cublasLtMatmulDescSetAttribute(op_, cublaslt_api::desc_bias_batch_stride, &none, sizeof none), "cublasLtMatmulDescSetAttribute");
      }
      // Our B, stored [K, N] (or [N, K] transposed): column-major N x K (K x N), leading N (K).
      a_ = layout(p.dtype, p.transpose_b ? p.k : p.n, p.transpose_b ? p.n : p.k, p.batch, p.b_batch_stride);
      // Our A, stored [M, K] (or [K, M]): column-major K x M (M x K).
      b_ = layout(p.dtype, p.transpose_a ? p.m : p.k, p.transpose_a ? p.k : p.m, p.batch, p.a_batch_stride);
      c_ = layout(p.dtype, p.n, p.m, p.batch, std::int64_t(p.m * p.n));
    } catch (...) {
      destroy();
      throw;
    }
  }
  /// @brief The epilogue's bias (N elements of the dtype, device memory), for the next product.
  void set_bias(const void* bias) {
    lt_.check(lt_.cublasLtMatmulDescSetAttribute(op_, cublaslt_api::desc_bias_pointer, &bias, sizeof bias), "cublasLtMatmulDescSetAttribute");
  }
  matmul_descriptors(const matmul_descriptors&) = delete;
  matmul_descriptors& operator=(const matmul_descriptors&) = delete;
  ~matmul_descriptors() { destroy(); }

  void* op() const { return op_; }
  void* a() const { return a_; }
  void* b() const { return b_; }
  void* c() const { return c_; }

  /// @brief An attribute of the operation or of a layout, read back (for tests and messages).
  template <class V> V op_attribute(int attribute) const {
    V v{};
    std::size_t written = 0;
    lt_.check(lt_.cublasLtMatmulDescGetAttribute(op_, attribute, &v, sizeof v, &written), "cublasLtMatmulDescGetAttribute");
    return v;
  }
  template <class V> V layout_attribute(void* layout, int attribute) const {
    V v{};
    std::size_t written = 0;
    lt_.check(lt_.cublasLtMatrixLayoutGetAttribute(layout, attribute, &v, sizeof v, &written), "cublasLtMatrixLayoutGetAttribute");
    return v;
  }

 private:
  void destroy() {
    for (void* l : {a_, b_, c_})
      if (l) lt_.cublasLtMatrixLayoutDestroy(l);
    if (op_) lt_.cublasLtMatmulDescDestroy(op_);
  }
  void set_op(int attribute, int value) {
    const std::int32_t v = value;
    lt_.check(lt_.cublasLtMatmulDescSetAttribute(op_, attribute, &v, sizeof v), "cublasLtMatmulDescSetAttribute");
  }
  void* layout(int type, std::uint64_t rows, std::uint64_t cols, std::uint64_t batch, std::int64_t stride) const {
    void* l = nullptr;
    lt_.check(lt_.cublasLtMatrixLayoutCreate(&l, type, rows, cols, std::int64_t(rows)), "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      const std::int32_t count = std::int32_t(batch);
      lt_.check(lt_.cublasLtMatrixLayoutSetAttribute(l, cublaslt_api::layout_batch_count, &count, sizeof count), "cublasLtMatrixLayoutSetAttribute");
      lt_.check(lt_.cublasLtMatrixLayoutSetAttribute(l, cublaslt_api::layout_batch_stride, &stride, sizeof stride), "cublasLtMatrixLayoutSetAttribute");
    }
    return l;
  }

  const cublaslt_api& lt_;
  void* op_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
};

}  // namespace ctflow::backend::cuda
