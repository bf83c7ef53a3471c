"""Issue 43's hostile inputs, each run as its own process against one or two checkouts: the exit
code, the seconds, the peak memory and the first line said, for the before/after table.

    python3 benchmarks/bench_hostile_inputs.py [--before /work/main/src] [--only ID ...]
        [--limit-s 20] [--limit-gib 3] [--print-gib 3]

Each case builds its files in a temporary directory, then runs ``python -m cuship ...`` (or a
few lines of Python calling the library, where no command reaches the reader in question)
with ``PYTHONPATH`` at the checkout's ``src``. A case that runs past ``--limit-s`` is killed
(``hang``); each runs under an address-space limit of ``--limit-gib`` (a case that would
read /dev/zero without end dies there instead of taking the machine). Peak RSS from wait4.
``--print-gib``: what the hostile target interpreter prints.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

Built = tuple[list[str], dict[str, str]]  # argv after the interpreter, extra environment


@dataclass(frozen=True)
class Case:
    id: str
    klass: str
    title: str
    build: Callable[[Path], Built]


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


def _zero(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to("/dev/zero")
    return path


def _torch_site(root: Path, *, version: str = "2.13.0", version_py: str | None = None) -> Path:
    from tests.site_factory import install

    site = root / "site"
    files = {"torch/version.py": (version_py or "cuda = None\nhip = None\n").encode()}
    files["torch/lib/libc10.so"] = b"\x7fELF not really"
    install(site, "torch", version, files=files)
    return site


def _machine_env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH_EXTRA": str(site), "CUSHIP_GPUS": "none", "CUSHIP_NVCC": "none"}


def _with_extension(site: Path) -> Path:
    from tests.elf_factory import cuda_elf
    from tests.site_factory import install

    needed = ("libc10.so", "libcudart.so.13")
    files = {"ext/_C.so": cuda_elf(sass=["90"], needed=needed)}
    install(site, "ext", "1.0", files=files, requires=["torch==2.13.0"])
    return site


def doctor_torch(**torch: str) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        site = _with_extension(_torch_site(root, **torch))
        env = {**_machine_env(site), "CUSHIP_GPUS": "H100:9.0", "CUSHIP_DRIVER_CUDA": "13.0"}
        return ["-m", "cuship", "doctor", "ext"], {**env, "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06"}

    return build


def backend_torch(**torch: str) -> Callable[[Path], Built]:
    """What the PEP 517 backend asks of the environment it installs into: its torch, for the
    prebuilt wheel's URL."""

    def build(root: Path) -> Built:
        site = _torch_site(root, **torch)
        code = (
            "import sys\nfrom cuship.errors import CushipError\n"
            "from cuship.machine.interpreter import Interpreter\n"
            "from cuship.resolve.decide import machine_target\n"
            "from cuship.resolve._template import template_values\n"
            "found = Interpreter(version='3.11', full='3.11.0', executable=sys.executable, "
            f"source='x', python='3.11', paths=({str(site)!r},))\n"
            "try:\n    t = machine_target({'CUSHIP_GPUS': 'none'}, found)\n"
            "    print(template_values(name='p', version='1', target=t, "
            "machine_platform='linux_x86_64'))\n"
            "except CushipError as err:\n"
            "    print(f'error: {err.message}', file=sys.stderr); sys.exit(err.exit_code)"
        )
        return ["-c", code], {}

    return build


