"""The GPU markers' parsing and matching, without running pytest (see integration for that)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from cuship.compat import load
from cuship.errors import UsageError
from cuship.machine import Gpu, fingerprint
from cuship.machine.probe import NvmlAnswer, NvmlGpu
from cuship.pytest_plugin.machine import GpuMachine, card_memory_mib, unmet, worker_share
from cuship.pytest_plugin.markers import SHORTHAND_MARKERS, GpuRequirement, describe, parse_marker
from cuship.pytest_plugin.session import read_settings

COMPAT = load()


def parse(marker: str = "gpu", /, *args: object, **kwargs: object) -> GpuRequirement:
    return parse_marker(marker, args, kwargs, model=COMPAT.gpu)


def gpu(name: str, cc: str | None, gib: float | None = None, index: int = 0) -> Gpu:
    memory = None if gib is None else round(gib * 1024)
    return Gpu(index=index, name=name, cc=cc, memory_mib=memory)


def box(
    *gpus: Gpu, driver_cuda: str | None = None, driver_version: str | None = None
) -> GpuMachine:
    return GpuMachine(
        gpus=gpus,
        devices=tuple(str(g.index) for g in gpus),
        source="nvml" if gpus else "none",
        driver_version=driver_version,
        driver_cuda=driver_cuda,
    )


class NvmlOnly:
    """A probe whose only answer is NVML's; no commands, files or tools."""

    def __init__(self, answer: NvmlAnswer | None) -> None:
        self.answer = answer

    def run(self, argv: Sequence[str], timeout: float = 10.0) -> str | None:
        return None

    def read(self, path: str) -> str | None:
        return None

    def read_bytes(self, path: str) -> bytes | None:
        return None

    def which(self, name: str, path: str | None = None) -> str | None:
        return None

    def listdir(self, path: str) -> tuple[str, ...]:
        return ()

    def nvml(self) -> NvmlAnswer | None:
        return self.answer


FOUR_H100 = NvmlAnswer(
    driver_version="570.124.06",
    cuda_driver="12.8",
    gpus=tuple(
        NvmlGpu(
            index=i,
            name="NVIDIA H100 80GB HBM3",
            cc="9.0",
            memory_mib=81559,
            uuid=f"GPU-{letter}{letter}11-2222",
        )
        for i, letter in enumerate("abcd")
    ),
)


def four_h100(visible: str | None = None) -> GpuMachine:
    env = {"CUSHIP_TORCH": "none", "PATH": ""}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    return GpuMachine.from_fingerprint(fingerprint(env, NvmlOnly(FOUR_H100)), env)


# --- parsing -------------------------------------------------------------------------------


