// The cuda backend's caching allocator against a fake device: reuse, splitting and merging,
// streams, the limit, out-of-memory as a clear error, and no device allocation in a warm step.
#include <catch2/catch.hpp>

#include <ctflow/backend/cuda/allocator.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuda = ctflow::backend::cuda;

namespace {
/// Device memory of `capacity` bytes at made-up addresses (never dereferenced), counting calls.
struct fake_device : cuda::memory_source {
  std::size_t capacity, held = 0, allocations = 0, releases = 0;
  std::uintptr_t next = 0x10000000;
  std::map<void*, std::size_t> live;
  explicit fake_device(std::size_t c) : capacity(c) {}
  void* allocate(std::size_t bytes) override {
    if (held + bytes > capacity) return nullptr;
    held += bytes;
    ++allocations;
    void* p = reinterpret_cast<void*>(next);
    next += bytes + 4096;  // segments apart, as the driver's are
    live[p] = bytes;
    return p;
  }
  void release(void* p, std::size_t bytes) override {
    REQUIRE(live.count(p) == 1);
    REQUIRE(live[p] == bytes);
    live.erase(p);
    held -= bytes;
    ++releases;
  }
  std::string name() const override { return "GPU:0 (fake)"; }
};
constexpr std::size_t MiB = 1 << 20;
char* at(void* p) { return static_cast<char*>(p); }
}  // namespace

TEST_CASE("cuda allocator: a freed block is handed out again; small requests share a segment") {
  fake_device device(64 * MiB);
  cuda::caching_allocator a(device);
  CHECK(a.allocate(0) == nullptr);
  void* p = a.allocate(1000);
  CHECK(a.info().current == 1024);  // rounded to 512 bytes
  a.release(p);
  CHECK(a.info().current == 0);
  CHECK(a.allocate(900) == p);  // the same block, no new segment
  CHECK(device.allocations == 1);
  std::vector<void*> many;
  for (int i = 0; i < 100; ++i) many.push_back(a.allocate(10000));
  CHECK(device.allocations == 1);  // 100 x 10 KB in the first 2 MiB segment
  CHECK(a.info().reserved == 2 * MiB);
  for (std::size_t i = 1; i < many.size(); ++i) CHECK(at(many[i]) >= at(many[i - 1]) + 10240);
  for (void* q : many) a.release(q);
  a.release(p);
  CHECK(a.info().current == 0);
  CHECK(a.info().peak == 1024 + 100 * 10240);
  a.reset_peak();
  CHECK(a.info().peak == 0);
  CHECK_THROWS_AS(a.release(p), ctflow::value_error);  // twice
  int local = 0;
  CHECK_THROWS_WITH(a.release(&local), Catch::Contains("did not hand out"));
}

TEST_CASE("cuda allocator: blocks split and merge, large requests get segments of their own") {
  fake_device device(256 * MiB);
  cuda::caching_allocator a(device);
  void* x = a.allocate(3 * MiB);
  void* y = a.allocate(3 * MiB);
  void* z = a.allocate(3 * MiB);
  CHECK(device.allocations == 3);  // 4 MiB segments (2 MiB steps); the 1 MiB rests are not cut off
  CHECK(a.info().reserved == 12 * MiB);
  a.release(y);
  CHECK(a.allocate(2 * MiB + 512) == y);  // y's segment, best fit
  a.release(y);
  // One large segment cut in three: freed in any order, it is whole again.
  void* big = a.allocate(40 * MiB);
  a.release(big);
  void* p = a.allocate(10 * MiB);
  void* q = a.allocate(10 * MiB);
  void* r = a.allocate(10 * MiB);
  CHECK(p == big);
  CHECK(at(q) == at(p) + 10 * MiB);
  CHECK(at(r) == at(q) + 10 * MiB);
  const std::size_t segments = device.allocations;
  a.release(q);
  a.release(p);
  a.release(r);
  CHECK(a.allocate(40 * MiB) == big);  // merged back into the whole segment
  CHECK(device.allocations == segments);
  // A request larger than every free block takes a new segment (fragmentation is bounded by it).
  a.release(big);
  a.release(x);
  a.release(z);
  void* huge = a.allocate(60 * MiB);
  CHECK(device.allocations == segments + 1);
  a.release(huge);
  // Emptying the cache gives every segment back.
  a.empty_cache();
  CHECK(a.info().reserved == 0);
  CHECK(a.info().segments == 0);
  CHECK(device.held == 0);
  CHECK(device.live.empty());
}

