"""Changing a wheel, once the report decided: ``auditwheel repair`` with the CUDA exclude list,
and a new local version label (retag)."""
