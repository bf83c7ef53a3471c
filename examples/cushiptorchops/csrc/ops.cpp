// cushiptorchops against libtorch's C++ API: the op schemas (TORCH_LIBRARY), CPU kernels and the
// CUDA bindings (TORCH_LIBRARY_IMPL ... CUDA). This file uses at::Tensor, c10 and ATen, so the
// shared object imports mangled c10::/at:: symbols: it loads only into the torch X.Y it was
// compiled against (the "exact" torch ABI). The CUDA side needs nothing from torch's CUDA
// libraries: the device guard and the current stream go through c10's device-generic interface,
// which libc10_cuda fills in at run time when torch has CUDA.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/library.h>

#include <cmath>

#include "kernels.h"

namespace cushiptorchops {
namespace {

template <class T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

void check_row_op(const char* op, const at::Tensor& x, const at::Tensor& vec, const char* what) {
  TORCH_CHECK(x.dim() >= 1, op, ": x must have at least one dimension, got a 0-d tensor");
  TORCH_CHECK(vec.dim() == 1 && vec.size(0) == x.size(-1), op, ": ", what,
              " must be 1-D with x.size(-1) = ", x.size(-1), " values, got shape ", vec.sizes());
  TORCH_CHECK(vec.scalar_type() == x.scalar_type(), op, ": ", what,
              " and x have different dtypes (", vec.scalar_type(), ", ", x.scalar_type(), ")");
  TORCH_CHECK(vec.device() == x.device(), op, ": ", what, " and x are on different devices (",
              vec.device(), ", ", x.device(), ")");
}

int64_t cols_of(const at::Tensor& x) { return x.size(-1); }
int64_t rows_of(const at::Tensor& x) { return cols_of(x) == 0 ? 0 : x.numel() / cols_of(x); }

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

at::Tensor bias_gelu_cpu(const at::Tensor& x, const at::Tensor& bias) {
  check_row_op("bias_gelu", x, bias, "bias");
  const at::Tensor xc = x.contiguous(), bc = bias.contiguous();
  at::Tensor out = at::empty_like(xc);
  const int64_t rows = rows_of(xc), cols = cols_of(xc);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "bias_gelu", [&] {
    const scalar_t* px = xc.const_data_ptr<scalar_t>();
    const scalar_t* pb = bc.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, rows, 64, [&](int64_t b, int64_t e) {
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

at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_row_op("rms_norm", x, weight, "weight");
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
  at::Tensor out = at::empty_like(xc);
  const int64_t rows = rows_of(xc), cols = cols_of(xc);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "rms_norm", [&] {
    const scalar_t* px = xc.const_data_ptr<scalar_t>();
    const scalar_t* pw = wc.const_data_ptr<scalar_t>();
    scalar_t* po = out.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t b, int64_t e) {
      rms_norm_rows(px, pw, po, b, e, cols, eps);
    });
  });
  return out;
}

// --- CUDA ------------------------------------------------------------------------------------
DType kernel_dtype(const char* op, at::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::Float32;
    case at::kDouble: return DType::Float64;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    default: break;
  }
  TORCH_CHECK(false, op, ": unsupported dtype ", type);
}

void* current_stream(const at::Device& device) {
  const c10::impl::VirtualGuardImpl impl(device.type());
  return impl.getStream(device).native_handle();
}

void check_launch(const char* op, const char* error) {
  TORCH_CHECK(error == nullptr, op, ": CUDA kernel launch failed: ", error);
}

at::Tensor bias_gelu_cuda_op(const at::Tensor& x, const at::Tensor& bias) {
  check_row_op("bias_gelu", x, bias, "bias");
  const c10::DeviceGuard guard(x.device());
  const at::Tensor xc = x.contiguous(), bc = bias.contiguous();
  at::Tensor out = at::empty_like(xc);
  check_launch("bias_gelu", bias_gelu_cuda(kernel_dtype("bias_gelu", xc.scalar_type()),
                                           xc.const_data_ptr(), bc.const_data_ptr(),
                                           out.mutable_data_ptr(), rows_of(xc), cols_of(xc),
                                           current_stream(xc.device())));
  return out;
}

at::Tensor rms_norm_cuda_op(const at::Tensor& x, const at::Tensor& weight, double eps) {
  check_row_op("rms_norm", x, weight, "weight");
  const c10::DeviceGuard guard(x.device());
  const at::Tensor xc = x.contiguous(), wc = weight.contiguous();
  at::Tensor out = at::empty_like(xc);
  check_launch("rms_norm", rms_norm_cuda(kernel_dtype("rms_norm", xc.scalar_type()),
                                         xc.const_data_ptr(), wc.const_data_ptr(),
                                         out.mutable_data_ptr(), rows_of(xc), cols_of(xc), eps,
                                         current_stream(xc.device())));
  return out;
}

}  // namespace
}  // namespace cushiptorchops

TORCH_LIBRARY(cushiptorchops, m) {
  m.def("bias_gelu(Tensor x, Tensor bias) -> Tensor");
  m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
}

TORCH_LIBRARY_IMPL(cushiptorchops, CPU, m) {
  m.impl("bias_gelu", &cushiptorchops::bias_gelu_cpu);
  m.impl("rms_norm", &cushiptorchops::rms_norm_cpu);
}

TORCH_LIBRARY_IMPL(cushiptorchops, CUDA, m) {
  m.impl("bias_gelu", &cushiptorchops::bias_gelu_cuda_op);
  m.impl("rms_norm", &cushiptorchops::rms_norm_cuda_op);
}