def test_bare_marker_asks_for_any_one_gpu() -> None:
    assert parse() == GpuRequirement(marker="gpu")
    assert describe(parse()) == "a GPU"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"count": 2}, {"count": 2}),
        ({"min_cc": "8.0"}, {"min_cc": "8.0"}),
        ({"min_cc": 9}, {"min_cc": "9.0"}),
        ({"cc": ["9.0", "10.0"]}, {"cc": ("9.0", "10.0")}),
        ({"cc": "8.6"}, {"cc": ("8.6",)}),
        ({"memory": "40GiB"}, {"memory_mib": 40 * 1024}),
        ({"memory": "80 GB"}, {"memory_mib": 80 * 1024}),
        ({"memory": "512MiB"}, {"memory_mib": 512}),
        ({"name": "NVIDIA H100 80GB HBM3"}, {"names": ("H100",)}),
        ({"name": ["H100", "h200"]}, {"names": ("H100", "H200")}),
    ],
)
def test_keyword_forms(kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    req = parse(**kwargs)
    for key, value in expected.items():
        assert getattr(req, key) == value


def test_cuda_is_a_specifier_set() -> None:
    req = parse(cuda=">=12.4")
    assert req.cuda is not None
    assert "12.8" in req.cuda
    assert "12.2" not in req.cuda


@pytest.mark.parametrize("marker", sorted(SHORTHAND_MARKERS))
def test_shorthands_name_cards_from_the_compatibility_data(marker: str) -> None:
    model = COMPAT.gpu(SHORTHAND_MARKERS[marker])
    req = parse(marker)
    assert req.names == (model.name,)
    assert describe(req).endswith(model.name)
    assert parse(marker, min_cc="9.0").min_cc == "9.0"


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "message"),
    [
        ("gpu", (), {"min_cc": "nine"}, "min_cc 'nine' is not a compute capability"),
        ("gpu", (), {"colour": 1}, "unknown keyword 'colour'"),
        ("gpu", (), {"name": "H1000"}, "unknown GPU 'H1000'"),
        ("gpu", (), {"name": ["H100", 7]}, "name 7 is not a card name"),
        ("gpu", (), {"count": 0}, "count 0 is not a number of GPUs"),
        ("gpu", (), {"count": True}, "count True is not a number of GPUs"),
        ("gpu", (), {"count": "2"}, "count '2' is not a number of GPUs"),
        ("gpu", (), {"memory": 40}, "memory 40 is not a size with a unit"),
        ("gpu", (), {"memory": "40 parsecs"}, "memory '40 parsecs' is not a size"),
        ("gpu", (), {"memory": "0GiB"}, "memory '0GiB' is not a positive size"),
        ("gpu", (), {"cuda": "12.4"}, "cuda '12.4' is not a version specifier"),
        ("gpu", (), {"cuda": ""}, "cuda '' is not a version specifier"),
        ("gpu", (), {"cc": []}, "cc [] is not a compute capability or a list"),
        ("gpu", (), {"cc": ["9.0", "x"]}, "cc 'x' is not a compute capability"),
        ("gpu", (2,), {}, "positional arguments are not accepted"),
        ("h100", (), {"name": "H200"}, "the h100 marker already names the card"),
    ],
)
def test_bad_arguments_quote_the_marker_and_the_value(
    name: str, args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        parse(name, *args, **kwargs)
    assert caught.value.message.startswith(f"@pytest.mark.{name}(")
    assert message in caught.value.message
    assert caught.value.hint


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"count": 2, "min_cc": "9.0"}, "2 GPUs with compute capability ≥ 9.0"),
        ({"name": "H100", "memory": "80GiB"}, "an H100 with ≥ 80 GiB memory"),
        ({"name": "B200", "count": 8}, "8 B200 GPUs"),
        ({"cc": ["9.0", "10.0"], "cuda": ">=12.4"}, "a GPU with compute capability 9.0 or 10.0"),
    ],
)
def test_describe(kwargs: dict[str, object], text: str) -> None:
    assert describe(parse(**kwargs)).startswith(text)


# --- matching ------------------------------------------------------------------------------

A10 = gpu("NVIDIA A10", "8.6", 22.5)
H100 = gpu("NVIDIA H100 80GB HBM3", "9.0", 81559 / 1024, index=1)
L4 = gpu("NVIDIA L4", "8.9", 23034 / 1024)


@pytest.mark.parametrize(
    ("kwargs", "gpus", "reason"),
    [
        (
            {},
            (),
            "needs a GPU; found no GPU (NVML, nvidia-smi and /proc/driver/nvidia report none)",
        ),
        ({"min_cc": "9.0"}, (A10,), "needs compute capability ≥ 9.0; found 8.6 (NVIDIA A10)"),
        ({"min_cc": "9.0"}, (H100,), None),
        (
            {"min_cc": "10.0"},
            (H100,),
            "needs compute capability ≥ 10.0; found 9.0 (NVIDIA H100 80GB HBM3)",
        ),
        ({"cc": ["9.0", "10.0"]}, (A10, H100), None),
        ({"memory": "40GiB"}, (L4,), "needs ≥ 40 GiB memory; found 24 GiB (NVIDIA L4)"),
        ({"memory": "80GiB"}, (H100,), None),
        ({"count": 2}, (H100,), "needs 2 GPUs; found 1: NVIDIA H100 80GB HBM3"),
        ({"count": 2}, (A10, H100), None),
        (
            {"count": 2, "min_cc": "9.0"},
            (A10, H100),
            "needs 2 GPUs with compute capability ≥ 9.0; found 1 such: 8.6 (NVIDIA A10), 9.0 (NVIDIA H100 80GB HBM3)",
        ),
        ({"name": "H100"}, (A10,), "needs an H100; found NVIDIA A10"),
        ({"name": "H100"}, (A10, H100), None),
        (
            {"name": "H100", "memory": "94GiB"},
            (H100,),
            "needs an H100 and ≥ 94 GiB memory; found 80 GiB (NVIDIA H100 80GB HBM3)",
        ),
    ],
)
def test_unmet_says_what_was_asked_and_found(
    kwargs: dict[str, object], gpus: tuple[Gpu, ...], reason: str | None
) -> None:
    assert unmet(parse(**kwargs), box(*gpus), COMPAT.find_gpu) == reason


