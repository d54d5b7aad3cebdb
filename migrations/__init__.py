"""Dynaforge's alembic migrations (``env.py``, ``versions/``).

The folder sits at the top of the repository and is mapped into the package as ``dynaforge.migrations`` when the
distribution is built (see ``pyproject.toml``), so ``dynaforge db upgrade`` finds it in a wheel and in an editable
install alike.
"""
