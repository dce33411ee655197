#pragma once
/// @brief tf.data for C++: a Dataset is a lazily composed pipeline whose element type (a tensor,
/// a string, or a tuple of them) is known to the compiler. Iterating it (range-for) pulls
/// elements through the stages; nothing runs before.
///
///     auto ds = data::from_tensor_slices(x_train, y_train)
///                   .map([](auto x, auto y) { return std::tuple{cast<float>(x) / 255.0f, y}; })
///                   .shuffle(60000, 42)
///                   .batch<64>()          // static batch extent (drops the remainder)
///                   .prefetch(data::AUTOTUNE);
///     for (auto& [images, labels] : ds) { ... }   // Tensor<float, Shape<64, 28, 28>>, ...
///
/// A stage is a small value type with `element_type`, `cardinality()` and `iterator()`; the
/// iterator's `bool next(element_type& out)` writes the next element into `out` (whose memory
/// it may reuse) or returns false at the end. Datasets are immutable descriptions and cheap to
/// copy; iterators own the state of one pass. Results are deterministic: parallel map keeps the
/// input order, and shuffling is seeded.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <variant>
#include <vector>

#include <ctflow/ops/random.hpp>
#include <ctflow/data/element.hpp>

namespace ctflow::data {

template <class Src> class Dataset;

namespace detail {

inline std::int64_t add_cardinality(std::int64_t a, std::int64_t b) {
  if (a == infinite_cardinality || b == infinite_cardinality) return infinite_cardinality;
  if (a == unknown_cardinality || b == unknown_cardinality) return unknown_cardinality;
  return a + b;
}

inline int autotune_threads(int n) {
  if (n != AUTOTUNE) {
    if (n < 1) throw value_error("ctflow::data: num_parallel_calls must be positive or AUTOTUNE, got " + std::to_string(n));
    return n;
  }
  return std::max(1, int(std::thread::hardware_concurrency()));
}

// ---- sources ---------------------------------------------------------------------------------

/// Rows of one tensor, or tuples of rows of several: the tensors are shared, never copied.
template <class X> struct row;
template <class V, extent_t E0, extent_t... X, class D> struct row<Tensor<V, Shape<E0, X...>, D>> {
  using type = Tensor<V, Shape<X...>, D>;
};

template <class... T> struct slices {
  static constexpr bool single = sizeof...(T) == 1;
  using element_type = std::conditional_t<single, typename row<std::tuple_element_t<0, std::tuple<T...>>>::type,
                                          std::tuple<typename row<T>::type...>>;

  std::shared_ptr<const std::tuple<T...>> tensors;

  std::int64_t cardinality() const { return std::int64_t(std::get<0>(*tensors).dims()[0]); }

  template <class Tn> static void copy_row(const Tn& t, std::size_t i, typename row<Tn>::type& out) {
    dims_t<std::size_t(Tn::rank - 1)> d;
    std::copy(t.dims().begin() + 1, t.dims().end(), d.begin());
    if (out.dims() != d || out.size() != product(d)) out = typename row<Tn>::type(d);  // new, or moved from
    const std::size_t n = out.size();
    if (n) std::memcpy(out.data(), t.data() + i * n, n * sizeof(typename Tn::value_type));
  }

  /// Element i (random access: shuffle keeps indices of such a source, not copies).
  void read(std::size_t i, element_type& out) const {
    if constexpr (single) copy_row(std::get<0>(*tensors), i, out);
    else
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (copy_row(std::get<I>(*tensors), i, std::get<I>(out)), ...);
      }(std::index_sequence_for<T...>{});
  }

