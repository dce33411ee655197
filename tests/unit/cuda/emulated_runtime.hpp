// A GPU emulated on the host for the cuda device's tests: its memory is host memory, its copies
// memcpy, and its kernels the generated source compiled by the host's compiler (host_shim.hpp),
// each once, run block after block. Everything above the runtime (the executor, the allocator,
// Tensor<T, S, cuda>, to<cuda>) runs as it does on a GPU.
#pragma once

#include <ctflow/backend/cuda/runtime.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "host_compile.hpp"

class emulated_runtime final : public ctflow::backend::cuda::runtime {
 public:
  void* allocate(std::size_t bytes) override {
    ++allocations;
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    held[p] = bytes;
    return p;
  }
  void release(void* p, std::size_t) override {
    held.erase(p);
    std::free(p);
  }
  /// Whether p is in the emulated device's memory (what a GPU's kernels can read).
  bool owns(const void* p) const {
    auto it = held.upper_bound(p);
    if (it == held.begin()) return false;
    --it;
    return static_cast<const char*>(p) < static_cast<const char*>(it->first) + it->second;
  }
  std::string name() const override { return "GPU:0 (emulated on the host)"; }
  void copy(void* dst, const void* src, std::size_t bytes, ctflow::backend::cuda::copy_kind) override { std::memcpy(dst, src, bytes); }
  void zero(void* p, std::size_t bytes) override { std::memset(p, 0, bytes); }
  int launch(const ctflow::backend::cuda::generated_kernel& k, const std::string& entry, const std::vector<unsigned char>& args, unsigned grid,
             unsigned block) override {
    auto& built = libraries();
    auto it = built.find(k.name);
    if (it == built.end()) it = built.emplace(k.name, host_compile::build({&k})).first;
    if (std::none_of(ran.begin(), ran.end(), [&](const auto* r) { return r->name == k.name; })) ran.push_back(&k);
    ++launches;
    entries.push_back(entry);
    return host_compile::entry(it->second, entry)(args.data(), grid, block);
  }
  unsigned multiprocessors() const override { return 1; }
  // cuBLASLt's product as plain loops, then its epilogue (the bias over the columns, relu), in
  // the product's precision before it is stored, as cuBLASLt applies it.
  void matmul(const ctflow::backend::cuda::matmul_problem& p, const void* a, const void* b, void* d, const void* bias) override {
    using api = ctflow::backend::cuda::cublaslt_api;
    ++matmuls;
    epilogues.push_back(p.ep);
    if (p.dtype == api::r_64f) product(p, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(d), static_cast<const double*>(bias));
    else if (p.dtype == api::r_16bf) product(p, static_cast<const ctflow::bfloat16*>(a), static_cast<const ctflow::bfloat16*>(b), static_cast<ctflow::bfloat16*>(d), static_cast<const ctflow::bfloat16*>(bias));
    else if (p.dtype == api::r_16f) product(p, static_cast<const ctflow::float16*>(a), static_cast<const ctflow::float16*>(b), static_cast<ctflow::float16*>(d), static_cast<const ctflow::float16*>(bias));
    else product(p, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(d), static_cast<const float*>(bias));
  }

  std::size_t allocations = 0, launches = 0, matmuls = 0;
  std::vector<std::string> entries;  // each launch's entry point
  std::vector<ctflow::backend::cuda::epilogue> epilogues;  // each product's epilogue
  std::map<const void*, std::size_t> held;  // the device memory given out, by address
  /// Whether an entry point whose name holds `part` ran.
  bool ran_entry(const std::string& part) const {
    return std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.find(part) != std::string::npos; });
  }
  std::vector<const ctflow::backend::cuda::generated_kernel*> ran;  // each kernel it ran, once

 private:
  template <class T> static void product(const ctflow::backend::cuda::matmul_problem& p, const T* a, const T* b, T* d, const T* bias) {
    using C = ctflow::compute_t<T>;
    using ep = ctflow::backend::cuda::epilogue;
    const bool biased = p.ep == ep::bias || p.ep == ep::relu_bias, rectified = p.ep == ep::relu || p.ep == ep::relu_bias;
    if (biased && !bias) throw std::logic_error("emulated cuBLASLt: a bias epilogue without its bias");
    for (std::uint64_t s = 0; s < p.batch; ++s) {
      const T* x = a + s * p.a_batch_stride;
      const T* y = b + s * p.b_batch_stride;
      T* z = d + s * p.m * p.n;
      for (std::uint64_t i = 0; i < p.m; ++i)
        for (std::uint64_t j = 0; j < p.n; ++j) {
          C acc = 0;
          for (std::uint64_t l = 0; l < p.k; ++l)
            acc += C(p.transpose_a ? x[l * p.m + i] : x[i * p.k + l]) * C(p.transpose_b ? y[j * p.k + l] : y[l * p.n + j]);
          if (biased) acc += C(bias[j]);
          if (rectified && acc < C(0)) acc = C(0);
          z[i * p.n + j] = T(acc);
        }
    }
  }
  // Kernels built once per process, whichever emulation runs them.
  static std::map<std::string, void*>& libraries() {
    static std::map<std::string, void*> built;
    return built;
  }
};
