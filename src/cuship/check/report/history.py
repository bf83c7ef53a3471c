"""Stored runs as ``cuship report`` prints them: text, JSON or JUnit; a stored check run as the
report it was (the store keeps rows; what they mean as a check is check's to say)."""

from __future__ import annotations

import datetime as dt
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from cuship.check.report.render import render_junit
from cuship.check.report.results import CheckReport, GroupResult
from cuship.check.run.availability import Unavailable
from cuship.check.sanitize.results import SanitizerRun
from cuship.provenance import Provenance
from cuship.store.read import StoredRun

__all__ = ["as_check_report", "render_history"]


def as_check_report(stored: StoredRun) -> CheckReport:
    """A stored check run as the report it was."""
    meta = stored.run.meta
    provenance = meta.get("provenance")
    return CheckReport(
        target=str(meta.get("target", ".")),
        device=str(meta.get("device", "cpu")),
        seed=int(meta.get("seed", 0)),
        quick=bool(meta.get("quick", False)),
        started=stored.run.started,
        finished=stored.run.finished or stored.run.started,
        groups=tuple(GroupResult.from_json(row.payload) for row in stored.results),
        provenance=Provenance.from_json(provenance) if provenance is not None else None,
        unavailable=tuple(Unavailable.from_json(u) for u in meta.get("unavailable", ())),
        sanitize=tuple(SanitizerRun.from_json(s) for s in meta.get("sanitize", ())),
        force_ptx=bool(meta.get("force_ptx", False)),
        jit=tuple(str(line) for line in meta.get("jit", ())),
        env=tuple((str(k), str(v)) for k, v in meta.get("env", {}).items()),
    )


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _text(runs: Sequence[StoredRun]) -> str:
    lines = [f"{'run':>5}  {'kind':<6} {'started':<24} {'project':<16} {'verdict':<8} results"]
    for stored in runs:
        r = stored.run
        counts = ", ".join(f"{n} {s}" for s, n in sorted(stored.counts().items()))
        lines.append(
            f"{r.id:>5}  {r.kind:<6} {_when(r.started):<24} {r.project:<16} {r.verdict or '-':<8} {counts}"
        )
    return "\n".join(lines) + "\n"


def _json(runs: Sequence[StoredRun]) -> str:
    return json.dumps([s.to_json() for s in runs], indent=2) + "\n"


def _junit(runs: Sequence[StoredRun]) -> str:
    root = ET.Element("testsuites", name="cuship report")
    for stored in runs:
        if stored.run.kind != "check":
            continue
        one = ET.fromstring(render_junit(as_check_report(stored)).split("\n", 1)[1])
        for suite in one:
            suite.set("name", f"{suite.get('name')} (run {stored.run.id})")
            suite.set(
                "timestamp",
                dt.datetime.fromtimestamp(stored.run.started, tz=dt.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%S"
                ),
            )
            root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_history(runs: Sequence[StoredRun], fmt: str) -> str:
    return {"text": _text, "json": _json, "junit": _junit}[fmt](runs)
