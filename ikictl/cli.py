"""``ikictl``: control the ikigai daemon from the command line and from scripts.

Start-up time matters (scripts run it in loops): only the standard library is
imported at module level; anything heavier is imported inside the command that
needs it.
"""

from __future__ import annotations

import argparse
import sys

from daemon._version import __version__

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _cmd_models(args: argparse.Namespace) -> int:
    # the catalog needs msgspec: a rare command, so imported here, not at start-up
    from providers.catalog import default_catalog
    from providers.thinking import map_thinking

    catalog = default_catalog()
    if args.provider and args.provider not in catalog.providers:
        print(
            f"ikictl: unknown provider {args.provider!r} (providers: {', '.join(catalog.providers)})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    models = catalog.models_of(args.provider)
    if args.json:
        import json

        rows = [
            {
                "provider": m.provider,
                "model": m.id,
                "aliases": m.aliases,
                "api": m.api or catalog.providers[m.provider].api,
                "context_window": m.context_window,
                "max_output_tokens": m.max_output_tokens,
                "thinking": {lv: map_thinking(m.thinking, lv, model=m.id).description for lv in ("none", "low", "med", "high")},
                "prices": None if m.prices is None else {"input": m.prices.input, "output": m.prices.output, "cached_input": m.prices.cached_input},
            }
            for m in models
        ]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    print(f"{'PROVIDER':<10} {'MODEL':<28} {'CONTEXT':>9} {'OUTPUT':>8}  THINKING (med)")
    for m in models:
        think = map_thinking(m.thinking, "med", model=m.id).description.removeprefix("Thinking: ")
        print(f"{m.provider:<10} {m.id:<28} {m.context_window:>9,} {m.max_output_tokens:>8,}  {think}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ikictl",
        description="Control the ikigai daemon: create, prompt, fork and inspect LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"ikictl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    models = sub.add_parser(
        "models",
        help="list the models the catalog knows, with limits and thinking",
        description="List the catalog's models: provider, context window, output limit and what 'med' thinking means for each.",
    )
    models.add_argument("provider", nargs="?", help="only this provider's models (e.g. anthropic)")
    models.add_argument("--json", action="store_true", help="print JSON")
    models.set_defaults(func=_cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
