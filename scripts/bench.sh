#!/usr/bin/env bash
# Runs the benchmarks and their PyTorch peers in one run and prints the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh bench
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTFLOW_BUILD_BENCHMARKS=ON >/dev/null
cmake --build build --target benchmarks embedded_headers -j "$(nproc)"  # (the exported networks: their size)
reps="--benchmark_repetitions=5 --benchmark_report_aggregates_only=true"
# Kernels compared with the triad run it in their own binary, repetitions interleaved with theirs:
# this machine's bandwidth drifts by tens of percent within a minute.
mixed="--benchmark_repetitions=9 --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true"

# field FILE PREFIX [COUNTER]: the median row starting with PREFIX; its time, or COUNTER's value.
field() {
  awk -v t="$2" -v c="${3:-}" 'index($1, t) == 1 {
    if (c == "") { print $2; exit }
    for (i = 1; i <= NF; ++i) if (index($i, c "=") == 1) { v = substr($i, length(c) + 2); sub(/\/s$/, "", v); print v; exit }
  }' "$1"
}
ratio() { echo "$1 / $2" | bc -l | cut -c1-5; }

echo "== GEMM (GFLOP/s) against OpenBLAS at its best core type and the FMA peak in the same run"
echo "   (goals: ahead of OpenBLAS at every shape; 90% of the peak on 1 thread from n = 512; the static shapes in 2/3 of OpenBLAS's time)"
OPENBLAS_CORETYPE=SkylakeX ./build/bench/bench_gemm $mixed --benchmark_filter="${GEMM_FILTER:-.}" 2>/dev/null \
  | grep median | tee /tmp/ctflow_gemm.txt
# Every shape the run measured (threads, then m, k, n), in order of threads and size.
sed -nE 's#^ctflow_sgemm/(m:[0-9]+/k:[0-9]+/n:[0-9]+)/threads:([0-9]+)/.*#\2 \1#p' /tmp/ctflow_gemm.txt | sort -V |
while read -r t shape; do
  peak=$(field /tmp/ctflow_gemm.txt "fma_peak/$t/" GFLOP/s)
  ours=$(field /tmp/ctflow_gemm.txt "ctflow_sgemm/$shape/threads:$t/" GFLOP/s)
  blas=$(field /tmp/ctflow_gemm.txt "openblas_sgemm/$shape/threads:$t/" GFLOP/s)
  [ -n "$blas" ] && [ -n "$peak" ] || continue
  echo "threads=$t $shape: ctflow ${ours}, OpenBLAS ${blas}, FMA peak ${peak}; ctflow/OpenBLAS $(ratio "$ours" "$blas"), ctflow/peak $(ratio "$ours" "$peak")"
done
# small_time NAME: the median time of a benchmark whose name holds spaces (the static shapes).
small_time() { awk -v t="$1_median" 'index($0, t) == 1 { split(substr($0, length(t) + 1), f, " "); print f[1]; exit }' /tmp/ctflow_gemm.txt; }
sed -nE 's#^ctflow_small<([0-9, ]+)>_median.*#\1#p' /tmp/ctflow_gemm.txt | while read -r shape; do
  ours=$(small_time "ctflow_small<$shape>")
  blas=$(small_time "openblas_small<$shape>")
  [ -n "$blas" ] || continue
  echo "static $shape: ctflow ${ours} ns, OpenBLAS ${blas} ns; ctflow/OpenBLAS $(ratio "$ours" "$blas")"
done

echo "== element-wise and reductions (GB/s) against STREAM triad"
./build/bench/bench_elementwise $mixed ${EW_FILTER:+--benchmark_filter=$EW_FILTER} 2>/dev/null | grep median | tee /tmp/ctflow_elementwise.txt
/usr/bin/python3 bench/peers/elementwise_torch.py 1 2 | tee /tmp/ctflow_torch.txt
for t in 1 2; do
  ours=$(field /tmp/ctflow_elementwise.txt "fused3/$t/" GB/s)
  triad=$(field /tmp/ctflow_elementwise.txt "triad/$t/" GB/s)
  torch=$(field /tmp/ctflow_torch.txt "torch_fused3/$t")
  echo "threads=$t fused3: ctflow ${ours} GB/s, triad ${triad} GB/s, torch ${torch} GB/s; ctflow/triad $(ratio "$ours" "$triad"), ctflow/torch $(ratio "$ours" "$torch")"
