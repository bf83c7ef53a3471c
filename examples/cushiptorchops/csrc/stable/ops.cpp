// cushiptorchops against torch's stable ABI: the same ops, schemas and kernels as ../ops.cpp,
// written with torch/csrc/stable and torch/headeronly only. Every call into torch goes through
// its stable C shim (aoti_torch_*, torch_*), so the shared object imports no c10::/at:: symbol
// and loads into any torch at least as new as TORCH_TARGET_VERSION (setup.py sets it to the
// torch it compiles against).
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cmath>
#include <cstdint>

#include "kernels.h"

namespace cushiptorchops {
namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

template <class T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

void check_row_op(const char* op, const Tensor& x, const Tensor& vec, const char* what) {
  STD_TORCH_CHECK(x.dim() >= 1, op, ": x must have at least one dimension, got a 0-d tensor");
  STD_TORCH_CHECK(vec.dim() == 1 && vec.size(0) == x.size(-1), op, ": ", what,
                  " must be 1-D with x.size(-1) = ", x.size(-1), " values");
  STD_TORCH_CHECK(vec.scalar_type() == x.scalar_type(), op, ": ", what,
                  " and x have different dtypes");
  STD_TORCH_CHECK(vec.device() == x.device(), op, ": ", what, " and x are on different devices");
}

int64_t cols_of(const Tensor& x) { return x.size(-1); }
int64_t rows_of(const Tensor& x) { return cols_of(x) == 0 ? 0 : x.numel() / cols_of(x); }

#define CUSHIPTORCHOPS_DISPATCH(TYPE, NAME, ...)                          \
  THO_DISPATCH_SWITCH(TYPE, NAME,                                         \
                      THO_DISPATCH_CASE(ScalarType::Float, __VA_ARGS__)   \
                      THO_DISPATCH_CASE(ScalarType::Double, __VA_ARGS__)  \
                      THO_DISPATCH_CASE(ScalarType::Half, __VA_ARGS__)    \
                      THO_DISPATCH_CASE(ScalarType::BFloat16, __VA_ARGS__))

// --- CPU -------------------------------------------------------------------------------------
template <class T> void bias_gelu_rows(const T* x, const T* bias, T* out, int64_t b, int64_t e,
                                       int64_t cols) {
  using A = typename Acc<T>::type;
  for (int64_t r = b; r < e; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const A v = static_cast<A>(x[r * cols + c]) + static_cast<A>(bias[c]);
      out[r * cols + c] = static_cast<T>(A(0.5) * v * (A(1) + std::erf(v * A(M_SQRT1_2))));
    }
  }
}

Tensor bias_gelu_cpu(Tensor x, Tensor bias) {
  check_row_op("bias_gelu", x, bias, "bias");
  const Tensor xc = torch::stable::contiguous(x), bc = torch::stable::contiguous(bias);
  Tensor out = torch::stable::empty_like(xc);
  const int64_t rows = rows_of(xc), cols = cols_of(xc);
  CUSHIPTORCHOPS_DISPATCH(xc.scalar_type(), "bias_gelu", [&] {
    const scalar_t* px = xc.const_data_ptr<scalar_t>();
    const scalar_t* pb = bc.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    torch::stable::parallel_for(0, rows, 64, [&](int64_t b, int64_t e) {
      bias_gelu_rows(px, pb, po, b, e, cols);
    });
  });
  return out;
}

template <class T> void rms_norm_rows(const T* x, const T* w, T* out, int64_t b, int64_t e,
                                      int64_t cols, double eps) {
  using A = typename Acc<T>::type;
  for (int64_t r = b; r < e; ++r) {
    const T* row = x + r * cols;
    A squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += static_cast<A>(row[c]) * static_cast<A>(row[c]);
    const A scale = A(1) / std::sqrt(squares / static_cast<A>(cols) + static_cast<A>(eps));
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = static_cast<T>(static_cast<A>(row[c]) * scale * static_cast<A>(w[c]));
    }
  }
}

