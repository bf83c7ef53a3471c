"""One case in a worker: the engines, comparison with the reference, gradients, and errors told by the kernel's own frame."""
