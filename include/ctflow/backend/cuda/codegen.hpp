#pragma once
/// @file
/// @brief Code generation: an element-wise expression, or a reduction with its operand fused in,
/// becomes the CUDA C++ source of one kernel, as PyTorch's jiterator and ArrayFire's JIT write
/// theirs.
///
/// The source depends on the expression's type alone (its dtypes, ranks and functors): extents,
/// strides, addresses and numbers are the kernel's arguments, one `ctflow_args` struct passed by
/// value. So NVRTC compiles one kernel per expression type, whatever its run-time extents, and the
/// kernel cache keys it by its text. Scalars, unary and binary functors and `where` are fused into
/// one expression per element; anything else (a tensor, a view, a boundary op's result) is an
/// input read through strides aligned with the output's last axes, broadcast axes with stride 0.
///
/// An element-wise source has six entry points, `<name>_linear32`, `_linear64`, `_strided32`,
/// `_strided64`, `_vector32` and `_vector64`: grid-stride loops over the output's elements with
/// 32- or 64-bit indices, the linear ones where every input is laid out as the output (its
/// offsets are the element's index), the strided ones decomposing each index over the extents,
/// the vector ones linear with every address aligned to four elements (each thread reads each
/// input's four in one access and writes four). A reduction's has `_thread32/64`
/// (one thread per output group) and `_block32/64` (one block per group, a fixed tree). A
/// functor's body and a reduction's combine are their own host text (`source`, ops/math.hpp,
/// ops/reduction.hpp) compiled against the prelude's math; the prelude includes no header and uses
/// no inline PTX, so the same source also compiles as host C++ after a shim that defines the CUDA
/// names it uses (the tests run it so against the reference device).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/concepts.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/core/errors.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/expr/node.hpp>
#include <ctflow/expr/strided.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::backend::cuda {

/// The prelude every generated kernel starts with: storage types, conversions, loads and stores,
/// casts and the `math::` functions functor bodies call. Everything but the entry points is in an
/// anonymous namespace, so sources compiled into one host program do not collide.
inline constexpr const char* prelude = R"(// ctflow's prelude: no header, no inline PTX; host C++ too after a shim.
#ifndef CTFLOW_ENTRY
#define CTFLOW_ENTRY(kernel)
#endif
// Set by math::invalid (an operation with no value, as an integer division by zero); the host
// reads it after the kernel and reports what the kernel's functors name. Named by the kernel
// (CTFLOW_STATUS is <kernel>_status), so the driver finds it by name.
extern "C" {
__device__ int CTFLOW_STATUS;
}