def content_length(root: Path) -> Built:
    code = (
        "import sys, threading\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "class H(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = b'{\"files\": []}'\n"
        "        self.send_response(200)\n"
        "        self.send_header('Content-Type', 'application/vnd.pypi.simple.v1+json')\n"
        "        self.send_header('Content-Length', '\\u00b2')\n"
        "        self.end_headers(); self.wfile.write(body)\n"
        "    def log_message(self, *a): pass\n"
        "server = ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
        "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
        "from cuship.cli import main\n"
        "url = f'http://127.0.0.1:{server.server_port}/simple'\n"
        "sys.exit(main(['resolve', 'pkg', '--index', url, '--retries', '0']))"
    )
    return ["-c", code], {"CUSHIP_GPUS": "none", "CUSHIP_TORCH": "none"}


def _env_with(site: Path, command: str) -> Built:
    return ["-m", "cuship", command], _machine_env(site)


def torch_file_case(
    command: str, member: str, make: Callable[[Path], Path]
) -> Callable[..., Built]:
    def build(root: Path) -> Built:
        site = _torch_site(root)
        make(site / member)
        return _env_with(site, command)

    return build


def ldconf(make: Callable[[Path], Path]) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        conf = root / "ld.so.conf"
        (root / "ld.so.conf.d").mkdir()
        conf.write_text(f"include {root}/ld.so.conf.d/*.conf\n/usr/lib\n")
        make(root / "ld.so.conf.d" / "x.conf")
        code = (
            "from cuship.machine.libraries import _conf_dirs\n"
            "from cuship.machine.probe import SystemProbe\n"
            f"p = SystemProbe(); print(_conf_dirs(p, {str(conf)!r}, [64]))\n"
            "print(*getattr(p, 'refused', ()), sep='\\n')"
        )
        return ["-c", code], {}

    return build


def _keys(root: Path) -> Path:
    key = root / "k"
    subprocess.run(
        [sys.executable, "-m", "cuship", "keygen", "-o", str(key)],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    return key


def verify_key(make: Callable[[Path], Path]) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        envelope = root / "x.intoto.jsonl"
        envelope.write_text("{}\n")
        key = make(root / "fake.pub")
        return ["-m", "cuship", "verify-attestation", str(envelope), "--key", str(key)], {}

    return build


def verify_envelope(make: Callable[[Path], Path]) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        key = _keys(root)
        envelope = make(root / "x.intoto.jsonl")
        return ["-m", "cuship", "verify-attestation", str(envelope), "--key", f"{key}.pub"], {}

    return build


def attest_key_zero(root: Path) -> Built:
    from tests.wheel_factory import make_wheel

    wheel = make_wheel(root, "pkg", "1.0")
    key = _zero(root / "key")
    return ["-m", "cuship", "attest", str(wheel), "--key", str(key), "-o", str(root / "o")], {}


def baseline(make: Callable[[Path], object]) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        path = root / "baseline.json"
        make(path)
        code = (
            "import sys\nfrom pathlib import Path\nfrom cuship.errors import CushipError\n"
            "from cuship.check.report.baseline import load\n"
            f"try:\n    load(Path({str(path)!r}))\n    print('read')\n"
            "except CushipError as err:\n"
            "    print(f'error: {err.message}', file=sys.stderr); sys.exit(err.exit_code)"
        )
        return ["-c", code], {}

    return build


def _write(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def _big_baseline(path: Path) -> None:
    entries = {f"op{i}/native/float32": {"status": "passed", "max_abs": 1e-7, "max_rel": 1e-7,
               "cases": 3} for i in range(1_200_000)}  # fmt: skip
    text = json.dumps({"format": 1, "seed": 0, "quick": True, "entries": entries})
    path.write_text(text)


def target_prints(payload: str) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        fake = root / "python"
        fake.write_text(f"#!{sys.executable}\nimport sys\n{payload}\n")
        fake.chmod(0o755)
        code = (
            "from cuship.resolve.target import _probe\n"
            f"print(_probe({str(fake)!r}, 'CUSHIP_TARGET_PYTHON', '/nowhere'))"
        )
        return ["-c", code], {}

    return build


def variants_doc(document: str) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        from tests.unit.test_variants import _published

        from cuship.index import write
        from cuship.index.describe import describe_wheel

        write([_published(root)], root / "site", describe=describe_wheel)
        (root / "site/simple/pkg/pkg-1.0-variants.json").write_text(document)
        env = {
            "CUSHIP_GPUS": "H100:9.0",
            "CUSHIP_DRIVER_CUDA": "13.0",
            "CUSHIP_CUDA_DRIVER_VERSION": "580.65.06",
            "CUSHIP_TORCH": "none",
            "CUSHIP_TAGS": "cp311-cp311-linux_x86_64",
        }
        index = (root / "site/simple").as_uri()
        return ["-m", "cuship", "resolve", "pkg", "--index", index], env

    return build


def _variant_wheel(root: Path, document: dict[str, object], name: str = "pkg-1.0-") -> Path:
    import zipfile

    from tests.elf_factory import cuda_elf
    from tests.wheel_factory import make_wheel

    tag = "cp311-cp311-linux_x86_64"
    files = {
        "pkg/_C.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.13",)),
        "pkg-1.0.dist-info/variant.json": json.dumps(document).encode(),
    }
    wheel = make_wheel(root / "w", "pkg", "1.0", tag=tag, files=files)
    target = root / f"{name}{tag}-cu130.whl"
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info, old.read(info))
    return target


