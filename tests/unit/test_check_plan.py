"""Discovering ops and planning a run: selection, skips with reasons, config overrides, empties."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cuship.check import Impl, Op, Tensor
from cuship.check.declare.registry import discover
from cuship.check.run.availability import Unavailable
from cuship.check.run.runner import CheckSettings, plan, runnable_engines, skip_unavailable
from cuship.config import CheckModeSection, CheckOpSection, CheckSection
from cuship.errors import ConfigError, InputError, NothingToDo, ToolMissing, UsageError


def _ref(x: Any) -> Any:
    return x


def _op(
    name: str, *impls: Impl, default: bool = True, dtypes: tuple[str, ...] = ("float32",)
) -> Op:
    return Op(
        name=name,
        reference=_ref,
        inputs=(Tensor(name="x", dims=("n",)),),
        shapes=({"n": 1}, {"n": 33}),
        extended_shapes=({"n": 0},),
        fuzz_dims={"n": (1, 9)},
        dtypes=dtypes,
        impls=impls,
        default=default,
    )


NATIVE = Impl(kind="native", fn=_ref)
TRITON = Impl(kind="triton", fn=_ref)
OPS = (
    _op("copy", NATIVE, TRITON, Impl(kind="cuda", fn=_ref), dtypes=("float32", "bfloat16")),
    _op("fast_tanh", Impl(kind="triton", fn=_ref, uses=("inline_asm",))),
    _op("shuffle", Impl(kind="numba", fn=_ref, uses=("warp_intrinsics",))),
    _op("broken", TRITON, default=False),
)


def _groups(**settings: Any) -> dict[str, str | None]:
    the_plan = plan(OPS, CheckSettings(**settings))
    return {f"{g.op}/{g.engine}/{g.dtype}": g.skip_reason for g in the_plan.groups}


def test_cpu_plan_runs_cpu_engines_and_skips_gpu_ones_with_reasons() -> None:
    groups = _groups()
    assert groups["copy/native/float32"] is None
    assert groups["copy/triton-interpret/float32"] is None
    assert "CUDA GPU" in str(groups["copy/cuda/float32"])
    assert groups["copy/triton-interpret/bfloat16"] is None  # bf16 is adapted, not skipped
    assert "inline_asm" in str(groups["fast_tanh/triton-interpret/float32"])
    assert "warp intrinsics" in str(groups["shuffle/numba-sim/float32"])
    assert not any(key.startswith("broken/") for key in groups)


def test_bf16_runs_in_the_interpreter_with_or_without_the_old_upcast_flag() -> None:
    op = _op("up", Impl(kind="triton", fn=_ref, bf16_upcast=True), dtypes=("bfloat16",))
    the_plan = plan((op,), CheckSettings())
    assert [g.skip_reason for g in the_plan.groups] == [None]


def test_gpu_plan_uses_gpu_engines() -> None:
    groups = _groups(device="cuda")
    assert groups["copy/triton/float32"] is None
    assert groups["copy/cuda/float32"] is None
    assert groups["fast_tanh/triton/float32"] is None
    assert not any("interpret" in key for key in groups)


def test_naming_a_non_default_op_selects_it() -> None:
    assert list(_groups(ops=("broken",))) == ["broken/triton-interpret/float32"]
    assert "broken/triton-interpret/float32" in _groups(include_broken=True)


def test_filters_and_quick_dtypes() -> None:
    groups = _groups(engines=("native",), quick=True)
    assert list(groups) == ["copy/native/float32"]
    assert list(_groups(ops=("copy",), dtypes=("bfloat16",), engines=("triton-interpret",))) == [
        "copy/triton-interpret/bfloat16"
    ]


def test_unknown_names_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="'nope'"):
        plan(OPS, CheckSettings(ops=("nope",)))
    with pytest.raises(UsageError, match="'warp'"):
        plan(OPS, CheckSettings(engines=("warp",)))
    with pytest.raises(UsageError, match="--device cpu"):
        plan(OPS, CheckSettings(device="cuda", engines=("triton-interpret",)))


def test_empty_selection_is_nothing_to_do() -> None:
    with pytest.raises(NothingToDo):
        plan((), CheckSettings())
    with pytest.raises(NothingToDo):
        plan(OPS, CheckSettings(ops=("shuffle",), engines=("native",)))


def test_case_selection_and_config_overrides() -> None:
    config = CheckSection(
        fuzz=0,
        quick=CheckModeSection(fuzz=0),
        ops={"copy": CheckOpSection(rtol=0.5, shapes=({"n": 5},), dtypes=("float32",))},
    )
    the_plan = plan(OPS, CheckSettings(ops=("copy",), engines=("native",), config=config))
    (group,) = the_plan.groups
    assert (group.rtol, group.atol) == (0.5, 1e-5)
    sizes = [dict(c.sizes)["n"] for c in group.cases]
    assert sizes == [1, 33, 5, 0] * 2  # thorough: each shape with "normal", then "uniform"
    one = plan(OPS, CheckSettings(ops=("copy",), engines=("native",), config=config, case=2))
    assert [c.index for c in one.groups[0].cases] == [2]
    assert one.groups[0].cases[0] == group.cases[2]


def test_op_declaration_errors_name_the_op() -> None:
    with pytest.raises(ValueError, match=r"'bad'.*'float8'"):
        _op("bad", NATIVE, dtypes=("float8",))


def _write(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / name).write_text(textwrap.dedent(body), encoding="utf-8")
    return name


def test_discover_collects_module_level_ops_and_lists(tmp_path: Path) -> None:
    name = _write(
        tmp_path,
        "my_checks.py",
        """
        from cuship.check import Impl, Op, Tensor
        def ident(x): return x
        def make(n): return Op(name=n, reference=ident, inputs=(Tensor(name="x", dims=("n",)),),
                               shapes=({"n": 1},), impls=(Impl(kind="native", fn=ident),))
        first = make("first")
        MORE = [make("second"), make("third")]
        """,
    )
    ops = discover([name], tmp_path)
    assert [op.name for op in ops] == ["first", "second", "third"]
    assert {op.module for op in ops} == {name}


def test_duplicate_op_names_across_modules_are_config_errors(tmp_path: Path) -> None:
    body = """
        from cuship.check import Impl, Op, Tensor
        def ident(x): return x
        op = Op(name="same", reference=ident, inputs=(Tensor(name="x", dims=("n",)),),
                shapes=({"n": 1},), impls=(Impl(kind="native", fn=ident),))
        """
    a, b = _write(tmp_path, "a.py", body), _write(tmp_path, "b.py", body)
    with pytest.raises(ConfigError, match="'same'"):
        discover([a, b], tmp_path)


def test_missing_or_broken_check_modules_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        discover(["nowhere.py"], tmp_path)
    broken = _write(tmp_path, "broken_checks.py", "import not_a_module_anywhere\n")
    with pytest.raises(InputError, match="not_a_module_anywhere"):
        discover([broken], tmp_path)


def test_project_directories_go_after_site_packages_so_the_installed_build_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, src = tmp_path / "site", tmp_path / "src"
    site.mkdir()
    src.mkdir()
    (site / "shadowed_pkg.py").write_text("WHERE = 'installed'\n")
    (src / "shadowed_pkg.py").write_text("WHERE = 'source'\n")
    _write(
        src,
        "appended_checks.py",
        """
        from cuship.check import Impl, Op, Tensor
        import shadowed_pkg
        def ident(x): return x
        op = Op(name=shadowed_pkg.WHERE, reference=ident, inputs=(Tensor(name="x", dims=("n",)),),
                shapes=({"n": 1},), impls=(Impl(kind="native", fn=ident),))
        """,
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.syspath_prepend(str(site))
    for name in ("shadowed_pkg", "appended_checks"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    (op,) = discover(["appended_checks"], tmp_path, [src])
    assert op.name == "installed"  # src serves only what nothing else provides
    assert sys.path[-1] == str(src)


def test_groups_of_an_unavailable_engine_are_skipped_with_its_reason() -> None:
    the_plan = plan(OPS, CheckSettings())
    assert runnable_engines(the_plan) == ("native", "triton-interpret")
    no_torch = Unavailable(engine="triton-interpret", error="no torch", fix="pip install torch")
    skipped = skip_unavailable(the_plan, [no_torch])
    reasons = {f"{g.op}/{g.engine}/{g.dtype}": g.skip_reason for g in skipped.groups}
    assert reasons["copy/triton-interpret/float32"] == no_torch.reason
    assert reasons["copy/native/float32"] is None
    assert reasons["fast_tanh/triton-interpret/float32"].startswith("uses inline_asm")  # type: ignore[union-attr]
    assert runnable_engines(skipped) == ("native",)


def test_installed_needs_the_package_installed_and_a_project(tmp_path: Path) -> None:
    """--installed imports the wheel under test, so it must be installed to begin with."""
    from cuship.check.declare.project import find_project

    example = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"
    with pytest.raises(ToolMissing, match="'cuvecops' is not installed"):
        find_project(example, installed=True)
    module = tmp_path / "ops.py"
    module.write_text("")
    with pytest.raises(UsageError, match="--installed needs a project directory"):
        find_project(module, installed=True)
