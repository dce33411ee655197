#pragma once
/// @file
/// @brief The cuda device's executor: an expression assigned to device memory runs as generated
/// kernels (codegen.hpp) on the device's runtime (runtime.hpp). The element-wise part of the
/// expression is one kernel; a reduction is one kernel with its operand fused in; a view over a
/// tensor reads the tensor's memory through the view's strides; a view over anything else, and a
/// reduction inside an element-wise expression, are evaluated first into device temporaries,
/// given back when the assignment is done.
///
/// A matmul runs through cuBLASLt (runtime.hpp): batched with strides where each operand's batch
/// is the product's or one matrix, else one product per batch element; a relu and a bias over its
/// columns above it (a Dense layer's forward pass) are its epilogue. The shape ops that build
/// new tensors (concat, gather, one_hot, pad, tile) and the adjoints of views, pad, tile and gather
/// run as kernels of their own (array_kernels.hpp), their operands read where they are. The other
/// boundary ops (convolutions, ...) do not run on the GPU yet: assigning one is a compile error
/// naming it.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ctflow/autodiff/rules/elementwise.hpp>
#include <ctflow/backend/cuda/array_kernels.hpp>
#include <ctflow/backend/cuda/codegen.hpp>
#include <ctflow/backend/cuda/line_kernels.hpp>
#include <ctflow/backend/cuda/runtime.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/observe.hpp>
#include <ctflow/detail/profile.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/expr/node.hpp>
#include <ctflow/expr/strided.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::backend::cuda {

/// Whether op K is a matmul, and its transposes; whether node N is one.
template <class K> struct matmul_of : std::false_type {};
template <class T, class SA, class SB, bool TA, bool TB> struct matmul_of<ops::matmul_op<T, SA, SB, TA, TB>> : std::true_type {
  static constexpr bool transpose_a = TA, transpose_b = TB;
};
template <class N> struct is_matmul : std::false_type {};
template <class K, class A, class B> struct is_matmul<expr::Computed<K, A, B>> : std::bool_constant<matmul_of<K>::value> {};

/// The first node of N that the device cannot run (void: none).
template <class N> struct unsupported {
  using type = void;
};
template <class F, class E> struct unsupported<expr::Unary<F, E>> : unsupported<std::remove_cvref_t<E>> {};
template <class F, class L, class R> struct unsupported<expr::Binary<F, L, R>> {
  using l = typename unsupported<std::remove_cvref_t<L>>::type;
  using type = std::conditional_t<std::is_void_v<l>, typename unsupported<std::remove_cvref_t<R>>::type, l>;
};
template <class C, class A, class B> struct unsupported<expr::Select<C, A, B>> {
  using c = typename unsupported<std::remove_cvref_t<C>>::type;
  using a = typename unsupported<std::remove_cvref_t<A>>::type;
  using type = std::conditional_t<!std::is_void_v<c>, c, std::conditional_t<!std::is_void_v<a>, a, typename unsupported<std::remove_cvref_t<B>>::type>>;
};
template <class E, class S, class M> struct unsupported<expr::Strided<E, S, M>> : unsupported<std::remove_cvref_t<E>> {};
template <class K, class... Ops> struct unsupported<expr::Computed<K, Ops...>> {
  using type = K;
};
template <class K, class E> requires detail::generated_reduction<expr::Computed<K, E>>::value
struct unsupported<expr::Computed<K, E>> : unsupported<std::remove_cvref_t<E>> {};
template <class K, class A, class B> requires matmul_of<K>::value
struct unsupported<expr::Computed<K, A, B>> {
  using a = typename unsupported<std::remove_cvref_t<A>>::type;
  using type = std::conditional_t<std::is_void_v<a>, typename unsupported<std::remove_cvref_t<B>>::type, a>;
};
/// The first of a list of types that is not void (void: none).
template <class... U> struct first_of {
  using type = void;
};
template <class U, class... Rest> struct first_of<U, Rest...> {
  using type = std::conditional_t<std::is_void_v<U>, typename first_of<Rest...>::type, U>;
};
template <class K, class... Ops> requires array_kernel<K>::defined
struct unsupported<expr::Computed<K, Ops...>> : first_of<typename unsupported<std::remove_cvref_t<Ops>>::type...> {};

