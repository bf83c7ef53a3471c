"""The installed cuvecops' kernels over edge sizes, on whatever device its backend chose (run
with CUVECOPS_BACKEND=cuda to fail when the GPU cannot be used): prints the backend and "kernels
ok", or the first failure."""

from __future__ import annotations

import cuvecops
import numpy as np

print(cuvecops.backend())
rng = np.random.default_rng(0)
for n in (1, 31, 1000, 1 << 16, (1 << 16) + 7):
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    assert np.allclose(cuvecops.saxpy(1.5, x, y), 1.5 * x + y, atol=1e-5)
    total = cuvecops.reduce_sum(x)
    assert abs(total - float(x.astype(np.float64).sum())) < 1e-2 * max(1, n**0.5), (n, total)
for rows, cols in ((1, 1), (3, 1000), (64, 513)):
    m = rng.standard_normal((rows, cols), dtype=np.float32)
    assert np.allclose(cuvecops.softmax(m).sum(1), 1, atol=1e-4)
print("kernels ok")
