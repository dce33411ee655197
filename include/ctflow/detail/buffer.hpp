#pragma once
// Owning, 64-byte aligned storage for tensors and the temporaries of evaluation.
//
// Freed blocks are kept in a cache of size classes and handed to the next request of the same
// class, so a training step or an inference call that repeats makes no system allocation once
// warm (a first touch of a fresh page costs 10-14 us on these machines). A request whose class
// has no cached block takes one up to two classes larger (at most 1.5x its size), so a smaller
// batch (an epoch's last) reuses the full batches' blocks instead of adding its own. The cache
// holds at most `cache_limit` bytes; larger blocks and the overflow go back to the system.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/detail/platform.hpp>

namespace ctflow::detail {

inline constexpr std::size_t alignment = 64;

class block_cache {
 public:
  static constexpr std::size_t huge = std::size_t(2) << 20;
  static constexpr std::size_t max_cached_block = std::size_t(256) << 20;

  static block_cache& instance() {
    static block_cache c;
    return c;
  }

  /// A block of at least `bytes`; `cap` receives its capacity (a class size), which `release`
  /// takes back.
  CTFLOW_OUTLINE void* allocate(std::size_t bytes, std::size_t& cap) {
    cap = 0;
    if (bytes == 0) return nullptr;
    const int c = size_class(bytes);
    cap = class_bytes(c);
    if (cap <= max_cached_block) {
      std::lock_guard lk(m_);
      for (int k = c; k <= c + 2 && k < classes; ++k)
        if (node* n = free_[k]) {
          free_[k] = n->next;
          cap = class_bytes(k);
          cached_ -= cap;
          return n;
        }
    }
    return system_allocate(cap, bytes);
  }

  /// Gives back a block of `allocate`, with the capacity it reported.
  CTFLOW_OUTLINE void release(void* p, std::size_t cap) {
    if (!p) return;
    const int c = size_class(cap);
    if (cap <= max_cached_block) {
      std::lock_guard lk(m_);
      if (cached_ + cap <= limit_) {
        free_[c] = ::new (p) node{free_[c]};
        cached_ += cap;
        return;
      }
    }
    std::free(p);
  }

  void set_limit(std::size_t bytes) {
    std::lock_guard lk(m_);
    limit_ = bytes;
    if (cached_ > bytes) trim_locked();
  }
  std::size_t limit() const {
    std::lock_guard lk(m_);
    return limit_;
  }
  /// How many blocks were taken from the system so far (tests check warm steps add none).
  std::size_t system_allocations() const { return system_allocations_.load(std::memory_order_relaxed); }

 private:
  struct node { node* next; };

  void trim_locked() {
    for (auto& head : free_)
      while (head) { node* n = head; head = n->next; std::free(n); }
    cached_ = 0;
  }

  // Four classes per power of two (at most 25% slack); classes start at 64 bytes.
  static int size_class(std::size_t bytes) {
    if (bytes <= 64) return 0;
    const int e = int(std::bit_width(bytes - 1)) - 1;  // 2^e < bytes <= 2^(e+1)
    const std::size_t quarter = std::size_t(1) << (e - 2);
    const std::size_t step = (bytes - (std::size_t(1) << e) + quarter - 1) / quarter;  // 1..4
    return (e - 6) * 4 + int(step);
  }
  static std::size_t class_bytes(int c) {
    if (c == 0) return 64;
    const int e = (c - 1) / 4 + 6;
    const std::size_t step = std::size_t((c - 1) % 4 + 1);
    return (std::size_t(1) << e) + step * (std::size_t(1) << (e - 2));
  }

  // Large blocks ask for transparent huge pages (40x cheaper first touches per byte) over the
  // whole huge pages of the bytes asked for: a huge page the request only begins would be resident
  // whole (on average a megabyte more per block), so the rest keeps small pages.
  void* system_allocate(std::size_t bytes, std::size_t asked) {
    const std::size_t align = bytes >= huge ? huge : alignment;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* p = ::aligned_alloc(align, rounded);
    if (!p) ctflow::detail::raise_bad_alloc();
    if (align == huge) advise_huge_pages(p, asked / huge * huge);
    system_allocations_.fetch_add(1, std::memory_order_relaxed);
    return p;
  }

  static constexpr int classes = 256;
  mutable detail::mutex m_;
  node* free_[classes] = {};
  std::size_t cached_ = 0;
  std::size_t limit_ = std::size_t(1) << 30;
  std::atomic<std::size_t> system_allocations_{0};
};

/// Memory straight from the system, for devices that keep no cache (the reference device).
struct system_blocks {
  static void* allocate(std::size_t bytes, std::size_t& cap) {
    cap = (bytes + alignment - 1) / alignment * alignment;
    if (bytes == 0) return nullptr;
    void* p = ::aligned_alloc(alignment, cap);
    if (!p) ctflow::detail::raise_bad_alloc();
    return p;
  }
  static void release(void* p, std::size_t) { std::free(p); }
};

/// n elements of T, 64-byte aligned, from the block cache (Cached) or from the system.
template <class T, bool Cached = true> class buffer {
 public:
  buffer() = default;
  explicit buffer(std::size_t n, bool zero = true) : n_(n) {
    p_ = static_cast<T*>(blocks().allocate(n * sizeof(T), cap_));
    if (zero && n) std::memset(static_cast<void*>(p_), 0, n * sizeof(T));
  }
  buffer(const buffer& o) : buffer(o.n_, false) {
    if (n_) std::memcpy(static_cast<void*>(p_), o.p_, n_ * sizeof(T));
  }
  buffer(buffer&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr; o.n_ = 0; o.cap_ = 0; }
  buffer& operator=(buffer o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  ~buffer() { blocks().release(p_, cap_); }

  T* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  static auto& blocks() {
    if constexpr (Cached) return block_cache::instance();
    else { static system_blocks s; return s; }
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
  std::size_t cap_ = 0;  // the block's bytes, as its allocator reported them
};

/// n elements of T in the memory of device D, which the host does not read: D gives it
/// (`D::allocate(bytes)`, `D::release(p)`), zeroes it (`D::zero`) and copies it
/// (`D::copy_on_device`). The GPU's tensors keep their elements so.
template <class T, class D> class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t n, bool zero = true) : n_(n) {
    if (!n) return;
    p_ = static_cast<T*>(D::allocate(n * sizeof(T)));
    if (zero) D::zero(p_, n * sizeof(T));
  }
  device_buffer(const device_buffer& o) : device_buffer(o.n_, false) {
    if (n_) D::copy_on_device(p_, o.p_, n_ * sizeof(T));
  }
  device_buffer(device_buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  device_buffer& operator=(device_buffer o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~device_buffer() {
    if (p_) D::release(p_);
  }

  T* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace ctflow::detail
