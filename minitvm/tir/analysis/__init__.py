"""Analyses over TIR."""

from .verify import verify_well_formed

__all__ = ["verify_well_formed"]
