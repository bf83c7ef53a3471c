"""The compatibility tables: what ``src/cuship/data/*.toml`` holds, as ``cuship compat`` shows
it, each row with its source."""

from __future__ import annotations

from cuship.compat import Compat, format_driver, load
from cuship.docs._md import code, table, text
from cuship.machine.loader import loader_rules

__all__ = ["render"]


def _source(url: str, note: str = "") -> str:
    link = f"[source]({url})" if url.startswith("https://") else text(url)
    return f"{link} {text(note)}".strip()


def _cuda(data: Compat) -> str:
    rows = [
        [
            code(str(t.version)),
            t.released,
            code(format_driver(t.min_driver_linux)),
            code(format_driver(t.family_min_driver_linux)),
            " ".join(t.sms),
            " ".join(t.dropped),
            _source(t.source, t.note),
        ]
        for t in data.toolkits
    ]
    header = ["CUDA", "released", "min driver", "minor-compat driver", "SASS targets", "dropped"]
    return table([*header, "source"], rows)


def _torch(data: Compat) -> str:
    rows = []
    for r in data.torch:
        abi = "both" if len(set(r.cxx11_abi)) > 1 else ("cxx11" if r.cxx11_abi[0] else "pre-cxx11")
        rows.append(
            [
                code(r.minor),
                code(str(r.latest)),
                r.released,
                " ".join(r.variants),
                r.pypi_cuda,
                f"{r.pythons[0]}–{r.pythons[-1]}",
                abi,
                r.manylinux,
                _source(r.source, r.note),
            ]
        )
    header = ["torch", "latest", "released", "CUDA variants", "PyPI's CUDA", "Python", "C++ ABI"]
    return table([*header, "manylinux", "source"], rows)


def _gpus(data: Compat) -> str:
    rows = [
        [
            text(g.name),
            g.cc,
            g.arch_family,
            ", ".join(str(m) for m in g.memory_gib),
            text("; ".join(g.aliases)),
            _source(g.source, g.note),
        ]
        for g in data.gpus
    ]
    header = ["GPU", "compute capability", "architecture", "memory (GiB)", "also reported as"]
    return table([*header, "source"], rows)


def _peaks(data: Compat) -> str:
    rows = [
        [
            text(p.gpu),
            text(p.variant),
            f"{p.memory_gbps:g}",
            ", ".join(f"{k} {v:g}" for k, v in p.tflops.items()),
            _source(p.source, p.note),
        ]
        for p in data.peaks
    ]
    return table(["GPU", "variant", "memory GB/s", "dense TFLOP/s", "source"], rows)


def _ptx(data: Compat) -> str:
    rows = [[code(str(r.version)), code(str(r.cuda)), _source(r.source, r.note)] for r in data.ptx]
    return table(["PTX ISA", "first CUDA release", "source"], rows)


def _loader() -> str:
    rules = loader_rules()
    search = [[code(r.step), text(r.rule), text(r.source)] for r in rules.search]
    tokens = [[code("$" + r.name), text(r.rule), text(r.source)] for r in rules.token]
    layouts = [
        [text(r.name), " ".join(code(d) for d in r.default_dirs), code(r.lib), text(r.source)]
        for r in rules.layout
    ]
    preload = [[code(r.name), text(r.when), r.scope, text(r.source)] for r in rules.preload]
    bind = [[text(r.rule), text(r.source)] for r in rules.bind]
    left = [[text(r.what), text(r.why)] for r in rules.unmodelled]
    return "\n".join(
        [
            table(["step", "rule", "source"], search),
            table(["token", "expands to", "source"], tokens),
            table(["layout", "default directories", "$LIB", "source"], layouts),
            "What a package's import has loaded before its own objects:\n",
            table(["what", "when", "scope", "source"], preload),
            "Binding:\n",
            table(["rule", "source"], bind),
            "Not modelled:\n",
            table(["what", "why"], left),
        ]
    )


def render() -> str:
    """The page: CUDA toolkits, torch releases, GPU models and their datasheet peaks."""
    data = load()
    return "\n".join(
        [
            "# Compatibility tables\n",
            "What cuship decides with, generated from `src/cuship/data/*.toml` when the site is "
            "built (`cuship compat --json` prints the same rows). Every row cites where it comes "
            "from; a change to the knowledge is a change to those files, never to code.\n",
            "## CUDA toolkits (Linux x86_64)\n",
            "`min driver`: the driver a toolkit's own runtime needs; `minor-compat driver`: the "
            "oldest driver that runs code of that CUDA major under minor-version compatibility.\n",
            _cuda(data),
            "## torch releases (Linux x86_64 wheels)\n",
            "`PyPI's CUDA`: the CUDA build PyPI's wheel of that release is (PyPI's CUDA builds "
            "carry no `+cu` label); `manylinux`: the glibc floor of its wheels, the default "
            "`[build] manylinux` of a job against it.\n",
            _torch(data),
            "## GPU models\n",
            _gpus(data),
            "## Datasheet peaks\n",
            "What `cuship bench` compares throughput with (`[[peak]]` in `data/gpus.toml`; dense "
            "figures).\n",
            _peaks(data),
            "## PTX ISA versions\n",
            "The CUDA release that first writes and loads each PTX ISA version (`data/ptx.toml`): "
            "what a binary's PTX says of the toolkit that made it, and the newest ISA a driver's "
            "JIT compiles.\n",
            _ptx(data),
            "## How the loader finds a library\n",
            "The rules the judge loads a package's objects by (`data/loader.toml`), in order.\n",
            _loader(),
        ]
    )
