"""Reading a wheel and its shared objects as untrusted bytes: ELF, CUDA fatbinaries, the zip's
central directory and METADATA, members with bounded sizes, the filename's plain parts."""
