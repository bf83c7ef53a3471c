// cuvecops._cuda: the CPython binding (plain C API, buffer protocol for host arrays, integer
// addresses for device arrays). No CUDA headers here: the CUDA work lives in ops.cu behind the
// C interface of ops.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ops.h"

namespace {

// Owns a Py_buffer for the duration of a call.
class Buffer {
 public:
  Buffer() { std::memset(&view_, 0, sizeof(view_)); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (held_) PyBuffer_Release(&view_);
  }
  bool acquire(PyObject* obj, const char* name, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &view_, flags) != 0) {
      PyErr_Format(PyExc_TypeError,
                   "%s: expected a C-contiguous%s buffer (numpy array, array.array, ...), got %.200s",
                   name, writable ? " writable" : "", Py_TYPE(obj)->tp_name);
      return false;
    }
    held_ = true;
    return true;
  }
  const Py_buffer& view() const { return view_; }
  Py_ssize_t count() const { return view_.itemsize ? view_.len / view_.itemsize : 0; }
  void* data() const { return view_.buf; }

 private:
  Py_buffer view_;
  bool held_ = false;
};

// Maps a struct-module format and item size to a cuvecops dtype; -1 when unsupported.
int dtype_of(const Py_buffer& view) {
  const char* fmt = view.format ? view.format : "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<') ++fmt;
  if (fmt[0] == '\0' || fmt[1] != '\0') return -1;
  switch (fmt[0]) {
    case 'f':
      return view.itemsize == 4 ? CUVECOPS_F32 : -1;
    case 'd':
      return view.itemsize == 8 ? CUVECOPS_F64 : -1;
    case 'i':
    case 'l':
    case 'q':
      if (view.itemsize == 4) return CUVECOPS_I32;
      if (view.itemsize == 8) return CUVECOPS_I64;
      return -1;
    default:
      return -1;
  }
}

bool require_f32(const Buffer& buf, const char* name) {
  if (dtype_of(buf.view()) == CUVECOPS_F32) return true;
  PyErr_Format(PyExc_TypeError, "%s: expected float32 values (format 'f'), got format '%s'",
               name, buf.view().format ? buf.view().format : "B");
  return false;
}

PyObject* raise_cuda(const char* op, int code) {
  PyErr_Format(PyExc_RuntimeError, "cuvecops.%s: CUDA error %d: %s", op, code,
               cuvecops_error_string(code));
  return nullptr;
}

// Either a fresh bytearray of `bytes` bytes, or the caller's `out` after checking it.
PyObject* output_for(PyObject* out, Buffer& out_buf, Py_ssize_t count, float** data) {
  if (out == nullptr || out == Py_None) {
    PyObject* fresh = PyByteArray_FromStringAndSize(nullptr, count * Py_ssize_t(sizeof(float)));
    if (fresh != nullptr) *data = reinterpret_cast<float*>(PyByteArray_AS_STRING(fresh));
    return fresh;
  }
  if (!out_buf.acquire(out, "out", true) || !require_f32(out_buf, "out")) return nullptr;
  if (out_buf.count() != count) {
    PyErr_Format(PyExc_ValueError, "out: expected %zd float32 values, got %zd", count,
                 out_buf.count());
    return nullptr;
  }
  *data = static_cast<float*>(out_buf.data());
  Py_INCREF(out);
  return out;
}

PyObject* py_device_count(PyObject*, PyObject*) {
  int count = 0;
  cuvecops_device_count(&count);
  return PyLong_FromLong(count);
}

PyObject* py_probe(PyObject*, PyObject*) {
  int count = 0;
  int code = cuvecops_device_count(&count);
  const char* message = code == 0 ? "" : cuvecops_error_string(code);
  return Py_BuildValue("(is)", count, message);
}

PyObject* py_saxpy(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"a", "x", "y", "out", nullptr};
  float a = 0.0f;
  PyObject *x_obj = nullptr, *y_obj = nullptr, *out_obj = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "fOO|O:saxpy", const_cast<char**>(kwlist), &a,
                                   &x_obj, &y_obj, &out_obj))
    return nullptr;
  Buffer x, y, out_buf;
  if (!x.acquire(x_obj, "x", false) || !require_f32(x, "x")) return nullptr;
  if (!y.acquire(y_obj, "y", false) || !require_f32(y, "y")) return nullptr;
  if (x.count() != y.count()) {
    PyErr_Format(PyExc_ValueError, "saxpy: x has %zd values but y has %zd", x.count(), y.count());
    return nullptr;
  }
  float* dst = nullptr;
  PyObject* result = output_for(out_obj, out_buf, x.count(), &dst);
  if (result == nullptr) return nullptr;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_saxpy(a, static_cast<const float*>(x.data()), static_cast<const float*>(y.data()),
                        dst, size_t(x.count()));
  Py_END_ALLOW_THREADS
  if (code != 0) {
    Py_DECREF(result);
    return raise_cuda("saxpy", code);
  }
  return result;
}

