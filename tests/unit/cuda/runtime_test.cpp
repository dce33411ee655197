// The cuda backend's run-time layer without a GPU: the driver and NVRTC loaded on first use (a
// missing one is a device_error that says which and why), NVRTC compiling for sm_90 and
// compute_90, and the kernel cache in memory and on disk (atomic files, damaged ones replaced).
#include <catch2/catch.hpp>

#include <ctflow/backend/cuda/driver.hpp>
#include <ctflow/backend/cuda/kernel_cache.hpp>
#include <ctflow/backend/cuda/nvrtc.hpp>
#include <ctflow/backend/cuda/staging.hpp>

#include <dirent.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "../test_files.hpp"

namespace cuda = ctflow::backend::cuda;

namespace {
const char* const saxpy = R"(extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
})";

std::string temp_dir() { return test_files::temp_dir("ctflow_kernel_cache"); }
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}
/// Whether NVRTC is here (the CUDA toolkit); where it is not, the test says so and stops.
bool have_nvrtc() {
  if (cuda::nvrtc_available()) return true;
  WARN("skipped: NVRTC is not installed here (" << [] {
    try {
      cuda::nvrtc();
    } catch (const ctflow::device_error& e) {
      return std::string(e.what());
    }
    return std::string();
  }() << ")");
  return false;
}
}  // namespace

TEST_CASE("cuda: a library that is not there is a device_error naming it and why") {
  CHECK_THROWS_AS(cuda::shared_library("a test library", {"libctflow_no_such_library.so.7"}, {"/nonexistent"}), ctflow::device_error);
  CHECK_THROWS_WITH(cuda::shared_library("a test library", {"libctflow_no_such_library.so.7"}),
                    Catch::Contains("ctflow::cuda: a test library is not available") && Catch::Contains("libctflow_no_such_library.so.7"));
  // A library that is there, and a function it lacks.
  const cuda::shared_library libc("the C library", {"libc.so.6"});
  CHECK(libc.function<int (*)(const char*)>("puts") != nullptr);
  CHECK_THROWS_WITH(libc.function<void (*)()>("ctflow_no_such_function"), Catch::Contains("has no ctflow_no_such_function"));
}

TEST_CASE("cuda: the driver loads on first use; without one, using it is a clear device_error") {
  const auto gpus = cuda::devices();
  if (!cuda::driver_available()) {
    CHECK(gpus.empty());
    CHECK_THROWS_AS(cuda::driver(), ctflow::device_error);
    CHECK_THROWS_WITH(cuda::driver(), Catch::StartsWith("ctflow::cuda: the CUDA driver"));
    return;
  }
  // A machine with a driver: each GPU it shows has a name, an architecture and memory.
  for (const auto& g : gpus) {
    CHECK(!g.name.empty());
    CHECK(g.major >= 3);
    CHECK(g.arch() == "sm_" + std::to_string(g.major * 10 + g.minor));
    CHECK(g.total_memory > 0);
  }
}

TEST_CASE("cuda: every entry point of the driver is found under the name the toolkit's cuda.h gives it (in its stub library)") {
  // The toolkit's stub of libcuda exports the driver's symbols and fails cuInit: loading it
  // finds every entry point, or names the one it lacks, before cuInit stops it.
  const std::string stubs = "/usr/local/cuda/lib64/stubs";
  if (::access((stubs + "/libcuda.so").c_str(), R_OK) != 0) {
    WARN("skipped: the CUDA toolkit's stub driver is not installed here (" << stubs << ")");
    return;
  }
  const cuda::shared_library stub("the CUDA driver's stub", {"libcuda.so"}, {stubs});
  cuda::driver_api api{};
  CHECK_THROWS_WITH(cuda::load_driver(stub, api), Catch::Contains("does not start (cuInit: error 34"));
  static_assert(sizeof(cuda::driver_api) % sizeof(void*) == 0);
  std::array<void*, sizeof(cuda::driver_api) / sizeof(void*)> entries{};
  std::memcpy(entries.data(), &api, sizeof api);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    INFO("entry point " << i << " of driver_api");
    CHECK(entries[i] != nullptr);
  }
}