namespace {

struct ctflow_bfloat16 { unsigned short bits; };
struct ctflow_float16 { unsigned short bits; };

__device__ __forceinline__ float ctflow_to_float(ctflow_bfloat16 h) { return __uint_as_float((unsigned)h.bits << 16); }
__device__ __forceinline__ float ctflow_to_float(ctflow_float16 h) {
  const unsigned sign = (unsigned)(h.bits & 0x8000u) << 16;
  const unsigned exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
  const float m = (float)mant * (1.0f / 16777216.0f);
  return sign ? -m : m;
}
// Round to nearest even; NaN stays NaN.
__device__ __forceinline__ ctflow_bfloat16 ctflow_to_bfloat16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {(unsigned short)((u >> 16) | 0x40u)};
  return {(unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
__device__ __forceinline__ ctflow_float16 ctflow_to_float16(float f) {
  const unsigned u = __float_as_uint(f);
  const unsigned sign = (u >> 16) & 0x8000u;
  const unsigned a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return {(unsigned short)(sign | 0x7e00u)};
  if (a >= 0x477ff000u) return {(unsigned short)(sign | 0x7c00u)};
  if (a < 0x38800000u) {
    if (a < 0x33000000u) return {(unsigned short)sign};
    const unsigned mant = (a & 0x7fffffu) | 0x800000u;
    const int shift = 126 - (int)(a >> 23);
    const unsigned r = mant >> shift;
    const unsigned rem = mant & ((1u << shift) - 1u);
    const unsigned half = 1u << (shift - 1);
    return {(unsigned short)(sign | (r + (rem > half || (rem == half && (r & 1u)))))};
  }
  const unsigned r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
  return {(unsigned short)(sign | (r >> 13))};
}

template <class T> __device__ __forceinline__ T ctflow_load(const T* p) { return *p; }
__device__ __forceinline__ float ctflow_load(const ctflow_bfloat16* p) { return ctflow_to_float(*p); }
__device__ __forceinline__ float ctflow_load(const ctflow_float16* p) { return ctflow_to_float(*p); }
template <class T, class V> __device__ __forceinline__ void ctflow_store(T* p, const V& v) { *p = T(v); }
__device__ __forceinline__ void ctflow_store(ctflow_bfloat16* p, float v) { *p = ctflow_to_bfloat16(v); }
__device__ __forceinline__ void ctflow_store(ctflow_float16* p, float v) { *p = ctflow_to_float16(v); }
// Four consecutive elements read or written as one access (the vector loop's; it runs only where
// the first one's address is aligned to the four).
template <class T> struct alignas(4 * sizeof(T)) ctflow_quad { T v[4]; };
template <class T> __device__ __forceinline__ ctflow_quad<T> ctflow_load4(const T* p) { return *reinterpret_cast<const ctflow_quad<T>*>(p); }
template <class T> __device__ __forceinline__ void ctflow_store4(T* p, const ctflow_quad<T>& q) { *reinterpret_cast<ctflow_quad<T>*>(p) = q; }

namespace math {
template <class X> constexpr bool is_integral = false;
template <> constexpr bool is_integral<bool> = true;
template <> constexpr bool is_integral<signed char> = true;
template <> constexpr bool is_integral<unsigned char> = true;
template <> constexpr bool is_integral<short> = true;
template <> constexpr bool is_integral<int> = true;
template <> constexpr bool is_integral<long long> = true;
template <class X> constexpr bool is_signed = false;
template <> constexpr bool is_signed<signed char> = true;
template <> constexpr bool is_signed<short> = true;
template <> constexpr bool is_signed<int> = true;
template <> constexpr bool is_signed<long long> = true;
template <> constexpr bool is_signed<float> = true;
template <> constexpr bool is_signed<double> = true;

template <class X> __device__ __forceinline__ X invalid(const char*) { CTFLOW_STATUS = 1; return X(0); }
template <class C, class X> __device__ __forceinline__ X select(const C& c, const X& a, const X& b) { return c ? a : b; }
template <class X> __device__ __forceinline__ X max(const X& a, const X& b) { return (a < b) ? b : a; }
template <class X> __device__ __forceinline__ X min(const X& a, const X& b) { return (b < a) ? b : a; }
template <class X> __device__ __forceinline__ X abs(const X& x) { return x < X(0) ? X(-x) : x; }
__device__ __forceinline__ float abs(float x) { return ::fabsf(x); }
__device__ __forceinline__ double abs(double x) { return ::fabs(x); }
#define CTFLOW_MATH(name, f, d) \
  __device__ __forceinline__ float name(float x) { return ::f(x); } \
  __device__ __forceinline__ double name(double x) { return ::d(x); }
CTFLOW_MATH(exp, expf, exp)
CTFLOW_MATH(log, logf, log)
CTFLOW_MATH(log1p, log1pf, log1p)
CTFLOW_MATH(expm1, expm1f, expm1)
CTFLOW_MATH(sqrt, sqrtf, sqrt)
CTFLOW_MATH(sin, sinf, sin)
CTFLOW_MATH(cos, cosf, cos)
CTFLOW_MATH(tanh, tanhf, tanh)
CTFLOW_MATH(erf, erff, erf)
CTFLOW_MATH(floor, floorf, floor)
CTFLOW_MATH(ceil, ceilf, ceil)
CTFLOW_MATH(nearbyint, nearbyintf, nearbyint)
#undef CTFLOW_MATH
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ double pow(double a, double b) { return ::pow(a, b); }
}  // namespace math

template <class T> struct ctflow_limits;
template <> struct ctflow_limits<signed char> { static constexpr signed char lowest = -128, highest = 127; };
template <> struct ctflow_limits<unsigned char> { static constexpr unsigned char lowest = 0, highest = 255; };
template <> struct ctflow_limits<short> { static constexpr short lowest = -32768, highest = 32767; };
template <> struct ctflow_limits<int> { static constexpr int lowest = -2147483647 - 1, highest = 2147483647; };
template <> struct ctflow_limits<long long> { static constexpr long long lowest = -9223372036854775807LL - 1, highest = 9223372036854775807LL; };
template <class A, class B> struct ctflow_same { static constexpr bool value = false; };
template <class A> struct ctflow_same<A, A> { static constexpr bool value = true; };

// tf.cast: floating to integer truncates toward zero and saturates, NaN gives 0; to bool is != 0.
template <class C, class X> __device__ __forceinline__ C ctflow_cast(const X& x) {
  if constexpr (ctflow_same<C, bool>::value) return x != X(0);
  else if constexpr (math::is_integral<C> && !math::is_integral<X>) {
    if (!(x == x)) return C(0);
    if (x <= X(ctflow_limits<C>::lowest)) return ctflow_limits<C>::lowest;
    if (x >= X(ctflow_limits<C>::highest)) return ctflow_limits<C>::highest;
    return C(x);
  } else return C(x);
}

// Adds to o[k] the offset of input k at the element of row-major index `index` over `extents`
// (R axes; those of extent 1 skipped), from the inputs' strides (S per input).
template <int R, int K, int S, class I> __device__ __forceinline__ void ctflow_offsets(const long long* extents, const long long (*strides)[S], I index, I* o) {
  for (int d = R - 1; d >= 0; --d) {
    if (extents[d] == 1) continue;
    const I c = index % I(extents[d]);
    index /= I(extents[d]);
    for (int k = 0; k < K; ++k) o[k] += c * I(strides[k][d]);
  }
}

}  // namespace
)";

/// The name a dtype's storage has in generated source.
template <class T> constexpr const char* source_type() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "signed char";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "short";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "long long";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "unsigned char";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, bfloat16>) return "ctflow_bfloat16";
  else if constexpr (std::is_same_v<T, float16>) return "ctflow_float16";
  else static_assert(sizeof(T) == 0, "ctflow::cuda: a dtype generated kernels do not know");
}

