// CUDA kernels of cuvecops and their host wrappers: the host-pointer entry points copy in, launch
// on the legacy default stream, synchronise and copy out; the device-pointer entry points only
// enqueue work on the caller's stream.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>
#include <mutex>
#include <vector>

#include "ops.h"

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxGridBlocks = 65535;
constexpr size_t kMaxReduceBlocks = 1024;

#define CUVECOPS_TRY(expr)                  \
  do {                                      \
    cudaError_t err_ = (expr);              \
    if (err_ != cudaSuccess) return err_;   \
  } while (0)

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

// A stream-ordered memory pool per device that keeps what it holds across synchronisations. The
// device's default pool gives its memory back at every synchronisation (release threshold 0), so
// each call would map fresh memory; this one stays at the few KiB the reductions need.
cudaError_t scratch_pool(int device, cudaMemPool_t* pool) {
  static std::mutex lock;
  static std::vector<cudaMemPool_t> pools;  // by device ordinal; nullptr until made
  std::lock_guard<std::mutex> hold(lock);
  if (device < 0) return cudaErrorInvalidDevice;
  if (static_cast<size_t>(device) >= pools.size()) pools.resize(device + 1, nullptr);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t made = nullptr;
    CUVECOPS_TRY(cudaMemPoolCreate(&made, &props));
    uint64_t keep = UINT64_MAX;
    cudaError_t err = cudaMemPoolSetAttribute(made, cudaMemPoolAttrReleaseThreshold, &keep);
    if (err != cudaSuccess) {
      cudaMemPoolDestroy(made);
      return err;
    }
    pools[device] = made;
  }
  *pool = pools[device];
  return cudaSuccess;
}

// Scratch memory ordered on a stream: from the device's scratch pool where it has memory pools,
// else cudaMalloc, and a synchronisation of the stream before cudaFree.
class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t stream) : stream_(stream) {}
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    if (ptr_ == nullptr) return;
    if (pooled_) {
      cudaFreeAsync(ptr_, stream_);
    } else {
      cudaStreamSynchronize(stream_);
      cudaFree(ptr_);
    }
  }
  cudaError_t allocate(int device, size_t bytes) {
    int pools = 0;
    CUVECOPS_TRY(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
    pooled_ = pools != 0;
    if (!pooled_) return cudaMalloc(&ptr_, bytes);
    cudaMemPool_t pool = nullptr;
    CUVECOPS_TRY(scratch_pool(device, &pool));
    return cudaMallocFromPoolAsync(&ptr_, bytes, pool, stream_);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
  bool pooled_ = false;
};

// Makes `device` current for the duration of a call, and restores the caller's device.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  cudaError_t use(int device) {
    int current = 0;
    CUVECOPS_TRY(cudaGetDevice(&current));
    if (current == device) return cudaSuccess;
    CUVECOPS_TRY(cudaSetDevice(device));
    previous_ = current;
    return cudaSuccess;
  }

 private:
  int previous_ = -1;
};

cudaStream_t as_stream(uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

// Orders `stream` after the work already enqueued on each of the `others`.
cudaError_t wait_for(cudaStream_t stream, const uintptr_t* others, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    cudaStream_t other = as_stream(others[i]);
    if (other == stream) continue;
    cudaEvent_t event;
    CUVECOPS_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    cudaError_t err = cudaEventRecord(event, other);
    if (err == cudaSuccess) err = cudaStreamWaitEvent(stream, event, 0);
    cudaEventDestroy(event);  // released once the recorded work completes
    CUVECOPS_TRY(err);
  }
  return cudaSuccess;
}

cudaError_t finish_launch() {
  CUVECOPS_TRY(cudaGetLastError());
  return cudaDeviceSynchronize();
}

unsigned grid_for(size_t work_items, size_t cap) {
  size_t blocks = (work_items + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;
  return static_cast<unsigned>(blocks < cap ? blocks : cap);
}

__global__ void saxpy_kernel(float a, const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ out, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = a * x[i] + y[i];
  }
}

