"""Rules for SciPy (special functions, linear algebra)."""
