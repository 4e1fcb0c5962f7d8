"""A/B of a run's first event between two checkouts: ``python bench/first_event_ab.py OLD NEW``.

Each checkout runs its own ``bench/streams.py`` with its own ``.venv`` (first-event phase only, the bare
sse-starlette baseline in the same run), from a directory outside both, alternating OLD and NEW for
``--rounds`` rounds, so both see the same machine. It prints every round and the medians: ours p50 and
p99, the POST's answer, when ``run_started`` was made, the baseline's p50, and ours against that p50 (the
issue 37 target: p50 <= 4x, p99 <= 6x). On a shared machine one round means little; compare the medians
and the spread of the rounds. See bench/README.md ("Comparing two revisions").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

COLUMNS = ("p50", "p99", "POST p50", "made p50", "sse p50", "p50/sse", "p99/sse")


def skip_for(checkout: Path, python: Path) -> str:
    """The phases to skip, in the words that checkout's script knows (older ones had no token phase)."""
    usage = subprocess.run(
        [python, checkout / "bench" / "streams.py", "--help"], capture_output=True, text=True, check=True
    ).stdout
    return "latency,token,idle" if "token" in usage else "latency,idle"


def one_run(checkout: Path, runs: int, output: Path, workdir: Path) -> tuple[float, ...]:
    python = checkout / ".venv" / "bin" / "python"
    command = [str(python), str(checkout / "bench" / "streams.py"), "--skip", skip_for(checkout, python)]
    command += ["--first-event", str(runs), "--output", str(output)]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: bench/streams.py failed:\n{done.stdout}\n{done.stderr}")
    first = json.loads(output.read_text())["first_event"]
    ours, bare = first["threadline"], first["baseline"]["total"]["p50"]
    total = ours["total"]
    return (
        total["p50"],
        total["p99"],
        ours["post"]["p50"],
        ours["made"]["p50"],
        bare,
        total["p50"] / bare,
        total["p99"] / bare,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", type=Path, help="checkout with its own .venv (the older revision)")
    parser.add_argument("new", type=Path, help="checkout with its own .venv (the newer revision)")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--first-event", type=int, default=40, help="runs per round (default 40)")
    args = parser.parse_args()
    if args.rounds < 1 or args.first_event < 1:
        parser.error("--rounds and --first-event must be >= 1")
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    for name, checkout in sides.items():
        if not (checkout / ".venv" / "bin" / "python").exists():
            parser.error(f"{name} ({checkout}) has no .venv: make one there first (bench/README.md)")
    rows: dict[str, list[tuple[float, ...]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)  # outside both checkouts, so each imports only its own code
        for number in range(args.rounds):
            for name, checkout in sides.items():
                row = one_run(checkout, args.first_event, workdir / f"{name}_{number}.json", workdir)
                rows[name].append(row)
                shown = "  ".join(f"{c} {v:.2f}" for c, v in zip(COLUMNS, row, strict=True))
                print(f"round {number + 1} {name}: {shown}", flush=True)
    print(f"\nmedians over {args.rounds} rounds ({args.first_event} runs each; ms, ratios to the sse p50)")
    print(f"{'':5}" + "".join(f"{c:>10}" for c in COLUMNS))
    for name in sides:
        medians = [statistics.median(column) for column in zip(*rows[name], strict=True)]
        print(f"{name:5}" + "".join(f"{m:10.2f}" for m in medians))
        spread = [min(r[0] for r in rows[name]), max(r[0] for r in rows[name])]
        print(f"{'':5}p50 range over the rounds: {spread[0]:.2f}-{spread[1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
