"""Rules for NumPy, one module per family (ufuncs, reductions, shapes, indexing, products, linalg)."""
