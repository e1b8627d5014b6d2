"""Command line: ``python -m gpulab doctor | specs | record LAB.ipynb... | stamp | student OUTDIR
| bench [--out FILE] [--quick]``."""

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


def _student(args: argparse.Namespace) -> int:
    from gpulab.student import write_student_copies

    written = write_student_copies(args.outdir, args.notebooks)
    print(f"wrote {len(written)} student cop{'y' if len(written) == 1 else 'ies'} to {args.outdir}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    import json

    from gpulab.report import run_bench

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
    record = sub.add_parser("record", help="re-execute labs in place and record provenance")
    record.add_argument("notebooks", nargs="+", type=Path)
    record.add_argument("--timeout", type=int, default=900, help="seconds per cell at most")
    stamp = sub.add_parser("stamp", help="rewrite the labs' setup cells from _config.yml")
    stamp.add_argument("--root", default=".", help="the course repository root")
    student = sub.add_parser("student", help="write copies of the labs without their solutions")
    student.add_argument("outdir", type=Path, help="folder for the student copies")
    student.add_argument("--notebooks", type=Path, default=Path("notebooks"))
    bench = sub.add_parser("bench", help="run the standard measurements; write a JSON report")
    bench.add_argument("--out", type=Path, help="write the report here (default: print it)")
    bench.add_argument("--quick", action="store_true", help="small sizes, ~30 s on a CPU")
    bench.add_argument("--notes", default="", help="conditions of the run, kept in the report")
    args = parser.parse_args(argv)
    handlers = {
        "doctor": _doctor,
        "specs": _specs,
        "record": _record,
        "stamp": _stamp,
        "student": _student,
        "bench": _bench,
    }
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
