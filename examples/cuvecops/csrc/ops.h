// C interface between the CPython module (module.cpp, host compiler) and the CUDA code (ops.cu).
// Every function returns 0 on success or a CUDA error code; cuvecops_error_string() names it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element types that reduce_sum accepts.
enum cuvecops_dtype {
  CUVECOPS_F32 = 0,
  CUVECOPS_F64 = 1,
  CUVECOPS_I32 = 2,
  CUVECOPS_I64 = 3,
};

// What cudaPointerGetAttributes says a pointer is (the values of cudaMemoryType).
enum cuvecops_memory {
  CUVECOPS_MEM_UNREGISTERED = 0,  // plain host memory CUDA knows nothing about
  CUVECOPS_MEM_HOST = 1,          // page-locked host memory
  CUVECOPS_MEM_DEVICE = 2,
  CUVECOPS_MEM_MANAGED = 3,
};

// A launch on device memory: the device the pointers live on, the stream to run on
// (a cudaStream_t as an integer: 0 or 1 the legacy default stream, 2 the per-thread one), and
// the streams whose pending work must finish first (the producers' streams).
typedef struct cuvecops_launch {
  int device;
  uintptr_t stream;
  const uintptr_t* wait;
  size_t n_wait;
} cuvecops_launch;

// Number of visible CUDA devices in *count (0 on failure; the error code is returned).
int cuvecops_device_count(int* count);

// Human-readable text of a CUDA error code (never NULL).
const char* cuvecops_error_string(int code);

// The kind of memory ptr points to (a cuvecops_memory) and, for device or managed memory,
// the device it lives on.
int cuvecops_pointer_info(const void* ptr, int* memory, int* device);

// out[i] = a * x[i] + y[i] for n float32 values (host pointers).
int cuvecops_saxpy(float a, const float* x, const float* y, float* out, size_t n);

// Numerically stable softmax of each row of a rows x cols float32 matrix (host pointers).
int cuvecops_softmax_rows(const float* x, float* out, size_t rows, size_t cols);

// Sum of n values of the given dtype (host pointer). Floats are summed in double precision
// (*out_f), integers in int64 (*out_i).
int cuvecops_reduce_sum(int dtype, const void* x, size_t n, double* out_f, int64_t* out_i);

// The same ops on device pointers: enqueued on launch->stream, no copies, no synchronisation.
int cuvecops_saxpy_device(const cuvecops_launch* launch, float a, const float* x, const float* y,
                          float* out, size_t n);
int cuvecops_softmax_rows_device(const cuvecops_launch* launch, const float* x, float* out,
                                 size_t rows, size_t cols);
// The total goes to device memory: a double for float dtypes, an int64 for integer dtypes.
int cuvecops_reduce_sum_device(const cuvecops_launch* launch, int dtype, const void* x, size_t n,
                               void* out);

#ifdef __cplusplus
}
#endif
