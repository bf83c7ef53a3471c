"""What the build says of sccache: the compile requests it was sent and how many hit the cache,
nvcc's sub-compiles counted apart (sccache counts those beside the requests)."""

from __future__ import annotations

from cuship.builder.host.tools import sccache_counts, sccache_line

# `sccache --show-stats --stats-format=json` of sccache 0.16.0 after `cuship build
# examples/cuvecops` built its four jobs here (nvcc for four architectures, PTX for two), with
# the fields cuship reads: 20 requests, yet 78 hits and 14 misses in all its counts
REAL = {
    "stats": {
        "compile_requests": 20,
        "requests_executed": 100,
        "cache_hits": {
            "counts": {"C/C++": 8, "PTX": 28, "CUDA (Device code)": 7, "CUDA": 7, "CUBIN": 28},
            "adv_counts": {"cubin [ptxas]": 28, "cuda [nvcc]": 7, "c++ [gcc]": 4},
        },
        "cache_misses": {
            "counts": {"CUDA (Device code)": 1, "CUDA": 1, "PTX": 4, "CUBIN": 4, "C/C++": 4},
            "adv_counts": {"ptx [cicc]": 4, "cuda [nvcc]": 1, "c++ [gcc]": 4},
        },
        "non_cacheable_compilations": 8,
    }
}


def test_hits_and_misses_count_the_requests_nvccs_sub_compiles_apart() -> None:
    counts = sccache_counts(REAL)
    assert counts == {"requests": 20, "hits": 15, "misses": 5, "part_hits": 63, "part_misses": 9}
    assert sccache_line(counts) == (
        "sccache: 15 of 20 compile requests hit the cache, 5 missed "
        "(nvcc's 72 sub-compiles cached apart: 63 hits)"
    )


def test_requests_that_are_not_cacheable_are_said_and_a_strange_document_is_none() -> None:
    plain = {"stats": {"compile_requests": 3, "cache_hits": {"counts": {"C/C++": 1}}}}
    assert sccache_counts(plain) is None  # no cache_misses: another shape
    plain["stats"]["cache_misses"] = {"counts": {}}
    counts = sccache_counts(plain)
    assert counts is not None
    assert sccache_line(counts) == (
        "sccache: 1 of 3 compile requests hit the cache, 0 missed, 2 not cacheable"
    )
    assert sccache_counts({"stats": []}) is None and sccache_counts("text") is None