namespace detail {

template <class F> constexpr std::string_view type_text() {
  std::string_view t = __PRETTY_FUNCTION__;
  t = t.substr(t.find("F = ") + 4);
  return t.substr(0, t.find_first_of(";]"));
}

template <class F> struct is_cast : std::false_type {};
template <class To> struct is_cast<ops::cast_fn<To>> : std::true_type { using type = To; };

/// What a walk over an expression type writes: the argument struct's fields by section, the
/// functors' definitions, and the messages of the functors that can report an invalid operation.
struct source_builder {
  std::string inputs, scalars, members, functors;
  std::vector<std::string> input_types;  // the inputs' element types in the source
  std::vector<std::string_view> functor_types;
  std::vector<std::string> failures;
  std::size_t input_count = 0, scalar_count = 0, member_count = 0;

  /// An instance of functor F of `arity` operands as generated source ("f0{}", "f1{a.q0}"),
  /// its struct defined on first use.
  template <class F> std::string functor(int arity) {
    constexpr std::string_view key = type_text<F>();
    std::size_t index = 0;
    while (index < functor_types.size() && functor_types[index] != key) ++index;
    std::string_view members_of_f[8];
    std::size_t member_n = 0;
    if constexpr (requires { F::source_members; }) {
      static_assert(F::source_members.size() <= 8, "ctflow::cuda: a functor with more than 8 parameters");
      for (const char* m : F::source_members) members_of_f[member_n++] = m;
    }
    if (index == functor_types.size()) {
      static_assert(requires { F::source; }, "ctflow::cuda: this functor has no source for generated kernels");
      functor_types.push_back(key);
      const std::string name = "f" + std::to_string(index);
      functors += "struct " + name + " {  // " + std::string(key) + "\n";
      for (std::size_t m = 0; m < member_n; ++m) functors += "  double " + std::string(members_of_f[m]) + ";\n";
      if (arity == 1) functors += "  template <class X> __device__ __forceinline__ X operator()(const X& x) const { ";
      else functors += "  template <class X> __device__ __forceinline__ auto operator()(const X& a, const X& b) const { ";
      functors += std::string(F::source) + " }\n};\n";
      const std::string_view body = F::source;
      for (std::size_t at = body.find("math::invalid<X>(\""); at != std::string_view::npos; at = body.find("math::invalid<X>(\"", at + 1)) {
        const std::size_t begin = at + 18, end = body.find('"', begin);
        failures.emplace_back(body.substr(begin, end - begin));
      }
    }
    std::string out = "f" + std::to_string(index) + "{";
    for (std::size_t m = 0; m < member_n; ++m) {
      const std::string q = "q" + std::to_string(member_count++);
      members += "  double " + q + ";\n";
      out += (m ? ", a." : "a.") + q;
    }
    return out + "}";
  }
};

/// The generated expression of node N's value at an element, each input k read as
/// "ctflow_load(\1k\2)": operand_source_of spells out where (at offset o[k], or lane l of a
/// vector read).
template <class N> struct element {
  static std::string source(source_builder& b) {
    const std::string k = std::to_string(b.input_count++);
    b.input_types.emplace_back(source_type<value_t<N>>());
    b.inputs += "  const " + b.input_types.back() + "* in" + k + ";\n";
    return "ctflow_load(\1" + k + "\2)";
  }
};
template <class T> struct element<expr::Scalar<T>> {
  static std::string source(source_builder& b) {
    const std::string k = std::to_string(b.scalar_count++);
    b.scalars += std::string("  ") + source_type<compute_t<T>>() + " s" + k + ";\n";
    return "a.s" + k;
  }
};
template <class F, class E> struct element<expr::Unary<F, E>> {
  static std::string source(source_builder& b) {
    if constexpr (is_cast<F>::value) {
      using To = typename is_cast<F>::type;
      const std::string x = element<std::remove_cvref_t<E>>::source(b);
      const std::string c = std::string("ctflow_cast<") + source_type<compute_t<To>>() + ">(" + x + ")";
      // To a 16-bit float: rounded to it, as the host's cast does.
      if constexpr (!std::is_same_v<To, compute_t<To>>) return std::string("ctflow_to_float(ctflow_to_") + dtype_name<To>() + "(" + c + "))";
      else return c;
    } else {
      const std::string f = b.functor<F>(1);
      const std::string x = element<std::remove_cvref_t<E>>::source(b);
      return f + "(" + x + ")";
    }
  }
};
template <class F, class L, class R> struct element<expr::Binary<F, L, R>> {
  static std::string source(source_builder& b) {
    const std::string f = b.functor<F>(2);
    const std::string l = element<std::remove_cvref_t<L>>::source(b);
    const std::string r = element<std::remove_cvref_t<R>>::source(b);
    return f + "(" + l + ", " + r + ")";
  }
};
template <class C, class A, class B> struct element<expr::Select<C, A, B>> {
  static std::string source(source_builder& b) {
    const std::string c = element<std::remove_cvref_t<C>>::source(b);
    const std::string x = element<std::remove_cvref_t<A>>::source(b);
    const std::string y = element<std::remove_cvref_t<B>>::source(b);
    return "(" + c + " ? " + x + " : " + y + ")";
  }
};

inline std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace detail

/// A generated kernel: its source, the entry points' common name and the messages of the
/// invalid operations its functors can report.
struct generated_kernel {
  std::string source;
  std::string name;
  std::vector<std::string> failures;
};

namespace detail {

/// The operand fields of the argument struct and the element's value, for an operand of type N
/// read over R axes: inputs' pointers and strides, the numbers, the functors' parameters. The
/// value reads input k at offset o[k]; `lane` reads lane l of its four-element read qk.
struct operand_source {
  source_builder b;
  std::string value, lane;
  std::size_t inputs = 0;
  std::string pointers() const { return b.inputs; }
  std::string strides(std::size_t R) const {
    return "  long long strides[" + std::to_string(inputs > 0 ? inputs : 1) + "][" + std::to_string(R > 0 ? R : 1) + "];\n";
  }
  std::string numbers() const { return b.scalars + b.members; }
};
template <class N> operand_source operand_source_of() {
  operand_source o;
  const std::string reads = element<N>::source(o.b);
  for (std::size_t at = 0; at < reads.size(); ++at) {
    if (reads[at] != '\1') {
      o.value += reads[at];
      o.lane += reads[at];
      continue;
    }
    const std::size_t end = reads.find('\2', at);
    const std::string k = reads.substr(at + 1, end - at - 1);
    o.value += "a.in" + k + " + o[" + k + "]";
    o.lane += "q" + k + ".v + l";
    at = end;
  }
  o.inputs = o.b.input_count;
  return o;
}

/// The whole source: the prelude, `body` (in an anonymous namespace) and the entry points, each
/// `extern "C"` form calling its loop; the name is a hash of the body.
inline generated_kernel assemble(const std::string& body, std::initializer_list<std::pair<const char*, const char*>> forms,
                                 std::vector<std::string> failures) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv1a(body)));
  generated_kernel k;
  k.name = std::string("ctflow_k") + hash;
  std::string entries;
  for (const auto& [form, loop] : forms)
    entries += "extern \"C\" __global__ void " + k.name + "_" + form + "(ctflow_args a) { " + loop + "(a); }\n";
  for (const auto& f : forms) entries += "CTFLOW_ENTRY(" + k.name + "_" + f.first + ")\n";
  k.source = "#define CTFLOW_STATUS " + k.name + "_status\n" + prelude + "\nnamespace {\n\n" + body + "\n}  // namespace\n\n" + entries +
             "#undef CTFLOW_STATUS\n";
  k.failures = std::move(failures);
  return k;
}