PyObject* py_softmax_rows(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"x", "rows", "cols", "out", nullptr};
  PyObject *x_obj = nullptr, *out_obj = nullptr;
  Py_ssize_t rows = 0, cols = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onn|O:softmax_rows", const_cast<char**>(kwlist),
                                   &x_obj, &rows, &cols, &out_obj))
    return nullptr;
  if (rows < 0 || cols < 0 || (cols > 0 && rows > PY_SSIZE_T_MAX / cols)) {
    PyErr_Format(PyExc_ValueError, "softmax_rows: bad shape rows=%zd cols=%zd", rows, cols);
    return nullptr;
  }
  Buffer x, out_buf;
  if (!x.acquire(x_obj, "x", false) || !require_f32(x, "x")) return nullptr;
  if (x.count() != rows * cols) {
    PyErr_Format(PyExc_ValueError, "softmax_rows: x has %zd values, rows*cols is %zd", x.count(),
                 rows * cols);
    return nullptr;
  }
  float* dst = nullptr;
  PyObject* result = output_for(out_obj, out_buf, x.count(), &dst);
  if (result == nullptr) return nullptr;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_softmax_rows(static_cast<const float*>(x.data()), dst, size_t(rows), size_t(cols));
  Py_END_ALLOW_THREADS
  if (code != 0) {
    Py_DECREF(result);
    return raise_cuda("softmax_rows", code);
  }
  return result;
}

PyObject* py_reduce_sum(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"x", nullptr};
  PyObject* x_obj = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:reduce_sum", const_cast<char**>(kwlist), &x_obj))
    return nullptr;
  Buffer x;
  if (!x.acquire(x_obj, "x", false)) return nullptr;
  int dtype = dtype_of(x.view());
  if (dtype < 0) {
    PyErr_Format(PyExc_TypeError,
                 "reduce_sum: expected float32, float64, int32 or int64 values, got format '%s'",
                 x.view().format ? x.view().format : "B");
    return nullptr;
  }
  double total_f = 0.0;
  int64_t total_i = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_reduce_sum(dtype, x.data(), size_t(x.count()), &total_f, &total_i);
  Py_END_ALLOW_THREADS
  if (code != 0) return raise_cuda("reduce_sum", code);
  if (dtype == CUVECOPS_F32 || dtype == CUVECOPS_F64) return PyFloat_FromDouble(total_f);
  return PyLong_FromLongLong(total_i);
}

// ---- device pointers ------------------------------------------------------------------------

// "O&" converter: a Python int holding an address or a stream handle (0 .. 2**64 - 1).
int parse_address(PyObject* obj, void* address) {
  if (!PyLong_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "expected an integer address, got %.200s", Py_TYPE(obj)->tp_name);
    return 0;
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(obj);
  if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return 0;
  *static_cast<uintptr_t*>(address) = static_cast<uintptr_t>(value);
  return 1;
}

// "O&" converter: the tuple of stream handles to wait on.
int parse_streams(PyObject* obj, void* streams) {
  if (!PyTuple_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "wait: expected a tuple of stream handles, got %.200s",
                 Py_TYPE(obj)->tp_name);
    return 0;
  }
  auto* out = static_cast<std::vector<uintptr_t>*>(streams);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); ++i) {
    uintptr_t handle = 0;
    if (!parse_address(PyTuple_GET_ITEM(obj, i), &handle)) return 0;
    out->push_back(handle);
  }
  return 1;
}

bool non_negative(const char* op, const char* name, Py_ssize_t value) {
  if (value >= 0) return true;
  PyErr_Format(PyExc_ValueError, "cuvecops.%s: %s must be >= 0, got %zd", op, name, value);
  return false;
}

const char* memory_name(int memory) {
  switch (memory) {
    case CUVECOPS_MEM_HOST:
      return "page-locked host memory";
    case CUVECOPS_MEM_UNREGISTERED:
      return "host memory unknown to CUDA";
    default:
      return "not device memory";
  }
}

// A named device address of one call.
struct Pointer {
  const char* name;
  uintptr_t address;
};

