#pragma once
/// @file
/// @brief The element types ctflow computes with, their TensorFlow names, and the
/// 16-bit floating storage types (bfloat16, float16) that compute in float.

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ctflow {

/// @brief bfloat16: the upper half of an IEEE float. A storage type: arithmetic runs in float.
struct bfloat16 {
  std::uint16_t bits = 0;
  constexpr bfloat16() = default;
  constexpr bfloat16(float f) : bits(from_float(f)) {}
  constexpr operator float() const { return std::bit_cast<float>(std::uint32_t(bits) << 16); }
  friend constexpr bool operator==(bfloat16 a, bfloat16 b) { return float(a) == float(b); }

 private:
  // Round to nearest even, as TensorFlow's and PyTorch's conversions do; NaN stays NaN.
  static constexpr std::uint16_t from_float(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u);
    return std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

/// @brief IEEE binary16. A storage type: arithmetic runs in float.
struct float16 {
  std::uint16_t bits = 0;
  constexpr float16() = default;
  constexpr float16(float f) : bits(from_float(f)) {}
  constexpr operator float() const { return to_float(bits); }
  friend constexpr bool operator==(float16 a, float16 b) { return float(a) == float(b); }

 private:
  static constexpr std::uint16_t from_float(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (u >> 16) & 0x8000u;
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);            // NaN
    if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);           // overflow to inf
    if (a < 0x38800000u) {                                                // subnormal or zero
      if (a < 0x33000000u) return std::uint16_t(sign);
      const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
      const int shift = 126 - int(a >> 23);                               // 14..24
      const std::uint32_t r = mant >> shift;
      const std::uint32_t rem = mant & ((1u << shift) - 1u);
      const std::uint32_t half = 1u << (shift - 1);
      return std::uint16_t(sign | (r + (rem > half || (rem == half && (r & 1u)))));
    }
    const std::uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u; // rebias 127 -> 15, round even
    return std::uint16_t(sign | (r >> 13));
  }
  static constexpr float to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
    // Subnormal: mant * 2^-24, exact in float.
    const float m = float(mant) * (1.0f / 16777216.0f);
    return sign ? -m : m;
  }
};

/// @brief The dtypes ctflow stores, each once: its TensorFlow name and its safetensors code.
template <class T> struct dtype_info;
#define CTFLOW_DTYPE(TYPE, NAME, SAFETENSORS)                                                   \
  template <> struct dtype_info<TYPE> {                                                        \
    static constexpr const char* name = NAME;                                                  \
    static constexpr const char* safetensors = SAFETENSORS;                                    \
  }
CTFLOW_DTYPE(float, "float32", "F32");
CTFLOW_DTYPE(double, "float64", "F64");
CTFLOW_DTYPE(std::int8_t, "int8", "I8");
CTFLOW_DTYPE(std::int16_t, "int16", "I16");
CTFLOW_DTYPE(std::int32_t, "int32", "I32");
CTFLOW_DTYPE(std::int64_t, "int64", "I64");
CTFLOW_DTYPE(std::uint8_t, "uint8", "U8");
CTFLOW_DTYPE(bool, "bool", "BOOL");
CTFLOW_DTYPE(bfloat16, "bfloat16", "BF16");
CTFLOW_DTYPE(float16, "float16", "F16");
#undef CTFLOW_DTYPE

/// @brief Whether T is a ctflow dtype (one of the types dtype_info names).
template <class T> inline constexpr bool is_dtype_v = requires { dtype_info<T>::name; };

/// @brief A type ctflow stores in tensors.
template <class T> concept DType = is_dtype_v<T>;

/// @brief Floating dtypes (float, double, bfloat16, float16) and integer dtypes (bool excluded).
template <class T> inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;
template <class T> inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// @brief The type arithmetic on T runs in: float for the 16-bit storage types, T otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<bfloat16> { using type = float; };
template <> struct compute_type<float16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

/// @brief TensorFlow's name of a dtype ("float32", "int64", ...).
template <class T> constexpr const char* dtype_name() {
  if constexpr (is_dtype_v<T>) return dtype_info<T>::name;
  else return "unknown";
}

}  // namespace ctflow