namespace {
/// A device whose copies end late: each copy started is a step of one stream, run (in order)
/// only when a wait needs it, so a staged copy that wrote a buffer before its last copy left it,
/// or read one before its copy arrived, gives wrong bytes.
struct late_device {
  explicit late_device(std::size_t buffers, std::size_t chunk) : memory(buffers, std::vector<unsigned char>(chunk)), last(buffers) {}
  struct step {
    std::size_t buffer;
    unsigned char* to;  // null: into the buffer
    const unsigned char* from;
    std::size_t bytes;
  };
  std::vector<std::vector<unsigned char>> memory;
  std::vector<std::size_t> last;  // per buffer: how many steps had started after its last one
  std::deque<step> stream;
  std::size_t started = 0, ran = 0, most_in_flight = 0;

  void* buffer(std::size_t i) { return memory[i].data(); }
  void to_device(std::size_t i, void* dst, std::size_t n) { start({i, static_cast<unsigned char*>(dst), nullptr, n}); }
  void from_device(std::size_t i, const void* src, std::size_t n) { start({i, nullptr, static_cast<const unsigned char*>(src), n}); }
  void wait(std::size_t i) {
    while (ran < last[i]) {
      const step s = stream.front();
      stream.pop_front();
      ++ran;
      if (s.to) std::memcpy(s.to, memory[s.buffer].data(), s.bytes);
      else std::memcpy(memory[s.buffer].data(), s.from, s.bytes);
    }
  }
  void start(step s) {
    REQUIRE(s.bytes <= memory[s.buffer].size());
    stream.push_back(s);
    last[s.buffer] = ++started;
    most_in_flight = std::max(most_in_flight, stream.size());
  }
};
}  // namespace

TEST_CASE("cuda: copies to and from the host go through the staging buffers in turn, each chunk copied while the one before it moves") {
  constexpr std::size_t chunk = 64;
  for (const std::size_t buffers : {std::size_t(1), std::size_t(2), std::size_t(3)}) {
    for (const std::size_t bytes : {std::size_t(0), std::size_t(1), chunk - 1, chunk, chunk + 1, 2 * chunk, 5 * chunk + 3}) {
      INFO(bytes << " bytes through " << buffers << " buffers of " << chunk);
      std::vector<unsigned char> host(bytes), device(bytes, 0xee), back(bytes, 0xdd);
      std::iota(host.begin(), host.end(), static_cast<unsigned char>(bytes));
      const std::size_t parts = (bytes + chunk - 1) / chunk;
      late_device to(buffers, chunk);
      cuda::staged_to_device(to, buffers, chunk, device.data(), host.data(), bytes);
      CHECK(to.stream.empty());  // finished on return
      CHECK(to.started == parts);
      CHECK(device == host);
      // Each buffer's chunk is on its way while the host fills the next buffer.
      CHECK(to.most_in_flight == std::min(buffers, parts));
      late_device from(buffers, chunk);
      cuda::staged_to_host(from, buffers, chunk, back.data(), device.data(), bytes);
      CHECK(from.stream.empty());
      CHECK(from.started == parts);
      CHECK(back == host);
      CHECK(from.most_in_flight == std::min(buffers, parts));
    }
  }
}

TEST_CASE("cuda: NVRTC compiles a kernel to a cubin for sm_90 and to PTX for compute_90, with ptxas's report") {
  if (!have_nvrtc()) return;
  const auto cubin = cuda::compile(saxpy, "saxpy.cu", "sm_90", {"--ptxas-options=-v"});
  REQUIRE(cubin.binary.size() > 4);
  CHECK(std::string(cubin.binary.data(), 4) == "\x7f" "ELF");
  CHECK_THAT(cubin.log, Catch::Contains("saxpy") && Catch::Contains("0 bytes spill stores"));
  const auto ptx = cuda::compile(saxpy, "saxpy.cu", "compute_90");
  const std::string text(ptx.binary.data());
  CHECK_THAT(text, Catch::Contains(".target sm_90") && Catch::Contains(".entry saxpy"));
  CHECK(cuda::nvrtc().major >= 12);
}