// 16-byte loads and stores (all three pointers 16-byte aligned); the last n % 4 values are done
// one by one by the first threads.
__global__ void saxpy_vec4_kernel(float a, const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, size_t n) {
  const size_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  float4* out4 = reinterpret_cast<float4*>(out);
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = first; i < n4; i += stride) {
    float4 xv = x4[i];
    float4 yv = y4[i];
    out4[i] = make_float4(a * xv.x + yv.x, a * xv.y + yv.y, a * xv.z + yv.z, a * xv.w + yv.w);
  }
  const size_t tail = 4 * n4 + first;
  if (tail < n) out[tail] = a * x[tail] + y[tail];
}

cudaError_t launch_saxpy(float a, const float* x, const float* y, float* out, size_t n,
                         cudaStream_t stream) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y) |
                         reinterpret_cast<uintptr_t>(out);
  if (bits % 16 == 0) {
    saxpy_vec4_kernel<<<grid_for(n / 4, kMaxGridBlocks), kThreads, 0, stream>>>(a, x, y, out, n);
  } else {
    saxpy_kernel<<<grid_for(n, kMaxGridBlocks), kThreads, 0, stream>>>(a, x, y, out, n);
  }
  return cudaGetLastError();
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

cudaError_t launch_softmax_rows(const float* x, float* out, size_t rows, size_t cols,
                                cudaStream_t stream) {
  if (rows > 0x7fffffffu) return cudaErrorInvalidValue;  // gridDim.x limit
  softmax_rows_kernel<kThreads><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, out, cols);
  return cudaGetLastError();
}