def _variant(label: str, lower: list[str]) -> dict[str, object]:
    features = {"cuda_version_lower_bound": lower, "sm_arch": ["90_real"]}
    return {"variants": {label: {"nvidia": features}}}


def verify_variant(document: dict[str, object]) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        return ["-m", "cuship", "verify", str(_variant_wheel(root, document))], {}

    return build


def variant_of_variant(root: Path) -> Built:
    from tests.elf_factory import cuda_elf
    from tests.wheel_factory import make_wheel

    files = {
        "pkg/_C.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.13",)),
        "pkg-1.0+cu130.dist-info/variant.json": json.dumps(_variant("cu130", ["13"])).encode(),
    }
    tag = "cp311-cp311-linux_x86_64"
    wheel = make_wheel(root, "pkg", "1.0+cu130", tag=tag, files=files)
    return ["-m", "cuship", "variant", str(wheel), "-o", str(root / "o")], {}


def variant_label_null(root: Path) -> Built:
    from tests.elf_factory import cuda_elf
    from tests.wheel_factory import make_wheel

    files = {"pkg/_C.abi3.so": cuda_elf(sass=["90"], needed=("libcudart.so.13",))}
    wheel = make_wheel(root, "pkg", "1.0+cu130", tag="cp311-cp311-linux_x86_64", files=files)
    return ["-m", "cuship", "variant", str(wheel), "-o", str(root / "o"), "--label", "null"], {}


def foreign_prebuilt(root: Path) -> Built:
    from tests.hostile_wheels import foreign_dist_info

    wheel = foreign_dist_info(root, "pkg", "other")
    code = (
        "import sys\nfrom pathlib import Path\nfrom cuship.errors import CushipError\n"
        "from cuship.resolve.provenance import Handover, add_to_wheel\n"
        "p = Handover(name='pkg', version='1.0', kind='prebuilt', why='x')\n"
        f"try:\n    print(add_to_wheel(Path({str(wheel)!r}), p, out_dir=Path({str(root / 'o')!r})))\n"
        "except CushipError as err:\n"
        "    print(f'error: {err.message}', file=sys.stderr); sys.exit(err.exit_code)"
    )
    return ["-c", code], {}


def base_url(url: str) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        from tests.wheel_factory import make_wheel

        make_wheel(root / "w", "pkg", "1.0")
        return [
            "-m",
            "cuship",
            "index",
            str(root / "w"),
            "-o",
            str(root / "s"),
            "--base-url",
            url,
        ], {}

    return build


def extra_deps(dep: str) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        (root / "cuship.toml").write_text(
            f'[project]\nname = "pkg"\nversion = "1.0"\n[build]\nextra_deps = [{json.dumps(dep)}]\n'
        )
        return ["-m", "cuship", "config", str(root)], {}

    return build


def nvcc(argv: list[str], mode: str, options: str | None = None) -> Callable[[Path], Built]:
    def build(root: Path) -> Built:
        if options is not None:
            (root / "opts").write_text(options)
            args = [a.replace("OPTS", str(root / "opts")) for a in argv]
        else:
            args = argv
        code = (
            "import sys\nfrom cuship.builder.run import nvcc_shim as s\n"
            f"args = {args!r}\n"
            "expand = getattr(s, 'expand_options_files', None)\n"
            "if expand: args = expand(args, s._read_options_file)\n"
            f"new, record = s.plan_call(args, ['-gencode', 'arch=compute_80,code=sm_80'], {mode!r})\n"
            "print(record['action'], new)\n"
            "sys.exit(2 if new is None else 0)"
        )
        return ["-c", code], {}

    return build


def ld_library_path(root: Path) -> Built:
    lib = root / "lib"
    lib.mkdir()
    (lib / "libcudart.so.13").write_bytes(b"")
    dirs = [f"/n/{i}" for i in range(10_000)] + [str(lib)]  # short: an environment string's
    (root / "path").write_text(":".join(dirs))  # limit is 128 KiB
    code = (
        "from cuship.machine.libraries import cuda_libraries\n"
        "from cuship.machine.probe import SystemProbe\n"
        f"path = open({str(root / 'path')!r}).read()\n"
        "libs = cuda_libraries({'LD_LIBRARY_PATH': path}, SystemProbe(), [])\n"
        "import sys\nwhere = libs.where('libcudart.so.13')\nprint('libcudart.so.13:', where)\n"
        "sys.exit(0 if where else 1)"
    )
    return ["-c", code], {}


