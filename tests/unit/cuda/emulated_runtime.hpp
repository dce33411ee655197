// A GPU emulated on the host for the cuda device's tests: its memory is host memory, its copies
// memcpy, and its kernels the generated source compiled by the host's compiler (host_shim.hpp),
// each once, run block after block. Everything above the runtime (the executor, the allocator,
// Tensor<T, S, cuda>, to<cuda>) runs as it does on a GPU. Its memory is closed to the host
// (PROT_NONE) except while the emulated GPU works on it, so that host code reading or writing
// device memory, which a GPU would not let it do, stops the test where it happens.
#pragma once

#include <ctflow/backend/cuda/runtime.hpp>

#include <sys/mman.h>
#include <unistd.h>

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
    const std::size_t mapped = pages(bytes);
    void* p = ::mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    held[p] = bytes;
    return p;
  }
  void release(void* p, std::size_t) override {
    const auto it = held.find(p);
    if (it == held.end()) throw std::logic_error("emulated GPU: release of memory it did not give");
    ::munmap(p, pages(it->second));
    held.erase(it);
  }
  /// Whether p is in the emulated device's memory (what a GPU's kernels can read).
  bool owns(const void* p) const {
    auto it = held.upper_bound(p);
    if (it == held.begin()) return false;
    --it;
    return static_cast<const char*>(p) < static_cast<const char*>(it->first) + it->second;
  }
  std::string name() const override { return "GPU:0 (emulated on the host)"; }
  void copy(void* dst, const void* src, std::size_t bytes, ctflow::backend::cuda::copy_kind) override {
    const open_while_working open(*this);
    std::memcpy(dst, src, bytes);
  }
  void zero(void* p, std::size_t bytes) override {
    const open_while_working open(*this);
    std::memset(p, 0, bytes);
  }
  int launch(const ctflow::backend::cuda::generated_kernel& k, const std::string& entry, const std::vector<unsigned char>& args, unsigned grid,
             unsigned block) override {
    auto& built = libraries();
    auto it = built.find(k.name);
    if (it == built.end()) it = built.emplace(k.name, host_compile::build({&k})).first;
    if (std::none_of(ran.begin(), ran.end(), [&](const auto* r) { return r->name == k.name; })) ran.push_back(&k);
    ++launches;
    entries.push_back(entry);
    const open_while_working open(*this);
    return host_compile::entry(it->second, entry)(args.data(), grid, block);
  }
  unsigned multiprocessors() const override { return 1; }
  // cuBLASLt's product as plain loops, then its epilogue (the bias over the columns, relu), in
  // the product's precision before it is stored, as cuBLASLt applies it.
  void matmul(const ctflow::backend::cuda::matmul_problem& p, const void* a, const void* b, void* d, const void* bias) override {
    using api = ctflow::backend::cuda::cublaslt_api;
    ++matmuls;
    epilogues.push_back(p.ep);
    const open_while_working open(*this);
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
  static std::size_t pages(std::size_t bytes) {
    const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
    return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
  }
  /// The device's memory open to the host for the scope of one of the GPU's operations.
  struct open_while_working {
    const emulated_runtime& gpu;
    explicit open_while_working(const emulated_runtime& g) : gpu(g) { gpu.protect(PROT_READ | PROT_WRITE); }
    ~open_while_working() { gpu.protect(PROT_NONE); }
  };
  void protect(int access) const {
    for (const auto& [p, bytes] : held)
      if (::mprotect(const_cast<void*>(p), pages(bytes), access) != 0) throw std::runtime_error("emulated GPU: mprotect failed");
  }
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

/// The GPU the tests run on: the driver's where it shows one (on a GPU machine the same tests run
/// there), else one emulated on the host for the scope's length (`gpu` then counts its work).
struct gpu_under_test {
  emulated_runtime* gpu = nullptr;
  gpu_under_test() {
    if (!ctflow::backend::cuda::devices().empty()) return;
    auto r = std::make_unique<emulated_runtime>();
    gpu = r.get();
    ctflow::backend::cuda::use_runtime(std::move(r));
  }
  ~gpu_under_test() {
    if (gpu) ctflow::backend::cuda::use_runtime(nullptr);
  }
  gpu_under_test(const gpu_under_test&) = delete;
  gpu_under_test& operator=(const gpu_under_test&) = delete;
};