/// What a reduction kernel needs of boundary op K: its combine `op<X>`, whether it takes the
/// mean, and which axes of its operand it reduces (sum_to's depend on its extents).
template <class K> struct reduction {};
template <template <class> class Op, class T, class SIn, bool Keep, bool Mean, int... Axes>
struct reduction<ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>> {
  using K = ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>;
  template <class X> using op = Op<X>;
  static constexpr bool mean = Mean;
  static constexpr std::size_t rank = std::size_t(SIn::rank);
  static std::array<bool, rank> reduced(const K&) { return K::axes::mask; }
};
template <class T, class SG, class SO> struct reduction<ops::sum_to_op<T, SG, SO>> {
  using K = ops::sum_to_op<T, SG, SO>;
  template <class X> using op = ops::sum_op<X>;
  static constexpr bool mean = false;
  static constexpr std::size_t rank = K::RG;
  static std::array<bool, rank> reduced(const K& k) {
    std::array<bool, rank> r{};
    for (std::size_t a = 0; a < rank; ++a) r[a] = a < K::RG - K::RO || k.out_dims[a - (K::RG - K::RO)] == 1;
    return r;
  }
};

template <class N> struct generated_reduction : std::false_type {};
template <class K, class E> requires requires { reduction<K>::mean; }
struct generated_reduction<expr::Computed<K, E>> : std::true_type {};