template <class T, std::size_t R, class E> void evaluate(T* out, const dims_t<R>& d, const E& e);
template <class T, std::size_t R, class E> void evaluate_generated(T* out, const dims_t<R>& d, const E& e);
template <class T, std::size_t R, class N, class U = void> void run_array(T* out, const dims_t<R>& d, const N& n, U* saved = nullptr);


/// Device memory an evaluation needs for a while: its inputs' values.
class temporaries {
 public:
  template <class T> T* make(std::size_t n) {
    held_.emplace_back(n * sizeof(T), false);
    return reinterpret_cast<T*>(held_.back().data());
  }

 private:
  std::vector<ctflow::detail::device_buffer<unsigned char, ctflow::cuda>> held_;
};

/// The value of input node n in device memory, as a view: a tensor's own memory; a view's
/// mapping of its operand's (evaluated first where the operand is not a tensor, or where the
/// mapping needs it contiguous); a reduction's result.
template <class N> auto device_view(const N& n, temporaries& keep) {
  using T = value_t<N>;
  constexpr std::size_t R = std::size_t(rank_v<N>);
  if constexpr (is_leaf_v<N>) {
    return expr::strided_view<T, R>{n.data(), n.dims(), n.strides()};
  } else if constexpr (expr::is_strided<N>::value) {
    using E = std::remove_cvref_t<decltype(n.e)>;
    constexpr std::size_t RE = std::size_t(rank_v<E>);
    auto evaluated = [&] {
      const auto d = n.e.dims();
      value_t<E>* p = keep.make<value_t<E>>(product(d));
      evaluate(p, d, n.e);
      return expr::strided_view<value_t<E>, RE>{p, d, row_major_strides(d)};
    };
    expr::strided_view<T, R> v;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(n.m)>, autodiff::detail::gate_map<R>>) {
      if (!n.m.on) {  // a closed gate of a gradient reads zeros: one zero in device memory, stride 0
        T* zero = keep.make<T>(1);
        device_state::instance().rt().zero(zero, sizeof(T));
        return expr::strided_view<T, R>{zero, n.m.out_dims, {}};
      }
    }
    if constexpr (is_leaf_v<E>) {
      if (n.m.map(device_view(n.e, keep), v)) return v;
    }
    n.m.map(evaluated(), v);
    return v;
  } else {
    const auto d = n.dims();
    T* p = keep.make<T>(product(d));
    evaluate(p, d, n);
    return expr::strided_view<T, R>{p, d, row_major_strides(d)};
  }
}

/// The value of node n in dense row-major device memory: its own where it is so, else a copy.
template <class N> auto dense_view(const N& n, temporaries& keep) {
  using T = value_t<N>;
  auto v = device_view(n, keep);
  if (v.contiguous()) return v;
  // Copied from where device_view found it, through its strides: n is not evaluated again.
  const auto d = n.dims();
  T* p = keep.make<T>(product(d));
  evaluate(p, d, TensorView<const T, shape_t<N>, ctflow::cuda>(v.data, v.dims, v.strides));
  return decltype(v){p, d, row_major_strides(d)};
}

/// The offset, in matrices, of the matrix of an operand with batch extents `own` that the
/// product's batch element i (of batch extents `all`) reads (its axes aligned right, those of
/// extent 1 broadcast).
template <std::size_t RO, std::size_t RA>
std::size_t batch_offset(std::size_t i, const std::array<std::size_t, RO>& all, const std::array<std::size_t, RA>& own) {
  std::size_t offset = 0, scale = 1;
  for (std::size_t k = RO; k-- > 0;) {
    const std::size_t index = i % all[k];
    i /= all[k];
    if (k + RA >= RO) {
      const std::size_t extent = own[k + RA - RO];
      if (extent != 1) offset += index * scale;
      scale *= extent;
    }
  }
  return offset;
}

