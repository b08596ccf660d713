"""The README's offline demo: resolve models and thinking levels from the catalog.

Later issues grow this into the full walk through the daemon and ikictl.
"""

from __future__ import annotations

import sys

from providers.modelspec import ModelSpecError, resolve_model


def main() -> int:
    print("ikigai demo (offline)\n")
    print("Model syntax MODEL/THINKING, resolved through the catalog:")
    for text in (
        "claude-sonnet-4-5/med",
        "gemini-2.5-pro/none",
        "gemini-2.5-flash/high",
        "o3-mini/high",
        "gpt-4o/high",
        "gemini-3-pro-preview/med",
        "openrouter/anthropic/claude-sonnet-4.5/low",
    ):
        r = resolve_model(text)
        print(f"  {text:<44} -> {r.description}")
        for w in r.warnings:
            print(f"  {'':<44}    note: {w}")
    print("\nBad input is refused with the reason:")
    for text in ("gpt-4o/ultra", "a/b/c/d", "mystery-model"):
        try:
            resolve_model(text)
        except ModelSpecError as e:
            print(f"  {text:<16} -> {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