@pytest.mark.parametrize(
    ("driver_cuda", "driver_version", "reason"),
    [
        ("12.8", "570.124.06", None),
        (
            "12.2",
            "535.104.05",
            "needs a driver supporting CUDA >=12.4; found CUDA 12.2 (driver 535.104.05)",
        ),
        (None, None, "needs a driver supporting CUDA >=12.4; found no NVIDIA driver"),
    ],
)
def test_cuda_is_judged_on_what_the_driver_supports(
    driver_cuda: str | None, driver_version: str | None, reason: str | None
) -> None:
    machine = box(H100, driver_cuda=driver_cuda, driver_version=driver_version)
    assert unmet(parse(cuda=">=12.4"), machine, COMPAT.find_gpu) == reason


@pytest.mark.parametrize(
    ("card", "mib", "compared"),
    [
        ("NVIDIA H100 80GB HBM3", 81559, 80 * 1024),  # reports 79.6 GiB, sold as 80
        ("NVIDIA H100 NVL", 95830, 94 * 1024),
        ("NVIDIA L4", 23034, 24 * 1024),
        ("NVIDIA H100 80GB HBM3", 40000, 40000),  # nowhere near a size it is sold in
        ("Mystery Card", 1000, 1000),
    ],
)
def test_memory_compares_by_card_size(card: str, mib: int, compared: int) -> None:
    card_gpu = Gpu(index=0, name=card, cc="9.0", memory_mib=mib)
    assert card_memory_mib(card_gpu, COMPAT.find_gpu) == compared


def test_unknown_memory_never_satisfies_a_memory_demand() -> None:
    reason = unmet(parse(memory="1GiB"), box(gpu("H100", "9.0")), COMPAT.find_gpu)
    assert reason == "needs ≥ 1 GiB memory; found unknown memory (H100)"


# --- xdist shares and CUDA_VISIBLE_DEVICES -------------------------------------------------


@pytest.mark.parametrize(
    ("count", "workers", "shares"),
    [
        (4, 2, [(0, 1), (2, 3)]),
        (4, 3, [(0, 1), (2,), (3,)]),
        (5, 2, [(0, 1, 2), (3, 4)]),
        (2, 3, [(0,), (1,), (0,)]),
        (1, 4, [(0,), (0,), (0,), (0,)]),
        (0, 2, [(), ()]),
    ],
)
def test_worker_shares(count: int, workers: int, shares: list[tuple[int, ...]]) -> None:
    assert [worker_share(count, w, workers) for w in range(workers)] == shares


def test_slices_cover_every_gpu_once_when_workers_are_fewer() -> None:
    for count in range(1, 17):
        for workers in range(1, count + 1):
            taken = [i for w in range(workers) for i in worker_share(count, w, workers)]
            assert taken == list(range(count))


def test_gpus_are_addressed_by_uuid_when_known() -> None:
    machine = four_h100()
    assert machine.devices == ("GPU-aa11-2222", "GPU-bb11-2222", "GPU-cc11-2222", "GPU-dd11-2222")
    share = machine.share(1, 2)
    assert [g.index for g in share.gpus] == [2, 3]
    assert share.visible_env == "GPU-cc11-2222,GPU-dd11-2222"


@pytest.mark.parametrize(
    ("visible", "indexes", "devices"),
    [
        ("2,0", [2, 0], ("2", "0")),
        ("GPU-bb", [1], ("GPU-bb",)),
        ("1,7,2", [1], ("1",)),  # CUDA stops at the first entry it cannot resolve
        ("1,1", [1], ("1",)),
        ("", [], ()),
        ("-1", [], ()),
        ("MIG-5a7b", [0, 1, 2, 3], None),  # cannot address MIG slices: keep all, no slicing
    ],
)
def test_cuda_visible_devices_narrows_the_gpus(
    visible: str, indexes: list[int], devices: tuple[str, ...] | None
) -> None:
    machine = four_h100(visible)
    assert [g.index for g in machine.gpus] == indexes
    assert machine.devices == devices


