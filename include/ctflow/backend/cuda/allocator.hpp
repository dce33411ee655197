#pragma once
/// @file
/// @brief Device memory from a caching allocator, as TensorFlow's BFC allocator and PyTorch's
/// caching allocator give it: segments taken from the device once and cut into blocks, freed
/// blocks kept and reused in the order of their stream, adjacent free blocks merged, so that a
/// warm training step asks the device for nothing. Statistics as
/// `tf.config.experimental.get_memory_info` gives them (current and peak bytes in use), a limit
/// (`tf.config.set_logical_device_configuration(memory_limit=...)`), and, without memory growth,
/// all its memory taken at once and every block cut from it (TensorFlow's default).
///
/// The device's memory comes from a memory_source (the driver's on a GPU; a fake one in the
/// tests): the allocator only keeps its bookkeeping on the host and never touches that memory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <ctflow/core/errors.hpp>

namespace ctflow::backend::cuda {

/// @brief Where device memory comes from.
struct memory_source {
  virtual ~memory_source() = default;
  /// @brief `bytes` of device memory, or null when the device has no more.
  virtual void* allocate(std::size_t bytes) = 0;
  /// @brief Gives back memory of allocate() (with its size).
  virtual void release(void* p, std::size_t bytes) = 0;
  /// @brief The device's name, for errors ("GPU:0").
  virtual std::string name() const = 0;
};

/// @brief What the allocator holds, in bytes.
struct memory_info {
  std::size_t current = 0;   // in blocks handed out (rounded as handed out)
  std::size_t peak = 0;      // the largest `current` since the start or reset_peak()
  std::size_t reserved = 0;  // in segments taken from the device (in use or cached)
  std::size_t segments = 0;  // segments taken from the device and not given back
  std::size_t device_allocations = 0;  // segments ever taken: constant once a step is warm
};

class caching_allocator {
 public:
  /// @brief A stream (a CUstream; null: the default stream). Blocks freed on a stream are
  /// reused by requests on that stream, whose order makes them safe to reuse at once.
  using stream = const void*;
  static constexpr std::size_t granule = 512;               // every block's size is a multiple
  static constexpr std::size_t small_request = 1 << 20;     // requests up to 1 MiB share segments
  static constexpr std::size_t small_segment = 2 << 20;     // of 2 MiB;
  static constexpr std::size_t large_granule = 2 << 20;     // larger ones get segments in 2 MiB steps
  static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

  explicit caching_allocator(memory_source& source, std::size_t limit = unlimited) : source_(source), limit_(limit) {}
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;
  ~caching_allocator() {
    for (auto& [p, b] : blocks_)
      if (!b->prev) source_.release(p, b->segment_size);
  }

  /// @brief `bytes` of device memory (null for 0) for work on stream `s`: a cached block where one
  /// fits, else a new segment; where the device (or the limit) has no room, every wholly free
  /// segment goes back first. device_error when there is still none, with what is held. Memory
  /// mapped up front serves every request, and nothing more is asked of the device.
  void* allocate(std::size_t bytes, stream s = nullptr) {
    if (bytes == 0) return nullptr;
    const std::lock_guard lock(m_);
    const std::size_t size = round_up(bytes, granule);
    if (up_front_) s = nullptr;
    const bool small = !up_front_ && size <= small_request;
    block* b = take_free(size, s, small);
    if (!b && up_front_) throw out_of_memory(bytes);
    if (!b) b = new_segment(size, s, small, bytes);
    split(b, size, small);
    b->used = true;
    info_.current += b->size;
    info_.peak = std::max(info_.peak, info_.current);
    return b->ptr;
  }

  /// @brief Gives back a block of allocate() (null: nothing); value_error for any other pointer.
  void release(void* p) {
    if (!p) return;
    const std::lock_guard lock(m_);
    auto it = blocks_.find(p);
    if (it == blocks_.end() || !it->second->used)
      throw value_error("ctflow::cuda: memory released that " + source_.name() + "'s allocator did not hand out (or released twice)");
    block* b = it->second.get();
    b->used = false;
    info_.current -= b->size;
    b = merge(b);
    free_.insert(b);
  }

  /// @brief Gives every wholly free segment back to the device (tf.config's memory growth
  /// shrinking; the next step takes what it needs again); memory mapped up front stays.
  void empty_cache() {
    const std::lock_guard lock(m_);
    if (!up_front_) release_free_segments();
  }

  /// @brief Takes `bytes` from the device now, as one segment every later block is cut from
  /// (memory growth off, as TensorFlow's default): before any other allocation.
  void map_up_front(std::size_t bytes) {
    const std::lock_guard lock(m_);
    if (!blocks_.empty()) throw device_error("ctflow::cuda: " + source_.name() + "'s memory can be mapped up front only before its first use");
    block* b = new_segment(round_up(bytes, granule), nullptr, false, bytes);
    free_.insert(b);
    up_front_ = true;
  }
  /// @brief Whether memory was mapped up front.
  bool mapped_up_front() const {
    const std::lock_guard lock(m_);
    return up_front_;
  }