done
for c in 10 64; do
  ours=$(field /tmp/ctflow_elementwise.txt "softmax_rows/$c/" GB/s)
  torch=$(field /tmp/ctflow_torch.txt "torch_softmax/$c")
  echo "softmax over rows of $c classes, 1 thread: ctflow ${ours} GB/s, torch ${torch} GB/s; ctflow/torch $(ratio "$ours" "$torch")"
done

echo "== loss and gradients of an MLP 784-256-256-10 at batch 64 (median us per step)"
./build/bench/bench_autodiff $reps 2>/dev/null | grep median | tee /tmp/ctflow_autodiff.txt
/usr/bin/python3 bench/peers/autodiff_torch.py 1 2 | tee /tmp/ctflow_autodiff_torch.txt
for t in 1 2; do
  ours=$(field /tmp/ctflow_autodiff.txt "value_and_grad_mlp/$t/")
  hand=$(field /tmp/ctflow_autodiff.txt "handwritten_mlp/$t/")
  torch=$(field /tmp/ctflow_autodiff_torch.txt "torch_mlp/$t")
  echo "threads=$t: value_and_grad ${ours} us, hand-written ${hand} us, torch ${torch} us; torch/ctflow $(ratio "$torch" "$ours"), ctflow/hand-written $(ratio "$ours" "$hand")"
done

echo "== data pipeline: TFRecord read with CRC checks (GB/s, one core) and a Fashion-MNIST input pipeline"
./build/bench/bench_data $reps 2>/dev/null | grep median | tee /tmp/ctflow_data.txt
/usr/bin/python3 bench/peers/data_torch.py 1 2 | tee /tmp/ctflow_data_torch.txt
for size in 1024 102400; do
  ours=$(field /tmp/ctflow_data.txt "tfrecord_read/$size/" GB/s)
  raw=$(field /tmp/ctflow_data.txt "raw_read/1024/" GB/s)
  echo "TFRecord records of $size bytes: ${ours} GB/s (goal >= 1), $(ratio "$ours" "$raw") of a plain read of the file"
done
for t in 1 2; do
  ours=$(field /tmp/ctflow_data.txt "fashion_mnist_pipeline/$t/" examples/s | sed 's/k$//')
  torch=$(awk -v t="torch_pipeline/$t" '$1 == t { print $2 / 1000 }' /tmp/ctflow_data_torch.txt)
  echo "threads=$t pipeline: ctflow ${ours}k examples/s, torch DataLoader ${torch}k; ctflow/torch $(ratio "$ours" "$torch") (goal >= 3)"
done

echo "== sparse softmax cross-entropy forward+backward over [1024, 1000] (GB/s) against STREAM triad"
./build/bench/bench_nn $mixed 2>/dev/null | grep median | tee /tmp/ctflow_nn.txt
/usr/bin/python3 bench/peers/nn_torch.py 1 2 | tee /tmp/ctflow_nn_torch.txt
for t in 1 2; do
  ours=$(field /tmp/ctflow_nn.txt "sparse_xent/$t/" GB/s)
  triad=$(field /tmp/ctflow_nn.txt "triad/$t/" GB/s)
  torch=$(field /tmp/ctflow_nn_torch.txt "torch_sparse_xent/$t")
  echo "threads=$t sparse_xent: ctflow ${ours} GB/s, triad ${triad} GB/s, torch ${torch} GB/s; ctflow/triad $(ratio "$ours" "$triad") (goal >= 0.8), ctflow/torch $(ratio "$ours" "$torch")"
done

