"""The JSON Schemas of the packaging commands' ``--json`` documents: the index
(:meth:`IndexSummary.to_json <cuship.index.IndexSummary.to_json>`, also inside ``cuship ship
--json``), the wheel tools (repair, retag, variant), the toolkit cache, keys and attestations,
generated CI and the results store's history (``cuship report --format json``)."""

from __future__ import annotations

from typing import get_args

from cuship.attest.run import PredicateKind
from cuship.docs.documents._parts import Schema, array, closed, enum, maybe, of
from cuship.store import RunKind

__all__ = ["DOCUMENTS", "index_summary"]

_COUNT = {"minimum": 0}


def _count(description: str) -> Schema:
    return of("integer", description, **_COUNT)


def index_summary() -> Schema:
    """What writing an index did (:meth:`IndexSummary.to_json`)."""
    skipped = closed(
        "A file given but not indexed.",
        {
            "path": of("string", "The file."),
            "reason": of("string", "Why it was not indexed."),
            "bad_wheel": of("boolean", "It is named like a wheel (a failure, not a note)."),
        },
    )
    return closed(
        "What writing the index did.",
        {
            "site": of("string", "The index's directory."),
            "wheels": _count("Wheels it lists."),
            "projects": _count("Projects it lists."),
            "variants": array("The local labels (variants) of its wheels."),
            "skipped": array("Files given but not indexed.", skipped),
            "hashed": _count("Wheels hashed by this run."),
            "cached": _count("Wheels whose hashes were reused."),
            "base_url": maybe(of("string", ""), "The URL the index is served at, if given."),
            "kept": _count("Wheels kept from the index already there."),
            "rewritten": maybe(
                _count(""),
                "Projects an update in place rewrote; null when the whole tree was rendered.",
            ),
        },
    )


def index_schema() -> Schema:
    doc = index_summary()
    doc["description"] = (
        "What `cuship index --json` prints: the site written, what it lists, the files left "
        "out and why, and what the run read."
    )
    return doc


def _wheel_written(description: str, **more: Schema) -> Schema:
    return closed(
        description,
        {
            "input": of("string", "The wheel given."),
            "output": of("string", "The wheel written."),
            **more,
        },
    )


def repair_schema() -> Schema:
    return _wheel_written(
        "What `cuship repair --json` prints: the wheel given, the repaired wheel and its tags, "
        "the CUDA libraries left to the system and the libraries bundled.",
        tags=array("The repaired wheel's compatibility tags."),
        excluded_needed=array("CUDA/torch libraries its extensions link, left unbundled."),
        bundled_libs=array("Shared libraries bundled into it (by auditwheel, in `*.libs/`)."),
        bundled_cuda_libs=array("Those of them that are CUDA libraries (always empty)."),
    )


def retag_schema() -> Schema:
    return _wheel_written(
        "What `cuship retag --json` prints: the wheel given and its labelled copy."
    )


def _variant_json() -> Schema:
    features = of("object", "", additionalProperties={"type": "array", "items": {"type": "string"}})
    provider = closed(
        "How an installer gets the provider's plugin.",
        {
            "requires": array("The plugin's requirements."),
            "plugin-api": of("string", "The plugin's entry point."),
        },
    )
    return closed(
        "The twin's `variant.json` (PEP 850, schema 0.2.0).",
        {
            "$schema": of("string", "The variant schema's URL."),
            "default-priorities": closed(
                "The order providers are asked in.",
                {"namespace": array("The namespaces, first first (`nvidia`).")},
            ),
            "providers": of("object", "Each namespace's provider.", additionalProperties=provider),
            "variants": of(
                "object",
                "The one variant: its label, then namespace, feature and values (none for "
                "the null variant).",
                additionalProperties=of("object", "", additionalProperties=features),
            ),
        },
    )


def variant_schema() -> Schema:
    return _wheel_written(
        "What `cuship variant --json` prints: the wheel given, its variant twin and the "
        "twin's `variant.json`.",
        variant=_variant_json(),
    )


def _release() -> Schema:
    return closed(
        "A CUDA release cuship assembles from PyPI.",
        {
            "cuda": of("string", "The CUDA release (`13.0.2`)."),
            "nvcc": of("string", "Its nvcc version (`13.0.88`)."),
            "wheels": of(
                "object",
                "Each component package and its exact version.",
                additionalProperties={"type": "string"},
            ),
            "source": of("string", "The release notes the versions come from."),
            "note": of("string", "Free text for people."),
            "cached": maybe(of("string", ""), "Its prefix in the cache; null: not assembled."),
        },
    )


def toolkit_list_schema() -> Schema:
    gap = closed(
        "A CUDA major whose PyPI wheels hold no complete compiler.",
        {
            "major": of("integer", "The CUDA major."),
            "reason": of("string", "What its wheels hold, and what they lack."),
            "source": of("string", "The wheel's project page."),
        },
    )
    return closed(
        "What `cuship toolkit list --json` prints: the cache, the releases cuship can "
        "assemble (with their prefix once cached) and the majors PyPI cannot supply.",
        {
            "cache": of("string", "The toolkit cache's directory."),
            "toolkits": array("Every release cuship can assemble, oldest first.", _release()),
            "unavailable": array("CUDA majors PyPI cannot supply a compiler for.", gap),
        },
    )


