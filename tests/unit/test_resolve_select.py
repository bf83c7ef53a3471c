"""The resolver's rules: every rejection reason, the ranking, a/f arches, PTX JIT, no GPU."""

from __future__ import annotations

import pytest

from cuship.errors import UsageError
from cuship.judge.gpu import covers
from cuship.judge.offer import Offer, TorchBuild
from cuship.resolve import Candidate, Resolution, Target, WheelFacts, select

CP311 = "cp311-cp311-linux_x86_64"
TAGS = (CP311, "cp311-abi3-linux_x86_64", "cp311-none-linux_x86_64", "py3-none-any")
H100 = ("H100", "9.0")
A10 = ("A10", "8.6")


def target(
    gpus: tuple[tuple[str, str], ...] = (H100,),
    driver_version: str | None = "570.124.06",
    driver_cuda: str | None = "12.8",
    torch: str | None = None,
    cxx11abi: bool | None = None,
) -> Target:
    build = None if torch is None else TorchBuild(version=torch, cxx11abi=cxx11abi)
    offer = Offer(gpus=gpus, driver_version=driver_version, driver_cuda=driver_cuda, torch=build)
    return Target(tags=TAGS, python="3.11.7", offer=offer)


def wheel(
    version: str,
    *,
    tag: str = CP311,
    sass: tuple[str, ...] = ("80", "90"),
    ptx: tuple[str, ...] = (),
    cuda: str | None = "12.8",
    torch: str | None = None,
    abi: bool | None = None,
    manifest: bool = True,
    **kw: str | None,
) -> Candidate:
    name = f"pkg-{version}-{tag}.whl"
    facts = WheelFacts(cuda=cuda, torch=torch, cxx11abi=abi, sass=sass, ptx=ptx)
    return Candidate(
        filename=name,
        url=f"http://x/{name}",
        sha256="0" * 64,
        facts=facts if manifest else None,
        **kw,  # type: ignore[arg-type]
    )


def reasons(res: Resolution) -> dict[str, tuple[str, str]]:
    return {v.candidate.filename: (v.rule, v.reason) for v in res.rejected}


def chosen(res: Resolution) -> str | None:
    return None if res.chosen is None else res.chosen.candidate.filename


def test_each_rule_names_its_reason() -> None:
    files = [
        Candidate(filename="pkg-1.0.tar.gz", url="u"),
        Candidate(filename="pkg-1.0-bad.whl", url="u"),
        Candidate(filename="other-1.0-py3-none-any.whl", url="u"),
        wheel("0.9+cu128"),
        wheel("1.0+cu128", yanked="broken build"),
        wheel("1.0+cu126", requires_python=">=3.12"),
        wheel("1.0+cu124", tag="cp312-cp312-linux_x86_64"),
        wheel("1.0+cu128torch2.8", torch="2.8"),
        wheel("1.0+cu130", cuda="13.0"),
        wheel("1.0+cu125", cuda="12.5", sass=("75", "86")),
        wheel("2.0rc1+cu128"),
        wheel("1.0+cu120", cuda="12.0"),
    ]
    res = select("pkg>=1.0", files, target())
    got = reasons(res)
    assert got["pkg-1.0.tar.gz"][0] == "filename" and "not a wheel" in got["pkg-1.0.tar.gz"][1]
    assert got["pkg-1.0-bad.whl"][0] == "filename"
    assert got["other-1.0-py3-none-any.whl"] == ("filename", "a wheel of 'other', not 'pkg'")
    assert got[f"pkg-0.9+cu128-{CP311}.whl"][0] == "version"
    assert got[f"pkg-1.0+cu128-{CP311}.whl"] == (
        "yanked",
        "yanked: broken build (pin it with == to take it anyway)",
    )
    assert got[f"pkg-1.0+cu126-{CP311}.whl"] == (
        "requires-python",
        "needs Python >=3.12; target is 3.11.7",
    )
    assert got["pkg-1.0+cu124-cp312-cp312-linux_x86_64.whl"][0] == "tags"
    assert got[f"pkg-1.0+cu128torch2.8-{CP311}.whl"] == (
        "torch",
        "built for torch==2.8.* (exact ABI) but torch is not installed: 'undefined symbol'",
    )
    rule, why = got[f"pkg-1.0+cu130-{CP311}.whl"]
    assert rule == "cuda" and "CUDA 13.0" in why and "570.124.06" in why
    rule, why = got[f"pkg-1.0+cu125-{CP311}.whl"]
    assert rule == "gpu" and "H100 (9.0)" in why and "sm_86" in why
    assert got[f"pkg-2.0rc1+cu128-{CP311}.whl"][0] == "version"
    assert chosen(res) == f"pkg-1.0+cu120-{CP311}.whl"