  struct iterator {
    slices source;
    std::size_t i = 0;
    bool next(element_type& out) {
      if (i == std::size_t(source.cardinality())) return false;
      source.read(i++, out);
      return true;
    }
  };
  iterator iter() const { return {*this}; }
};

template <class Make> struct generator {
  using next_fn = decltype(std::declval<Make&>()());
  using element_type = materialized_t<typename decltype(std::declval<next_fn&>()())::value_type>;
  Make make;
  std::int64_t cardinality() const { return unknown_cardinality; }
  struct iterator {
    next_fn fn;
    bool next(element_type& out) {
      auto v = fn();
      if (!v) return false;
      out = materialize(std::move(*v));
      return true;
    }
  };
  iterator iter() const { return {Make(make)()}; }
};

struct range_source {
  using element_type = Tensor<std::int64_t, Shape<>>;
  std::int64_t start, stop, step;
  std::int64_t cardinality() const {
    if (step > 0) return stop > start ? (stop - start + step - 1) / step : 0;
    return start > stop ? (start - stop - step - 1) / -step : 0;
  }
  struct iterator {
    std::int64_t at, stop, step;
    bool next(element_type& out) {
      if (step > 0 ? at >= stop : at <= stop) return false;
      if (out.size() != 1) out = element_type();  // moved from by a map
      out.data()[0] = at;
      at += step;
      return true;
    }
  };
  iterator iter() const { return {start, stop, step}; }
};

// ---- transformations ---------------------------------------------------------------------------

template <class Up, class F> struct map_stage {
  using up_element = typename Up::element_type;
  using element_type = materialized_t<decltype(call_with(std::declval<F&>(), std::declval<up_element>()))>;
  Up up;
  F f;
  int threads;
  std::int64_t cardinality() const { return up.cardinality(); }

  struct sequential {
    typename Up::iterator it;
    F f;
    up_element in{};
    bool next(element_type& out) {
      if (!it.next(in)) return false;
      out = materialize(call_with(f, in));
      return true;
    }
  };

  /// Workers take input elements in order under one lock, apply f outside it, and leave each
  /// result in the ring slot of its sequence number; the consumer takes the slots in order. At
  /// most `ring.size()` elements are in flight; an exception stays in its slot and surfaces at its
  /// place in the order.
  struct parallel {
    struct slot {
      std::optional<element_type> value;
      std::exception_ptr error;
      bool ready = false, end = false;
    };
    struct state {
      state(typename Up::iterator i, const F& fn, int threads) : it(std::move(i)), f(fn), ring(std::size_t(2 * threads)) {}
      typename Up::iterator it;
      F f;
      std::vector<slot> ring;
      std::mutex m;
      std::condition_variable space, done;
      std::uint64_t next_in = 0, next_out = 0;
      bool up_done = false, stop = false;
      std::vector<std::thread> workers;

      void work() {
        up_element in{};
        for (;;) {
          std::uint64_t seq;
          {
            std::unique_lock lk(m);
            space.wait(lk, [&] { return stop || (!up_done && next_in < next_out + ring.size()); });
            if (stop || up_done) return;
            seq = next_in++;
            slot& s = ring[seq % ring.size()];
            bool got = false;
            try { got = it.next(in); } catch (...) { s.error = std::current_exception(); }
            if (!got) {
              up_done = true;
              s.end = true;
              s.ready = true;
              done.notify_all();
              space.notify_all();
              return;
            }
          }
          std::optional<element_type> r;
          std::exception_ptr e;
          try { r.emplace(materialize(call_with(f, in))); } catch (...) { e = std::current_exception(); }
          std::lock_guard lk(m);
          slot& s = ring[seq % ring.size()];
          s.value = std::move(r);
          s.error = e;
          s.ready = true;
          done.notify_all();
        }
      }
      ~state() {
        {
          std::lock_guard lk(m);
          stop = true;
        }
        space.notify_all();
        for (auto& w : workers) w.join();
      }
    };
    std::unique_ptr<state> s;
    bool failed = false;

    parallel(typename Up::iterator it, const F& f, int threads) : s(std::make_unique<state>(std::move(it), f, threads)) {
      for (int t = 0; t < threads; ++t) s->workers.emplace_back([st = s.get()] { st->work(); });
    }
    bool next(element_type& out) {
      if (failed) return false;
      std::unique_lock lk(s->m);
      slot& sl = s->ring[s->next_out % s->ring.size()];
      s->done.wait(lk, [&] { return sl.ready; });
      if (sl.error) {
        failed = true;  // the pass ends at the error
        s->up_done = true;
        s->space.notify_all();
        std::rethrow_exception(sl.error);
      }
      if (sl.end) return false;
      out = std::move(*sl.value);
      sl.value.reset();
      sl.ready = false;
      ++s->next_out;
      s->space.notify_one();
      return true;
    }
  };

  struct iterator {
    std::variant<sequential, parallel> v;
    bool next(element_type& out) { return std::visit([&](auto& i) { return i.next(out); }, v); }
  };
  iterator iter() const {
    if (threads == 1) return {sequential{up.iter(), f}};
    return {parallel(up.iter(), f, threads)};
  }
};

template <class Up, class P> struct filter_stage {
  using element_type = typename Up::element_type;
  Up up;
  P pred;
  std::int64_t cardinality() const {
    const auto n = up.cardinality();
    return n == infinite_cardinality ? n : unknown_cardinality;
  }
  struct iterator {
    typename Up::iterator it;
    P pred;
    bool next(element_type& out) {
      while (it.next(out))
        if (truth(call_with(pred, out))) return true;
      return false;
    }
  };
  iterator iter() const { return {up.iter(), pred}; }
};

/// TensorFlow's shuffle buffer: fill `buffer_size` elements, then repeatedly emit a uniformly
/// chosen one and put the next input element in its place; at the end drain the buffer the same
/// way. Each pass draws from its own Philox stream: the seed and, when reshuffling, the pass's
/// number (so a pipeline built twice with one seed yields the same sequence of epochs).
/// Over a source that reads any element by its index (from_tensor_slices), the buffer holds
/// the elements' indices instead of copies: the same sequence, in a fraction of the memory.
template <class Up> struct shuffle_stage {
  using element_type = typename Up::element_type;
  Up up;
  std::size_t buffer_size;
  std::uint64_t seed;
  bool reshuffle;
  std::shared_ptr<std::atomic<std::uint64_t>> passes = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::int64_t cardinality() const { return up.cardinality(); }

  /// The input in order, one buffer slot at a time: an element, or the index of one.
  struct elements {
    typename Up::iterator it;
    bool next(element_type& slot) { return it.next(slot); }
    static void emit(element_type& slot, element_type& out) { std::swap(out, slot); }
  };
  struct indices {
    Up source;
    std::size_t i = 0;
    bool next(std::size_t& slot) {
      if (i == std::size_t(source.cardinality())) return false;
      slot = i++;
      return true;
    }
    void emit(std::size_t slot, element_type& out) const { source.read(slot, out); }
  };
  static constexpr bool by_index = requires(const Up& u, element_type& e) { u.read(std::size_t(0), e); };
  using input = std::conditional_t<by_index, indices, elements>;
  using slot = std::conditional_t<by_index, std::size_t, element_type>;

  struct iterator {
    input it;
    std::uint64_t stream;
    std::size_t capacity;
    std::vector<slot> buffer{};
    std::uint64_t draws = 0;
    bool filled = false, up_done = false;

    std::size_t draw(std::size_t n) {
      const auto w = random::philox(stream, draws++);
      const std::uint64_t r = (std::uint64_t(w[0]) << 32) | w[1];
      return std::size_t(r % n);  // n <= buffer size: the bias is below 2^-40
    }
    bool next(element_type& out) {
      if (!filled) {
        buffer.reserve(capacity);
        while (buffer.size() < capacity) {
          buffer.emplace_back();
          if (!it.next(buffer.back())) { buffer.pop_back(); up_done = true; break; }
        }
        filled = true;
      }
      if (buffer.empty()) return false;
      const std::size_t k = draw(buffer.size());
      it.emit(buffer[k], out);
      if (up_done || !it.next(buffer[k])) {
        up_done = true;
        std::swap(buffer[k], buffer.back());
        buffer.pop_back();
      }
      return true;
    }
  };
  iterator iter() const {
    const std::uint64_t pass = reshuffle ? passes->fetch_add(1) : 0;
    const std::uint64_t stream = seed ^ (0x9E3779B97F4A7C15ull * (pass + 1));
    if constexpr (by_index) return {{up}, stream, buffer_size};
    else return {{up.iter()}, stream, buffer_size};
  }
};

template <class Up, std::size_t N> struct batch_stage {
  using up_element = typename Up::element_type;
  using element_type = batched_t<up_element, N>;
  Up up;
  std::size_t size;
  bool drop_remainder;
  bool padded = false;
  double padding_value = 0;

  std::int64_t cardinality() const {
    const auto n = up.cardinality();
    if (n < 0) return n;
    return drop_remainder ? n / std::int64_t(size) : (n + std::int64_t(size) - 1) / std::int64_t(size);
  }

  struct iterator {
    typename Up::iterator it;
    std::size_t size;
    bool drop_remainder, padded;
    double padding_value;
    std::vector<up_element> items{};

    bool next(element_type& out) {
      if (items.size() < size) items.resize(size);
      std::size_t got = 0;
      while (got < size && it.next(items[got])) ++got;
      if (got == 0 || (got < size && drop_remainder)) return false;
      assemble(out, got);
      return true;
    }

    void assemble(element_type& out, std::size_t got) {
      fill(out, got, [&](std::size_t i) -> const up_element& { return items[i]; });
    }

    /// Fills one component of the batch; part(i) is that component of element i.
    template <class... B, class Part> void fill(std::tuple<B...>& dst, std::size_t got, const Part& part) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (fill(std::get<I>(dst), got, [&](std::size_t i) -> const auto& { return std::get<I>(part(i)); }), ...);
      }(std::index_sequence_for<B...>{});
    }

