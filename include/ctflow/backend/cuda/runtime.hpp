#pragma once
/// @file
/// @brief What the cuda device runs on: a `runtime` gives device memory, copies and kernel
/// launches. The default one is the driver's (the first GPU the process sees, in its primary
/// context; generated kernels compiled by NVRTC for its architecture through the kernel cache;
/// everything on one stream, copies to and from the host through pinned staging buffers);
/// where there is no driver or no GPU, using the device is a device_error that says why. A test
/// installs another (`use_runtime`): an emulation on host memory that runs the same generated
/// source, compiled by the host's compiler.
///
/// Device memory comes from one caching allocator over the runtime's memory, so a warm step
/// takes none from the device.

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ctflow/backend/cuda/allocator.hpp>
#include <ctflow/backend/cuda/codegen.hpp>
#include <ctflow/backend/cuda/cublaslt.hpp>
#include <ctflow/backend/cuda/driver.hpp>
#include <ctflow/backend/cuda/kernel_cache.hpp>
#include <ctflow/backend/cuda/staging.hpp>

namespace ctflow::backend::cuda {

enum class copy_kind { host_to_device, device_to_host, device_to_device };

/// @brief A GPU as the device uses it: memory, copies and kernels, each finished on return (the
/// driver's runs them on one stream, in order).
class runtime : public memory_source {
 public:
  /// @brief Copies `bytes` from src to dst (host or device memory, as `kind` says).
  virtual void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind) = 0;
  /// @brief Sets `bytes` of device memory at p to zero.
  virtual void zero(void* p, std::size_t bytes) = 0;
  /// @brief Runs entry point `entry` of kernel k with argument struct `args` over `grid` blocks of
  /// `block` threads, to its end; the status the kernel set (0: every operation had a value).
  virtual int launch(const generated_kernel& k, const std::string& entry, const std::vector<unsigned char>& args, unsigned grid,
                     unsigned block) = 0;
  /// @brief The matmul p of device memory a and b into d (bias: N elements for its epilogue, or
  /// null), to its end.
  virtual void matmul(const matmul_problem& p, const void* a, const void* b, void* d, const void* bias) = 0;
  /// @brief The GPU's streaming multiprocessors (launches size their grids by them).
  virtual unsigned multiprocessors() const = 0;
};

