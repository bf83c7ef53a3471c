"""The deliberately broken kernel must be caught by a plain reference comparison."""

from __future__ import annotations

import numpy as np
import torch
from cuvecops import broken, triton_kernels
from references import softmax_ref


def test_off_by_one_softmax_is_caught(rng: np.random.Generator, torch_device: str) -> None:
    x = torch.tensor(rng.uniform(-3, 3, (8, 33)), dtype=torch.float32, device=torch_device)
    ref = softmax_ref(x.cpu().numpy())
    bad = broken.softmax_off_by_one(x).cpu().numpy()
    good = triton_kernels.softmax(x).cpu().numpy()
    mismatched = ~np.isclose(bad, ref, rtol=1.3e-6, atol=1e-5)
    assert mismatched.any(axis=-1).all()  # every row is wrong
    assert (bad[:, -1] == 0).all()  # the dropped last column
    np.testing.assert_allclose(good, ref, rtol=1.3e-6, atol=1e-5)
