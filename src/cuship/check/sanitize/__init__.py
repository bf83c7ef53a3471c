"""``cuship check --sanitize``: the GPU engines' cases again under compute-sanitizer, mapped to cases and reported."""