/// A matmul with what cuBLASLt's epilogue applies to it before it is stored: N is relu(m),
/// m + bias, bias + m or relu of either (m a matmul of floats, bias any node of rank 1 or more,
/// a vector over the product's columns where it runs fused: see fused_bias). `product(n)` is m,
/// `bias(n)` the bias node (null where there is none).
template <class N> struct with_epilogue {
  static constexpr epilogue ep = epilogue::none;
};
template <class N> constexpr bool float_matmul = is_matmul<std::remove_cvref_t<N>>::value && std::is_same_v<value_t<std::remove_cvref_t<N>>, float>;
template <class M, class B> requires(float_matmul<M> && !float_matmul<B> && rank_v<std::remove_cvref_t<B>> >= 1)
struct with_epilogue<expr::Binary<ops::add_fn, M, B>> {
  static constexpr epilogue ep = epilogue::bias;
  template <class N> static const auto& product(const N& n) { return n.l; }
  template <class N> static const auto* bias(const N& n) { return &n.r; }
};
template <class B, class M> requires(float_matmul<M> && !float_matmul<B> && rank_v<std::remove_cvref_t<B>> >= 1)
struct with_epilogue<expr::Binary<ops::add_fn, B, M>> {
  static constexpr epilogue ep = epilogue::bias;
  template <class N> static const auto& product(const N& n) { return n.r; }
  template <class N> static const auto* bias(const N& n) { return &n.l; }
};
template <class M> requires float_matmul<M>
struct with_epilogue<expr::Unary<ops::relu_fn, M>> {
  static constexpr epilogue ep = epilogue::relu;
  template <class N> static const auto& product(const N& n) { return n.e; }
  template <class N> static const std::nullptr_t* bias(const N&) { return nullptr; }
};
template <class E> requires(with_epilogue<std::remove_cvref_t<E>>::ep == epilogue::bias)
struct with_epilogue<expr::Unary<ops::relu_fn, E>> {
  using inner = with_epilogue<std::remove_cvref_t<E>>;
  static constexpr epilogue ep = epilogue::relu_bias;
  template <class N> static const auto& product(const N& n) { return inner::product(n.e); }
  template <class N> static const auto* bias(const N& n) { return inner::bias(n.e); }
};

/// Whether the epilogue of node n (of extents d) can run in the product's kernel: the product
/// has the node's extents and sums over something (an empty sum is zeros, which cuBLASLt is not
/// asked for), and its bias, where it has one, is a vector over the product's columns (every
/// other axis of extent 1).
template <class N, std::size_t R> bool fused_epilogue(const N& n, const dims_t<R>& d) {
  using W = with_epilogue<N>;
  const auto& m = W::product(n);
  using K = typename std::remove_cvref_t<decltype(m)>::op_type;
  const auto md = m.dims();
  if constexpr (std::tuple_size_v<decltype(md)> != R) {
    return false;
  } else {
    const auto ad = ctflow::detail::get<0>(m.ops).dims();
    constexpr std::size_t RA = std::tuple_size_v<decltype(ad)>;
    if (md != d || ad[matmul_of<K>::transpose_a ? RA - 2 : RA - 1] == 0) return false;
    if constexpr (W::ep == epilogue::bias || W::ep == epilogue::relu_bias) {
      const auto bd = W::bias(n)->dims();
      for (std::size_t i = 0; i + 1 < bd.size(); ++i)
        if (bd[i] != 1) return false;
      return bd.back() == d[R - 1];
    }
    return true;
  }
}

