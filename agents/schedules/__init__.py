"""Schedules: prompts that fire on their own (issue 31).

``rules``: when a schedule is due (cron in a zone via cronsim, intervals,
once), pure. ``scheduler``: the trio task that fires due times through the
store, exactly once each. The rows live in the store (store/_schedules.py).
"""

from .rules import MAX_CATCH_UP, Rule, RuleError, make_rule
from .scheduler import Scheduler, wall_now

__all__ = ["MAX_CATCH_UP", "Rule", "RuleError", "Scheduler", "make_rule", "wall_now"]
