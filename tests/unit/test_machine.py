from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from cuship.errors import UsageError
from cuship.machine import fingerprint, parse_gpus_override
from cuship.machine.probe import NvmlAnswer, NvmlFailure, NvmlGpu

SMI_QUERY = "0, NVIDIA H100 80GB HBM3, 9.0, 81559, 570.124.06, GPU-abc\n1, NVIDIA H100 80GB HBM3, 9.0, 81559, 570.124.06, GPU-def\n"
SMI_HEADER_OLD = "| NVIDIA-SMI 570.124.06   Driver Version: 570.124.06   CUDA Version: 12.8     |\n"
SMI_HEADER_610 = "| NVIDIA-SMI 610.10   Driver Version: 610.10   CUDA UMD Version: 13.2     |\n"


@dataclass
class FakeProbe:
    """Canned answers: commands by their first argument after the tool, files by path."""

    commands: Mapping[str, str | None] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, str] = field(default_factory=dict)
    nvml_answer: NvmlAnswer | NvmlFailure | None = None
    ran: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> str | None:
        self.ran.append(tuple(argv))
        key = argv[1] if len(argv) > 1 else ""
        return self.commands.get(key.split("=")[0])

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def read_bytes(self, path: str) -> bytes | None:
        text = self.files.get(path)
        return None if text is None else text.encode()

    def which(self, name: str, path: str | None = None) -> str | None:
        return self.tools.get(name)

    def listdir(self, path: str) -> tuple[str, ...]:
        prefix = path.rstrip("/") + "/"
        return tuple(
            sorted({p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)})
        )

    def nvml(self) -> NvmlAnswer | NvmlFailure | None:
        return self.nvml_answer


def test_cpu_only_machine_with_nvcc() -> None:
    probe = FakeProbe(
        commands={"--version": "Cuda compilation tools, release 13.0, V13.0.88\n"},
        tools={"nvcc": "/usr/local/cuda/bin/nvcc"},
    )
    fp = fingerprint({"PATH": "/usr/bin", "CUSHIP_TORCH": "none"}, probe)
    assert fp.gpus == ()
    assert fp.gpu_source == "none"
    assert fp.driver_version is None and fp.driver_cuda is None
    assert fp.toolkit is not None and fp.toolkit.version == "13.0.88"
    assert fp.torch is None
    assert fp.python_tag == f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert fp.tags and fp.platform_tags


def test_without_the_toolkit_nvcc_is_never_asked() -> None:
    probe = FakeProbe(
        commands={"--version": "Cuda compilation tools, release 13.0, V13.0.88\n"},
        tools={"nvcc": "/usr/local/cuda/bin/nvcc"},
    )
    fp = fingerprint({"PATH": "/usr/bin", "CUSHIP_TORCH": "none"}, probe, toolkit=False)
    assert fp.toolkit is None
    assert not any("nvcc" in argv[0] for argv in probe.ran)


