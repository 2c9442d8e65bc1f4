"""The slicing plan of embedded NumPy runs: a program's stencils as straight NumPy slicing,
written once from its IR (``slicing`` says how)."""

from backends.arrayapi.plan.slicing import LARGE_DOMAIN, SlicePlan, plan_program, unplanned_reason

__all__ = ["LARGE_DOMAIN", "SlicePlan", "plan_program", "unplanned_reason"]
