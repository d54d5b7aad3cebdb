"""Performance benchmarks of docs' targets P1-P8 (see the design's PERFORMANCE.md); run with ``python -m bench``.

Each benchmark prints one line: its id, its figures, the target, and PASS or FAIL. They are not unit tests.
"""
