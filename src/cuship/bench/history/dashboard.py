"""The static bench dashboard: an index of the latest results and one page per benchmark.

Plan, then write: :func:`build_site` turns stored runs into ``{relative path: content}`` (pure);
:func:`write_site` puts that tree in place atomically (staging directory, then one exchange), the
way the package index is written. The site needs no server and no network: relative links, inline
SVG plots, one small script for tooltips, and ``.nojekyll`` for GitHub Pages. Every text from the
store (case names, labels, package names) is escaped by Jinja's autoescape or by the plot module.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from cuship.bench.history._plot import (
    format_clock,
    format_hot,
    format_ncu,
    format_throughput,
    format_value,
    history_svg,
    when,
)
from cuship.bench.history.changepoints import History, Step, histories, machine_of
from cuship.errors import UsageError
from cuship.events import Emit, Event, discard
from cuship.store.read import BenchRun
from cuship.version import __version__

__all__ = ["MARKER", "bench_page_name", "build_site", "write_site"]

MARKER = ".cuship-dashboard"
_STATIC = {"style.css": "dashboard.css", "dashboard.js": "dashboard.js"}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    title: str
    run_count: int
    latest: str
    machines: Mapping[str, Mapping[str, Any]]  # machine id -> newest fingerprint seen


def bench_page_name(case: str) -> str:
    """``bench/<readable part>-<hash>.html``: safe on every filesystem, unique per case name."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", case).strip("-.")[:48] or "case"
    return f"bench/{readable}-{hashlib.sha256(case.encode()).hexdigest()[:8]}.html"


def _machine_name(fp: Mapping[str, Any]) -> str:
    gpu = fp.get("gpu")
    if gpu:
        count = int(fp.get("gpu_count") or 1)
        return f"{count} × {gpu}" if count > 1 else str(gpu)
    return f"{fp.get('cpu_model') or 'unknown CPU'} (CPU)"