def report_store(root: Path) -> Built:
    code = (
        "from pathlib import Path\nfrom cuship.store import Store\n"
        f"with Store.open(Path({str(root / 'store.sqlite')!r})): pass\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    script = (
        "import subprocess, sys, os\n"
        f"store = {str(root / 'store.sqlite')!r}\n"
        "done = subprocess.run([sys.executable, '-m', 'cuship', 'report', '--store', store])\n"
        "left = [n for n in os.listdir(os.path.dirname(store)) if n.startswith('store.sqlite-')]\n"
        "print(f'error: made beside the store it only read: {left}' if left else 'nothing made beside it')\n"
        "sys.exit(1 if left else done.returncode)"
    )
    return ["-c", script], {}


CASES = [
    Case("fifo-version-env", "3 hang", "torch/version.py a FIFO: env", torch_file_case("env", "torch/version.py", _fifo)),
    Case("fifo-version-doctor", "3 hang", "torch/version.py a FIFO: doctor", torch_file_case("doctor", "torch/version.py", _fifo)),
    Case("fifo-libc10-env", "3 hang", "torch/lib/libc10.so a FIFO: env", torch_file_case("env", "torch/lib/libc10.so", _fifo)),
    Case("fifo-libc10-doctor", "3 hang", "torch/lib/libc10.so a FIFO: doctor", torch_file_case("doctor", "torch/lib/libc10.so", _fifo)),
    Case("fifo-ldconf", "3 hang", "an ld.so.conf include a FIFO", ldconf(_fifo)),
    Case("fifo-key", "3 hang", "verify-attestation --key a FIFO", verify_key(_fifo)),
    Case("fifo-envelope", "3 hang", "verify-attestation ENVELOPE a FIFO", verify_envelope(_fifo)),
    Case("fifo-baseline", "3 hang", "check --baseline a FIFO (its loader)", baseline(_fifo)),
    Case("zero-version", "4 memory", "torch/version.py -> /dev/zero: env", torch_file_case("env", "torch/version.py", _zero)),
    Case("zero-libc10", "4 memory", "torch/lib/libc10.so -> /dev/zero: env", torch_file_case("env", "torch/lib/libc10.so", _zero)),
    Case("zero-ldconf", "4 memory", "an ld.so.conf include -> /dev/zero", ldconf(_zero)),
    Case("zero-key", "4 memory", "verify-attestation --key /dev/zero", verify_key(_zero)),
    Case("zero-envelope", "4 memory", "verify-attestation ENVELOPE /dev/zero", verify_envelope(_zero)),
    Case("zero-baseline", "4 memory", "check --baseline /dev/zero", baseline(_zero)),
    Case("zero-attest-key", "4 memory", "cuship attest --key /dev/zero", attest_key_zero),
    Case("target-3gb", "4 memory", "a target interpreter printing 3 GB", target_prints("PRINT")),
    Case("baseline-100mb", "4 memory", "a 100 MB baseline", baseline(_big_baseline)),
    Case("variants-zz", "5 exit 70", 'variants.json {"zz":{"nvidia":"x"}}', variants_doc('{"variants":{"zz":{"nvidia":"x"}}}')),
    Case("variants-sm5", "5 exit 70", 'variants.json {"sm_arch":5}', variants_doc('{"variants":{"zz":{"nvidia":{"sm_arch":5}}}}')),
    Case("variants-sup2", "5 exit 70", 'variants.json a bound "²"', variants_doc('{"variants":{"zz":{"nvidia":{"cuda_version_lower_bound":["²"]}}}}')),
    Case("verify-abc", "5 exit 70", 'verify: a variant bound ["abc"]', verify_variant(_variant("cu130", ["abc"]))),
    Case("torch-cuda-sup2", "5 exit 70", "torch/version.py cuda = '²': doctor", doctor_torch(version_py="cuda = '²'\nhip = None\n")),
    Case("content-length", "5 exit 70", "Content-Length: ²: resolve", content_length),
    Case("baseline-deep", "5 exit 70", "a baseline nested 100,000 deep", baseline(_write(b'{"format": 1, "entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))),
    Case("baseline-1e400", "5 exit 70", "a baseline holding 1e400", baseline(_write(b'{"format": 1, "seed": 1e400, "entries": {}}'))),
    Case("baseline-latin1", "5 exit 70", "a baseline not UTF-8", baseline(_write(b'{"format": 1, "device": "caf\xe9", "entries": {}}'))),
    Case("target-1234", "5 exit 70", "a backend target printing [1,2,3,4]", target_prints("print('[1,2,3,4]')")),
    Case("torch-banana", "5 exit 70", "a torch version banana: the backend's target", backend_torch(version="banana")),
    Case("variant-null", "6 accepted", "cuship variant --label null", variant_label_null),
    Case("variant-of-variant", "6 accepted", "a variant made from a variant", variant_of_variant),
    Case("label-disagrees", "6 accepted", "a label disagreeing with its variant.json", verify_variant(_variant("cu129", ["13"]))),
    Case("foreign-prebuilt", "6 accepted", "a prebuilt wheel whose dist-info names another project", foreign_prebuilt),
    Case("base-url-query", "6 accepted", "--base-url with a query", base_url("https://h/x?token=1")),
    Case("base-url-fragment", "6 accepted", "--base-url with a fragment", base_url("https://h/x#f")),
    Case("base-url-newline", "6 accepted", "--base-url with a newline", base_url("https://h/x\ny")),
    Case("deps-index-url", "6 accepted", "extra_deps --index-url=...", extra_deps("--index-url=https://evil/simple")),
    Case("deps-editable", "6 accepted", "extra_deps -e.", extra_deps("-e.")),
    Case("deps-path", "6 accepted", "extra_deps a path", extra_deps("./vendored/pkg")),
    Case("nvcc-xptxas", "6 accepted", "nvcc shim -Xptxas -arch=sm_90 -O2 keeps -O2", nvcc(["-c", "x.cu", "-Xptxas", "-arch=sm_90", "-O2"], "rewrite")),
    Case("nvcc-optfile", "6 accepted", "arch flags in --options-file, arch_flags = stop", nvcc(["-c", "x.cu", "--options-file", "OPTS"], "stop", "-gencode arch=compute_90,code=sm_90 -O2")),
    Case("ld-path-10000", "6 accepted", "10,000 LD_LIBRARY_PATH entries", ld_library_path),
    Case("report-wal", "6 accepted", "cuship report beside a store it only reads", report_store),
]  # fmt: skip

_MEASURE = """
import os, resource, subprocess, sys
limit_s, limit = float(sys.argv[1]), int(sys.argv[2])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
proc = subprocess.Popen(sys.argv[3:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=cap)
try:
    out, _ = proc.communicate(timeout=limit_s)
    hung = False
except subprocess.TimeoutExpired:
    proc.kill(); out, _ = proc.communicate(); hung = True
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
lines = out.decode(errors="replace").strip().splitlines()
said = [l for l in lines if l.startswith(("error", "warning", "not read", "  note"))][:1] or lines[-1:] or [""]
print("hang" if hung else proc.returncode, usage.ru_maxrss, said[0][:150])
"""


def run(case: Case, src: Path, root: Path, limit_s: float, limit: int, print_gib: float) -> str:
    argv, extra = case.build(root)
    if case.id == "target-3gb":
        payload = f"chunk = b'x' * (1 << 20)\nfor _ in range({int(print_gib * 1024)}):\n    sys.stdout.buffer.write(chunk)"
        (root / "python").write_text(f"#!{sys.executable}\nimport sys\n{payload}\n")
    path = [str(src), *filter(None, [extra.pop("PYTHONPATH_EXTRA", "")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), **extra}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(limit_s), str(limit), sys.executable, *argv],
        env=env, capture_output=True, text=True, check=False, cwd=root,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    code, kib, *said = (done.stdout.strip() or "? 0").split(" ", 2)
    return f"{code:>4} {int(kib) / 1024:>7.0f} {seconds:>6.1f}  {''.join(said)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="another checkout's src/")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--limit-s", type=float, default=20.0)
    parser.add_argument("--limit-gib", type=float, default=3.0)
    parser.add_argument("--print-gib", type=float, default=3.0)
    options = parser.parse_args()
    srcs = {"after": REPO / "src"}
    if options.before is not None:
        srcs = {"before": options.before, **srcs}
    limit = int(options.limit_gib * (1 << 30))
    print(f"{'case':20} {'class':10} {'run':6} {'exit':>4} {'peak MB':>7} {'s':>6}  said")
    for case in CASES:
        if options.only and case.id not in options.only:
            continue
        for label, src in srcs.items():
            with tempfile.TemporaryDirectory(prefix="cuship-hostile-") as temp:
                row = run(case, src, Path(temp), options.limit_s, limit, options.print_gib)
            print(f"{case.id:20} {case.klass:10} {label:6} {row}", flush=True)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
