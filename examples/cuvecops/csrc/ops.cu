// CUDA kernels of cuvecops and their host wrappers (copies in, launch, copy out).
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "ops.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxReduceBlocks = 1024;

// Frees device memory when the wrapper returns, whatever path it takes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  cudaError_t allocate(size_t bytes) { return cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

#define CUVECOPS_TRY(expr)                  \
  do {                                      \
    cudaError_t err_ = (expr);              \
    if (err_ != cudaSuccess) return err_;   \
  } while (0)

cudaError_t finish_launch() {
  CUVECOPS_TRY(cudaGetLastError());
  return cudaDeviceSynchronize();
}

__global__ void saxpy_kernel(float a, const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ out, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * x[i] + y[i];
  }
}

// Tree reduction of one value per thread in shared memory; thread 0 gets the block's result.
template <typename T, int BLOCK, typename Op>
__device__ T block_reduce(T value, T* shared, Op op) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int width = BLOCK / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  T result = shared[0];
  __syncthreads();  // shared is reused by the caller's next reduction
  return result;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T>
struct SumOp {
  __device__ T operator()(T a, T b) const { return a + b; }
};

// One block per row: max, then sum of exp(x - max), then the normalised values.
template <int BLOCK>
__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ out,
                                    size_t cols) {
  __shared__ float shared[BLOCK];
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float* dst = out + static_cast<size_t>(blockIdx.x) * cols;

  float local_max = -FLT_MAX;
  for (size_t c = threadIdx.x; c < cols; c += BLOCK) local_max = fmaxf(local_max, row[c]);
  float row_max = block_reduce<float, BLOCK>(local_max, shared, MaxOp{});

  float local_sum = 0.0f;
  for (size_t c = threadIdx.x; c < cols; c += BLOCK) local_sum += expf(row[c] - row_max);
  float row_sum = block_reduce<float, BLOCK>(local_sum, shared, SumOp<float>{});

  float inv = 1.0f / row_sum;
  for (size_t c = threadIdx.x; c < cols; c += BLOCK) dst[c] = expf(row[c] - row_max) * inv;
}

// Grid-stride partial sums in accumulator type Acc; one partial per block.
template <typename T, typename Acc, int BLOCK>
__global__ void reduce_sum_kernel(const T* __restrict__ x, Acc* __restrict__ partials, size_t n) {
  __shared__ Acc shared[BLOCK];
  Acc local = Acc(0);
  size_t stride = static_cast<size_t>(gridDim.x) * BLOCK;
  for (size_t i = static_cast<size_t>(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) {
    local += static_cast<Acc>(x[i]);
  }
  Acc total = block_reduce<Acc, BLOCK>(local, shared, SumOp<Acc>{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

unsigned grid_for(size_t n, size_t cap) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

// Two passes: many blocks write partials, then one block sums the partials.
template <typename T, typename Acc>
cudaError_t reduce_sum_typed(const void* host_x, size_t n, Acc* result) {
  *result = Acc(0);
  if (n == 0) return cudaSuccess;
  unsigned blocks = grid_for(n, kMaxReduceBlocks);
  DeviceBuffer x, partials, total;
  CUVECOPS_TRY(x.allocate(n * sizeof(T)));
  CUVECOPS_TRY(partials.allocate(blocks * sizeof(Acc)));
  CUVECOPS_TRY(total.allocate(sizeof(Acc)));
  CUVECOPS_TRY(cudaMemcpy(x.as<T>(), host_x, n * sizeof(T), cudaMemcpyHostToDevice));
  reduce_sum_kernel<T, Acc, kThreads><<<blocks, kThreads>>>(x.as<T>(), partials.as<Acc>(), n);
  CUVECOPS_TRY(cudaGetLastError());
  reduce_sum_kernel<Acc, Acc, kThreads><<<1, kThreads>>>(partials.as<Acc>(), total.as<Acc>(), blocks);
  CUVECOPS_TRY(finish_launch());
  return cudaMemcpy(result, total.as<Acc>(), sizeof(Acc), cudaMemcpyDeviceToHost);
}

}  // namespace

extern "C" int cuvecops_device_count(int* count) {
  *count = 0;
  cudaError_t err = cudaGetDeviceCount(count);
  if (err != cudaSuccess) {
    *count = 0;
    cudaGetLastError();  // clear the error so later calls start clean
  }
  return static_cast<int>(err);
}

extern "C" const char* cuvecops_error_string(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

extern "C" int cuvecops_saxpy(float a, const float* x, const float* y, float* out, size_t n) {
  if (n == 0) return cudaSuccess;
  size_t bytes = n * sizeof(float);
  DeviceBuffer dx, dy, dout;
  CUVECOPS_TRY(dx.allocate(bytes));
  CUVECOPS_TRY(dy.allocate(bytes));
  CUVECOPS_TRY(dout.allocate(bytes));
  CUVECOPS_TRY(cudaMemcpy(dx.as<float>(), x, bytes, cudaMemcpyHostToDevice));
  CUVECOPS_TRY(cudaMemcpy(dy.as<float>(), y, bytes, cudaMemcpyHostToDevice));
  saxpy_kernel<<<grid_for(n, 65535), kThreads>>>(a, dx.as<float>(), dy.as<float>(),
                                                 dout.as<float>(), n);
  CUVECOPS_TRY(finish_launch());
  return cudaMemcpy(out, dout.as<float>(), bytes, cudaMemcpyDeviceToHost);
}

extern "C" int cuvecops_softmax_rows(const float* x, float* out, size_t rows, size_t cols) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffffu) return cudaErrorInvalidValue;  // gridDim.x limit
  size_t bytes = rows * cols * sizeof(float);
  DeviceBuffer dx, dout;
  CUVECOPS_TRY(dx.allocate(bytes));
  CUVECOPS_TRY(dout.allocate(bytes));
  CUVECOPS_TRY(cudaMemcpy(dx.as<float>(), x, bytes, cudaMemcpyHostToDevice));
  softmax_rows_kernel<kThreads><<<static_cast<unsigned>(rows), kThreads>>>(
      dx.as<float>(), dout.as<float>(), cols);
  CUVECOPS_TRY(finish_launch());
  return cudaMemcpy(out, dout.as<float>(), bytes, cudaMemcpyDeviceToHost);
}

extern "C" int cuvecops_reduce_sum(int dtype, const void* x, size_t n, double* out_f,
                                   int64_t* out_i) {
  switch (dtype) {
    case CUVECOPS_F32:
      return reduce_sum_typed<float, double>(x, n, out_f);
    case CUVECOPS_F64:
      return reduce_sum_typed<double, double>(x, n, out_f);
    case CUVECOPS_I32:
      return reduce_sum_typed<int32_t, int64_t>(x, n, out_i);
    case CUVECOPS_I64:
      return reduce_sum_typed<int64_t, int64_t>(x, n, out_i);
    default:
      return cudaErrorInvalidValue;
  }
}
