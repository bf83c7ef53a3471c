// An empty Python module named _C, so that `import cushiptorchops._C` loads this shared object
// and its static initializers (TORCH_LIBRARY / STABLE_TORCH_LIBRARY) register the ops, like any
// extension module. Only limited-API calls: the stable variant is built with Py_LIMITED_API.
#include <Python.h>

extern "C" PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT,
      "_C",
      "cushiptorchops' compiled ops, registered with torch's dispatcher on import.",
      -1,
      nullptr,
  };
  return PyModule_Create(&module);
}