echo "== convolutions (2 threads, GFLOP/s): forward (0), backward to the input (1), to the filter (2)"
for c in mnist1 mnist2 resnet; do
  for p in 0 1 2; do
    ours=$(field /tmp/ctflow_nn.txt "conv/$c/$p/" GFLOP/s)
    torch=$(field /tmp/ctflow_nn_torch.txt "torch_conv/$c/$p")
    echo "conv $c pass $p: ctflow ${ours} GFLOP/s, torch ${torch} GFLOP/s; ctflow/torch $(ratio "$ours" "$torch") (goal >= 1.5)"
  done
done
peak=$(field /tmp/ctflow_nn.txt "fma_peak/2/" GFLOP/s)
echo "ResNet conv forward: $(ratio "$(field /tmp/ctflow_nn.txt "conv/resnet/0/" GFLOP/s)" "$peak") of the FMA peak on 2 threads in this run, ${peak} GFLOP/s (goal >= 0.7)"

echo "== max_pool2d forward+backward (GB/s, 3 |x| + 3 |y| bytes) against STREAM triad"
for c in mnist resnet; do
  for t in 1 2; do
    ours=$(field /tmp/ctflow_nn.txt "max_pool/$c/$t/" GB/s)
    triad=$(field /tmp/ctflow_nn.txt "triad/$t/" GB/s)
    torch=$(field /tmp/ctflow_nn_torch.txt "torch_max_pool/$c/$t")
    echo "max_pool $c threads=$t: ctflow ${ours} GB/s, triad ${triad} GB/s, torch ${torch} GB/s; ctflow/triad $(ratio "$ours" "$triad") (goal >= 0.8), ctflow/torch $(ratio "$ours" "$torch")"
  done
done

echo "== checkpoints of 1 GiB (save includes fsync) and the cost of a scalar summary"
./build/bench/bench_io $reps 2>/dev/null | grep median | tee /tmp/ctflow_io.txt
/usr/bin/python3 bench/peers/io_torch.py | tee /tmp/ctflow_io_torch.txt
save=$(field /tmp/ctflow_io.txt "checkpoint_save/" GB/s)
restore=$(field /tmp/ctflow_io.txt "checkpoint_restore/" GB/s)
tsave=$(field /tmp/ctflow_io_torch.txt "torch_save_median" GB/s)
tload=$(field /tmp/ctflow_io_torch.txt "torch_load_into_median" GB/s)
echo "save: ctflow ${save} GB/s (goal >= 0.5), torch.save ${tsave} GB/s; ctflow/torch $(ratio "$save" "$tsave")"
echo "restore: ctflow ${restore} GB/s (goal >= 1), torch.load + copy ${tload} GB/s; ctflow/torch $(ratio "$restore" "$tload")"
echo "one summary::scalar call: $(field /tmp/ctflow_io.txt "summary_scalar_median") ns"

echo "== the Fashion-MNIST CNN training loop, 3 epochs: ctflow (examples/fashion_mnist_loop.cpp) and PyTorch"
cmake --build build --target fashion_mnist_loop -j "$(nproc)" >/dev/null
rm -rf /tmp/ctflow_bench_loop
/usr/bin/time -f "peak RSS: %M KB" ./build/examples/fashion_mnist_loop /tmp/ctflow_bench_loop 3 2>&1 | grep -E "^epoch|accuracy|mean epoch|peak RSS" | tee /tmp/ctflow_loop.txt
/usr/bin/python3 bench/peers/fashion_mnist_torch.py 3 | tee /tmp/ctflow_loop_torch.txt
ours=$(awk '/mean epoch time/ { print $4 }' /tmp/ctflow_loop.txt)
torch=$(awk '/mean epoch time/ { print $4 }' /tmp/ctflow_loop_torch.txt)
rss=$(awk '/peak RSS/ { print $3 / 1024 }' /tmp/ctflow_loop.txt)
trss=$(awk '/peak RSS/ { print $3 }' /tmp/ctflow_loop_torch.txt)
echo "epoch time: ctflow ${ours} s, torch ${torch} s; torch/ctflow $(ratio "$torch" "$ours") (goal >= 2)"
echo "peak RSS: ctflow ${rss} MB, torch ${trss} MB; ctflow/torch $(ratio "$rss" "$trss") (goal <= 0.5)"