TEST_CASE("cuda: a source that does not compile is a device_error with NVRTC's log") {
  if (!have_nvrtc()) return;
  CHECK_THROWS_AS(cuda::compile("extern \"C\" __global__ void k() { undeclared_name = 1; }", "broken.cu", "sm_90"), ctflow::device_error);
  CHECK_THROWS_WITH(cuda::compile("extern \"C\" __global__ void k() { undeclared_name = 1; }", "broken.cu", "sm_90"),
                    Catch::Contains("broken.cu does not compile for sm_90") && Catch::Contains("undeclared_name"));
  CHECK_THROWS_AS(cuda::compile(saxpy, "saxpy.cu", "hopper"), ctflow::value_error);
}

TEST_CASE("cuda: the kernel cache compiles once per source, architecture and options, in memory and on disk") {
  if (!have_nvrtc()) return;
  const std::string dir = temp_dir();
  cuda::kernel_cache cache(dir);
  const auto& first = cache.binary(saxpy, "saxpy.cu", "sm_90");
  CHECK(cache.stats().compiled == 1);
  CHECK(&cache.binary(saxpy, "saxpy.cu", "sm_90") == &first);  // the process's entry
  CHECK(cache.stats().memory == 1);
  cache.binary(saxpy, "saxpy.cu", "compute_90");  // another architecture, another entry
  cache.binary(saxpy, "saxpy.cu", "sm_90", {"-lineinfo"});  // other options too
  CHECK(cache.stats().compiled == 3);
  // Each entry is one file, written whole (no temporary file left), named by its key.
  const std::string file = cache.file_of(saxpy, "sm_90");
  CHECK(file.rfind(dir + "/", 0) == 0);
  CHECK_THAT(file, Catch::EndsWith("-sm_90-nvrtc" + cuda::nvrtc().version() + ".ctk"));
  CHECK(files_in(dir).size() == 3);

  // Another process (a new cache on the same directory) reads it, bitwise the same.
  const std::vector<char> expected = first;
  cuda::kernel_cache again(dir);
  CHECK(again.binary(saxpy, "saxpy.cu", "sm_90") == expected);
  CHECK(again.stats().disk == 1);
  CHECK(again.stats().compiled == 0);

  // A damaged file (cut short, or a byte flipped in its binary) and a foreign one are compiled
  // again and replaced.
  auto damage = [&](auto&& edit) {
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    edit(bytes);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    cuda::kernel_cache fresh(dir);
    CHECK(fresh.binary(saxpy, "saxpy.cu", "sm_90") == expected);
    CHECK(fresh.stats().compiled == 1);
    cuda::kernel_cache after(dir);  // the file was replaced by a good one
    CHECK(after.binary(saxpy, "saxpy.cu", "sm_90") == expected);
    CHECK(after.stats().disk == 1);
  };
  damage([](std::string& b) { b.resize(b.size() / 2); });
  damage([](std::string& b) { b[b.size() - 100] ^= 0x40; });
  damage([](std::string& b) { b = "not a kernel"; });
  damage([](std::string& b) { b.clear(); });
  // Another key's good file in its place (the PTX for compute_90): its key differs, so not taken.
  damage([&](std::string& b) {
    std::ifstream other(cache.file_of(saxpy, "compute_90"), std::ios::binary);
    b.assign((std::istreambuf_iterator<char>(other)), std::istreambuf_iterator<char>());
    REQUIRE(b.size() > 100);
  });
  CHECK(files_in(dir).size() == 3);

  // A directory it cannot write to: the kernel is compiled all the same, and kept in memory.
  cuda::kernel_cache unwritable("/proc/ctflow_no_such_dir");
  CHECK(unwritable.binary(saxpy, "saxpy.cu", "sm_90") == expected);
  CHECK(unwritable.stats().unwritten == 1);
  for (const auto& f : files_in(dir)) std::remove((dir + "/" + f).c_str());
  ::rmdir(dir.c_str());
}
