"""`hwcheck config` (being built: see its issue)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the config subcommand."""
    subparsers.add_parser("config", help="(not yet available)")