TEST_CASE("cuda allocator: a block freed on one stream is not handed to another") {
  fake_device device(64 * MiB);
  cuda::caching_allocator a(device);
  int s1 = 0, s2 = 0;
  void* p = a.allocate(4096, &s1);
  a.release(p);
  void* q = a.allocate(4096, &s2);
  CHECK(q != p);
  CHECK(device.allocations == 2);
  CHECK(a.allocate(4096, &s1) == p);
}

TEST_CASE("cuda allocator: the limit and the device's end are clear errors, after the cache is emptied") {
  fake_device device(64 * MiB);
  cuda::caching_allocator a(device, 8 * MiB);
  void* p = a.allocate(6 * MiB);
  CHECK_THROWS_AS(a.allocate(4 * MiB), ctflow::device_error);
  CHECK_THROWS_WITH(a.allocate(4 * MiB), Catch::Contains("out of memory on GPU:0 (fake): 4194304 bytes asked") && Catch::Contains("limit 8388608"));
  CHECK(a.info().current == 6 * MiB);  // nothing lost
  // A cached segment goes back to make room for a request that fits the limit.
  a.release(p);
  void* q = a.allocate(8 * MiB);
  CHECK(device.releases == 1);
  a.release(q);
  a.set_limit(cuda::caching_allocator::unlimited);
  // The device's own end: what the cache holds is given back first, then the error.
  std::vector<void*> blocks;
  for (int i = 0; i < 7; ++i) blocks.push_back(a.allocate(8 * MiB));
  CHECK(a.info().reserved == 56 * MiB);
  a.release(blocks.back());
  blocks.pop_back();
  void* wide = a.allocate(16 * MiB);  // 8 MiB free on the device + the cached 8 MiB given back
  CHECK(a.info().reserved == 64 * MiB);
  CHECK_THROWS_WITH(a.allocate(1), Catch::Contains("out of memory") && Catch::Contains("67108864 reserved"));
  a.release(wide);
  for (void* b : blocks) a.release(b);
  CHECK(a.allocate(1) != nullptr);  // the wholly free large segments give way to a small one
}

TEST_CASE("cuda allocator: a repeated step asks the device for nothing once warm") {
  fake_device device(512 * MiB);
  cuda::caching_allocator a(device);
  const std::vector<std::size_t> step = {64 * 28 * 28 * 4, 3 * 3 * 32 * 4, 64 * 26 * 26 * 32 * 4, 64 * 13 * 13 * 32 * 4, 128 * 4, 64 * 10 * 4};
  auto run = [&] {
    std::vector<void*> held;
    for (std::size_t bytes : step) held.push_back(a.allocate(bytes));
    for (std::size_t i = held.size(); i-- > 0;) a.release(held[i]);
  };
  run();
  const std::size_t warm = device.allocations;
  for (int i = 0; i < 10; ++i) run();
  CHECK(device.allocations == warm);
  CHECK(a.info().device_allocations == warm);
  CHECK(a.info().current == 0);
}

TEST_CASE("cuda allocator: without memory growth, one segment taken at once serves every request and is never given back") {
  fake_device device(64 * MiB);
  cuda::caching_allocator a(device, 40 * MiB);
  a.map_up_front(32 * MiB);
  CHECK(a.mapped_up_front());
  CHECK(device.allocations == 1);
  CHECK(a.info().reserved == 32 * MiB);
  // Small and large requests, on any stream, are cut from it; freed blocks merge back.
  void* small = a.allocate(1000);
  void* large = a.allocate(5 * MiB, reinterpret_cast<cuda::caching_allocator::stream>(0x1));
  void* other = a.allocate(20 * MiB);
  CHECK(device.allocations == 1);
  CHECK(at(large) >= at(small) + 1024);
  a.release(large);
  void* again = a.allocate(4 * MiB);
  CHECK(device.allocations == 1);
  // What does not fit is out of memory at once (the device is not asked), saying why.
  CHECK_THROWS_WITH(a.allocate(16 * MiB), Catch::Contains("out of memory") && Catch::Contains("memory growth is off"));
  CHECK(device.allocations == 1);
  a.release(small);
  a.release(again);
  a.release(other);
  a.empty_cache();  // the mapped segment stays
  CHECK(device.releases == 0);
  CHECK(a.info().reserved == 32 * MiB);
  CHECK(a.allocate(30 * MiB) != nullptr);
  // Mapping up front comes before any other use.
  cuda::caching_allocator b(device);
  b.release(b.allocate(1000));
  CHECK_THROWS_WITH(b.map_up_front(MiB), Catch::Contains("before its first use"));
}
