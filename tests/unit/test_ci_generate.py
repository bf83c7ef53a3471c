"""The CI generators: what the written files promise, read back as YAML (no tools run here)."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cuship.ci import CiContext, GeneratedFile, context_for, generate, write_files
from cuship.ci.context import BUILT_WHEELS
from cuship.ci.pin import CushipPin
from cuship.compat import load
from cuship.config import Config, load_config
from cuship.config.ci import CiSection
from cuship.errors import ConfigError, InputError, UsageError
from cuship.matrix import AbiRecord, expand_all

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cuvecops"


def _config(**ci: Any) -> Config:
    config = load_config(EXAMPLE)
    return dataclasses.replace(config, ci=dataclasses.replace(config.ci, **ci))


PIN = CushipPin(requirements=("cuship[all]==0.1.0",), why="named in the test")


def _ctx(config: Config | None = None, project: str = ".", pin: CushipPin = PIN) -> CiContext:
    return context_for(config or load_config(EXAMPLE), load(), project=project, pin=pin)


def _docs(ctx: CiContext, provider: str, index: int = 0) -> dict[str, Any]:
    files = generate(ctx, [provider])  # type: ignore[list-item]
    loaded: dict[str, Any] = yaml.safe_load(files[index].text)
    return loaded


def _release(ctx: CiContext) -> dict[str, Any]:
    """The release workflow of ``ctx``."""
    (file,) = [f for f in generate(ctx, ["github"]) if f.path.endswith("cuship-release.yml")]
    loaded: dict[str, Any] = yaml.safe_load(file.text)
    return loaded


def test_on_key_is_the_string_on_not_a_boolean() -> None:
    text = generate(_ctx(), ["github"])[0].text
    doc = yaml.safe_load(text)
    assert "on" in doc and True not in doc
    assert set(doc["on"]) == {"pull_request", "push", "schedule", "workflow_dispatch"}
    assert "\n'on':\n" in text


def test_build_job_fans_out_the_prepare_matrix() -> None:
    jobs = _docs(_ctx(), "github")["jobs"]
    prepare, build = jobs["prepare"], jobs["build"]
    assert prepare["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"
    assert 'cuship matrix "$PROJECT" --format github' in prepare["steps"][-1]["run"]
    assert build["needs"] == "prepare"
    strategy = build["strategy"]
    assert strategy["matrix"] == "${{ fromJSON(needs.prepare.outputs.matrix) }}"
    assert strategy["fail-fast"] is False
    assert strategy["max-parallel"] == 8
    assert build["timeout-minutes"] == 360
    assert build["container"]["image"] == "nvidia/cuda:${{ matrix.cuda }}-devel-ubuntu22.04"
    upload = build["steps"][-1]
    assert upload["uses"] == "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
    assert upload["with"]["name"] == "wheel-${{ matrix.job }}"
    runs = "\n".join(s.get("run", "") for s in build["steps"])
    assert 'cuship build "$PROJECT" --job "$JOB" -o wheelhouse' in runs
    assert build["env"]["JOB"] == "${{ matrix.job }}"  # a value in env, never in the script
    assert "rm -rf /host/dotnet/*" in runs  # disk clean-up through the mounted host dirs


def test_sccache_backends() -> None:
    gha = _docs(_ctx(), "github")["jobs"]["build"]
    assert gha["env"] == {"JOB": "${{ matrix.job }}", "SCCACHE_GHA_ENABLED": "true"}
    sccache = "mozilla-actions/sccache-action@9e7fa8a12102821edf02ca5dbea1acd0f89a2696"
    assert {"uses": sccache} in gha["steps"]
    cached = _docs(_ctx(_config(sccache="actions-cache")), "github")["jobs"]["build"]
    cache = next(s for s in cached["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["key"] == "sccache-${{ matrix.job }}-${{ github.sha }}"
    assert cached["env"]["SCCACHE_DIR"] == "${{ github.workspace }}/.sccache"


def test_gpu_jobs_use_the_configured_labels_and_skip_pull_requests() -> None:
    config = _config(
        gpu_runners={"h100": ("self-hosted", "gpu", "h100"), "l4": ("self-hosted", "l4")}
    )
    ctx = _ctx(config)
    jobs = _docs(ctx, "github")["jobs"]
    assert jobs["gpu-h100"]["runs-on"] == ["self-hosted", "gpu", "h100"]
    assert jobs["gpu-l4"]["runs-on"] == ["self-hosted", "l4"]
    runs = "\n".join(s.get("run", "") for s in jobs["gpu-h100"]["steps"])
    # One command runs the whole GPU job; the steps are no longer spelled out in YAML.
    assert (
        'cuship gpu-run "$PROJECT" --wheels wheelhouse -o "$OUT" --venv "$RUNNER_TEMP/gpu-venv"'
        in runs
    )
    assert jobs["gpu-h100"]["env"] == {"OUT": "gpu-h100"}
    assert "uv pip install pytest wheelhouse/*+*.whl" in runs  # deps; gpu-run: the wheel
    for spelled_out in ("pytest --require-gpu", "cuship check", "cuship bench"):
        assert spelled_out not in runs
    upload = jobs["gpu-h100"]["steps"][-1]
    assert upload["if"] == "always()"
    assert upload["with"] == {"name": "gpu-h100-results", "path": "gpu-h100"}
    assert jobs["gpu-h100"]["if"] == "github.event_name != 'pull_request'"
    assert ctx.gpu_job is not None
    download = next(
        s for s in jobs["gpu-h100"]["steps"] if "download-artifact" in s.get("uses", "")
    )
    assert download["with"]["name"] == f"wheel-{ctx.gpu_job.id}"
    assert ctx.gpu_job.python == ctx.ci.python == "3.12"
    assert ctx.gpu_job.cuda == max(j.cuda for j in ctx.jobs)
    (lint_file,) = [f for f in generate(ctx, ["github"]) if f.path == ".github/actionlint.yaml"]
    lint = yaml.safe_load(lint_file.text)
    assert lint == {"self-hosted-runner": {"labels": ["gpu", "h100", "l4"]}}


def test_no_gpu_jobs_without_gpu_runners() -> None:
    ctx = _ctx(_config(gpu_runners={}))
    assert not [name for name in _docs(ctx, "github")["jobs"] if name.startswith("gpu")]
    assert [f.path for f in generate(ctx, ["github"])] == [
        ".github/workflows/cuship.yml",
        ".github/workflows/cuship-release.yml",
    ]


def test_permissions_are_minimal_per_job() -> None:
    doc = _docs(_ctx(), "github")
    assert doc["permissions"] == {"contents": "read"}
    jobs = doc["jobs"]
    release = _release(_ctx())
    assert release["permissions"] == {"contents": "read"}
    assert release["jobs"]["release"]["permissions"] == {"contents": "write"}
    assert release["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["nightly"]["permissions"] == {"contents": "read", "actions": "read"}
    for name in ("prepare", "build", "check", "gpu-h100"):
        assert "permissions" not in jobs[name]


def test_release_keeps_earlier_releases_and_deploys_pages() -> None:
    jobs = _release(_ctx())["jobs"]
    script = next(s["run"] for s in jobs["release"]["steps"] if s.get("id") == "release")
    assert 'tag="$(date -u +%Y.%m.%d)-$GITHUB_RUN_NUMBER"' in script
    assert "releases/download/$tag/" in script
    assert 'cuship index wheelhouse -o site --base-url "$base" --keep-existing' in script
    assert "gh release download --pattern cuship-site.tar.gz" in script
    assert 'gh release create "$tag" "${assets[@]}" cuship-site.tar.gz' in script
    assert "assets=(wheelhouse/*.whl)" in script
    assert 'assets+=("site/files/$(basename "$w").metadata")' in script
    assert 'cuship attest wheelhouse/*.whl --key "$RUNNER_TEMP/cuship-key.pem"' in script
    release = next(s for s in jobs["release"]["steps"] if s.get("id") == "release")
    assert release["env"]["CUSHIP_SIGNING_KEY"] == "${{ secrets.CUSHIP_SIGNING_KEY }}"
    deploy = "actions/deploy-pages@d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e"
    assert jobs["deploy"]["steps"] == [{"id": "deployment", "uses": deploy}]
    # the release builds afresh, without the compile cache a pull request's run could write
    assert "SCCACHE_GHA_ENABLED" not in jobs["build"]["env"]
    assert not [s for s in jobs["build"]["steps"] if "sccache" in s.get("uses", "")]
    paths = [f.path for f in generate(_ctx(_config(release=False)), ["github"])]
    assert ".github/workflows/cuship-release.yml" not in paths
    assert "release" not in _docs(_ctx(), "github")["jobs"]


def test_checks_quick_on_prs_thorough_nightly_with_baseline() -> None:
    jobs = _docs(_ctx(), "github")["jobs"]
    quick = "\n".join(s.get("run", "") for s in jobs["check"]["steps"])
    assert (
        'cuship check "$PROJECT" --quick --require-engines --installed '
        "--format junit -o check-junit.xml" in quick
    )
    # the check installs the wheel the build job made for its Python before checking
    assert jobs["check"]["needs"] == "build"
    assert "uv pip install wheelhouse/*+*.whl" in quick  # the build's labelled wheel only
    nightly = jobs["nightly"]
    assert nightly["if"] == "github.event_name == 'schedule'"
    runs = "\n".join(s.get("run", "") for s in nightly["steps"])
    assert "--baseline baseline/check-baseline.json --fail-on-regression" in runs
    assert "--save-baseline check-baseline.json" in runs
    assert "--require-engines" in runs
    names = [s.get("with", {}).get("name") for s in nightly["steps"]]
    assert names.count("check-baseline") == 2  # downloaded, then the new one uploaded


def test_project_path_is_relative_to_the_output_directory() -> None:
    doc = _docs(_ctx(project="examples/cuvecops"), "github")
    assert doc["env"]["PROJECT"] == "examples/cuvecops"
    assert generate(_ctx(project="examples/cuvecops"), ["github"])[0].text.startswith(
        "# GitHub Actions workflow, generated by `cuship ci init` from examples/cuvecops/cuship.toml."
    )


def test_image_template_fields_a_matrix_entry_lacks_are_refused() -> None:
    config = load_config(EXAMPLE)
    build = dataclasses.replace(config.build, image="nvidia/cuda:{cuda_mm}-devel")
    with pytest.raises(ConfigError, match=r"build\.image"):
        generate(_ctx(dataclasses.replace(config, build=build)), ["github"])


def test_gitlab_matrix_tags_and_rules() -> None:
    ctx = _ctx()
    doc = _docs(ctx, "gitlab")
    assert doc["stages"] == ["build", "check", "index", "gpu", "deploy"]
    assert doc["index"]["needs"] == [{"job": "build", "artifacts": True}]
    assert doc["pages"]["needs"] == [
        {"job": "index", "artifacts": True},
        {"job": "check-quick", "artifacts": False, "optional": True},  # nothing red is published
    ]
    assert doc["pages"]["artifacts"] == {"paths": ["public/"]}
    matrix = doc["build"]["parallel"]["matrix"]
    assert [m["JOB"] for m in matrix] == [j.id for j in ctx.jobs]
    assert doc["build"]["image"] == "nvidia/cuda:${CUDA}-devel-ubuntu22.04"
    assert doc["gpu-h100"]["tags"] == ["gpu", "h100"]
    assert doc["gpu-h100"]["script"] == [
        "python3 -m uv pip install pytest wheelhouse/*+*.whl",
        'cuship gpu-run "$PROJECT" --wheels wheelhouse -o "$OUT" --venv "$JOB_VENV-gpu"',
    ]
    assert doc["gpu-h100"]["variables"]["OUT"] == {"value": "gpu-h100", "expand": False}
    assert doc["gpu-h100"]["artifacts"] == {
        "when": "always",
        "paths": ["gpu-h100/"],
        "reports": {"junit": ["gpu-h100/pytest.xml", "gpu-h100/check.xml"]},
    }
    assert ctx.gpu_job is not None
    assert doc["gpu-h100"]["needs"][0]["parallel"]["matrix"][0]["JOB"] == ctx.gpu_job.id
    assert doc["check-nightly"]["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
    assert {"if": '$CI_PIPELINE_SOURCE == "schedule"', "when": "never"} in doc["check-quick"][
        "rules"
    ]
    assert "--provider gitlab --print" in doc["matrix-drift"]["script"][0]


def test_gitlab_jobs_put_uv_in_their_venv_before_the_venv_goes_on_path() -> None:
    """Once the venv is on PATH, ``python3`` is the venv's: every later ``python3 -m uv`` needs
    uv installed there first (gitlab-ci-local's run of the example failed on this)."""
    for name in ("matrix-drift", "check-quick", "index", "gpu-h100"):
        lines = _docs(_ctx(), "gitlab")[name]["before_script"]
        on_path = next(i for i, line in enumerate(lines) if line.startswith("export PATH="))
        into_venv = [
            line
            for line in lines[:on_path]
            if line.startswith('python3 -m uv pip install --python "$JOB_VENV/bin/python" uv ')
        ]
        assert into_venv, name
        assert '-r "$JOB_VENV/cuship-requirements.txt"' in into_venv[0]


def test_check_and_gpu_jobs_install_only_the_wheels_the_build_labelled() -> None:
    """What a build job with [variants] uploads (names from the example's build): an installer
    given them all refuses; the check and GPU jobs take the labelled one."""
    uploaded = [
        "cuvecops-0.1.0+cu130-cp311-cp311-manylinux_2_24_x86_64.whl",
        "cuvecops-0.1.0-cp311-cp311-manylinux_2_24_x86_64-cu130.whl",
        "cuvecops-0.1.0-cp311-cp311-manylinux_2_24_x86_64.whl",
        "cuvecops-0.1.0-cp311-cp311-manylinux_2_24_x86_64-null.whl",
    ]
    taken = [n for n in uploaded if fnmatch.fnmatchcase(f"wheelhouse/{n}", BUILT_WHEELS)]
    assert taken == uploaded[:1]
    doc = _docs(_ctx(), "gitlab")
    assert f"python3 -m uv pip install {BUILT_WHEELS}" in doc["check-quick"]["before_script"]
    assert f"python3 -m uv pip install pytest {BUILT_WHEELS}" in doc["gpu-h100"]["script"]


def test_skypilot_task() -> None:
    doc = _docs(_ctx(_config(skypilot_accelerators="A100:8", use_spot=False)), "skypilot")
    assert doc["resources"] == {"accelerators": "A100:8", "use_spot": False}
    assert doc["run"].splitlines() == [
        "source ~/cuship-venv/bin/activate",
        "out=~/sky_workdir/cuship-results",
        'cuship gpu-run "$PROJECT" --wheels ~/wheelhouse -o "$out" --venv ~/cuship-gpu-venv',
    ]
    assert "~/wheelhouse/*+*.whl" in doc["setup"]  # cuship, pytest and the wheel's dependencies
    bucket = _docs(_ctx(_config(skypilot_bucket="my-results")), "skypilot")
    assert bucket["file_mounts"]["/cuship-results"] == {"name": "my-results", "mode": "MOUNT"}
    assert "out=/cuship-results" in bucket["run"]


def test_gpu_job_is_the_newest_cuda_or_the_one_named() -> None:
    ctx = _ctx()
    assert ctx.gpu_job is not None and ctx.gpu_job.id == "cuvecops-0.1.0-cp312-cu130"
    assert ctx.gpu_wheel_artifact() == "wheel-cuvecops-0.1.0-cp312-cu130"
    named = _ctx(_config(gpu_job="cuvecops-0.1.0-cp311-cu128"))
    assert named.gpu_job is not None and named.gpu_job.label == "cu128"


def test_gpu_job_of_a_torch_matrix_is_the_newest_cuda_then_torch(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\npython = ["3.12"]\n'
        'cuda = ["12.8.1", "13.0.2"]\ntorch = ["2.8", "2.9", "2.10"]\n'
        '[ci]\ngpu_runners = { h100 = ["self-hosted", "gpu", "h100"] }\n'
    )
    ctx = _ctx(load_config(tmp_path))
    assert ctx.gpu_job is not None and ctx.gpu_job.id == "demo-1.0-cp312-cu130-torch2.10"
    doc = _docs(ctx, "github")["jobs"]["gpu-h100"]
    download = next(s for s in doc["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"]["name"] == "wheel-demo-1.0-cp312-cu130-torch2.10"


def test_unknown_gpu_job_names_the_nearest() -> None:
    stale = "cuvecops-0.1.0-cp312-cu130-torch2.10"  # an ID from before the example dropped torch
    with pytest.raises(UsageError, match=re.escape(f"no job {stale!r}")) as err:
        _ctx(_config(gpu_job=stale))
    assert (err.value.hint or "").startswith("nearest: cuvecops-0.1.0-cp312-cu130,")


def test_ci_section_validation(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[matrix]\ncuda = ["13.0.2"]\n[ci]\nnightly_cron = "daily"\n'
    )
    with pytest.raises(ConfigError, match=r"nightly_cron.*5-field cron"):
        load_config(tmp_path)
    (tmp_path / "cuship.toml").write_text('[ci]\ngpu_runners = { h100 = ["gpu box"] }\n')
    with pytest.raises(ConfigError, match="'gpu box' is not a runner label"):
        load_config(tmp_path)
    assert CiSection().gpu_tags() == {}


def test_write_files_refuses_to_overwrite(tmp_path: Path) -> None:
    files = (
        GeneratedFile(provider="github", path=".github/workflows/cuship.yml", text="a: 1\n"),
        GeneratedFile(provider="gitlab", path=".gitlab-ci.yml", text="b: 2\n"),
    )
    (tmp_path / ".gitlab-ci.yml").write_text("mine\n")
    with pytest.raises(InputError, match=r"refusing to overwrite .*\.gitlab-ci\.yml") as err:
        write_files(files, tmp_path)
    assert err.value.exit_code == 2
    assert not (tmp_path / ".github").exists()  # nothing written when anything would be clobbered
    written = write_files(files, tmp_path, force=True)
    assert [p.read_text() for p in written] == ["a: 1\n", "b: 2\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".github", ".gitlab-ci.yml"]


def test_unknown_provider() -> None:
    with pytest.raises(UsageError, match="unknown CI provider 'jenkins'"):
        generate(_ctx(), ["jenkins"])  # type: ignore[list-item]


def test_check_jobs_install_what_the_engines_need_and_require_them() -> None:
    for provider in ("github", "gitlab"):
        text = generate(_ctx(), [provider])[0].text
        assert '--index-url "$TORCH_INDEX" torch' in text
        assert "https://download.pytorch.org/whl/cpu" in text  # in TORCH_INDEX
        assert '-r "$PROJECT/pyproject.toml"' in text  # the project's own dependencies
        assert text.count("--require-engines") == 2  # quick and nightly


def test_ci_install_settings_are_lists_of_single_requirements() -> None:
    pin = CushipPin(requirements=("cuship[all]", "torch"), why="test")
    doc = _docs(_ctx(pin=pin), "github")
    assert doc["env"]["PINNED_CUSHIP"].splitlines() == ["cuship[all]", "torch"]


@pytest.mark.parametrize("value", ['"cuship[all] torch"', '["cuship[all] torch"]'])
def test_a_requirement_line_with_two_requirements_is_a_config_error(
    value: str, tmp_path: Path
) -> None:
    (tmp_path / "cuship.toml").write_text(f"[check]\nmodules = []\n[ci]\ncuship = {value}\n")
    with pytest.raises(ConfigError, match=r"ci\.cuship"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    "value",
    ["cuship[all] @ file:///src/cuship", "cuship @ https://example.org/cuship-1.0.tar.gz"],
)
def test_a_pep_508_url_requirement_is_one_requirement(value: str, tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(f'[check]\nmodules = []\n[ci]\ncuship = ["{value}"]\n')
    assert load_config(tmp_path).ci.cuship == (value,)


def test_a_community_index_gets_no_check_jobs_and_release_notes_name_every_package(
    tmp_path: Path,
) -> None:
    """A packages.yml repository declares no kernel checks: a check job would exit 4 on every
    push, so none is generated; the release notes name every package it builds."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "packages.yml").write_text(
        'matrix: {python: ["3.12"], cuda: ["13.0"], arch: ["9.0"]}\n'
        "packages:\n  torchsort:\n    versions: ['0.1.9']\n"
        "  bottleneck:\n    versions: ['1.5.0']\n    matrix: {device_code: false}\n",
        encoding="utf-8",
    )
    ctx = _ctx(dataclasses.replace(load_config(tmp_path), ci=CiSection(release=True)))
    assert not ctx.has_checks and ctx.projects == ("torchsort", "bottleneck")
    github = _docs(ctx, "github")
    assert not {"check", "nightly"} & set(github["jobs"])
    step = next(s for s in _release(ctx)["jobs"]["release"]["steps"] if s.get("id") == "release")
    assert "Wheels of torchsort, bottleneck built by cuship" in step["env"]["RELEASE_NOTES"]
    assert '--notes "$RELEASE_NOTES"' in step["run"] and "torchsort" not in step["run"]
    gitlab = _docs(ctx, "gitlab")
    assert not {"check-quick", "check-nightly"} & set(gitlab) and "check" not in gitlab["stages"]
    with_checks = _docs(_ctx(), "github")
    assert {"check", "nightly"} <= set(with_checks["jobs"]), "the example declares checks"


def test_a_check_only_folder_of_kernels_gets_check_jobs_and_no_build(tmp_path: Path) -> None:
    """Kernels checked on the interpreter, no package: build jobs would fail by design."""
    (tmp_path / "checks.py").write_text("OPS = []\n")
    (tmp_path / "cuship.toml").write_text('[check]\nmodules = ["checks.py"]\n')
    ctx = _ctx(load_config(tmp_path))
    assert ctx.has_checks and not ctx.builds
    assert set(_docs(ctx, "github")["jobs"]) == {"check", "nightly"}
    gitlab = _docs(ctx, "gitlab")
    assert {"check-quick", "check-nightly"} <= set(gitlab) and "build" not in gitlab
    assert gitlab["stages"] == ["check"]


def test_the_index_state_is_never_published(tmp_path: Path) -> None:
    """The site's own state (its scan cache: runner paths, every METADATA) lives in the site's
    STATE_DIR; generated CI removes it before the release tarball, Pages and GitLab pages."""
    from cuship.index import STATE_DIR

    ctx = _ctx(dataclasses.replace(load_config(EXAMPLE), ci=CiSection(release=True)))
    release = _release(ctx)
    script = "\n".join(s.get("run", "") for j in release["jobs"].values() for s in j["steps"])
    removed = script.index(f"rm -rf site/{STATE_DIR}")
    assert script.index("cuship index") < removed < script.index("tar -czf cuship-site.tar.gz")
    gitlab = _docs(_ctx(), "gitlab")
    assert gitlab["index"]["script"][-1] == f"rm -rf site/{STATE_DIR}"
    assert "mv site public" in gitlab["pages"]["script"]


def test_a_cuda_axis_found_here_reaches_every_job_as_cuship_matrix_cuda() -> None:
    """ci init of a config naming no CUDA plans this host's; its jobs get that axis as
    CUSHIP_MATRIX_CUDA, so the prepare job, the drift check and each build (another nvcc, or
    none) plan the same job IDs the file names."""
    config = load_config(EXAMPLE)
    found = _ctx_found(config, ("13.0",))
    assert _docs(found, "github")["env"]["CUSHIP_MATRIX_CUDA"] == "13.0"
    assert _release(found)["env"]["CUSHIP_MATRIX_CUDA"] == "13.0"
    variable = {"value": "13.0", "expand": False}
    assert _docs(found, "gitlab")["variables"]["CUSHIP_MATRIX_CUDA"] == variable
    told = _ctx(config)
    assert "CUSHIP_MATRIX_CUDA" not in _docs(told, "github")["env"]
    assert "CUSHIP_MATRIX_CUDA" not in _docs(told, "gitlab")["variables"]


def test_ci_init_collapses_the_torch_axis_as_cuship_matrix_does(tmp_path: Path) -> None:
    (tmp_path / "cuship.toml").write_text(
        '[project]\nname = "demo"\nversion = "1.0"\n[matrix]\npython = ["3.12"]\n'
        'cuda = ["13.0.2"]\ntorch = ["2.9", "2.10"]\n'
    )
    config = load_config(tmp_path)
    record = AbiRecord(
        project="demo", version="1.0", torch_abi="none", wheel="demo.whl", job="demo-1.0"
    )
    collapsed = expand_all(config, load(), torch_abi=record).jobs
    assert len(collapsed) < len(expand_all(config, load()).jobs)
    ctx = context_for(config, load(), pin=PIN, torch_abi=record)
    assert ctx.jobs == collapsed
    entries = _docs(ctx, "gitlab")["build"]["parallel"]["matrix"]
    assert [e["JOB"] for e in entries] == [j.id for j in collapsed]


def _ctx_found(config: Config, cuda: tuple[str, ...]) -> CiContext:
    return context_for(config, load(), pin=PIN, found_cuda=cuda)