/// A matmul node into out (extents d): one batched product where each operand's batch is the
/// product's or one matrix, else one product per batch element; with epilogue ep (its bias at
/// `bias`, device memory) where one is given.
template <class T, std::size_t R, class N>
void run_matmul(T* out, const dims_t<R>& d, const N& n, epilogue ep = epilogue::none, const T* bias = nullptr) {
  using K = typename N::op_type;
  runtime& rt = device_state::instance().rt();
  temporaries keep;
  const auto a = dense_view(ctflow::detail::get<0>(n.ops), keep);
  const auto b = dense_view(ctflow::detail::get<1>(n.ops), keep);
  constexpr std::size_t RA = std::tuple_size_v<decltype(a.dims)>, RB = std::tuple_size_v<decltype(b.dims)>;
  matmul_problem p;
  p.dtype = matmul_problem::type_of<T>();
  p.transpose_a = matmul_of<K>::transpose_a;
  p.transpose_b = matmul_of<K>::transpose_b;
  p.ep = ep;
  p.m = d[R - 2];
  p.n = d[R - 1];
  p.k = p.transpose_a ? a.dims[RA - 2] : a.dims[RA - 1];
  if (p.m * p.n == 0) return;
  if (p.k == 0) return rt.zero(out, product(d) * sizeof(T));
  std::array<std::size_t, R - 2> all{};
  std::array<std::size_t, RA - 2> own_a{};
  std::array<std::size_t, RB - 2> own_b{};
  std::copy_n(d.begin(), R - 2, all.begin());
  std::copy_n(a.dims.begin(), RA - 2, own_a.begin());
  std::copy_n(b.dims.begin(), RB - 2, own_b.begin());
  const std::size_t batch = product(all), a_matrix = p.m * p.k, b_matrix = p.k * p.n;
  // A stride per operand: its matrices one after the other, or one matrix for every element.
  auto stride_of = [&](const auto& own, std::size_t matrix) -> std::int64_t {
    if (product(own) == 1) return 0;
    if (product(own) == batch && std::equal(own.begin(), own.end(), all.end() - own.size())) return std::int64_t(matrix);
    return -1;
  };
  p.a_batch_stride = stride_of(own_a, a_matrix);
  p.b_batch_stride = stride_of(own_b, b_matrix);
  if (p.a_batch_stride >= 0 && p.b_batch_stride >= 0) {
    p.batch = batch;
    return rt.matmul(p, a.data, b.data, out, bias);
  }
  p.a_batch_stride = p.b_batch_stride = 0;
  for (std::size_t i = 0; i < batch; ++i)
    rt.matmul(p, a.data + batch_offset(i, all, own_a) * a_matrix, b.data + batch_offset(i, all, own_b) * b_matrix, out + i * p.m * p.n, bias);
}

/// Assigns e (of extents d) into the device memory at out: a matmul through cuBLASLt (with the
/// relu and bias above it as its epilogue, where they fit one), a shape op its own kernel, anything else one generated kernel, its inputs evaluated first where they
/// must be.
template <class T, std::size_t R, class E> void evaluate(T* out, const dims_t<R>& d, const E& e) {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_matmul<N>::value) {
    run_matmul(out, d, e);
  } else if constexpr (with_epilogue<N>::ep != epilogue::none) {
    using W = with_epilogue<N>;
    if (!fused_epilogue(e, d)) return evaluate_generated(out, d, e);
    if constexpr (W::ep == epilogue::relu) {
      run_matmul(out, d, W::product(e), W::ep);
    } else {
      temporaries keep;
      run_matmul(out, d, W::product(e), W::ep, dense_view(*W::bias(e), keep).data);
    }
  } else if constexpr (requires { requires array_kernel<typename N::op_type>::defined; }) {
    run_array(out, d, e);
  } else {
    evaluate_generated(out, d, e);
  }
}

/// Runs entry point `entry` of k over `items` (each a thread's, or a block's where per_block) to
/// its end; a value_error with its functors' messages where it reports an invalid operation.
inline void launch(const generated_kernel& k, const std::string& entry, const std::vector<unsigned char>& args, std::size_t items,
                   bool per_block = false) {
  if (items == 0) return;
  runtime& rt = device_state::instance().rt();
  constexpr unsigned block = 256;
  const std::size_t most = std::size_t(32) * std::max(1u, rt.multiprocessors());
  const std::size_t blocks = per_block ? items : (items + block - 1) / block;
  if (rt.launch(k, entry, args, unsigned(std::min(blocks, most)), block) != 0) {
    std::string what;
    for (const auto& f : k.failures) what += (what.empty() ? "" : "; or ") + f;
    throw value_error(what.empty() ? "ctflow::cuda: a generated kernel reported an operation with no value" : what);
  }
}

/// The generated kernel of e into out.
template <class T, std::size_t R, class E> void evaluate_generated(T* out, const dims_t<R>& d, const E& e) {
  using N = std::remove_cvref_t<E>;
  temporaries keep;
  const kernel_launch l = launch_for(out, d, e, [&](const auto& node) { return device_view(node, keep); });
  launch(kernel_for<N>(), l.entry, l.args, l.items, l.per_block);
}