def test_hidden_gpus_are_named_in_the_reason() -> None:
    reason = unmet(parse(), four_h100(""), COMPAT.find_gpu)
    assert reason == "needs a GPU; found no GPU (CUDA_VISIBLE_DEVICES='' hides them)"


def test_a_faked_gpu_hidden_by_a_real_uuid_is_named_as_hidden_not_as_none() -> None:
    """On a GPU box, cuship's own xdist share sets CUDA_VISIBLE_DEVICES=GPU-<uuid>; a child
    that fakes a GPU (no UUID) sees none, and says why (seen on the H100)."""

    def faked(visible: str | None) -> GpuMachine:
        env = {"CUSHIP_GPUS": "H100:9.0:80GiB", "CUSHIP_TORCH": "none", "PATH": ""}
        env |= {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
        return GpuMachine.from_fingerprint(fingerprint(env, toolkit=False), env)

    uuid = "GPU-5e6f7a8b-0000-1111-2222-333344445555"
    assert [g.name for g in faked(None).gpus] == ["H100"] and faked("0").hidden == 0
    hidden = GpuMachine.from_json(json.loads(json.dumps(faked(uuid).to_json())))
    assert (hidden.gpus, hidden.hidden) == ((), 1)
    assert hidden.absence() == f"CUDA_VISIBLE_DEVICES={uuid!r} hides them, those CUSHIP_GPUS fakes"
    env = {"CUSHIP_GPUS": "none", "CUDA_VISIBLE_DEVICES": uuid, "PATH": ""}
    assert GpuMachine.from_fingerprint(fingerprint(env, toolkit=False), env).absence() == (
        "CUSHIP_GPUS says none"
    )


def test_machine_travels_as_json() -> None:
    machine = four_h100("3,1")
    doc = json.loads(json.dumps(machine.to_json()))
    assert GpuMachine.from_json(doc) == machine
    assert machine.share(0, 2) == GpuMachine.from_json(
        json.loads(json.dumps(machine.share(0, 2).to_json()))
    )


def test_summary_names_gpus_driver_toolkit_and_torch() -> None:
    assert four_h100("0").summary() == (
        "1 GPU (NVML): NVIDIA H100 80GB HBM3 [cc 9.0, 79.6 GiB]; "
        "driver 570.124.06 (CUDA 12.8); nvcc: none; torch none"
    )


# --- settings ------------------------------------------------------------------------------


def options(**given: bool) -> SimpleNamespace:
    names = ("require_gpu", "gpu_only", "no_gpu", "gpu_list", "no_gpu_slicing")
    return SimpleNamespace(**{n: given.get(n, False) for n in names})


def test_settings_from_options_and_environment() -> None:
    assert read_settings(options(), {}).require_gpu is False
    assert read_settings(options(), {"CUSHIP_REQUIRE_GPU": "1"}).require_gpu is True
    assert read_settings(options(require_gpu=True), {"CUSHIP_REQUIRE_GPU": "0"}).require_gpu
    assert read_settings(options(gpu_only=True), {}).select == "gpu"
    assert read_settings(options(no_gpu=True), {}).select == "cpu"
    assert read_settings(options(no_gpu_slicing=True), {}).slicing is False


@pytest.mark.parametrize(
    ("given", "env", "message"),
    [
        ({"gpu_only": True, "no_gpu": True}, {}, "--gpu-only and --no-gpu"),
        ({"no_gpu": True, "require_gpu": True}, {}, "--no-gpu with --require-gpu"),
        ({"no_gpu": True}, {"CUSHIP_REQUIRE_GPU": "yes"}, "--no-gpu with --require-gpu"),
        ({}, {"CUSHIP_REQUIRE_GPU": "maybe"}, "CUSHIP_REQUIRE_GPU='maybe'"),
    ],
)
def test_contradictory_settings_are_usage_errors(
    given: dict[str, bool], env: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        read_settings(options(**given), env)
