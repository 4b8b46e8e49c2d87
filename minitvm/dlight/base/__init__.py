"""The dlight framework: the rule interface, the pass that applies rules, shared analyses."""

from .analysis import IS_SCHEDULED, is_scheduled
from .schedule_rule import ScheduleRule
from .transform import ApplyDefaultSchedule, apply_default_schedule, apply_rules

__all__ = [
    "IS_SCHEDULED",
    "ApplyDefaultSchedule",
    "ScheduleRule",
    "apply_default_schedule",
    "apply_rules",
    "is_scheduled",
]