// The CUDA device all `pointers` live on; ValueError unless every one is device (or managed)
// memory on the same device.
bool locate_all(const char* op, const Pointer* pointers, size_t count, int* device) {
  for (size_t i = 0; i < count; ++i) {  // before any CUDA call: these need no device
    if (pointers[i].address == 0) {
      PyErr_Format(PyExc_ValueError, "cuvecops.%s: %s is a null device pointer", op,
                   pointers[i].name);
      return false;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const Pointer& p = pointers[i];
    int memory = 0, where = -1;
    int code = cuvecops_pointer_info(reinterpret_cast<const void*>(p.address), &memory, &where);
    if (code != 0) {
      raise_cuda(op, code);
      return false;
    }
    if (memory != CUVECOPS_MEM_DEVICE && memory != CUVECOPS_MEM_MANAGED) {
      PyErr_Format(PyExc_ValueError, "cuvecops.%s: %s (%p) is %s, not CUDA device memory", op,
                   p.name, reinterpret_cast<void*>(p.address), memory_name(memory));
      return false;
    }
    if (i > 0 && where != *device) {
      PyErr_Format(PyExc_ValueError, "cuvecops.%s: %s is on CUDA device %d but %s is on device %d",
                   op, p.name, where, pointers[0].name, *device);
      return false;
    }
    *device = where;
  }
  return true;
}

// Device of the pointers, stream and producer streams of one device-pointer call.
class Launch {
 public:
  Launch(uintptr_t stream, std::vector<uintptr_t>& wait) : wait_(wait) {
    launch_.device = 0;
    launch_.stream = stream;
    launch_.wait = wait_.data();
    launch_.n_wait = wait_.size();
  }
  bool locate(const char* op, const Pointer* pointers, size_t count) {
    return locate_all(op, pointers, count, &launch_.device);
  }
  const cuvecops_launch* get() const { return &launch_; }

 private:
  std::vector<uintptr_t>& wait_;
  cuvecops_launch launch_;
};

PyObject* finish_device(const char* op, int code) {
  if (code != 0) return raise_cuda(op, code);
  Py_RETURN_NONE;
}

PyObject* py_saxpy_device(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"a", "x", "y", "out", "n", "stream", "wait", nullptr};
  float a = 0.0f;
  uintptr_t x = 0, y = 0, out = 0, stream = 0;
  Py_ssize_t n = 0;
  std::vector<uintptr_t> wait;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "fO&O&O&n|O&O&:saxpy_device",
                                   const_cast<char**>(kwlist), &a, parse_address, &x,
                                   parse_address, &y, parse_address, &out, &n, parse_address,
                                   &stream, parse_streams, &wait))
    return nullptr;
  if (!non_negative("saxpy_device", "n", n)) return nullptr;
  if (n == 0) Py_RETURN_NONE;
  Launch launch(stream, wait);
  const Pointer pointers[] = {{"x", x}, {"y", y}, {"out", out}};
  if (!launch.locate("saxpy_device", pointers, 3)) return nullptr;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_saxpy_device(launch.get(), a, reinterpret_cast<const float*>(x),
                               reinterpret_cast<const float*>(y), reinterpret_cast<float*>(out),
                               size_t(n));
  Py_END_ALLOW_THREADS
  return finish_device("saxpy_device", code);
}

PyObject* py_softmax_rows_device(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"x", "out", "rows", "cols", "stream", "wait", nullptr};
  uintptr_t x = 0, out = 0, stream = 0;
  Py_ssize_t rows = 0, cols = 0;
  std::vector<uintptr_t> wait;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&nn|O&O&:softmax_rows_device",
                                   const_cast<char**>(kwlist), parse_address, &x, parse_address,
                                   &out, &rows, &cols, parse_address, &stream, parse_streams,
                                   &wait))
    return nullptr;
  if (!non_negative("softmax_rows_device", "rows", rows) ||
      !non_negative("softmax_rows_device", "cols", cols))
    return nullptr;
  if (rows == 0 || cols == 0) Py_RETURN_NONE;
  if (rows > PY_SSIZE_T_MAX / cols || rows > 0x7fffffff) {
    PyErr_Format(PyExc_ValueError, "softmax_rows_device: bad shape rows=%zd cols=%zd", rows, cols);
    return nullptr;
  }
  Launch launch(stream, wait);
  const Pointer pointers[] = {{"x", x}, {"out", out}};
  if (!launch.locate("softmax_rows_device", pointers, 2)) return nullptr;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_softmax_rows_device(launch.get(), reinterpret_cast<const float*>(x),
                                      reinterpret_cast<float*>(out), size_t(rows), size_t(cols));
  Py_END_ALLOW_THREADS
  return finish_device("softmax_rows_device", code);
}