/// Where a reduction combines: double for sums of floating dtypes (as the reference device), the
/// compute type otherwise.
template <class K> using accumulator_t =
    std::conditional_t<is_floating_v<typename K::value_type> &&
                           std::is_same_v<typename reduction<K>::template op<float>, ops::sum_op<float>>,
                       double, compute_t<typename K::value_type>>;

}  // namespace detail

/// The kernel that assigns an expression of type E into contiguous memory of E's dtype (a
/// reduction's when E is one, else an element-wise one); made once per type.
template <class E> const generated_kernel& kernel_for() {
  using N = std::remove_cvref_t<E>;
  static const generated_kernel k = [] {
    if constexpr (detail::generated_reduction<N>::value) {
      using K = typename N::op_type;
      using Operand = expr::operand_t<0, N>;
      using A = detail::accumulator_t<K>;
      constexpr std::size_t R = detail::reduction<K>::rank, RM = R > 0 ? R : 1;
      const detail::operand_source o = detail::operand_source_of<Operand>();
      const std::string acc = source_type<A>(), value = source_type<compute_t<typename K::value_type>>();
      std::string body = "struct ctflow_args {\n";
      body += std::string("  ") + source_type<typename K::value_type>() + "* out;\n  long long groups, count;\n";
      body += "  long long kept[" + std::to_string(RM) + "];  // the operand's extents on kept axes, 1 on reduced ones\n";
      body += "  long long reduced[" + std::to_string(RM) + "];  // its extents on reduced axes, 1 on kept ones\n";
      body += o.pointers() + o.strides(R) + o.numbers() + "  " + acc + " identity;\n};\n\n" + o.b.functors;
      body += std::string("struct ctflow_combine {  // ") + std::string(detail::type_text<typename detail::reduction<K>::template op<A>>()) + "\n";
      body += std::string("  template <class X> __device__ __forceinline__ X operator()(const X& a, const X& b) const { ") +
              detail::reduction<K>::template op<A>::source + " }\n};\n\n";
      body += "constexpr int R = " + std::to_string(R) + ", K = " + std::to_string(o.inputs) + ", KM = K > 0 ? K : 1;\n";
      body += "using ctflow_acc = " + acc + ";\nusing ctflow_out = " + value + ";  // what out's elements are computed as\n\n";
      body += "template <class I> __device__ __forceinline__ ctflow_acc ctflow_element(const ctflow_args& a, const I* o) {\n";
      body += "  return ctflow_acc(" + o.value + ");\n}\n\n";
      body += "__device__ __forceinline__ void ctflow_finish(const ctflow_args& a, long long g, ctflow_acc v) {\n";
      if (detail::reduction<K>::mean) {
        body += "  if (a.count == 0) return ctflow_store(a.out + g, ctflow_out(v));\n";
        if constexpr (is_floating_v<typename K::value_type>) body += "  ctflow_store(a.out + g, ctflow_out(v / ctflow_acc(a.count)));\n";
        else body += "  ctflow_store(a.out + g, ctflow_out((long long)v / a.count));\n";
      } else {
        body += "  ctflow_store(a.out + g, ctflow_out(v));\n";
      }
      body += "}\n";
      body += R"(
// One thread per group, its elements in row-major order (the reference device's order).
template <class I> __device__ __forceinline__ void ctflow_thread_loop(const ctflow_args& a) {
  const I groups = I(a.groups), count = I(a.count), step = I(gridDim.x) * I(blockDim.x);
  for (I g = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); g < groups; g += step) {
    I base[KM] = {};
    ctflow_offsets<R, K>(a.kept, a.strides, g, base);
    ctflow_acc acc = a.identity;
    for (I j = 0; j < count; ++j) {
      I o[KM];
      for (int k = 0; k < KM; ++k) o[k] = base[k];
      ctflow_offsets<R, K>(a.reduced, a.strides, j, o);
      acc = ctflow_combine{}(acc, ctflow_element<I>(a, o));
    }
    ctflow_finish(a, g, acc);
  }
}

// One block per group (blockDim.x a power of two, at most 256): thread t combines elements t,
// t + blockDim.x, ... in order, then the block halves its partials in a fixed tree. The order
// depends on the block size alone: the same result at every run.
template <class I> __device__ __forceinline__ void ctflow_block_loop(const ctflow_args& a) {
  __shared__ ctflow_acc partial[256];
  const I groups = I(a.groups), count = I(a.count);
  const unsigned t = threadIdx.x;
  for (I g = I(blockIdx.x); g < groups; g += I(gridDim.x)) {
    I base[KM] = {};
    ctflow_offsets<R, K>(a.kept, a.strides, g, base);
    ctflow_acc acc = a.identity;
    for (I j = I(t); j < count; j += I(blockDim.x)) {
      I o[KM];
      for (int k = 0; k < KM; ++k) o[k] = base[k];
      ctflow_offsets<R, K>(a.reduced, a.strides, j, o);
      acc = ctflow_combine{}(acc, ctflow_element<I>(a, o));
    }
    partial[t] = acc;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) partial[t] = ctflow_combine{}(partial[t], partial[t + s]);
      __syncthreads();
    }
    if (t == 0) ctflow_finish(a, g, partial[0]);
    __syncthreads();
  }
}
)";
      std::vector<std::string> failures = o.b.failures;
      return detail::assemble(body,
                              {{"thread32", "ctflow_thread_loop<int>"}, {"thread64", "ctflow_thread_loop<long long>"},
                               {"block32", "ctflow_block_loop<int>"}, {"block64", "ctflow_block_loop<long long>"}},
                              std::move(failures));
    } else {
      constexpr std::size_t R = std::size_t(rank_v<N>);
      const detail::operand_source o = detail::operand_source_of<N>();
      std::string body = "struct ctflow_args {\n";
      body += std::string("  ") + source_type<value_t<N>>() + "* out;\n  long long n;\n";
      body += "  long long dims[" + std::to_string(R > 0 ? R : 1) + "];\n";
      body += o.pointers() + o.strides(R) + o.numbers() + "};\n\n" + o.b.functors;
      body += "\nconstexpr int R = " + std::to_string(R) + ", K = " + std::to_string(o.inputs) + ", KM = K > 0 ? K : 1;\n\n";
      body += "template <class I> __device__ __forceinline__ void ctflow_element(const ctflow_args& a, I i, const I* o) {\n";
      body += "  ctflow_store(a.out + i, " + o.value + ");\n}\n";
      body += "template <class I> __device__ __forceinline__ void ctflow_element4(const ctflow_args& a, I i) {\n";
      for (std::size_t k = 0; k < o.inputs; ++k)
        body += "  const ctflow_quad<" + o.b.input_types[k] + "> q" + std::to_string(k) + " = ctflow_load4(a.in" + std::to_string(k) + " + i);\n";
      body += std::string("  ctflow_quad<") + source_type<value_t<N>>() + "> r;\n";
      body += "  for (int l = 0; l < 4; ++l) ctflow_store(r.v + l, " + o.lane + ");\n  ctflow_store4(a.out + i, r);\n}\n";
      body += R"(
// A grid-stride loop over the output's elements from `begin`; linear: every input laid out as
// the output.
template <class I, bool Linear> __device__ __forceinline__ void ctflow_loop(const ctflow_args& a, I begin = 0) {
  const I n = I(a.n), step = I(gridDim.x) * I(blockDim.x);
  for (I i = begin + I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step) {
    I o[KM] = {};
    if constexpr (Linear) {
      for (int k = 0; k < K; ++k) o[k] = i;
    } else {
      ctflow_offsets<R, K>(a.dims, a.strides, i, o);
    }
    ctflow_element<I>(a, i, o);
  }
}

// Linear, and every address aligned to four of its elements: four elements a thread at a time,
// each input and the output one access of the four, then the last n % 4 one by one.
template <class I> __device__ __forceinline__ void ctflow_vector_loop(const ctflow_args& a) {
  const I quads = I(a.n) / 4, step = I(gridDim.x) * I(blockDim.x);
  for (I g = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); g < quads; g += step) ctflow_element4<I>(a, g * 4);
  ctflow_loop<I, true>(a, quads * 4);
}
)";
      return detail::assemble(body,
                              {{"linear32", "ctflow_loop<int, true>"}, {"linear64", "ctflow_loop<long long, true>"},
                               {"strided32", "ctflow_loop<int, false>"}, {"strided64", "ctflow_loop<long long, false>"},
                               {"vector32", "ctflow_vector_loop<int>"}, {"vector64", "ctflow_vector_loop<long long>"}},
                              std::move(o.b.failures));
    }
  }();
  return k;
}