    template <class Part> void fill(std::vector<std::string>& dst, std::size_t got, const Part& part) {
      dst.resize(got);
      for (std::size_t i = 0; i < got; ++i) dst[i] = part(i);
    }

    template <class T, extent_t... X, class Part> void fill(Tensor<T, Shape<X...>>& dst, std::size_t got, const Part& part) {
      constexpr std::size_t R = sizeof...(X) - 1;
      const auto& first = part(0);
      dims_t<R> inner = first.dims();
      for (std::size_t i = 1; i < got; ++i) {
        const auto& d = part(i).dims();
        for (std::size_t k = 0; k < R; ++k) {
          if (d[k] == inner[k]) continue;
          if (!padded)
            throw shape_error("ctflow::data::batch: element " + std::to_string(i) + " of a batch has shape " + format_dims(d) +
                              ", element 0 has " + format_dims(first.dims()) + "; use padded_batch for elements of varying shape");
          inner[k] = std::max(inner[k], d[k]);
        }
      }
      dims_t<R + 1> bd;
      bd[0] = got;
      std::copy(inner.begin(), inner.end(), bd.begin() + 1);
      if (dst.dims() != bd || dst.size() != product(bd)) dst = Tensor<T, Shape<X...>>(bd);
      const std::size_t row = product(inner);
      if (padded) std::fill(dst.data(), dst.data() + dst.size(), T(padding_value));
      for (std::size_t i = 0; i < got; ++i) {
        const auto& t = part(i);
        if (row == 0) continue;
        if (t.dims() == inner) std::memcpy(dst.data() + i * row, t.data(), row * sizeof(T));
        else copy_padded(t.data(), t.dims(), dst.data() + i * row, inner);
      }
    }
  };
  iterator iter() const { return {up.iter(), size, drop_remainder, padded, padding_value}; }
};