// "float32" -> CUVECOPS_F32 ...; -1 for any other name.
int dtype_named(const char* name) {
  static const struct {
    const char* name;
    int dtype;
  } known[] = {{"float32", CUVECOPS_F32},
               {"float64", CUVECOPS_F64},
               {"int32", CUVECOPS_I32},
               {"int64", CUVECOPS_I64}};
  for (const auto& entry : known) {
    if (std::strcmp(name, entry.name) == 0) return entry.dtype;
  }
  return -1;
}

PyObject* py_reduce_sum_device(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"dtype", "x", "n", "out", "stream", "wait", nullptr};
  const char* dtype_name = nullptr;
  uintptr_t x = 0, out = 0, stream = 0;
  Py_ssize_t n = 0;
  std::vector<uintptr_t> wait;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO&nO&|O&O&:reduce_sum_device",
                                   const_cast<char**>(kwlist), &dtype_name, parse_address, &x, &n,
                                   parse_address, &out, parse_address, &stream, parse_streams,
                                   &wait))
    return nullptr;
  int dtype = dtype_named(dtype_name);
  if (dtype < 0) {
    PyErr_Format(PyExc_TypeError,
                 "reduce_sum_device: expected dtype float32, float64, int32 or int64, got '%s'",
                 dtype_name);
    return nullptr;
  }
  if (!non_negative("reduce_sum_device", "n", n)) return nullptr;
  Launch launch(stream, wait);
  const Pointer pointers[] = {{"out", out}, {"x", x}};
  if (!launch.locate("reduce_sum_device", pointers, n == 0 ? 1 : 2)) return nullptr;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = cuvecops_reduce_sum_device(launch.get(), dtype, reinterpret_cast<const void*>(x),
                                    size_t(n), reinterpret_cast<void*>(out));
  Py_END_ALLOW_THREADS
  return finish_device("reduce_sum_device", code);
}

PyMethodDef methods[] = {
    {"device_count", py_device_count, METH_NOARGS,
     "device_count() -> int\n\nNumber of CUDA devices; 0 when there is no GPU or driver."},
    {"probe", py_probe, METH_NOARGS,
     "probe() -> (int, str)\n\nDevice count and the CUDA error text ('' when the query worked)."},
    {"saxpy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_saxpy)),
     METH_VARARGS | METH_KEYWORDS,
     "saxpy(a, x, y, out=None)\n\na*x + y over float32 buffers; returns a bytearray or fills out."},
    {"softmax_rows", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_softmax_rows)),
     METH_VARARGS | METH_KEYWORDS,
     "softmax_rows(x, rows, cols, out=None)\n\nRow softmax of a float32 rows x cols buffer."},
    {"reduce_sum", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_reduce_sum)),
     METH_VARARGS | METH_KEYWORDS,
     "reduce_sum(x)\n\nSum of a float32/float64 (-> float) or int32/int64 (-> int) buffer."},
    {"saxpy_device",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_saxpy_device)),
     METH_VARARGS | METH_KEYWORDS,
     "saxpy_device(a, x, y, out, n, stream=0, wait=())\n\n"
     "out = a*x + y over n float32 values at device addresses x, y, out, enqueued on `stream`\n"
     "(a cudaStream_t as an int; 0 or 1: the legacy default stream) after the work pending on\n"
     "each stream in `wait`. Returns without synchronising."},
    {"softmax_rows_device",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_softmax_rows_device)),
     METH_VARARGS | METH_KEYWORDS,
     "softmax_rows_device(x, out, rows, cols, stream=0, wait=())\n\n"
     "Row softmax of a C-contiguous rows x cols float32 matrix at device address x into out."},
    {"reduce_sum_device",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(py_reduce_sum_device)),
     METH_VARARGS | METH_KEYWORDS,
     "reduce_sum_device(dtype, x, n, out, stream=0, wait=())\n\n"
     "Sum of n values of dtype (float32, float64, int32, int64) at device address x, written\n"
     "to device address out as one float64 (float dtypes) or int64 (integer dtypes)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "cuvecops._cuda",
    "CUDA kernels of cuvecops (saxpy, row softmax, typed reductions).", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__cuda(void) { return PyModule_Create(&module_def); }
