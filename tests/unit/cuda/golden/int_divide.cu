
namespace {

struct ctflow_args {
  int* out;
  long long n;
  long long dims[2];
  const float* in0;
  const float* in1;
  long long strides[2][2];
};

struct f0 {  // ctflow::ops::divide_fn
  template <class X> __device__ __forceinline__ auto operator()(const X& a, const X& b) const { if constexpr (math::is_integral<X>) { if (b == X(0)) return math::invalid<X>("ctflow::divide: integer division by zero"); if constexpr (math::is_signed<X>) if (b == X(-1)) return X(-a); } return X(a / b); }
};

constexpr int R = 2, K = 2, KM = K > 0 ? K : 1;

template <class I> __device__ __forceinline__ void ctflow_element(const ctflow_args& a, I i, const I* o) {
  ctflow_store(a.out + i, f0{}(ctflow_cast<int>(ctflow_load(a.in0 + o[0])), ctflow_cast<int>(ctflow_load(a.in1 + o[1]))));
}
template <class I> __device__ __forceinline__ void ctflow_element4(const ctflow_args& a, I i) {
  const ctflow_quad<float> q0 = ctflow_load4(a.in0 + i);
  const ctflow_quad<float> q1 = ctflow_load4(a.in1 + i);
  ctflow_quad<int> r;
  for (int l = 0; l < 4; ++l) ctflow_store(r.v + l, f0{}(ctflow_cast<int>(ctflow_load(q0.v + l)), ctflow_cast<int>(ctflow_load(q1.v + l))));
  ctflow_store4(a.out + i, r);
}