def test_nothing_fits_gives_no_choice() -> None:
    res = select("pkg", [wheel("1.0+cu130", cuda="13.0")], target())
    assert res.chosen is None and res.ranked == ()
    assert res.rejected[0].rule == "cuda"


def test_a_yanked_file_is_taken_when_pinned() -> None:
    res = select("pkg==1.0+cu128", [wheel("1.0+cu128", yanked="")], target())
    assert res.chosen is not None
    assert "yanked; taken because it is pinned" in res.chosen.notes


def test_torch_version_and_abi() -> None:
    files = [
        wheel("1.0+cu128torch2.8cxx11abiTRUE", torch="2.8", abi=True),
        wheel("1.0+cu128torch2.8cxx11abiFALSE", torch="2.8", abi=False),
        wheel("1.0+cu128torch2.9cxx11abiTRUE", torch="2.9", abi=True),
    ]
    res = select("pkg", files, target(torch="2.8.0+cu128", cxx11abi=False))
    assert chosen(res) == f"pkg-1.0+cu128torch2.8cxx11abiFALSE-{CP311}.whl"
    got = reasons(res)
    assert got[f"pkg-1.0+cu128torch2.8cxx11abiTRUE-{CP311}.whl"] == (
        "torch",
        "built for cxx11abi=True (its label); installed torch 2.8.0+cu128 has cxx11abi=False: "
        "'undefined symbol: …' for every std::string in the API",
    )
    assert (
        "installed torch is 2.8.0+cu128" in got[f"pkg-1.0+cu128torch2.9cxx11abiTRUE-{CP311}.whl"][1]
    )
    unknown_abi = select("pkg", files[:1], target(torch="2.8.1"))
    assert unknown_abi.chosen is not None
    assert (
        "not checked: torch's C++ ABI unknown: cxx11abi=True (its label) not checked"
        in unknown_abi.chosen.notes
    )


@pytest.mark.parametrize(
    ("sm", "cc", "ptx", "runs"),
    [
        ("80", (8, 0), False, True),
        ("80", (8, 6), False, True),
        ("86", (8, 0), False, False),
        ("80", (9, 0), False, False),
        ("90a", (9, 0), False, True),
        ("90a", (10, 0), False, False),
        ("100a", (10, 3), False, False),
        ("100f", (10, 0), False, True),
        ("100f", (10, 3), False, True),
        ("103f", (10, 0), False, False),
        ("120f", (12, 1), False, True),
        ("120", (10, 0), True, False),
        ("80", (9, 0), True, True),
        ("80", (12, 0), True, True),
        ("90a", (10, 0), True, False),
        ("sm_90", (9, 0), False, True),
        ("junk", (9, 0), False, False),
    ],
)
def test_arch_rules(sm: str, cc: tuple[int, int], ptx: bool, runs: bool) -> None:
    assert covers(sm, cc, ptx=ptx) is runs


def test_sass_beats_ptx_and_ptx_jit_is_said() -> None:
    files = [
        wheel("1.0+cu128a", sass=("80",), ptx=("80",)),
        wheel("1.0+cu128b", sass=("90",)),
    ]
    res = select("pkg", files, target())
    assert chosen(res) == f"pkg-1.0+cu128b-{CP311}.whl"
    jit = res.ranked[1]
    assert jit.coverage == "ptx"
    assert any("by JIT" in n for n in jit.notes)


def test_ptx_jit_needs_the_toolkits_own_driver() -> None:
    """Minor-version compatibility covers SASS, not JIT of PTX from a newer toolkit."""
    sass = wheel("1.0+cu129s", cuda="12.9", sass=("90",))
    ptx = wheel("1.0+cu129p", cuda="12.9", sass=("80",), ptx=("80",))
    res = select("pkg", [sass, ptx], target(driver_version="550.54.14", driver_cuda="12.4"))
    assert chosen(res) == sass.filename
    rule, why = reasons(res)[ptx.filename]
    assert rule == "cuda" and "must JIT compute_80 made by CUDA 12.9" in why
    assert "'the provided PTX was compiled with an unsupported toolchain'" in why


def test_every_gpu_must_be_covered() -> None:
    files = [wheel("1.0+cu128", sass=("90",))]
    res = select("pkg", files, target(gpus=(H100, A10)))
    assert res.chosen is None
    assert "A10 (8.6)" in res.rejected[0].reason


