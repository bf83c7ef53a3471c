"""What this host offers a build: its CPython interpreters (uv-managed ones too), the compiler
cache and container engine, and the preflight that refuses a build missing one."""
