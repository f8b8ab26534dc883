"""``agent-nb``: the command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from .demo import QUESTION, build_demo, demo_html, summary

    workflow = build_demo()
    result = asyncio.run(workflow.run(QUESTION))
    print("agent_nb demo: three agents on the offline MirrorChatClient; each reply describes what the agent saw.")
    print(f"question: {QUESTION!r}\n")
    print(result.trace.to_text(width=args.width))
    print()
    print(summary(result.trace))
    if args.html:
        path = Path(args.html)
        path.write_text(demo_html(result), encoding="utf-8")
        print(f"\nwrote {path} (open it in a browser)")
    return 0


def _nbval_config(args: argparse.Namespace) -> int:
    from .testing import nbval_config_path

    print(nbval_config_path())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agent-nb``; returns the exit status."""
    from . import __version__

    parser = argparse.ArgumentParser(prog="agent-nb", description="Build, see and test multi-agent systems.")
    parser.add_argument("--version", action="version", version=f"agent_nb {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a three-agent workflow offline and show each agent's context")
    demo.add_argument("--html", default="demo.html", help="where to write the HTML view ('' for none)")
    demo.add_argument("--width", type=int, default=100, help="width of the text report")
    demo.set_defaults(run=_demo)
    nbval = commands.add_parser("nbval-config", help="print the path of the nbval sanitize file for agent_nb's outputs")
    nbval.set_defaults(run=_nbval_config)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