/// @brief The driver's runtime: the GPU of ordinal `ordinal` among those the process sees, in its
/// primary context.
class driver_runtime final : public runtime {
 public:
  explicit driver_runtime(int ordinal = 0) : d_(driver()) {
    const auto gpus = devices();
    if (gpus.empty()) throw device_error("ctflow::cuda: the CUDA driver shows no GPU (CUDA_VISIBLE_DEVICES may hide them all)");
    if (ordinal < 0 || std::size_t(ordinal) >= gpus.size())
      throw device_error("ctflow::cuda: no GPU " + std::to_string(ordinal) + " (the driver shows " + std::to_string(gpus.size()) + ")");
    properties_ = gpus[std::size_t(ordinal)];
    d_.check(d_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    d_.check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    try {
      current();
      int sms = 0;
      d_.check(d_.cuDeviceGetAttribute(&sms, driver_api::multiprocessor_count, device_), "cuDeviceGetAttribute");
      multiprocessors_ = unsigned(sms);
      d_.check(d_.cuStreamCreate(&stream_, driver_api::stream_non_blocking), "cuStreamCreate");
    } catch (...) {
      d_.cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }
  ~driver_runtime() override {
    current_unchecked();
    plans_.clear();
    if (lt_handle_) cublaslt().cublasLtDestroy(lt_handle_);
    for (auto& [name, m] : modules_) d_.cuModuleUnload(m.module);
    for (const staging_buffer& b : staging_) {
      if (b.done) d_.cuEventDestroy(b.done);
      if (b.memory) d_.cuMemFreeHost(b.memory);
    }
    if (stream_) d_.cuStreamDestroy(stream_);
    d_.cuDevicePrimaryCtxRelease(device_);
  }

  void* allocate(std::size_t bytes) override {
    current();
    unsigned long long p = 0;
    const auto r = d_.cuMemAlloc(&p, bytes);
    if (r == driver_api::out_of_memory) return nullptr;
    d_.check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void release(void* p, std::size_t) override {
    current();
    d_.cuMemFree(reinterpret_cast<unsigned long long>(p));
  }
  std::string name() const override { return "GPU:0 (" + properties_.name + ", " + properties_.arch() + ")"; }
  /// @brief The device memory no one holds now, in bytes.
  std::size_t free_memory() const {
    current();
    std::size_t free = 0, total = 0;
    d_.check(d_.cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return free;
  }

  /// Copies between the host and the device go through the pinned staging buffers
  /// (staging.hpp), on the device's stream.
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind) override {
    current();
    if (kind == copy_kind::device_to_device) {
      d_.check(d_.cuMemcpyDtoDAsync(address(dst), address(src), bytes, stream_), "cuMemcpyDtoDAsync");
      return finish("cuMemcpyDtoDAsync");
    }
    const std::lock_guard lock(staging_m_);
    staging s{*this};
    if (kind == copy_kind::host_to_device) staged_to_device(s, staging_buffers, staging_bytes, dst, src, bytes);
    else staged_to_host(s, staging_buffers, staging_bytes, dst, src, bytes);
  }
  void zero(void* p, std::size_t bytes) override {
    current();
    d_.check(d_.cuMemsetD8Async(address(p), 0, bytes, stream_), "cuMemsetD8Async");
    finish("cuMemsetD8Async");
  }
  int launch(const generated_kernel& k, const std::string& entry, const std::vector<unsigned char>& args, unsigned grid, unsigned block) override {
    current();
    const loaded& m = load(k);
    void* function = nullptr;
    d_.check(d_.cuModuleGetFunction(&function, m.module, entry.c_str()), "cuModuleGetFunction");
    int status = 0;
    d_.check(d_.cuMemsetD8Async(m.status, 0, sizeof status, stream_), "cuMemsetD8Async");
    void* params[] = {const_cast<unsigned char*>(args.data())};
    d_.check(d_.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel");
    d_.check(d_.cuMemcpyDtoHAsync(&status, m.status, sizeof status, stream_), "cuMemcpyDtoHAsync");
    finish("a generated kernel");
    return status;
  }
  unsigned multiprocessors() const override { return multiprocessors_; }

  // cuBLASLt with one algorithm per problem, chosen once by its heuristic (so results repeat),
  // and its workspace from the device's allocator.
  void matmul(const matmul_problem& p, const void* a, const void* b, void* d, const void* bias) override;

 private:
  struct loaded {
    void* module = nullptr;
    unsigned long long status = 0;  // the kernel's status word
  };
  // The context is the calling thread's: every call makes it current first.
  void current() const { d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }
  void current_unchecked() const noexcept { d_.cuCtxSetCurrent(context_); }
  static unsigned long long address(const void* p) { return reinterpret_cast<unsigned long long>(p); }
  // Waits for everything started on the stream; `what` names it where it failed.
  void finish(const char* what) const { d_.check(d_.cuStreamSynchronize(stream_), what); }

  // The pinned staging buffers of host copies, made on the first (each with the event of its
  // last copy), and what staged_to_device/staged_to_host ask of them.
  static constexpr std::size_t staging_buffers = 2, staging_bytes = std::size_t(4) << 20;
  struct staging_buffer {
    void* memory = nullptr;
    void* done = nullptr;  // an event recorded after its last copy
    bool busy = false;     // a copy of it was started and not waited for
  };
  struct staging {
    driver_runtime& rt;
    staging_buffer& at(std::size_t i) {
      auto& all = rt.staging_;
      while (all.size() <= i) {
        staging_buffer b;
        rt.d_.check(rt.d_.cuMemAllocHost(&b.memory, staging_bytes), "cuMemAllocHost");
        const auto r = rt.d_.cuEventCreate(&b.done, driver_api::event_disable_timing);
        if (r != 0) rt.d_.cuMemFreeHost(b.memory);
        rt.d_.check(r, "cuEventCreate");
        all.push_back(b);
      }
      return all[i];
    }
    void* buffer(std::size_t i) { return at(i).memory; }
    void started(staging_buffer& b, driver_api::result r, const char* what) {
      rt.d_.check(r, what);
      rt.d_.check(rt.d_.cuEventRecord(b.done, rt.stream_), "cuEventRecord");
      b.busy = true;
    }
    void to_device(std::size_t i, void* dst, std::size_t bytes) {
      staging_buffer& b = at(i);
      started(b, rt.d_.cuMemcpyHtoDAsync(address(dst), b.memory, bytes, rt.stream_), "cuMemcpyHtoDAsync");
    }
    void from_device(std::size_t i, const void* src, std::size_t bytes) {
      staging_buffer& b = at(i);
      started(b, rt.d_.cuMemcpyDtoHAsync(b.memory, address(src), bytes, rt.stream_), "cuMemcpyDtoHAsync");
    }
    void wait(std::size_t i) {
      staging_buffer& b = at(i);
      if (!b.busy) return;
      b.busy = false;
      rt.d_.check(rt.d_.cuEventSynchronize(b.done), "cuEventSynchronize");
    }
  };
  // A copy that fails part way leaves its buffers busy: the next copy waits for them before it
  // writes or reads them.
  const loaded& load(const generated_kernel& k) {
    const std::lock_guard lock(m_);
    if (auto it = modules_.find(k.name); it != modules_.end()) return it->second;
    const std::vector<char>& binary = kernel_cache::instance().binary(k.source, k.name + ".cu", properties_.arch());
    loaded m;
    d_.check(d_.cuModuleLoadData(&m.module, binary.data()), "cuModuleLoadData");
    std::size_t bytes = 0;
    d_.check(d_.cuModuleGetGlobal(&m.status, &bytes, m.module, (k.name + "_status").c_str()), "cuModuleGetGlobal");
    return modules_.emplace(k.name, m).first->second;
  }

  struct plan {
    std::unique_ptr<matmul_descriptors> descriptors;
    lt_algorithm algorithm{};
    std::size_t workspace = 0;
  };
  const plan& plan_for(const matmul_problem& p);

  const driver_api& d_;
  void* lt_handle_ = nullptr;
  std::map<matmul_problem, plan> plans_;
  device_properties properties_;
  int device_ = 0;
  void* context_ = nullptr;
  void* stream_ = nullptr;  // every copy, kernel and product runs on it, in order
  unsigned multiprocessors_ = 0;
  std::mutex m_, staging_m_;
  std::vector<staging_buffer> staging_;
  std::map<std::string, loaded> modules_;
};

/// @brief What tf.config sets before the device's first use: the GPUs it may run on (it runs
/// on the first), and per GPU a memory limit and whether memory grows.
struct gpu_settings {
  std::optional<std::vector<int>> visible;  // ordinals; none set: every GPU
  std::map<int, std::size_t> limit;         // bytes, by ordinal
  std::map<int, bool> growth;               // by ordinal; absent: memory grows
  /// The ordinal the device runs on: the first visible GPU.
  int ordinal() const {
    if (visible && visible->empty()) throw device_error("ctflow::cuda: no GPU is visible (ctflow::config::set_visible_devices was given none)");
    return visible ? visible->front() : 0;
  }
};

/// @brief The device's runtime and the allocator of its memory, made on first use.
class device_state {
 public:
  static device_state& instance() {
    static device_state s;
    return s;
  }
  /// @brief The runtime: the driver's unless one was installed; device_error (the reason kept)
  /// where the driver has no GPU to give.
  runtime& rt() {
    ready();
    return *runtime_;
  }
  caching_allocator& allocator() {
    ready();
    return *allocator_;
  }
  /// @brief Runs the device on r from now on (all device memory must have been released).
  void use(std::unique_ptr<runtime> r) {
    const std::lock_guard lock(m_);
    allocator_.reset();
    runtime_ = std::move(r);
    if (runtime_) allocator_ = std::make_unique<caching_allocator>(*runtime_);
    error_.clear();
  }
  /// @brief Changes the settings of the device's first use (`what` names the change for the
  /// error); device_error once the device is in use, as TensorFlow's RuntimeError.
  template <class F> void configure(const char* what, F&& change) {
    const std::lock_guard lock(m_);
    if (runtime_) throw device_error(std::string("ctflow::config::") + what + ": the GPU is in use already; set it before the first use of cuda");
    change(settings_);
    error_.clear();  // a reason of the last attempt may not hold now
  }
  gpu_settings settings() const {
    const std::lock_guard lock(m_);
    return settings_;
  }
  /// @brief Whether the device is in use (its runtime made).
  bool started() const {
    const std::lock_guard lock(m_);
    return runtime_ != nullptr;
  }

 private:
  void ready() {
    const std::lock_guard lock(m_);
    if (runtime_) return;
    if (!error_.empty()) throw device_error(error_);
    const int ordinal = settings_.ordinal();
    const auto limit = settings_.limit.find(ordinal);
    const auto growth = settings_.growth.find(ordinal);
    try {
      auto gpu = std::make_unique<driver_runtime>(ordinal);
      auto memory = std::make_unique<caching_allocator>(*gpu, limit == settings_.limit.end() ? caching_allocator::unlimited : limit->second);
      // Without memory growth: nearly all of it now (what is free, less 5% for the modules,
      // cuBLAS and the driver), or the limit.
      if (growth != settings_.growth.end() && !growth->second)
        memory->map_up_front(limit != settings_.limit.end() ? limit->second : gpu->free_memory() / 20 * 19);
      runtime_ = std::move(gpu);
      allocator_ = std::move(memory);
    } catch (const device_error& e) {
      error_ = e.what();
      throw;
    }
  }
  mutable std::mutex m_;
  gpu_settings settings_;
  std::unique_ptr<runtime> runtime_;
  std::unique_ptr<caching_allocator> allocator_;  // over runtime_: made after it, reset before it
  std::string error_;
};

inline const driver_runtime::plan& driver_runtime::plan_for(const matmul_problem& p) {
  if (auto it = plans_.find(p); it != plans_.end()) return it->second;
  const cublaslt_api& lt = cublaslt();
  if (!lt_handle_) lt.check(lt.cublasLtCreate(&lt_handle_), "cublasLtCreate");
  plan out;
  out.descriptors = std::make_unique<matmul_descriptors>(p);
  constexpr std::size_t most_workspace = std::size_t(32) << 20;
  void* preference = nullptr;
  lt.check(lt.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  lt_heuristic found{};
  int returned = 0;
  const auto r = lt.cublasLtMatmulPreferenceSetAttribute(preference, cublaslt_api::preference_max_workspace, &most_workspace, sizeof most_workspace);
  const auto h = r != 0 ? r
                        : lt.cublasLtMatmulAlgoGetHeuristic(lt_handle_, out.descriptors->op(), out.descriptors->a(), out.descriptors->b(),
                                                            out.descriptors->c(), out.descriptors->c(), preference, 1, &found, &returned);
  lt.cublasLtMatmulPreferenceDestroy(preference);
  lt.check(h, "cublasLtMatmulAlgoGetHeuristic");
  if (returned == 0) throw device_error("ctflow::cuda: cuBLASLt has no algorithm for a matmul of " + std::to_string(p.m) + " x " + std::to_string(p.k) + " by " + std::to_string(p.k) + " x " + std::to_string(p.n));
  out.algorithm = found.algo;
  out.workspace = found.workspace_bytes;
  return plans_.emplace(p, std::move(out)).first->second;
}

inline void driver_runtime::matmul(const matmul_problem& p, const void* a, const void* b, void* d, const void* bias) {
  current();
  const std::lock_guard lock(m_);
  const plan& pl = plan_for(p);
  if (bias) pl.descriptors->set_bias(bias);
  caching_allocator& memory = device_state::instance().allocator();
  void* workspace = memory.allocate(pl.workspace);
  const double alpha64 = 1, beta64 = 0;
  const float alpha32 = 1, beta32 = 0;
  const bool dbl = p.dtype == cublaslt_api::r_64f;
  const cublaslt_api& lt = cublaslt();
  // cuBLASLt's A is our B, its B our A (see cublaslt.hpp).
  const auto r = lt.cublasLtMatmul(lt_handle_, pl.descriptors->op(), dbl ? static_cast<const void*>(&alpha64) : &alpha32, b, pl.descriptors->a(), a,
                                   pl.descriptors->b(), dbl ? static_cast<const void*>(&beta64) : &beta32, d, pl.descriptors->c(), d,
                                   pl.descriptors->c(), &pl.algorithm, workspace, pl.workspace, stream_);
  const auto done = r == 0 ? d_.cuStreamSynchronize(stream_) : 0;
  memory.release(workspace);
  lt.check(r, "cublasLtMatmul");
  d_.check(done, "cublasLtMatmul");
}

/// @brief Runs the cuda device on r from now on (tests: an emulation); null: the driver's again.
inline void use_runtime(std::unique_ptr<runtime> r) { device_state::instance().use(std::move(r)); }

}  // namespace ctflow::backend::cuda