echo "== the Fashion-MNIST CNN trained by fit, 3 epochs: ctflow (examples/fashion_mnist.cpp) against Keras 3 fit and the custom loop above"
echo "   (goals: fit's epoch at least 3x faster than Keras's steady epoch, at most 0.7x the custom loop's, peak RSS <= 100 MB)"
cmake --build build --target fashion_mnist -j "$(nproc)" >/dev/null
rm -rf /tmp/ctflow_bench_fit
/usr/bin/time -f "peak RSS: %M KB" ./build/examples/fashion_mnist /tmp/ctflow_bench_fit 3 2>&1 | grep -E "accuracy|mean epoch|peak RSS" | tee /tmp/ctflow_fit.txt
fit=$(awk '/mean epoch time/ { print $4 }' /tmp/ctflow_fit.txt)
frss=$(awk '/peak RSS/ { print $3 / 1024 }' /tmp/ctflow_fit.txt)
echo "fit epoch: ctflow ${fit} s, ctflow custom loop ${ours} s; fit/loop $(ratio "$fit" "$ours") (goal <= 0.7); peak RSS ${frss} MB"
if python3 -c "import tensorflow" 2>/dev/null; then
  python3 bench/peers/fashion_mnist_keras.py 3 | tee /tmp/ctflow_fit_keras.txt
  kfit=$(awk '/mean epoch time/ { print $4 }' /tmp/ctflow_fit_keras.txt)
  echo "fit epoch: ctflow ${fit} s, Keras ${kfit} s (steady); keras/ctflow $(ratio "$kfit" "$fit") (goal >= 3)"
else
  echo "TensorFlow is not installed (pip install tensorflow-cpu): no Keras fit peer"
fi

echo "== Keras model inference: the Fashion-MNIST CNN and an MLP 784-128-10 (median us per call; allocations per warm call)"
echo "   (goals: CNN batch 1 <= 28 us, MLP batch 1 <= 2.1 us, zero allocations, 2 threads never slower than 1)"
./build/bench/bench_keras $reps 2>/dev/null | grep median | tee /tmp/ctflow_keras.txt
/usr/bin/python3 bench/peers/keras_torch.py | tee /tmp/ctflow_keras_torch.txt
if python3 -c "import tensorflow" 2>/dev/null; then
  for t in 1 2; do python3 bench/peers/keras_tf.py $t; done | tee /tmp/ctflow_keras_tf.txt
else
  echo "TensorFlow is not installed (pip install tensorflow-cpu): no TensorFlow peer" > /tmp/ctflow_keras_tf.txt
fi
for m in cnn mlp; do for b in 1 256; do for t in 1 2; do
  ours=$(field /tmp/ctflow_keras.txt "keras_$m/$b/$t/")
  allocs=$(field /tmp/ctflow_keras.txt "keras_$m/$b/$t/" allocs)
  torch=$(field /tmp/ctflow_keras_torch.txt "torch_$m/$b/$t")
  tf=$(field /tmp/ctflow_keras_tf.txt "tf_$m/$b/$t")
  echo "$m batch=$b threads=$t: ctflow ${ours} us (${allocs} allocations), torch ${torch} us, TensorFlow ${tf:-n/a} us; torch/ctflow $(ratio "$torch" "$ours")${tf:+, TensorFlow/ctflow $(ratio "$tf" "$ours")}"
done; done; done

echo "== embedded deployment's peers: LiteRT (TFLite's converter, XNNPack; float and int8) and onnxruntime on the same models"
echo "   (goals: batch 1 at least 2x faster than LiteRT and every peer, float and int8, 1 and 2 threads; batch 256 at least 1.3x onnxruntime)"
if python3 -c "import tensorflow" 2>/dev/null; then
  (cd bench/peers && python3 keras_litert.py) | tee /tmp/ctflow_keras_litert.txt
