"""The Triton interpreter adapted to real kernels while a case runs: libdevice math and bfloat16 arithmetic."""