template <class Up> struct repeat_stage {
  using element_type = typename Up::element_type;
  Up up;
  std::int64_t count;
  std::int64_t cardinality() const {
    const auto n = up.cardinality();
    if (count == 0 || n == 0) return 0;
    if (count < 0) return n == unknown_cardinality ? n : infinite_cardinality;
    return n < 0 ? n : n * count;
  }
  struct iterator {
    Up up;
    std::int64_t count;
    std::optional<typename Up::iterator> it{};
    std::int64_t pass = 0;
    bool next(element_type& out) {
      for (bool fresh = false;; fresh = true) {
        if (count >= 0 && pass >= count) return false;
        if (!it) { it.emplace(up.iter()); fresh = true; }
        if (it->next(out)) return true;
        it.reset();
        ++pass;
        if (fresh) return false;  // an empty pass: repeating it would never yield
      }
    }
  };
  iterator iter() const { return {up, count}; }
};

/// A bounded queue filled by a background thread. Destroying the iterator (the loop ended,
/// early or not) stops the thread and joins it; an exception of the producer surfaces in order.
template <class Up> struct prefetch_stage {
  using element_type = typename Up::element_type;
  Up up;
  std::size_t depth;
  std::int64_t cardinality() const { return up.cardinality(); }

  struct state {
    state(typename Up::iterator i, std::size_t depth) : it(std::move(i)), ring(depth) {}
    typename Up::iterator it;
    std::vector<element_type> ring;
    std::mutex m;
    std::condition_variable space, ready;
    std::size_t head = 0, count = 0;
    bool end = false, stop = false;
    std::exception_ptr error;
    std::thread producer;

    void produce() {
      element_type e{};
      for (;;) {
        bool got = false;
        std::exception_ptr err;
        try { got = it.next(e); } catch (...) { err = std::current_exception(); }
        std::unique_lock lk(m);
        if (!got) {
          end = true;
          error = err;
          ready.notify_one();
          return;
        }
        space.wait(lk, [&] { return stop || count < ring.size(); });
        if (stop) return;
        std::swap(ring[(head + count) % ring.size()], e);
        ++count;
        ready.notify_one();
      }
    }
    ~state() {
      {
        std::lock_guard lk(m);
        stop = true;
      }
      space.notify_one();
      producer.join();
    }
  };
  struct iterator {
    std::unique_ptr<state> s;
    bool next(element_type& out) {
      std::unique_lock lk(s->m);
      s->ready.wait(lk, [&] { return s->count > 0 || s->end; });
      if (s->count == 0) {
        if (s->error) std::rethrow_exception(std::exchange(s->error, nullptr));
        return false;
      }
      std::swap(out, s->ring[s->head]);
      s->head = (s->head + 1) % s->ring.size();
      --s->count;
      s->space.notify_one();
      return true;
    }
  };
  iterator iter() const {
    auto s = std::make_unique<state>(up.iter(), depth);
    s->producer = std::thread([st = s.get()] { st->produce(); });
    return {std::move(s)};
  }
};

