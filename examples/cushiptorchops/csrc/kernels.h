// Launchers of the CUDA kernels. Plain C++ on both sides: no torch header here, so kernels.cu
// compiles in seconds per GPU architecture and both bindings (ops.cpp against libtorch's C++
// API, stable/ops.cpp against torch's stable C ABI) share it.
#pragma once

#include <cstdint>

namespace cushiptorchops {

// The element types the kernels take; the bindings map torch's dtypes onto these.
enum class DType : int { Float32 = 0, Float64 = 1, Float16 = 2, BFloat16 = 3 };

// Each launcher enqueues its kernel on `stream` (a cudaStream_t) of the current device and
// returns nullptr, or the CUDA error's message. Pointers are to contiguous device memory.

// out[r, c] = gelu(x[r, c] + bias[c]) for `rows` rows of `cols` values (exact, erf-based GELU).
const char* bias_gelu_cuda(DType dtype, const void* x, const void* bias, void* out, int64_t rows,
                           int64_t cols, void* stream);

// out[r, c] = x[r, c] / sqrt(mean(x[r, :]^2) + eps) * weight[c].
const char* rms_norm_cuda(DType dtype, const void* x, const void* weight, void* out, int64_t rows,
                          int64_t cols, double eps, void* stream);

}  // namespace cushiptorchops