def _params(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={params[k]}" for k in sorted(params)) or "-"


def _step_row(hist: History, step: Step, ctx: _Context, href: str | None) -> dict[str, Any]:
    unit = hist.series.unit
    return {
        "key": hist.series.key,
        "href": href,
        "machine": _machine_name(ctx.machines.get(hist.series.machine_id, {})),
        "run_id": step.run_id,
        "label": step.label,
        "when": when(step.started),
        "before": format_value(step.before, unit),
        "after": format_value(step.after, unit),
        "change": f"{step.rel_change:+.1%}",
        "direction": step.direction,
        "p_value": f"{step.p_value:.3g}",
    }


def _latest_rows(found: Sequence[History], ctx: _Context) -> list[dict[str, Any]]:
    rows = []
    for hist in found:
        s, last = hist.series, hist.series.points[-1]
        rows.append(
            {
                "case": s.case,
                "href": bench_page_name(s.case),
                "params": _params(s.params),
                "median": format_value(last.median, s.unit),
                "throughput": format_throughput(last.numbers),
                "hot": format_hot(last.numbers),
                "clock": format_clock(last.numbers),
                "ncu": format_ncu(last.numbers),
                "machine": _machine_name(ctx.machines.get(s.machine_id, {})),
                "machine_id": s.machine_id,
                "when": when(last.started),
                "label": last.label,
                "steps": len(hist.steps),
            }
        )
    return rows


def _env_rows(runs: Iterable[BenchRun]) -> list[dict[str, Any]]:
    rows = []
    for run, _ in runs:
        fp = run.fingerprint
        packages = fp.get("packages") or {}
        clock, top = fp.get("sm_clock_mhz"), fp.get("max_sm_clock_mhz")
        rows.append(
            {
                "run_id": run.id,
                "when": when(run.started),
                "label": run.meta.get("label") or "",
                "machine_id": machine_of(fp),
                "gpu": fp.get("gpu") or "none",
                "driver": fp.get("driver") or "-",
                "cuda": fp.get("cuda") or "-",
                "clocks": f"{clock or '-'} / {top or '-'} MHz" if clock or top else "-",
                "power": f"{fp['power_limit_w']:g} W" if fp.get("power_limit_w") else "-",
                "cpu": f"{fp.get('cpu_model') or '-'} × {fp.get('cpu_count') or '?'}",
                "timer": fp.get("timer") or "-",
                "python": fp.get("python") or "-",
                "packages": ", ".join(f"{k} {v}" for k, v in sorted(dict(packages).items())),
            }
        )
    return rows


def _bench_page(
    case: str, found: Sequence[History], runs: Sequence[BenchRun], ctx: _Context
) -> dict[str, Any]:
    from markupsafe import Markup

    by_machine: dict[str, list[dict[str, Any]]] = {}
    for hist in found:
        by_machine.setdefault(hist.series.machine_id, []).append(
            {
                "key": hist.series.key,
                "noise": f"{hist.noise:.2%}",
                "svg": Markup(history_svg(hist)),  # built from escaped parts only
            }
        )
    machines = [
        {"id": mid, "name": _machine_name(ctx.machines.get(mid, {})), "plots": plots}
        for mid, plots in by_machine.items()
    ]
    case_runs = [r for r in runs if any(row.payload.get("case") == case for row in r[1])]
    return {
        "case": case,
        "machines": machines,
        "steps": [_step_row(h, s, ctx, None) for h in found for s in h.steps],
        "env": _env_rows(case_runs),
    }


def _context(runs: Sequence[BenchRun], title: str) -> _Context:
    machines = {machine_of(run.fingerprint): run.fingerprint for run, _ in runs}
    latest = when(max(run.started for run, _ in runs)) if runs else "-"
    return _Context(title=title, run_count=len(runs), latest=latest, machines=machines)


def build_site(runs: Sequence[BenchRun], *, title: str = "cuship benchmarks") -> dict[str, str]:
    """Every file of the site, by relative path; pure (reads no file but the bundled templates)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("cuship", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    found = histories(runs)
    ctx = _context(runs, title)
    common = {
        "title": title,
        "version": __version__,
        "run_count": ctx.run_count,
        "latest_run": ctx.latest,
    }
    steps = [_step_row(h, s, ctx, bench_page_name(h.series.case)) for h in found for s in h.steps]
    latest = _latest_rows(found, ctx)
    site = {
        "index.html": env.get_template("dashboard_index.html").render(
            root="", latest=latest, profiled=any(r["ncu"] for r in latest), steps=steps, **common
        ),
        ".nojekyll": "",
        MARKER: "This directory is written by `cuship dashboard`; it is replaced on each run.\n",
    }
    bench = env.get_template("dashboard_bench.html")
    for case in sorted({h.series.case for h in found}):
        mine = [h for h in found if h.series.case == case]
        page = _bench_page(case, mine, runs, ctx)
        site[bench_page_name(case)] = bench.render(root="../", **page, **common)
    templates = resources.files("cuship") / "templates"
    for name, source in _STATIC.items():
        site[name] = (templates / source).read_text(encoding="utf-8")
    return site


def _check_target(site: Path) -> None:
    if site.exists() and not site.is_dir():
        raise UsageError(f"{str(site)!r} is a file, not a directory", hint="pick a new -o SITE")
    if site.is_dir() and any(site.iterdir()) and not (site / MARKER).exists():
        raise UsageError(
            f"{str(site)!r} is not empty and was not written by `cuship dashboard`; refusing to replace it",
            hint="pick a new or empty directory for -o SITE",
        )


def write_site(site: Path, files: Mapping[str, str], emit: Emit = discard) -> Path:
    """Write ``files`` as the whole content of directory ``site``, replacing it in one step."""
    from cuship._fs import exchange, locked, recover, staging_dir

    site = site.absolute()
    _check_target(site)
    with locked(site, emit):
        recover(site, emit)
        staging = staging_dir(site)
        try:
            for name, text in files.items():
                path = staging / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            staging.chmod(0o755)
            exchange(staging, site)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    pages = sum(name.endswith(".html") for name in files)
    emit(Event(level="info", topic="dashboard", message=f"wrote {pages} pages to {site}"))
    return site