def test_nvidia_smi_gpus_and_old_cuda_header() -> None:
    probe = FakeProbe(
        commands={"--query-gpu": SMI_QUERY, "": SMI_HEADER_OLD},
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
    )
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.gpu_source == "nvidia-smi"
    assert [g.name for g in fp.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert fp.compute_capabilities == ("9.0",)
    assert fp.gpus[0].memory_gib == 79.6
    assert fp.driver_version == "570.124.06"
    assert fp.driver_cuda == "12.8"


def test_driver_610_prints_cuda_umd_version() -> None:
    query = SMI_QUERY.replace("570.124.06", "610.10")
    probe = FakeProbe(
        commands={"--query-gpu": query, "": SMI_HEADER_610},
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
    )
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.driver_cuda == "13.2"


def test_garbage_from_nvidia_smi_is_a_note_not_a_crash() -> None:
    probe = FakeProbe(
        commands={
            "--query-gpu": "Failed to initialize NVML: Driver/library version mismatch\n\x00\xff"
        },
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
    )
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.gpus == ()
    assert any("cannot read" in note and "NVML" in note for note in fp.notes)


def test_nvml_wins_over_nvidia_smi() -> None:
    answer = NvmlAnswer(
        driver_version="580.65.06",
        cuda_driver="13.0",
        gpus=(
            NvmlGpu(
                index=0, name="NVIDIA A100-SXM4-40GB", cc="8.0", memory_mib=40960, uuid="GPU-1"
            ),
        ),
    )
    probe = FakeProbe(nvml_answer=answer, tools={"nvidia-smi": "/x"})
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.gpu_source == "nvml"
    assert fp.driver_cuda == "13.0"
    assert probe.ran == []


def test_procfs_fallback_maps_names_through_compat_data() -> None:
    probe = FakeProbe(
        files={
            "/proc/driver/nvidia/gpus/0000:01:00.0/information": "Model: \t\t NVIDIA L4\nIRQ: 1\n",
            "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue\n",
        }
    )
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.gpu_source == "procfs"
    assert fp.gpus[0].cc == "8.9"
    assert fp.driver_version == "550.54.15"
    assert fp.driver_cuda == "12.4"


def test_overrides_for_gpus_driver_and_torch() -> None:
    env = {
        "CUSHIP_GPUS": "H100:9.0:80GiB,RTX 4090",
        "CUSHIP_CUDA_DRIVER_VERSION": "570.124.06",
        "CUSHIP_TORCH": "2.8.0+cu128",
        "CUSHIP_TORCH_CXX11ABI": "1",
    }
    fp = fingerprint(env, FakeProbe())
    assert fp.gpu_source == "override"
    assert [(g.name, g.cc, g.memory_mib) for g in fp.gpus] == [
        ("H100", "9.0", 81920),
        ("RTX 4090", "8.9", 24576),
    ]
    assert fp.driver_cuda == "12.8"
    assert fp.torch is not None and fp.torch.cuda == "12.8" and fp.torch.cxx11abi is True


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Quantum9000", "unknown GPU 'Quantum9000'"),
        ("H100:nine", "compute capability 'nine'"),
        ("H100:9.0:lots", "memory 'lots'"),
        (":9.0", "has no name"),
    ],
)
def test_bad_gpu_overrides(text: str, match: str) -> None:
    with pytest.raises(UsageError, match=match) as err:
        parse_gpus_override(text)
    assert "CUSHIP_GPUS" in str(err.value)


def test_bad_driver_override() -> None:
    with pytest.raises(UsageError, match="not a driver version"):
        fingerprint({"CUSHIP_GPUS": "none", "CUSHIP_CUDA_DRIVER_VERSION": "latest"}, FakeProbe())


def _real_driver_probe() -> FakeProbe:
    """A machine whose NVML is absent but whose nvidia-smi and driver files say 580.159.04."""
    return FakeProbe(
        commands={
            "--query-gpu": "0, NVIDIA H100 80GB HBM3, 9.0, 81559, 580.159.04, GPU-abc\n",
            "": "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n",
        },
        tools={"nvidia-smi": "/usr/bin/nvidia-smi"},
        files={
            "/sys/module/nvidia/version": "580.159.04\n",
            "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
            "580.159.04  Thu\n",
        },
    )


def test_gpus_override_is_hermetic_on_a_machine_with_a_real_driver() -> None:
    real = fingerprint({"CUSHIP_TORCH": "none"}, _real_driver_probe())
    assert (real.driver_version, real.driver_cuda) == ("580.159.04", "13.0")
    fake = fingerprint({"CUSHIP_GPUS": "H100", "CUSHIP_TORCH": "none"}, _real_driver_probe())
    assert fake.gpu_source == "override"
    assert fake.driver_version is None and fake.driver_cuda is None
    only_cuda = {"CUSHIP_GPUS": "H100", "CUSHIP_DRIVER_CUDA": "12.2", "CUSHIP_TORCH": "none"}
    fp = fingerprint(only_cuda, _real_driver_probe())
    assert (fp.driver_version, fp.driver_cuda) == (None, "12.2")
    with_driver = {"CUSHIP_GPUS": "H100", "CUSHIP_CUDA_DRIVER_VERSION": "570.124.06"}
    fp = fingerprint({**with_driver, "CUSHIP_TORCH": "none"}, _real_driver_probe())
    assert (fp.driver_version, fp.driver_cuda) == ("570.124.06", "12.8")


def test_a_failing_nvml_is_a_note_not_silence() -> None:
    """NVML installed but broken: the GPUs come from /proc, and the fingerprint says why."""
    probe = FakeProbe(
        nvml_answer=NvmlFailure("nvmlInit failed: NVMLError_DriverNotLoaded: Driver Not Loaded"),
        files={"/proc/driver/nvidia/gpus/0000:01:00.0/information": "Model: \t NVIDIA L4\n"},
    )
    fp = fingerprint({"CUSHIP_TORCH": "none"}, probe)
    assert fp.gpu_source == "procfs"
    assert (
        "nvml: nvmlInit failed: NVMLError_DriverNotLoaded: Driver Not Loaded; "
        "GPUs looked for with nvidia-smi and /proc instead"
    ) in fp.notes
    assert json.loads(json.dumps(fp.to_json()))["notes"] == list(fp.notes)  # `env --json`
