"""Independent references (oracles) that tests and benchmarks check the package against, and the
small cases several test modules share.

- :mod:`.objective`: F(X) of a package dict in plain Python, and OPT by enumeration.
- :mod:`.exact`: a package as plain arrays, brute-force OPT, and the paper's MILP in HiGHS.
- :mod:`.writers`: the baseline writers' rules and a brute-force OPT on a package dict.
- :mod:`.branch_and_bound`: a plain-Python branch-and-bound, the solver benchmark's baseline.
- :mod:`.packages` and :mod:`.exports`: hand-made packages, claims and system exports.
- :mod:`.data`: where the shared data sets are (``MEMAUDIT_DATA_DIR``).

Nothing here imports a test module; test modules import from here.
"""
