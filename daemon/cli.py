"""``ikigaid``: the ikigai daemon's command line."""

from __future__ import annotations

import argparse
import sys

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ikigaid",
        description=(
            "The ikigai daemon: runs LLM agents, one actor per agent, with every "
            "message kept in SQL history, and serves the ikictl control socket."
        ),
    )
    parser.add_argument("--version", action="version", version=f"ikigaid {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    print(
        "ikigaid: the daemon process is not built yet (see the open daemon issue); "
        "only --help and --version work in this version",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