template <class Up> struct take_stage {
  using element_type = typename Up::element_type;
  Up up;
  std::int64_t count;
  std::int64_t cardinality() const {
    const auto n = up.cardinality();
    if (count < 0) return n;
    if (n == infinite_cardinality) return count;
    return n == unknown_cardinality ? n : std::min(n, count);
  }
  struct iterator {
    typename Up::iterator it;
    std::int64_t left;
    bool next(element_type& out) {
      if (left == 0) return false;
      if (!it.next(out)) { left = 0; return false; }
      if (left > 0) --left;
      return true;
    }
  };
  iterator iter() const { return {up.iter(), count}; }
};

template <class Up> struct skip_stage {
  using element_type = typename Up::element_type;
  Up up;
  std::int64_t count;
  std::int64_t cardinality() const {
    const auto n = up.cardinality();
    if (n < 0) return count < 0 && n == infinite_cardinality ? 0 : n;
    return count < 0 ? 0 : std::max<std::int64_t>(0, n - count);
  }
  struct iterator {
    typename Up::iterator it;
    std::int64_t left;
    bool next(element_type& out) {
      for (; left != 0; left -= left > 0)
        if (!it.next(out)) { left = 0; return false; }
      return it.next(out);
    }
  };
  iterator iter() const { return {up.iter(), count}; }
};

template <class... Up> struct zip_stage {
  using element_type = std::tuple<typename Up::element_type...>;
  std::tuple<Up...> ups;
  std::int64_t cardinality() const {
    std::int64_t r = infinite_cardinality;
    std::apply([&](const auto&... u) {
      (([&](std::int64_t n) {
         if (n == unknown_cardinality || r == unknown_cardinality) r = unknown_cardinality;
         else if (n != infinite_cardinality) r = r == infinite_cardinality ? n : std::min(r, n);
       })(u.cardinality()), ...);
    }, ups);
    return r;
  }
  struct iterator {
    std::tuple<typename Up::iterator...> its;
    bool next(element_type& out) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (std::get<I>(its).next(std::get<I>(out)) && ...);
      }(std::index_sequence_for<Up...>{});
    }
  };
  iterator iter() const {
    return std::apply([](const auto&... u) { return iterator{{u.iter()...}}; }, ups);
  }
};

template <class A, class B> struct concatenate_stage {
  using element_type = typename A::element_type;
  A a;
  B b;
  std::int64_t cardinality() const { return add_cardinality(a.cardinality(), b.cardinality()); }
  struct iterator {
    typename A::iterator ia;
    B b;
    std::optional<typename B::iterator> ib{};
    bool next(element_type& out) {
      if (!ib) {
        if (ia.next(out)) return true;
        ib.emplace(b.iter());
      }
      return ib->next(out);
    }
  };
  iterator iter() const { return {a.iter(), b}; }
};

