// cuvecops._cuda: the CPython binding (plain C API, buffer protocol). No CUDA headers here:
// the CUDA work lives in ops.cu behind the C interface of ops.h.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstring>

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
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "cuvecops._cuda",
    "CUDA kernels of cuvecops (saxpy, row softmax, typed reductions).", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__cuda(void) { return PyModule_Create(&module_def); }
