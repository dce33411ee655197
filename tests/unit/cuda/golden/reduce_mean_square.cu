
namespace {

struct ctflow_args {
  float* out;
  long long groups, count;
  long long kept[2];  // the operand's extents on kept axes, 1 on reduced ones
  long long reduced[2];  // its extents on reduced axes, 1 on kept ones
  const float* in0;
  const float* in1;
  long long strides[2][2];
  double identity;
};

struct f0 {  // ctflow::ops::multiply_fn
  template <class X> __device__ __forceinline__ auto operator()(const X& a, const X& b) const { return X(a * b); }
};
struct ctflow_combine {  // ctflow::ops::sum_op<double>
  template <class X> __device__ __forceinline__ X operator()(const X& a, const X& b) const { return X(a + b); }
};

constexpr int R = 2, K = 2, KM = K > 0 ? K : 1;
using ctflow_acc = double;
using ctflow_out = float;  // what out's elements are computed as

template <class I> __device__ __forceinline__ ctflow_acc ctflow_element(const ctflow_args& a, const I* o) {
  return ctflow_acc(f0{}(ctflow_load(a.in0 + o[0]), ctflow_load(a.in1 + o[1])));
}

__device__ __forceinline__ void ctflow_finish(const ctflow_args& a, long long g, ctflow_acc v) {
  if (a.count == 0) return ctflow_store(a.out + g, ctflow_out(v));
  ctflow_store(a.out + g, ctflow_out(v / ctflow_acc(a.count)));
}