/// The first complete pass fills the cache; later passes replay it. A pass that stops early
/// leaves the cache empty (TensorFlow discards a partial cache the same way).
template <class Up> struct cache_stage {
  using element_type = typename Up::element_type;
  struct store {
    std::mutex m;
    std::shared_ptr<const std::vector<element_type>> items;
  };
  Up up;
  std::shared_ptr<store> cache = std::make_shared<store>();
  std::int64_t cardinality() const { return up.cardinality(); }

  struct iterator {
    std::shared_ptr<const std::vector<element_type>> replay;
    std::optional<typename Up::iterator> it;
    std::shared_ptr<store> cache;
    std::vector<element_type> filling{};
    std::size_t i = 0;
    bool next(element_type& out) {
      if (replay) {
        if (i == replay->size()) return false;
        out = (*replay)[i++];
        return true;
      }
      if (!it->next(out)) {
        std::lock_guard lk(cache->m);
        if (!cache->items) cache->items = std::make_shared<const std::vector<element_type>>(std::move(filling));
        return false;
      }
      filling.push_back(out);
      return true;
    }
  };
  iterator iter() const {
    std::shared_ptr<const std::vector<element_type>> items;
    {
      std::lock_guard lk(cache->m);
      items = cache->items;
    }
    if (items) return {items, std::nullopt, cache};
    return {nullptr, up.iter(), cache};
  }
};

}  // namespace detail

