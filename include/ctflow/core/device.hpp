#pragma once
/// @file
/// @brief Devices: where a tensor lives and which backend evaluates an expression.
///
/// A device is a tag type, the third parameter of `Tensor` (`cpu` by default). An expression's
/// device follows from its operands; operands on different devices are a compile error, and
/// `ctflow::to<Device>(t)` copies a tensor across. Evaluation is keyed by device: a backend
/// (`backend/<device>/`) specialises `evaluator<Node, Device>` for each node type and
/// `executor<Device>`, which assigns an expression into memory; nothing above the backends
/// names one.

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include <ctflow/core/errors.hpp>

namespace ctflow {

namespace detail {
template <class T, bool Cached> class buffer;
template <class T, class D> class device_buffer;
}  // namespace detail

/// @brief The CPU: SIMD loops (xsimd) split over a thread pool; memory from a cache of freed
/// blocks, so that a warm training step makes no system allocation.
struct cpu {
  static constexpr const char* name = "CPU:0";
  static constexpr detail::fixed_string tag{"cpu"};
  template <class T> using buffer = detail::buffer<T, true>;
};

/// @brief The reference device: plain serial loops over host memory, with no threads, no SIMD
/// and no cache. It is the oracle the CPU is tested against and the portable path for targets
/// without SIMD.
struct reference {
  static constexpr const char* name = "reference:0";
  static constexpr detail::fixed_string tag{"reference"};
  template <class T> using buffer = detail::buffer<T, false>;
};

/// @brief An NVIDIA GPU (under way): element-wise expressions and reductions become CUDA C++
/// kernels, compiled by NVRTC for the running GPU; its tensors keep their elements in device
/// memory. Its members are defined by `<ctflow/backend/cuda/cuda.hpp>`, which a program using the
/// GPU includes.
struct cuda {
  static constexpr const char* name = "GPU:0";
  static constexpr detail::fixed_string tag{"cuda"};
  template <class T> using buffer = detail::device_buffer<T, cuda>;
  /// @brief Device memory of `bytes` (from the device's caching allocator), and its return.
  static inline void* allocate(std::size_t bytes);
  static inline void release(void* p);
  /// @brief Sets device memory to zero; copies within the device, from the host, to the host.
  static inline void zero(void* p, std::size_t bytes);
  static inline void copy_on_device(void* dst, const void* src, std::size_t bytes);
  static inline void copy_from_host(void* dst, const void* src, std::size_t bytes);
  static inline void copy_to_host(void* dst, const void* src, std::size_t bytes);
  /// @brief The CUDA C++ source of the kernel that evaluates expression e (one per expression
  /// type: its extents, strides and numbers are the kernel's arguments).
  template <class E> static std::string kernel_source(const E& e);
};

/// @brief The device of a number in an expression (`x * 2.f`): it takes its operands' device.
struct any_device {
  static constexpr const char* name = "any";
  static constexpr detail::fixed_string tag{"any"};
};

/// @brief Where an expression of device D is evaluated when nothing places it (a lone number):
/// the CPU.
template <class D> using placed_device_t = std::conditional_t<std::is_same_v<D, any_device>, cpu, D>;

/// @brief Devices whose memory the host reads directly: `to` copies between them by memcpy.
template <class D> inline constexpr bool host_device_v = std::is_same_v<D, cpu> || std::is_same_v<D, reference>;

namespace detail {
/// Copies bytes of device D's memory to the host, and from the host into it (a memcpy where the
/// host reads D's memory).
template <class D> void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if constexpr (host_device_v<D>) std::memcpy(dst, src, bytes);
  else D::copy_to_host(dst, src, bytes);
}
template <class D> void copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if constexpr (host_device_v<D>) std::memcpy(dst, src, bytes);
  else D::copy_from_host(dst, src, bytes);
}
}  // namespace detail

namespace detail {
template <class A, class B> struct common_device { using type = A; };  // differing: the builder reports it
template <class B> struct common_device<any_device, B> { using type = B; };
}  // namespace detail

/// @brief The device of a node over operands on devices D...: theirs, numbers aside.
template <class D0, class... D> struct common_device { using type = D0; };
template <class D0, class D1, class... D> struct common_device<D0, D1, D...>
    : common_device<typename detail::common_device<D0, D1>::type, D...> {};
template <class... D> using common_device_t = typename common_device<D...>::type;

/// @brief Whether devices A and B can meet in one expression.
template <class A, class B> inline constexpr bool same_device_v =
    std::is_same_v<A, B> || std::is_same_v<A, any_device> || std::is_same_v<B, any_device>;

/// @brief Whether devices D... can meet in one expression.
template <class D0, class... D> inline constexpr bool same_devices_v = (same_device_v<common_device_t<D0, D...>, D> && ...) &&
                                                                      same_device_v<common_device_t<D0, D...>, D0>;

namespace detail {
template <class C, class... D> struct first_other { using type = C; };
template <class C, class D0, class... D> struct first_other<C, D0, D...>
    : std::conditional_t<same_device_v<C, D0>, first_other<C, D...>, std::type_identity<D0>> {};
}  // namespace detail

/// @brief Checks that every operand of op Op is on one device; the error names the op and the
/// first two devices that differ ("ctflow::add: operands on different devices: cpu x reference").
template <detail::fixed_string Op, class D0, class... D> constexpr bool check_devices() {
  using C = common_device_t<D0, D...>;
  constexpr bool ok = same_devices_v<D0, D...>;
  if constexpr (!ok) {
    using Other = typename detail::first_other<C, D0, D...>::type;
    CTFLOW_STATIC_CHECK(ok, detail::concat(Op, detail::fixed_string(": operands on different devices: "), C::tag,
                                           detail::fixed_string(" x "), Other::tag, detail::fixed_string("; copy one with ctflow::to<Device>")));
  }
  return ok;
}

/// @brief How device D evaluates node N: specialised by each backend for each node type.
template <class N, class D> struct evaluator;

/// @brief How device D assigns an expression into its memory: a backend specialises it with
/// `assign(T* out, const dims_t<R>& d, const E& e)` (e's value into out, of e's extents d) and
/// `assign_saving(T* out, U* saved, const expr::Computed<...>& n)` (a kernel that also leaves
/// a by-product for its gradient; expr/computed.hpp).
template <class D> struct executor;

}  // namespace ctflow
