"""The function twins the forward engine uses (``chainrules.core.twins``, shared with the tape engine)."""

from ..core.twins import ATTRIBUTE_TWINS, FUNCTION_TWINS, METHOD_TWINS, register_bridges, twin_of

__all__ = ["ATTRIBUTE_TWINS", "FUNCTION_TWINS", "METHOD_TWINS", "register_bridges", "twin_of"]
