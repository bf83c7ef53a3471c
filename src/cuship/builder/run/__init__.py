"""Running a plan: each command step, the wheel's repair/retag/verify/smoke after it, many
plans at once, the CPU-only build, and what runs inside a build (the nvcc shim, the torch check)."""
