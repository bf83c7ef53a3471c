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

// Number of visible CUDA devices in *count (0 on failure; the error code is returned).
int cuvecops_device_count(int* count);

// Human-readable text of a CUDA error code (never NULL).
const char* cuvecops_error_string(int code);

// out[i] = a * x[i] + y[i] for n float32 values (host pointers).
int cuvecops_saxpy(float a, const float* x, const float* y, float* out, size_t n);

// Numerically stable softmax of each row of a rows x cols float32 matrix (host pointers).
int cuvecops_softmax_rows(const float* x, float* out, size_t rows, size_t cols);

// Sum of n values of the given dtype (host pointer). Floats are summed in double precision
// (*out_f), integers in int64 (*out_i).
int cuvecops_reduce_sum(int dtype, const void* x, size_t n, double* out_f, int64_t* out_i);

#ifdef __cplusplus
}
#endif