/// One launch of a generated kernel: the entry point, its argument struct's bytes, and its work:
/// `items` elements or groups, each a thread's, or each a block's where `per_block`.
struct kernel_launch {
  std::string entry;
  std::vector<unsigned char> args;
  std::size_t items = 0;
  bool per_block = false;
};

namespace detail {

/// Bytes laid out as the generated struct's fields are: each at its alignment, the whole padded
/// to 8.
struct argument_packer {
  std::vector<unsigned char> bytes;
  template <class V> void put(const V& v) {
    bytes.resize((bytes.size() + alignof(V) - 1) / alignof(V) * alignof(V));
    const std::size_t at = bytes.size();
    bytes.resize(at + sizeof(V));
    std::memcpy(bytes.data() + at, &v, sizeof(V));
  }
  void append(const argument_packer& p) {
    // p was laid out from offset 0 with alignments of at most 8: they hold from any 8-aligned
    // offset.
    bytes.resize((bytes.size() + 7) / 8 * 8);
    bytes.insert(bytes.end(), p.bytes.begin(), p.bytes.end());
  }
  void finish() { bytes.resize((bytes.size() + 7) / 8 * 8); }
};

/// The run-time values a walk collects, in the order the source builder named them.
template <std::size_t R> struct argument_values {
  struct input {
    const void* data;
    std::array<long long, R> strides;  // per axis; 0 where broadcast or absent
    long long span;                    // the largest |offset| an element reaches
    std::size_t bytes;                 // of an element
  };
  std::vector<input> inputs;
  argument_packer numbers;      // the scalars, each in its compute type
  std::vector<double> members;  // the functors' parameters

  /// The operand fields: input pointers, strides, numbers.
  void pack(argument_packer& p) const {
    constexpr std::size_t RM = R > 0 ? R : 1;
    for (const auto& in : inputs) p.put(in.data);
    for (const auto& in : inputs)
      for (std::size_t a = 0; a < RM; ++a) p.put(a < R ? in.strides[a] : 0ll);
    if (inputs.empty())
      for (std::size_t a = 0; a < RM; ++a) p.put(0ll);
    if (!numbers.bytes.empty()) p.append(numbers);
    for (const double m : members) p.put(m);
  }
  long long span() const {
    long long s = 0;
    for (const auto& in : inputs) s = s > in.span ? s : in.span;
    return s;
  }
};

template <class N> struct arguments {
  template <std::size_t R, class ViewOf> static void collect(const N& n, argument_values<R>& out, ViewOf& view_of) {
    const auto v = view_of(n);
    constexpr std::size_t Rin = decltype(v.dims)().size();
    typename argument_values<R>::input in{v.data, {}, 0, sizeof(*v.data)};
    for (std::size_t k = 0; k < Rin; ++k) {
      const long long s = v.dims[k] == 1 ? 0 : static_cast<long long>(v.strides[k]);
      in.strides[R - Rin + k] = s;
      in.span += (static_cast<long long>(v.dims[k]) - 1) * (s < 0 ? -s : s);
    }
    out.inputs.push_back(in);
  }
};
template <class T> struct arguments<expr::Scalar<T>> {
  template <std::size_t R, class ViewOf> static void collect(const expr::Scalar<T>& n, argument_values<R>& out, ViewOf&) {
    out.numbers.put(compute_t<T>(n.value));
  }
};
/// A fused node: its functor's parameters (where it has any), then its operands, in the order
/// the source builder named them.
template <class N> requires(expr::is_elementwise<N>::value && expr::arity_v<N> > 0) struct arguments<N> {
  template <std::size_t R, class ViewOf> static void collect(const N& n, argument_values<R>& out, ViewOf& view_of) {
    if constexpr (requires { n.f.source_values(); })
      for (const double m : n.f.source_values()) out.members.push_back(m);
    expr::apply_operands(n, [&](const auto&... o) { (arguments<std::remove_cvref_t<decltype(o)>>::collect(o, out, view_of), ...); });
  }
};

}  // namespace detail

