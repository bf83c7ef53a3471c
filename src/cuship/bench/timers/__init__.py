"""How a call is timed: the sampling loop and stopping rule, the CUDA-event timer, the hot
per-call time, the host-code refusal, and callgrind's instruction counts (with its worker)."""