  memory_info info() const {
    const std::lock_guard lock(m_);
    return info_;
  }
  void reset_peak() {
    const std::lock_guard lock(m_);
    info_.peak = info_.current;
  }
  /// @brief The most bytes of segments it may hold (unlimited by default).
  void set_limit(std::size_t bytes) {
    const std::lock_guard lock(m_);
    limit_ = bytes;
  }
  std::size_t limit() const {
    const std::lock_guard lock(m_);
    return limit_;
  }

 private:
  struct block {
    void* ptr;
    std::size_t size;
    std::size_t segment_size;  // of the segment it starts (where prev is null)
    stream s;
    bool small, used = false;
    block *prev = nullptr, *next = nullptr;  // neighbours in its segment
    char* at() const { return static_cast<char*>(ptr); }
  };
  // Free blocks by pool, stream, size, then address: the best fit first.
  struct order {
    bool operator()(const block* a, const block* b) const {
      return std::tuple(a->small, a->s, a->size, reinterpret_cast<std::uintptr_t>(a->ptr)) <
             std::tuple(b->small, b->s, b->size, reinterpret_cast<std::uintptr_t>(b->ptr));
    }
  };

  static std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

  block* take_free(std::size_t size, stream s, bool small) {
    block probe{nullptr, size, 0, s, small};
    auto it = free_.lower_bound(&probe);
    if (it == free_.end() || (*it)->small != small || (*it)->s != s) return nullptr;
    block* b = *it;
    free_.erase(it);
    return b;
  }

  block* new_segment(std::size_t size, stream s, bool small, std::size_t asked) {
    const std::size_t bytes = small ? small_segment : round_up(size, large_granule);
    void* p = nullptr;
    for (int attempt = 0; attempt < 2 && !p; ++attempt) {
      if (attempt) release_free_segments();  // room made from the cache, then once more
      if (limit_ - std::min(limit_, info_.reserved) >= bytes) p = source_.allocate(bytes);
    }
    if (!p) throw out_of_memory(asked);
    auto owned = std::make_unique<block>(block{p, bytes, bytes, s, small});
    block* b = owned.get();
    blocks_.emplace(p, std::move(owned));
    info_.reserved += bytes;
    ++info_.segments;
    ++info_.device_allocations;
    return b;
  }

  device_error out_of_memory(std::size_t asked) const {
    return device_error("ctflow::cuda: out of memory on " + source_.name() + ": " + std::to_string(asked) + " bytes asked; " +
                        std::to_string(info_.current) + " in use, " + std::to_string(info_.reserved) + " reserved" +
                        (up_front_ ? " (mapped up front: memory growth is off)" : "") +
                        (limit_ == unlimited ? std::string() : ", limit " + std::to_string(limit_)));
  }

  // Cuts b to size where the rest is worth keeping (a granule in the small pool, more than a
  // small request in the large one: large blocks are not cut into small change).
  void split(block* b, std::size_t size, bool small) {
    const std::size_t rest = b->size - size;
    if (rest < granule || (!small && rest <= small_request)) return;
    auto owned = std::make_unique<block>(block{b->at() + size, rest, 0, b->s, small});
    block* r = owned.get();
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    blocks_.emplace(r->ptr, std::move(owned));
    free_.insert(r);
  }

  // Joins b (not in the free set) with its free neighbours; returns the joined block.
  block* merge(block* b) {
    if (block* n = b->next; n && !n->used) absorb(b, n);
    if (block* p = b->prev; p && !p->used) {
      free_.erase(p);
      absorb(p, b);
      b = p;
    }
    return b;
  }
  // Block `right`, after `left` (not in the free set) in their segment, becomes part of left.
  void absorb(block* left, block* right) {
    free_.erase(right);
    left->size += right->size;
    left->next = right->next;
    if (right->next) right->next->prev = left;
    blocks_.erase(right->ptr);
  }

  void release_free_segments() {
    for (auto it = free_.begin(); it != free_.end();) {
      block* b = *it;
      if (b->prev || b->next) {  // part of a segment in use
        ++it;
        continue;
      }
      it = free_.erase(it);
      info_.reserved -= b->segment_size;
      --info_.segments;
      source_.release(b->ptr, b->segment_size);
      blocks_.erase(b->ptr);
    }
  }

  memory_source& source_;
  std::size_t limit_;
  mutable std::mutex m_;
  std::unordered_map<void*, std::unique_ptr<block>> blocks_;  // every block, by address
  std::set<block*, order> free_;
  memory_info info_;
  bool up_front_ = false;
};

}  // namespace ctflow::backend::cuda
