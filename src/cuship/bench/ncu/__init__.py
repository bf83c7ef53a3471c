"""``--profile ncu``: planning and running Nsight Compute on one call per point, its worker,
and reading its CSV into a call's figures."""
