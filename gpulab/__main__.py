"""Command line: ``python -m gpulab doctor | specs | bench [--out FILE] [--quick]``.

These are the learner's commands. The course tools' commands (``record``, ``stamp``,
``student``) are listed here too and handed over to :mod:`gpulab.course.cli`; they need the
``gpulab[course]`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpulab._usage import USAGE_STATUS, UsageError, writable_file
from gpulab.course import cli as course_cli


def _doctor(_: argparse.Namespace) -> int:
    from gpulab.measure.device import doctor

    doctor()
    return 0


def _specs(args: argparse.Namespace) -> int:
    from gpulab.hardware.specs import list_specs

    for s in list_specs(args.kind):
        bw = f"{s.memory_bandwidth / 1e9:,.0f} GB/s" if s.memory_bandwidth else "-"
        fp32 = f"{s.peak_flops['fp32'] / 1e12:.1f} TFLOP/s" if "fp32" in s.peak_flops else "-"
        print(f"{s.name:<38} {s.kind:<4} {s.year}  FP32 {fp32:>14}  {bw:>12}  {s.source_url}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    import json

    from gpulab.measure.bench_report import run_bench

    if args.out is not None:  # before the measurements, which take a while
        writable_file("--out", args.out)
    report = run_bench(
        quick=args.quick, notes=args.notes, progress=lambda name: print(f"measuring {name}...")
    )
    text = json.dumps(report, indent=1) + "\n"
    for entry in report["results"]:
        print(
            f"  {entry['name']:<10} {entry['dtype'] or '':<5} {entry['value']:.4g} {entry['unit']}"
        )
    if args.out is None:
        print(text)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} (checked against bench_report.schema.json)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="report this machine's GPU, CPU and software, with advice")
    specs = sub.add_parser("specs", help="list the spec registry with sources")
    specs.add_argument("--kind", choices=("gpu", "cpu", "tpu"))
    bench = sub.add_parser("bench", help="run the standard measurements; write a JSON report")
    bench.add_argument("--out", type=Path, help="write the report here (default: print it)")
    bench.add_argument("--quick", action="store_true", help="small sizes, ~30 s on a CPU")
    bench.add_argument("--notes", default="", help="conditions of the run, kept in the report")
    course_cli.add_commands(sub)
    args = parser.parse_args(argv)
    if args.command in course_cli.COMMANDS:
        return course_cli.run(args)
    handlers = {"doctor": _doctor, "specs": _specs, "bench": _bench}
    try:
        return handlers[args.command](args)
    except UsageError as err:
        print(f"python -m gpulab {args.command}: {err}", file=sys.stderr)
        return USAGE_STATUS


if __name__ == "__main__":
    sys.exit(main())