else
  echo "TensorFlow is not installed (pip install tensorflow-cpu ai-edge-litert): no LiteRT peer" > /tmp/ctflow_keras_litert.txt
fi
if python3 -c "import onnxruntime, onnx" 2>/dev/null; then
  (cd bench/peers && python3 keras_onnxruntime.py) | tee /tmp/ctflow_keras_ort.txt
else
  echo "onnxruntime is not installed (pip install onnx onnxruntime): no onnxruntime peer" > /tmp/ctflow_keras_ort.txt
fi
for m in cnn mlp; do for b in 1 256; do for t in 1 2; do
  ours=$(field /tmp/ctflow_keras.txt "keras_$m/$b/$t/")
  lite=$(field /tmp/ctflow_keras_litert.txt "litert_$m/$b/$t")
  ort=$(field /tmp/ctflow_keras_ort.txt "ort_$m/$b/$t")
  echo "float $m batch=$b threads=$t: ctflow ${ours} us, LiteRT ${lite:-n/a} us, onnxruntime ${ort:-n/a} us${lite:+; LiteRT/ctflow $(ratio "$lite" "$ours")}${ort:+, onnxruntime/ctflow $(ratio "$ort" "$ours")}"
  q=$(field /tmp/ctflow_keras.txt "keras_${m}_int8/$b/$t/")
  qlite=$(field /tmp/ctflow_keras_litert.txt "litert_${m}_int8/$b/$t")
  [ -n "$q" ] && echo "int8 $m batch=$b threads=$t: ctflow ${q} us, LiteRT ${qlite:-n/a} us${qlite:+; LiteRT/ctflow $(ratio "$qlite" "$q")}"
done; done; done

echo "== size of a deployed model: a static x86-64 program running an exported network (bench/embedded_size.cpp), beside LiteRT's interpreter library"
echo "   (goal: the CNN's program at most 1/4 of the smallest peer runtime that can run it)"
lite_lib=$(python3 -c "import ai_edge_litert, os; print(os.path.join(os.path.dirname(ai_edge_litert.__file__), 'libLiteRt.so'))" 2>/dev/null || true)
lite_size=$([ -n "$lite_lib" ] && [ -f "$lite_lib" ] && stat -c %s "$lite_lib" || true)
size_flags="-std=c++20 -O2 -static -s -fno-exceptions -fno-rtti -ffunction-sections -fdata-sections -Wl,--gc-sections -Iinclude -Ibuild/tests/embedded"
g++ $size_flags bench/embedded_size.cpp -o /tmp/ctflow_size_base
base=$(stat -c %s /tmp/ctflow_size_base)
echo "the same program without a network (static C library, fopen, printf): $base bytes"
for n in cnn cnn_int8 mlp mlp_int8; do
  g++ $size_flags -DNET_HEADER="<$n.hpp>" bench/embedded_size.cpp -o /tmp/ctflow_size_$n
  bytes=$(stat -c %s /tmp/ctflow_size_$n)
  echo "$n: ${bytes} bytes, $((bytes - base)) beyond the program without it (weights included)${lite_size:+; LiteRT: libLiteRt.so, ${lite_size} bytes (without a model or its C++ runtime); ctflow/LiteRT $(ratio "$bytes" "$lite_size")}"
done

echo "== compile time"
inc="-std=c++20 -O2 -march=native -Iinclude"
/usr/bin/time -f "the element-wise op tests, one TU: %e s, %M KiB" g++ $inc -c tests/unit/ops/elementwise_test.cpp -o /dev/null
/usr/bin/time -o /dev/stdout -f "the MLP loss and its gradients (bench/autodiff_bench.cpp): %e s, %M KiB" g++ $inc -c bench/autodiff_bench.cpp -o /dev/null
/usr/bin/time -o /dev/stdout -f "matmul shape-mismatch error: %e s" g++ $inc -fsyntax-only -DCTFLOW_SHOULD_FAIL_TO_BUILD tests/compile_fail/matmul_inner.cpp 2>/dev/null || true