/// An op's own kernel (array_kernels.hpp, line_kernels.hpp) into out: its operands read where
/// they are (evaluated first where they are expressions), a scratch zeroed where it sums into one,
/// out zeroed where it writes some elements only; with `saved`, its by-product for the gradient
/// there too.
template <class T, std::size_t R, class N, class U> void run_array(T* out, const dims_t<R>& d, const N& n, U* saved) {
  using A = array_kernel<typename N::op_type>;
  runtime& rt = device_state::instance().rt();
  temporaries keep;
  void* scratch = nullptr;
  auto scratch_of = [&](std::size_t bytes) { return scratch = keep.make<unsigned char>(bytes); };
  const array_launch l = ctflow::detail::apply(
      [&](const auto&... o) {
        if constexpr (std::is_void_v<U>) return A::plan(n.k, out, d, scratch_of, device_view(o, keep)...);
        else return A::plan_saving(n.k, out, saved, d, scratch_of, device_view(o, keep)...);
      },
      n.ops);
  if (l.zero_out && !l.scratch) rt.zero(out, product(d) * sizeof(T));
  if (l.scratch) rt.zero(scratch, l.scratch);
  const generated_kernel& k = A::kernel();
  const bool narrow = l.items < (std::size_t(1) << 30) && product(d) < (std::size_t(1) << 30);
  if (l.serial) launch(k, k.name + "_serial", l.args, 1);
  else launch(k, k.name + (narrow ? "_items32" : "_items64"), l.args, l.items);
  if (l.scratch) launch(k, k.name + (narrow ? "_finish32" : "_finish64"), l.args, product(d));
}

}  // namespace ctflow::backend::cuda

namespace ctflow {

template <> struct executor<cuda> {
  /// Evaluates e into the device memory out of extents d (those of e).
  template <class T, std::size_t R, class E> static void assign(T* out, const dims_t<R>& d, const E& e) {
    using U = typename backend::cuda::unsupported<std::remove_cvref_t<E>>::type;
    if constexpr (!std::is_void_v<U>) {
      CTFLOW_STATIC_CHECK(std::is_void_v<U>, detail::concat(expr::op_name<U>(),
                                                            detail::fixed_string(" does not run on the GPU yet (element-wise ops, views and "
                                                                                 "reductions do): evaluate it on the CPU, ctflow::to<cpu>")));
    } else {
      const std::int64_t begin = detail::profile::on() ? detail::profile::now_ns() : 0;
      backend::cuda::evaluate(out, d, e);
      // The profiler and check_numerics see each assignment (its kernels done), its result
      // copied to the host.
      if (detail::profile::on()) {
        const std::size_t n = product(d);
        const std::unique_ptr<T[]> on_host(new T[n]);  // (not a std::vector: bool results too)
        cuda::copy_to_host(on_host.get(), out, n * sizeof(T));
        detail::observe::finish_fused(cuda::name, begin, e, on_host.get(), d);
      }
    }
  }
  /// Runs n's kernel into out, leaving its by-product for the gradient in saved (value_and_grad's
  /// forward pass).
  template <class T, class U, class K, class... Ops> static void assign_saving(T* out, U* saved, const expr::Computed<K, Ops...>& n) {
    constexpr bool saving = requires { requires backend::cuda::array_kernel<K>::saving; };
    if constexpr (!saving) {
      CTFLOW_STATIC_CHECK(saving,
                          detail::concat(expr::op_name<K>(), detail::fixed_string(" does not run on the GPU yet: evaluate it on the CPU, ctflow::to<cpu>")));
    } else {
      backend::cuda::run_array(out, n.dims(), n, saved);
    }
  }
};

inline void* cuda::allocate(std::size_t bytes) { return backend::cuda::device_state::instance().allocator().allocate(bytes); }
inline void cuda::release(void* p) { backend::cuda::device_state::instance().allocator().release(p); }
inline void cuda::zero(void* p, std::size_t bytes) { backend::cuda::device_state::instance().rt().zero(p, bytes); }
inline void cuda::copy_on_device(void* dst, const void* src, std::size_t bytes) {
  backend::cuda::device_state::instance().rt().copy(dst, src, bytes, backend::cuda::copy_kind::device_to_device);
}
inline void cuda::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  backend::cuda::device_state::instance().rt().copy(dst, src, bytes, backend::cuda::copy_kind::host_to_device);
}
inline void cuda::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  backend::cuda::device_state::instance().rt().copy(dst, src, bytes, backend::cuda::copy_kind::device_to_host);
}

}  // namespace ctflow
