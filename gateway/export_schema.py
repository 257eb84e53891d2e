"""``python -m gateway.export_schema [--check]``: write (or check) ``schema/leaderboard.graphql``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gateway.api import sdl

SDL_PATH = Path(__file__).resolve().parent.parent / "schema" / "leaderboard.graphql"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when the file differs from the code")
    args = parser.parse_args(argv)
    text = sdl()
    if args.check:
        if not SDL_PATH.exists() or SDL_PATH.read_text(encoding="utf-8") != text:
            print(f"{SDL_PATH} is out of date: run 'python -m gateway.export_schema'", file=sys.stderr)
            return 1
        return 0
    SDL_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SDL_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