/// @brief A pipeline of stages ending in Src. Range-for iterates one pass; every transformation
/// returns a new Dataset (the original is unchanged).
template <class Src> class Dataset {
 public:
  using element_type = typename Src::element_type;
  using source_type = Src;

  explicit Dataset(Src s) : src_(std::move(s)) {}
  /// @brief The last stage of the pipeline (what zip and concatenate combine).
  const Src& source() const { return src_; }

  /// @brief The number of elements, or infinite_cardinality / unknown_cardinality.
  std::int64_t cardinality() const { return src_.cardinality(); }

  /// @brief Applies f to each element (a tuple's components are f's arguments). f may return
  /// expressions: they are evaluated. With num_parallel_calls > 1 (or AUTOTUNE) f runs on that
  /// many threads; the output order is the input order whatever the timing.
  template <class F> auto map(F f, int num_parallel_calls = 1) const {
    return make(detail::map_stage<Src, F>{src_, std::move(f), detail::autotune_threads(num_parallel_calls)});
  }
  /// @brief Keeps the elements for which pred returns true (a bool or a rank-0 bool tensor).
  template <class P> auto filter(P pred) const { return make(detail::filter_stage<Src, P>{src_, std::move(pred)}); }

  /// @brief TensorFlow's buffered shuffle. Without a seed, one is drawn from std::random_device.
  auto shuffle(std::size_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt, bool reshuffle_each_iteration = true) const {
    if (buffer_size == 0) throw value_error("ctflow::data::shuffle: buffer_size must be positive");
    const std::uint64_t s = seed ? *seed : (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    return make(detail::shuffle_stage<Src>{src_, buffer_size, s, reshuffle_each_iteration});
  }

  /// @brief Batches of n elements stacked along a new first axis of extent `dyn` (TensorFlow's
  /// None); the last batch is smaller unless drop_remainder.
  auto batch(std::size_t n, bool drop_remainder = false) const {
    return make(detail::batch_stage<Src, dyn>{src_, checked_batch(n), drop_remainder});
  }
  /// @brief Batches of exactly N elements with the static extent N: batch(N, drop_remainder=True).
  template <std::size_t N> auto batch() const {
    static_assert(N > 0 && N != dyn, "ctflow::data::batch: the batch size must be positive");
    return make(detail::batch_stage<Src, N>{src_, N, true});
  }
  /// @brief Batches whose elements may differ in their `dyn` extents: each is padded with
  /// padding_value to the largest extent in its batch.
  auto padded_batch(std::size_t n, double padding_value = 0, bool drop_remainder = false) const {
    return make(detail::batch_stage<Src, dyn>{src_, checked_batch(n), drop_remainder, true, padding_value});
  }

  /// @brief Repeats the dataset count times; a negative count (the default) repeats forever.
  auto repeat(std::int64_t count = -1) const { return make(detail::repeat_stage<Src>{src_, count}); }
  /// @brief Produces up to `buffer_size` elements ahead on a background thread (AUTOTUNE: 2).
  auto prefetch(int buffer_size) const {
    if (buffer_size == AUTOTUNE) buffer_size = 2;
    if (buffer_size < 1) throw value_error("ctflow::data::prefetch: buffer_size must be positive or AUTOTUNE");
    return make(detail::prefetch_stage<Src>{src_, std::size_t(buffer_size)});
  }
  /// @brief The first count elements (all of them when count is negative).
  auto take(std::int64_t count) const { return make(detail::take_stage<Src>{src_, count}); }
  /// @brief All but the first count elements (none when count is negative).
  auto skip(std::int64_t count) const { return make(detail::skip_stage<Src>{src_, count}); }
  /// @brief This dataset's elements, then other's (the element types must be equal).
  template <class Other> auto concatenate(const Dataset<Other>& other) const {
    static_assert(std::is_same_v<element_type, typename Other::element_type>,
                  "ctflow::data::concatenate: the datasets' element types differ");
    return make(detail::concatenate_stage<Src, Other>{src_, other.source()});
  }
  /// @brief Keeps the elements of the first complete pass in memory and replays them.
  auto cache() const { return make(detail::cache_stage<Src>{src_}); }

  /// @brief One pass: `for (auto& e : ds)` (also `auto it = ds.begin(); ... it != ds.end()`).
  class iterator {
   public:
    using value_type = element_type;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(typename Src::iterator it) : s_(std::make_shared<state>(std::move(it))) { ++*this; }
    element_type& operator*() const { return s_->current; }
    element_type* operator->() const { return &s_->current; }
    iterator& operator++() {
      if (!s_->it.next(s_->current)) s_.reset();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& i, std::default_sentinel_t) { return !i.s_; }

   private:
    struct state {
      explicit state(typename Src::iterator i) : it(std::move(i)) {}
      typename Src::iterator it;
      element_type current{};
    };
    std::shared_ptr<state> s_;
  };
  /// @brief Starts a pass (`for (auto& e : ds)`); end() is its sentinel.
  iterator begin() const { return iterator(src_.iter()); }
  std::default_sentinel_t end() const { return {}; }

 private:
  template <class S> static Dataset<S> make(S s) { return Dataset<S>(std::move(s)); }
  static std::size_t checked_batch(std::size_t n) {
    if (n == 0) throw value_error("ctflow::data::batch: batch_size must be positive");
    return n;
  }
  Src src_;
};

/// @brief The rows of one or more tensors: element i is row i of each (a tuple for several).
/// Their first extents must agree: checked by the compiler where static, shape_error otherwise.
template <class... T, class... S> auto from_tensor_slices(Tensor<T, S>... t) {
  static_assert(sizeof...(T) > 0, "ctflow::data::from_tensor_slices: give at least one tensor");
  static_assert(((S::rank > 0) && ...), "ctflow::data::from_tensor_slices: tensors must have rank at least 1");
  constexpr std::array<std::size_t, sizeof...(T)> firsts{S::extents[0]...};
  constexpr bool agree = [&] {
    for (auto a : firsts)
      for (auto b : firsts)
        if (a != dyn && b != dyn && a != b) return false;
    return true;
  }();
  using First = std::tuple_element_t<0, std::tuple<S...>>;
  CTFLOW_STATIC_CHECK(agree, ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::data::from_tensor_slices: first extents differ: "),
                                                    shape_string_v<First>, ctflow::detail::fixed_string(" x "),
                                                    shape_string_v<std::tuple_element_t<sizeof...(T) - 1, std::tuple<S...>>>));
  const auto& first = std::get<0>(std::forward_as_tuple(t...));
  ((t.dims()[0] != first.dims()[0] ? throw_shape_error("ctflow::data::from_tensor_slices", "first extents differ", first.dims(), t.dims())
                                   : void()), ...);
  return Dataset(detail::slices<Tensor<T, S>...>{std::make_shared<const std::tuple<Tensor<T, S>...>>(std::move(t)...)});
}

/// @brief Elements from a generator: `make()` is called at the start of each pass and returns a
/// callable giving `std::optional<element>` (std::nullopt ends the pass), like TensorFlow's
/// generator function.
template <class Make> auto from_generator(Make make) { return Dataset(detail::generator<Make>{std::move(make)}); }

/// @brief tf.data.Dataset.range: int64 scalars start, start+step, ... up to stop (excluded).
inline auto range(std::int64_t start, std::int64_t stop, std::int64_t step = 1) {
  if (step == 0) throw value_error("ctflow::data::range: step must not be zero");
  return Dataset(detail::range_source{start, stop, step});
}
inline auto range(std::int64_t stop) { return range(0, stop); }

/// @brief Tuples of the datasets' elements, as long as the shortest.
template <class... S> auto zip(const Dataset<S>&... ds) { return Dataset(detail::zip_stage<S...>{{ds.source()...}}); }

}  // namespace ctflow::data
