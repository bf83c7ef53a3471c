# The compiled library: an empty module whose import registers torch.ops.cushiptorchops.*.
