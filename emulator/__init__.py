import runtime  # noqa: F401 -- first: it loads the compiled core (runtime/compiled.py)