// Grid-stride partial sums in accumulator type Acc; one partial per block.
template <typename T, typename Acc, int BLOCK>
__global__ void reduce_sum_kernel(const T* __restrict__ x, Acc* __restrict__ partials, size_t n) {
  __shared__ Acc shared[BLOCK];
  Acc local = Acc(0);
  const size_t stride = static_cast<size_t>(gridDim.x) * BLOCK;
  size_t i = static_cast<size_t>(blockIdx.x) * BLOCK + threadIdx.x;
  // Four independent loads per step keep more bytes in flight: a large sum is latency-bound.
  for (; i + 3 * stride < n; i += 4 * stride) {
    T v0 = x[i], v1 = x[i + stride], v2 = x[i + 2 * stride], v3 = x[i + 3 * stride];
    local += static_cast<Acc>(v0) + static_cast<Acc>(v1) + static_cast<Acc>(v2) +
             static_cast<Acc>(v3);
  }
  for (; i < n; i += stride) local += static_cast<Acc>(x[i]);
  Acc total = block_reduce<Acc, BLOCK>(local, shared, SumOp<Acc>{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Two passes: `blocks` blocks write partials, then one block sums them into *total. With one
// block the first pass writes *total directly and `partials` is not used.
template <typename T, typename Acc>
cudaError_t launch_reduce_sum(const T* x, size_t n, unsigned blocks, Acc* partials, Acc* total,
                              cudaStream_t stream) {
  if (blocks == 1) {
    reduce_sum_kernel<T, Acc, kThreads><<<1, kThreads, 0, stream>>>(x, total, n);
    return cudaGetLastError();
  }
  reduce_sum_kernel<T, Acc, kThreads><<<blocks, kThreads, 0, stream>>>(x, partials, n);
  CUVECOPS_TRY(cudaGetLastError());
  reduce_sum_kernel<Acc, Acc, kThreads><<<1, kThreads, 0, stream>>>(partials, total, blocks);
  return cudaGetLastError();
}

template <typename T, typename Acc>
cudaError_t reduce_sum_host(const void* host_x, size_t n, Acc* result) {
  *result = Acc(0);
  if (n == 0) return cudaSuccess;
  unsigned blocks = grid_for(n, kMaxReduceBlocks);
  DeviceBuffer x, partials, total;
  CUVECOPS_TRY(x.allocate(n * sizeof(T)));
  CUVECOPS_TRY(partials.allocate(blocks * sizeof(Acc)));
  CUVECOPS_TRY(total.allocate(sizeof(Acc)));
  CUVECOPS_TRY(cudaMemcpy(x.as<T>(), host_x, n * sizeof(T), cudaMemcpyHostToDevice));
  cudaError_t launched =
      launch_reduce_sum<T, Acc>(x.as<T>(), n, blocks, partials.as<Acc>(), total.as<Acc>(), nullptr);
  CUVECOPS_TRY(launched);
  CUVECOPS_TRY(finish_launch());
  return cudaMemcpy(result, total.as<Acc>(), sizeof(Acc), cudaMemcpyDeviceToHost);
}

template <typename T, typename Acc>
cudaError_t reduce_sum_device(int device, const void* x, size_t n, void* out, cudaStream_t stream) {
  Acc* total = static_cast<Acc*>(out);
  if (n == 0) return cudaMemsetAsync(total, 0, sizeof(Acc), stream);
  unsigned blocks = grid_for(n, kMaxReduceBlocks);
  StreamScratch partials(stream);
  if (blocks > 1) CUVECOPS_TRY(partials.allocate(device, blocks * sizeof(Acc)));
  return launch_reduce_sum<T, Acc>(static_cast<const T*>(x), n, blocks, partials.as<Acc>(), total,
                                   stream);
}

// The device, then the producers' streams: what every device-pointer entry point does first.
cudaError_t enter(const cuvecops_launch* launch, DeviceGuard& guard) {
  CUVECOPS_TRY(guard.use(launch->device));
  return wait_for(as_stream(launch->stream), launch->wait, launch->n_wait);
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

extern "C" int cuvecops_pointer_info(const void* ptr, int* memory, int* device) {
  cudaPointerAttributes attributes{};
  *memory = CUVECOPS_MEM_UNREGISTERED;
  *device = -1;
  cudaError_t err = cudaPointerGetAttributes(&attributes, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so the caller's next call starts clean
    return static_cast<int>(err);
  }
  *memory = static_cast<int>(attributes.type);
  *device = attributes.device;
  return cudaSuccess;
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
  CUVECOPS_TRY(launch_saxpy(a, dx.as<float>(), dy.as<float>(), dout.as<float>(), n, nullptr));
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
  CUVECOPS_TRY(launch_softmax_rows(dx.as<float>(), dout.as<float>(), rows, cols, nullptr));
  CUVECOPS_TRY(finish_launch());
  return cudaMemcpy(out, dout.as<float>(), bytes, cudaMemcpyDeviceToHost);
}

extern "C" int cuvecops_reduce_sum(int dtype, const void* x, size_t n, double* out_f,
                                   int64_t* out_i) {
  switch (dtype) {
    case CUVECOPS_F32:
      return reduce_sum_host<float, double>(x, n, out_f);
    case CUVECOPS_F64:
      return reduce_sum_host<double, double>(x, n, out_f);
    case CUVECOPS_I32:
      return reduce_sum_host<int32_t, int64_t>(x, n, out_i);
    case CUVECOPS_I64:
      return reduce_sum_host<int64_t, int64_t>(x, n, out_i);
    default:
      return cudaErrorInvalidValue;
  }
}

extern "C" int cuvecops_saxpy_device(const cuvecops_launch* launch, float a, const float* x,
                                     const float* y, float* out, size_t n) {
  if (n == 0) return cudaSuccess;
  DeviceGuard guard;
  CUVECOPS_TRY(enter(launch, guard));
  return launch_saxpy(a, x, y, out, n, as_stream(launch->stream));
}

extern "C" int cuvecops_softmax_rows_device(const cuvecops_launch* launch, const float* x,
                                            float* out, size_t rows, size_t cols) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceGuard guard;
  CUVECOPS_TRY(enter(launch, guard));
  return launch_softmax_rows(x, out, rows, cols, as_stream(launch->stream));
}

extern "C" int cuvecops_reduce_sum_device(const cuvecops_launch* launch, int dtype, const void* x,
                                          size_t n, void* out) {
  DeviceGuard guard;
  CUVECOPS_TRY(enter(launch, guard));
  cudaStream_t stream = as_stream(launch->stream);
  switch (dtype) {
    case CUVECOPS_F32:
      return reduce_sum_device<float, double>(launch->device, x, n, out, stream);
    case CUVECOPS_F64:
      return reduce_sum_device<double, double>(launch->device, x, n, out, stream);
    case CUVECOPS_I32:
      return reduce_sum_device<int32_t, int64_t>(launch->device, x, n, out, stream);
    case CUVECOPS_I64:
      return reduce_sum_device<int64_t, int64_t>(launch->device, x, n, out, stream);
    default:
      return cudaErrorInvalidValue;
  }
}
