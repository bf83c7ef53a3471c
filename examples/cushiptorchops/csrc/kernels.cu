// The CUDA kernels: fused bias + GELU (elementwise) and RMSNorm (one block per row).
// Arithmetic is in float for float32/float16/bfloat16 and in double for float64.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

namespace cushiptorchops {
namespace {

template <class T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

__device__ inline float to_acc(float v) { return v; }
__device__ inline double to_acc(double v) { return v; }
__device__ inline float to_acc(__half v) { return __half2float(v); }
__device__ inline float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ inline T from_acc(typename Acc<T>::type v);
template <> __device__ inline float from_acc<float>(float v) { return v; }
template <> __device__ inline double from_acc<double>(double v) { return v; }
template <> __device__ inline __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ inline __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ inline float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
__device__ inline double gelu(double v) { return 0.5 * v * (1.0 + erf(v * 0.70710678118654752)); }
__device__ inline float rsqrt_of(float v) { return rsqrtf(v); }
__device__ inline double rsqrt_of(double v) { return rsqrt(v); }

template <class T>
__global__ void bias_gelu_kernel(const T* x, const T* bias, T* out, int64_t n, int64_t cols) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = from_acc<T>(gelu(to_acc(x[i]) + to_acc(bias[i % cols])));
  }
}

constexpr int kRmsThreads = 256;

template <class A> __device__ inline A block_sum(A v) {
  __shared__ A partial[kRmsThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < kRmsThreads / 32 ? partial[threadIdx.x] : A(0);
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;  // the total, in thread 0
}

template <class T>
__global__ void rms_norm_kernel(const T* x, const T* weight, T* out, int64_t cols, double eps) {
  using A = typename Acc<T>::type;
  __shared__ A scale;
  const T* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* dst = out + static_cast<int64_t>(blockIdx.x) * cols;
  A squares = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const A v = to_acc(row[c]);
    squares += v * v;
  }
  squares = block_sum(squares);
  if (threadIdx.x == 0) scale = rsqrt_of(squares / static_cast<A>(cols) + static_cast<A>(eps));
  __syncthreads();
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dst[c] = from_acc<T>(to_acc(row[c]) * scale * to_acc(weight[c]));
  }
}

const char* status() {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <class T>
const char* launch_bias_gelu(const void* x, const void* bias, void* out, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return nullptr;
  constexpr int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 * 8 ? wanted : 65535 * 8);
  bias_gelu_kernel<T><<<blocks, threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(out), n, cols);
  return status();
}

template <class T>
const char* launch_rms_norm(const void* x, const void* weight, void* out, int64_t rows,
                            int64_t cols, double eps, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return nullptr;
  if (rows > 0x7fffffff) return "rms_norm: more than 2^31 - 1 rows";
  rms_norm_kernel<T><<<static_cast<unsigned>(rows), kRmsThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(out), cols, eps);
  return status();
}

}  // namespace

const char* bias_gelu_cuda(DType dtype, const void* x, const void* bias, void* out, int64_t rows,
                           int64_t cols, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::Float32: return launch_bias_gelu<float>(x, bias, out, rows, cols, s);
    case DType::Float64: return launch_bias_gelu<double>(x, bias, out, rows, cols, s);
    case DType::Float16: return launch_bias_gelu<__half>(x, bias, out, rows, cols, s);
    case DType::BFloat16: return launch_bias_gelu<__nv_bfloat16>(x, bias, out, rows, cols, s);
  }
  return "bias_gelu: unsupported dtype";
}

const char* rms_norm_cuda(DType dtype, const void* x, const void* weight, void* out, int64_t rows,
                          int64_t cols, double eps, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::Float32: return launch_rms_norm<float>(x, weight, out, rows, cols, eps, s);
    case DType::Float64: return launch_rms_norm<double>(x, weight, out, rows, cols, eps, s);
    case DType::Float16: return launch_rms_norm<__half>(x, weight, out, rows, cols, eps, s);
    case DType::BFloat16:
      return launch_rms_norm<__nv_bfloat16>(x, weight, out, rows, cols, eps, s);
  }
  return "rms_norm: unsupported dtype";
}

}  // namespace cushiptorchops
