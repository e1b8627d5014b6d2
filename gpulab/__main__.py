"""Command line: ``python -m gpulab doctor | specs | record LAB.ipynb... | stamp``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _doctor(_: argparse.Namespace) -> int:
    from gpulab.device import doctor

    doctor()
    return 0


def _specs(args: argparse.Namespace) -> int:
    from gpulab.specs import list_specs

    for s in list_specs(args.kind):
        bw = f"{s.memory_bandwidth / 1e9:,.0f} GB/s" if s.memory_bandwidth else "-"
        fp32 = f"{s.peak_flops['fp32'] / 1e12:.1f} TFLOP/s" if "fp32" in s.peak_flops else "-"
        print(f"{s.name:<38} {s.kind:<4} {s.year}  FP32 {fp32:>14}  {bw:>12}  {s.source_url}")
    return 0


def _record(args: argparse.Namespace) -> int:
    from gpulab.record import record_notebook

    for path in args.notebooks:
        rec = record_notebook(path, timeout=args.timeout)
        print(f"recorded {path}: {rec['device']}, {rec['run_time_s']} s")
    return 0


def _stamp(args: argparse.Namespace) -> int:
    from gpulab.labs import stamp_setup_cells

    changed = stamp_setup_cells(Path(args.root))
    print(f"setup cells updated in {len(changed)} lab(s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="report this machine's GPU, CPU and software, with advice")
    specs = sub.add_parser("specs", help="list the spec registry with sources")
    specs.add_argument("--kind", choices=("gpu", "cpu", "tpu"))
    record = sub.add_parser("record", help="re-execute labs in place and record provenance")
    record.add_argument("notebooks", nargs="+", type=Path)
    record.add_argument("--timeout", type=int, default=900, help="seconds per cell at most")
    stamp = sub.add_parser("stamp", help="rewrite the labs' setup cells from _config.yml")
    stamp.add_argument("--root", default=".", help="the course repository root")
    args = parser.parse_args(argv)
    handlers = {"doctor": _doctor, "specs": _specs, "record": _record, "stamp": _stamp}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
