"""Reverse-mode engines: ``trace`` (a tape recorded while the code runs) and ``source`` (source transformation)."""