def toolkit_install_schema() -> Schema:
    wheel = closed(
        "A wheel the toolkit was assembled from, as the index listed it.",
        {
            "filename": of("string", "Its file name."),
            "url": of("string", "Where it was downloaded from."),
            "sha256": of("string", "Its sha256, checked against the index."),
            "size": _count("Its size in bytes."),
        },
    )
    return closed(
        "What `cuship toolkit install --json` prints: the toolkit, where its files came from, "
        "and whether it was reused from the cache.",
        {
            "prefix": of("string", "The toolkit's prefix (CUDA_HOME)."),
            "cuda": of("string", "Its CUDA release."),
            "nvcc_version": of("string", "What its nvcc reports (`13.0.88`)."),
            "nvcc": of("string", "Its nvcc's path."),
            "index": of("string", "The simple index its wheels came from."),
            "wheels": array("The wheels it was assembled from.", wheel),
            "assembled": of("string", "When it was assembled (ISO 8601, UTC)."),
            "reused": of("boolean", "It was in the cache already: nothing was downloaded."),
            "downloaded_bytes": _count("Bytes downloaded by this run."),
            "seconds": of("number", "How long this run took, in seconds.", minimum=0),
        },
    )


def keygen_schema() -> Schema:
    return closed(
        "What `cuship keygen --json` prints: where the key pair was written, and its id.",
        {
            "private": of("string", "The private key's file (mode 0600)."),
            "public": of("string", "The public key's file (KEY.pub)."),
            "keyid": of("string", "The key id (sha256 of the public key)."),
        },
    )


def attest_schema() -> Schema:
    return closed(
        "What `cuship attest --json` prints: the key that signed, the predicate and the "
        "envelopes written.",
        {
            "keyid": of("string", "The signing key's id."),
            "predicate": enum(get_args(PredicateKind), "What the statements say."),
            "envelopes": array("The `.intoto.jsonl` files written."),
        },
    )


def verify_attestation_schema() -> Schema:
    subject = closed(
        "A file the statement is about.",
        {
            "name": of("string", "Its file name."),
            "digest": closed("Its digests.", {"sha256": of("string", "Its sha256.")}),
        },
    )
    compared = closed(
        "A file given, compared with the subjects.",
        {
            "path": of("string", "The file."),
            "sha256": of("string", "Its sha256."),
            "ok": of("boolean", "A subject names it with that digest."),
            "reason": maybe(of("string", ""), "Why not; null when it matched."),
        },
    )
    return closed(
        "What `cuship verify-attestation --json` prints (also when it fails, exit 1): the "
        "envelope, whether it holds, and what was found.",
        {
            "envelope": of("string", "The envelope checked."),
            "ok": of("boolean", "Signature, statement and every file hold."),
            "keyid": of("string", "The id of the key it was checked against."),
            "problems": array("What failed, one line each; empty when it holds."),
            "predicate_type": maybe(of("string", ""), "The statement's predicateType, if read."),
            "subjects": array("The statement's subjects.", subject),
            "files": array("The files given, each compared.", compared),
        },
    )


def ci_init_schema() -> Schema:
    return closed(
        "What `cuship ci init --json` prints: the files written and the project directory "
        "they name.",
        {
            "written": array("The files written."),
            "project": of("string", "The project directory, relative to where they are."),
        },
    )


def _stored_run() -> Schema:
    open_object = {"type": "object"}
    row = closed(
        "One result of the run.",
        {
            "key": of("string", "What it is a result of (op, engine, dtype, case)."),
            "status": maybe(of("string", ""), "Its status, if it has one."),
            "numbers": of(
                "object", "Its finite numbers, by name.", additionalProperties={"type": "number"}
            ),
            "payload": of("object", "The result as its command reported it."),
        },
    )
    return closed(
        "One stored run and its results.",
        {
            "id": of("integer", "Its id in the store."),
            "kind": enum(get_args(RunKind), "The command that ran."),
            "started": of("number", "When it started (seconds since the epoch)."),
            "finished": maybe(of("number", ""), "When it finished; null: it did not."),
            "project": of("string", "The project it ran on."),
            "verdict": maybe(of("string", ""), "Its verdict, if it reached one."),
            "cuship_version": of("string", "The cuship that ran it."),
            "meta": {**open_object, "description": "What the command recorded of the run."},
            "fingerprint": {**open_object, "description": "The machine it ran on."},
            "results": array("Its results.", row),
        },
    )


def report_schema() -> Schema:
    return array(
        "What `cuship report --format json` prints: every run stored that was asked for, "
        "oldest first, with its results.",
        _stored_run(),
    )


DOCUMENTS = {
    "index": ("cuship index --json", index_schema),
    "repair": ("cuship repair --json", repair_schema),
    "retag": ("cuship retag --json", retag_schema),
    "variant": ("cuship variant --json", variant_schema),
    "toolkit-list": ("cuship toolkit list --json", toolkit_list_schema),
    "toolkit-install": ("cuship toolkit install --json", toolkit_install_schema),
    "keygen": ("cuship keygen --json", keygen_schema),
    "attest": ("cuship attest --json", attest_schema),
    "verify-attestation": ("cuship verify-attestation --json", verify_attestation_schema),
    "ci-init": ("cuship ci init --json", ci_init_schema),
    "report": ("cuship report --format json", report_schema),
}