def test_closest_cuda_to_the_driver_wins_among_equals() -> None:
    files = [
        wheel("1.0+cu126", cuda="12.6"),
        wheel("1.0+cu128", cuda="12.8"),
        wheel("1.0+cu129", cuda="12.9"),  # runs by minor-version compatibility, ranked last
    ]
    res = select("pkg", files, target(driver_cuda="12.8"))
    assert [v.candidate.filename for v in res.ranked] == [
        f"pkg-1.0+cu128-{CP311}.whl",
        f"pkg-1.0+cu126-{CP311}.whl",
        f"pkg-1.0+cu129-{CP311}.whl",
    ]


def test_version_beats_cuda_and_tag_beats_version() -> None:
    files = [
        wheel("1.0+cu128"),
        wheel("1.1+cu126", cuda="12.6"),
        wheel("1.2", tag="py3-none-any", cuda=None, sass=()),
    ]
    res = select("pkg", files, target())
    assert chosen(res) == f"pkg-1.1+cu126-{CP311}.whl"


def test_no_gpu_prefers_cpu_wheels_and_says_cuda_ones_cannot_run() -> None:
    cuda = wheel("1.0+cu128")
    cpu = wheel("1.0", tag="py3-none-any", cuda=None, sass=())
    res = select("pkg", [cuda, cpu], target(gpus=(), driver_version=None, driver_cuda=None))
    assert chosen(res) == cpu.filename
    only_cuda = select("pkg", [cuda], target(gpus=(), driver_version=None, driver_cuda=None))
    assert only_cuda.chosen is not None
    assert only_cuda.chosen.coverage == "no-gpu"
    assert any("cannot run" in n for n in only_cuda.chosen.notes)


def test_without_manifest_the_label_decides_and_arches_are_unknown() -> None:
    files = [
        wheel("1.0+cu130", cuda="13.0", manifest=False),
        wheel("1.0+cu128", manifest=False),
        wheel("1.0+weird.label", manifest=False),
    ]
    res = select("pkg", files, target())
    assert chosen(res) == f"pkg-1.0+cu128-{CP311}.whl"
    assert res.chosen is not None
    assert res.chosen.coverage == "unknown"
    assert "arches unknown (the index has no cuship manifest)" in res.chosen.notes
    assert reasons(res)[f"pkg-1.0+cu130-{CP311}.whl"][0] == "cuda"
    weird = next(v for v in res.ranked if "weird" in v.candidate.filename)
    assert "label 'weird.label' not understood" in weird.notes


def test_unknown_driver_is_a_note_not_a_rejection() -> None:
    res = select(
        "pkg", [wheel("1.0+cu130", cuda="13.0")], target(driver_version=None, driver_cuda=None)
    )
    assert res.chosen is not None
    assert (
        "not checked: the driver version is unknown: the CUDA 13 it needs was not checked"
        in res.chosen.notes
    )


def test_driver_cuda_alone_decides_when_no_driver_version() -> None:
    files = [wheel("1.0+cu130", cuda="13.0"), wheel("1.0+cu129", cuda="12.9")]
    res = select("pkg", files, target(driver_version=None, driver_cuda="12.4"))
    assert chosen(res) == f"pkg-1.0+cu129-{CP311}.whl"


def test_bad_requirement_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a requirement: 'pkg >>> 1'"):
        select("pkg >>> 1", [], target())


def test_json_shape() -> None:
    res = select("pkg", [wheel("1.0+cu128"), wheel("1.0+cu130", cuda="13.0")], target())
    doc = res.to_json()
    assert doc["requirement"] == "pkg"
    assert isinstance(doc["chosen"], dict) and doc["chosen"]["accepted"] is True
    assert isinstance(doc["rejected"], list) and doc["rejected"][0]["rule"] == "cuda"


def test_the_table_shows_markup_in_names_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setenv("COLUMNS", "400")  # the whole name on one line, whatever the terminal

    from cuship.cli._console import Console
    from cuship.cli.resolve import render

    evil = Candidate(filename="[bold red]<script>alert(1)</script>.whl", url="u")
    out = io.StringIO()
    render(Console(out=out, err=io.StringIO(), github=False), select("pkg", [evil], target()))
    assert "[bold red]<script>alert(1)</script>.whl" in out.getvalue().replace("\n", "")