Tensor rms_norm_cpu(Tensor x, Tensor weight, double eps) {
  check_row_op("rms_norm", x, weight, "weight");
  const Tensor xc = torch::stable::contiguous(x), wc = torch::stable::contiguous(weight);
  Tensor out = torch::stable::empty_like(xc);
  const int64_t rows = rows_of(xc), cols = cols_of(xc);
  CUSHIPTORCHOPS_DISPATCH(xc.scalar_type(), "rms_norm", [&] {
    const scalar_t* px = xc.const_data_ptr<scalar_t>();
    const scalar_t* pw = wc.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    torch::stable::parallel_for(0, rows, 16, [&](int64_t b, int64_t e) {
      rms_norm_rows(px, pw, po, b, e, cols, eps);
    });
  });
  return out;
}

// --- CUDA ------------------------------------------------------------------------------------
DType kernel_dtype(const char* op, ScalarType type) {
  switch (type) {
    case ScalarType::Float: return DType::Float32;
    case ScalarType::Double: return DType::Float64;
    case ScalarType::Half: return DType::Float16;
    case ScalarType::BFloat16: return DType::BFloat16;
    default: break;
  }
  STD_TORCH_CHECK(false, op, ": unsupported dtype");
  return DType::Float32;
}

void check_launch(const char* op, const char* error) {
  STD_TORCH_CHECK(error == nullptr, op, ": CUDA kernel launch failed: ", error);
}

Tensor bias_gelu_cuda_op(Tensor x, Tensor bias) {
  check_row_op("bias_gelu", x, bias, "bias");
  const auto device = x.get_device_index();
  const torch::stable::accelerator::DeviceGuard guard(device);
  const Tensor xc = torch::stable::contiguous(x), bc = torch::stable::contiguous(bias);
  Tensor out = torch::stable::empty_like(xc);
  void* stream = torch::stable::accelerator::getCurrentStream(device).nativeHandle();
  check_launch("bias_gelu", bias_gelu_cuda(kernel_dtype("bias_gelu", xc.scalar_type()),
                                           xc.const_data_ptr(), bc.const_data_ptr(),
                                           out.mutable_data_ptr(), rows_of(xc), cols_of(xc),
                                           stream));
  return out;
}

Tensor rms_norm_cuda_op(Tensor x, Tensor weight, double eps) {
  check_row_op("rms_norm", x, weight, "weight");
  const auto device = x.get_device_index();
  const torch::stable::accelerator::DeviceGuard guard(device);
  const Tensor xc = torch::stable::contiguous(x), wc = torch::stable::contiguous(weight);
  Tensor out = torch::stable::empty_like(xc);
  void* stream = torch::stable::accelerator::getCurrentStream(device).nativeHandle();
  check_launch("rms_norm", rms_norm_cuda(kernel_dtype("rms_norm", xc.scalar_type()),
                                         xc.const_data_ptr(), wc.const_data_ptr(),
                                         out.mutable_data_ptr(), rows_of(xc), cols_of(xc), eps,
                                         stream));
  return out;
}

}  // namespace
}  // namespace cushiptorchops

STABLE_TORCH_LIBRARY(cushiptorchops, m) {
  m.def("bias_gelu(Tensor x, Tensor bias) -> Tensor");
  m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(cushiptorchops, CPU, m) {
  m.impl("bias_gelu", TORCH_BOX(&cushiptorchops::bias_gelu_cpu));
  m.impl("rms_norm", TORCH_BOX(&cushiptorchops::rms_norm_cpu));
}

STABLE_TORCH_LIBRARY_IMPL(cushiptorchops, CUDA, m) {
  m.impl("bias_gelu", TORCH_BOX(&cushiptorchops::bias_gelu_cuda_op));
  m.impl("rms_norm", TORCH_BOX(&cushiptorchops::rms_norm_cuda_op));
}
