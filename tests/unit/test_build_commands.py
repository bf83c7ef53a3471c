"""What a failed build step says (the tool's own error lines) and a step without its compiler cache."""

from __future__ import annotations

from cuship.builder.model import Step
from cuship.builder.run.commands import _error_excerpt

CMAKE_COMPILER_CHECK = """-- The C compiler identification is GNU 12.2.0
CMake Error at /x/CMakeTestCCompiler.cmake:65 (message):
  The C compiler

    "/usr/bin/cc"

  is not able to compile a simple test program.

  It fails with the following output:

    Change Dir: '/tmp/b/CMakeFiles/CMakeScratch/TryCompile-abc'

    Run Build Command(s): /usr/bin/ninja -v cmTC_1
    [1/2] /usr/bin/sccache /usr/bin/cc -o cmTC_1.dir/testCCompiler.c.o -c testCCompiler.c
    FAILED: cmTC_1.dir/testCCompiler.c.o
    sccache: error: failed to execute compile
    sccache: caused by: Compiler not supported: "failed to write temporary file"
    ninja: build stopped: subcommand failed.

  CMake will not be able to correctly generate this project.
Call Stack (most recent call first):
  CMakeLists.txt:3 (project)
"""


def test_a_cmake_error_brings_the_cause_quoted_in_its_message() -> None:
    said = _error_excerpt(CMAKE_COMPILER_CHECK).splitlines()
    assert said[0].startswith("CMake Error at")
    assert "is not able to compile a simple test program." in said
    assert "sccache: error: failed to execute compile" in said
    assert 'sccache: caused by: Compiler not supported: "failed to write temporary file"' in said
    assert not any("Change Dir" in line or "Call Stack" in line for line in said)


def test_compiler_diagnostics_keep_two_lines_of_context() -> None:
    log = "nvcc -c ops.cu\nops.cu(193): error: identifier x is undefined\n  x = 1;\n  ^\nmore\n"
    assert _error_excerpt(log) == "ops.cu(193): error: identifier x is undefined\nx = 1;\n^"


def test_without_a_diagnostic_the_error_lines_or_the_tail() -> None:
    assert _error_excerpt("ok\nERROR: no wheel\nbye\n") == "ERROR: no wheel"
    assert _error_excerpt("\n".join(map(str, range(30))), limit=3) == "27\n28\n29"


def test_the_cause_of_a_failed_setup_py_is_shown_not_pip_s_frame() -> None:
    log = (
        "Building wheel for torchsort (setup.py): started\n"
        "  error: subprocess-exited-with-error\n"
        "  × python setup.py bdist_wheel did not run successfully.\n"
        "  │ exit code: 1\n"
        "  ╰─> [12 lines of output]\n"
        "      Traceback (most recent call last):\n"
        '        File "setup.py", line 40, in <module>\n'
        "      OSError: CUDA_HOME environment variable is not set. Please set it\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
        "  ERROR: Failed building wheel for torchsort\n"
        "ERROR: Failed to build one or more wheels\n"
    )
    assert _error_excerpt(log).splitlines()[0] == (
        "OSError: CUDA_HOME environment variable is not set. Please set it"
    )
    assert "subprocess-exited-with-error" not in _error_excerpt(log)


def test_a_step_without_its_compiler_cache() -> None:
    step = Step(
        name="build-wheel",
        description="build",
        argv=("pip", "wheel", "."),
        env={
            "CMAKE_ARGS": "-DCMAKE_CUDA_ARCHITECTURES=90-real "
            "-DCMAKE_CUDA_COMPILER_LAUNCHER=/bin/sccache -DCMAKE_C_COMPILER_LAUNCHER=/bin/sccache",
            "CMAKE_CUDA_COMPILER_LAUNCHER": "/bin/sccache",
            "CMAKE_C_COMPILER_LAUNCHER": "/bin/sccache",
            "CUDACXX": "/usr/local/cuda/bin/nvcc",
        },
    )
    bare = step.without_compiler_cache()
    assert step.uses_compiler_cache and not bare.uses_compiler_cache
    assert bare.env == {
        "CMAKE_ARGS": "-DCMAKE_CUDA_ARCHITECTURES=90-real",
        "CUDACXX": "/usr/local/cuda/bin/nvcc",
        "TORCH_NO_COMPILER_WRAPPER": "1",  # torch's own ccache/sccache wrapper is off too
    }
    assert bare.argv == step.argv and bare.name == step.name