def test_a_page_of_many_thousand_files_is_a_short_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The text table stops at its rows and counts the others; --json has every one."""
    import io

    monkeypatch.setenv("COLUMNS", "200")
    from cuship.cli._console import Console
    from cuship.cli.resolve import ROWS_SHOWN, render

    files = [
        Candidate(filename=f"pkg-1.0.{i}-cp27-cp27mu-manylinux1_x86_64.whl", url="u")
        for i in range(20_000)
    ]
    resolution = select("pkg", files, target())
    out = io.StringIO()
    render(Console(out=out, err=io.StringIO(), github=False), resolution)
    text = out.getvalue()
    assert text.count("pkg-1.0.") == ROWS_SHOWN
    assert f"... {20_000 - ROWS_SHOWN} more (" in text and "--json lists every one" in text


def test_tags_from_env_judge_another_platform() -> None:
    from cuship.resolve.install import target_from_env

    env = {
        "CUSHIP_GPUS": "H100",
        "CUSHIP_DRIVER_CUDA": "12.8",
        "CUSHIP_NVCC": "none",
        "CUSHIP_TORCH": "none",
        "PATH": "/nonexistent",
        "CUSHIP_TAGS": "cp312-cp312-manylinux_2_28_aarch64, py3-none-any",
        "CUSHIP_PYTHON_VERSION": "3.12.1",
    }
    other = target_from_env(env, tags_from_env=True)
    assert other.tags == ("cp312-cp312-manylinux_2_28_aarch64", "py3-none-any")
    assert (other.python, other.offer.gpus, other.offer.driver_cuda) == ("3.12.1", (H100,), "12.8")
    arm = wheel("1.0+cu128", tag="cp312-cp312-manylinux_2_28_aarch64")
    assert chosen(select("pkg", [wheel("1.0+cu128"), arm], other)) == arm.filename
    with pytest.raises(UsageError, match="--tags-from-env needs CUSHIP_TAGS"):
        target_from_env({**env, "CUSHIP_TAGS": ""}, tags_from_env=True)


def _abi_wheel(
    label: str, torch_abi: str, torch_built: str | None = None, pin: str | None = None
) -> Candidate:
    name = f"pkg-1.0+{label}-{CP311}.whl"
    facts = WheelFacts(
        cuda="12.8",
        sass=("90",),
        torch_abi=torch_abi,
        torch_built=torch_built,
        torch_requirement=pin,
    )
    return Candidate(filename=name, url=f"http://x/{name}", sha256="0" * 64, facts=facts)


@pytest.mark.parametrize("torch", [None, "2.8.0+cu128", "2.11.0", "2.13.0+cpu"])
def test_a_wheel_linking_no_torch_fits_any_torch(torch: str | None) -> None:
    none = _abi_wheel("cu128", "none")
    labelled = _abi_wheel("cu128torch2.10", "none")  # an old label naming torch: the ABI decides
    res = select("pkg", [labelled], target(torch=torch))
    assert chosen(res) == labelled.filename
    assert select("pkg", [none], target(torch=torch)).chosen is not None


def test_a_stable_wheel_needs_its_torch_or_newer_and_says_what_it_brings_in() -> None:
    stable = _abi_wheel("cu128", "stable", torch_built="2.9", pin="torch>=2.9")
    assert chosen(select("pkg", [stable], target(torch="2.11.0"))) == stable.filename
    older = reasons(select("pkg", [stable], target(torch="2.8.0")))
    assert older[stable.filename] == (
        "torch",
        "built for torch>=2.9 (stable ABI, from its Requires-Dist); installed torch is 2.8.0: "
        "'undefined symbol: aoti_torch_…'",
    )
    none_installed = select("pkg", [stable], target(torch=None))
    assert none_installed.chosen is not None
    assert "installing it brings in torch>=2.9" in " ".join(none_installed.chosen.notes)


def test_an_exact_wheel_is_refused_on_another_torch_naming_both() -> None:
    exact = _abi_wheel("cu128", "exact", torch_built="2.13", pin="torch==2.13.*")
    got = reasons(select("pkg", [exact], target(torch="2.11.0")))
    assert got[exact.filename] == (
        "torch",
        (
            "built for torch==2.13.* (exact ABI, from its Requires-Dist); installed torch is "
            "2.11.0: 'undefined symbol: _ZN3c10…'"
        ),
    )
    assert chosen(select("pkg", [exact], target(torch="2.13.0+cpu"))) == exact.filename
    bare = select("pkg", [exact], target(torch=None))
    assert bare.chosen is not None
    assert "installing it brings in torch==2.13.*" in " ".join(bare.chosen.notes)
    unpinned = _abi_wheel("cu128torch2.13", "exact", torch_built="2.13")
    assert reasons(select("pkg", [unpinned], target(torch=None)))[unpinned.filename] == (
        "torch",
        "built for torch==2.13.* (exact ABI) but torch is not installed: 'undefined symbol'",
    )
