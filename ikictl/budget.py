"""Budgets on the command line: ``--budget USD --max-tokens N --max-turns N
--allow-unpriced`` on ``new`` and ``fork``, ``ikictl budget AGENT [USD]
[--max-tokens N] [--max-turns N] [--allow-unpriced] [--clear]``, and the
spend-against-budget line ``show`` and ``usage`` print, e.g.
``budget: $1.23 of $2.50 (tree), 12 of 20 turns``.

Stdlib only at import: ikictl starts fast for every other command."""

from __future__ import annotations

import argparse
import math
import sys

TYPE_CHECKING = False  # importing typing itself costs start-up time
if TYPE_CHECKING:
    from typing import Any, TextIO

    from protocol.results import BudgetInfo, BudgetLine


def _usd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an amount of US dollars: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive amount of US dollars, not {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text}")
    return value


def _limits(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--max-tokens", type=_count, metavar="N", help=f"the tokens {what} may spend (in + out)"
    )
    p.add_argument("--max-turns", type=_count, metavar="N", help=f"the turns {what} may take")
    p.add_argument(
        "--allow-unpriced",
        action="store_true",
        help="a cost budget on a model with no price: count its tokens and turns only",
    )


def budget_args(p: argparse.ArgumentParser, what: str) -> None:
    """--budget, --max-tokens, --max-turns, --allow-unpriced on new / fork."""
    p.add_argument(
        "--budget",
        type=_usd,
        metavar="USD",
        help=f"the US dollars {what} and its descendants may spend (a fork: at most what "
        "the parent has left)",
    )
    _limits(p, f"{what} and its descendants")


def budget_param(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``budget`` param of agent.create / agent.fork; None when none is asked."""
    limits = {
        "max_cost_usd": getattr(args, "budget", None),
        "max_tokens": args.max_tokens,
        "max_turns": args.max_turns,
    }
    if all(v is None for v in limits.values()):
        return None
    return {**limits, "allow_unpriced": args.allow_unpriced}


def _add_budget(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", metavar="AGENT", help="uuid, unique uuid prefix or name")
    p.add_argument(
        "usd",
        metavar="USD",
        type=_usd,
        nargs="?",
        help="the US dollars it and its descendants may spend",
    )
    _limits(p, "it and its descendants")
    p.add_argument("--clear", action="store_true", help="remove its own budget")


def cmd_budget(args: argparse.Namespace) -> int:
    from ikictl import render
    from ikictl._errors import EXIT_OK, UsageError
    from ikictl.client import connect

    asked = args.usd is not None or args.max_tokens is not None or args.max_turns is not None
    if args.clear and asked:
        raise UsageError("give limits or --clear, not both")
    c = connect(args.socket, autostart=not args.no_autostart)
    if not asked and not args.clear:  # no limit given: show the budgets in force
        info = c.show(args.agent).get("budget") or {"budgets": []}
    else:
        info = c.set_budget(
            args.agent,
            args.usd,
            max_tokens=args.max_tokens,
            max_turns=args.max_turns,
            allow_unpriced=args.allow_unpriced,
            clear=args.clear,
        )
    if args.json:
        render.dump_json(info)
    else:
        print_budgets(info, sys.stdout, none=f"{args.agent}: no budget")
    return EXIT_OK


def _money(x: float) -> str:
    return f"${x:.2f}" if abs(x) >= 0.01 or x == 0 else f"${x:.4f}"


def budget_text(line: BudgetLine) -> str:
    """``$1.23 of $2.50 (tree), 12 of 20 turns``: spend against each limit."""
    where = "tree" if line["tree"] else f"agent {line['name']}"
    bits = []
    if line["max_cost_usd"] is not None:
        spent = "unknown" if line["unpriced"] else _money(line["spent_usd"])
        bits.append(f"{spent} of {_money(line['max_cost_usd'])} ({where})")
    if line["max_tokens"] is not None:
        bits.append(f"{line['spent_tokens']:,} of {line['max_tokens']:,} tokens")
    if line["max_turns"] is not None:
        bits.append(f"{line['spent_turns']} of {line['max_turns']} turns")
    if line["max_cost_usd"] is None:
        bits[-1] += f" ({where})"
    if line["unpriced"]:
        bits.append(f"no price for {', '.join(line['unpriced'])}")
    return ", ".join(bits)


def print_budgets(info: BudgetInfo | None, out: TextIO, *, none: str | None = None) -> None:
    lines = info["budgets"] if info else []
    if not lines and none is not None:
        print(none, file=out)
    for line in lines:
        print(f"budget: {budget_text(line)}", file=out)