/// The launch that assigns e (of extents d) into out: e's inputs in memory through
/// `view_of(node)` (a strided_view of the input's value on the device: a tensor's own memory, a
/// view's mapping of it, or an evaluated boundary), broadcast against d. A reduction reduces its
/// operand: one thread per group where groups are many or small, else one block per group (of a
/// power of two threads, at most 256).
template <class T, std::size_t R, class E, class ViewOf>
kernel_launch launch_for(T* out, const dims_t<R>& d, const E& e, ViewOf&& view_of) {
  using N = std::remove_cvref_t<E>;
  static_assert(std::is_same_v<T, value_t<N>> && R == std::size_t(rank_v<N>), "ctflow::cuda: the destination is not of the expression's dtype and rank");
  const generated_kernel& k = kernel_for<N>();
  detail::argument_packer p;
  p.put(static_cast<void*>(out));
  if constexpr (detail::generated_reduction<N>::value) {
    using K = typename N::op_type;
    constexpr std::size_t RI = detail::reduction<K>::rank, RM = RI > 0 ? RI : 1;
    const auto& operand = ctflow::detail::get<0>(e.ops);
    const auto in_dims = operand.dims();
    const auto reduced = detail::reduction<K>::reduced(e.k);
    detail::argument_values<RI> values;
    detail::arguments<std::remove_cvref_t<decltype(operand)>>::collect(operand, values, view_of);
    long long groups = 1, count = 1;
    for (std::size_t a = 0; a < RI; ++a) (reduced[a] ? count : groups) *= static_cast<long long>(in_dims[a]);
    p.put(groups);
    p.put(count);
    for (std::size_t a = 0; a < RM; ++a) p.put(a < RI && !reduced[a] ? static_cast<long long>(in_dims[a]) : 1ll);
    for (std::size_t a = 0; a < RM; ++a) p.put(a < RI && reduced[a] ? static_cast<long long>(in_dims[a]) : 1ll);
    values.pack(p);
    p.put(static_cast<detail::accumulator_t<K>>(detail::reduction<K>::template op<detail::accumulator_t<K>>::identity()));
    p.finish();
    const bool per_block = count >= 1024 || (count >= 64 && groups < 1024);
    const bool narrow = values.span() < (1ll << 30) && groups * count < (1ll << 30);
    return {k.name + (per_block ? "_block" : "_thread") + (narrow ? "32" : "64"), std::move(p.bytes), std::size_t(groups), per_block};
  } else {
    detail::argument_values<R> values;
    detail::arguments<N>::collect(e, values, view_of);
    const std::size_t n = product(d);
    const auto row_major = row_major_strides(d);
    bool linear = true;
    for (const auto& in : values.inputs)
      for (std::size_t a = 0; a < R; ++a)
        if (d[a] != 1 && in.strides[a] != static_cast<long long>(row_major[a])) linear = false;
    // The vector loop: linear, and every address aligned to four of its elements.
    const auto quad_aligned = [](const void* at, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(at) % (4 * bytes) == 0; };
    bool vector = linear && n >= 4 && quad_aligned(out, sizeof(T));
    for (const auto& in : values.inputs) vector = vector && quad_aligned(in.data, in.bytes);
    p.put(static_cast<long long>(n));
    for (std::size_t a = 0; a < (R > 0 ? R : 1); ++a) p.put(static_cast<long long>(a < R ? d[a] : 1));
    values.pack(p);
    p.finish();
    const bool narrow = values.span() < (1ll << 30) && static_cast<long long>(n) < (1ll << 30);
    const char* form = vector ? "_vector" : linear ? "_linear" : "_strided";
    return {k.name + form + (narrow ? "32" : "64"), std::move(p.bytes), vector ? (n + 3) / 4 : n, false};
  }
}

}  // namespace ctflow::backend::cuda

namespace ctflow {

template <class E> std::string cuda::kernel_source(const E&) {
  return backend::cuda::kernel_for<std::remove_cvref_t<E>>().source;
}

}  // namespace ctflow
