#!/usr/bin/python3
"""plot_training.py — the flagship's loss/accuracy chart from its metrics.csv.

    scripts/plot_training.py out/train_fashion/metrics.csv [-o out/train_fashion/training.png]

Reads the CSV examples/train_fashion and examples/train_digits write (epoch, time_s, train_loss, train_accuracy,
test_accuracy, samples_per_s) and draws two panels: training loss per epoch, and training and
test accuracy per epoch (with the 95% target). Uses matplotlib (Debian: python3-matplotlib,
installed by scripts/bootstrap.sh) with the Agg backend, so no display is needed. Exits 1 with a
one-line message when the CSV is missing, empty or malformed.
"""
import argparse
import csv
import json
import os
import sys

COLUMNS = ["epoch", "time_s", "train_loss", "train_accuracy", "test_accuracy", "samples_per_s"]


def read_metrics(path):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or any(c not in reader.fieldnames for c in COLUMNS):
                raise ValueError(f"expected the columns {', '.join(COLUMNS)}, got {reader.fieldnames}")
            rows = []
            for line_no, row in enumerate(reader, start=2):
                try:
                    rows.append({c: float(row[c]) for c in COLUMNS})
                except (TypeError, ValueError):
                    raise ValueError(f"line {line_no}: not a row of numbers: {row}")
    except OSError as e:
        raise ValueError(f"cannot read it ({e.strerror})")
    if not rows:
        raise ValueError("no epochs in it")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", help="metrics.csv written by train_fashion or train_digits")
    ap.add_argument("-o", "--output", help="PNG path (default: training.png next to the CSV)")
    args = ap.parse_args()
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.metrics)), "training.png")
    try:
        rows = read_metrics(args.metrics)
    except ValueError as e:
        print(f"plot_training.py: {args.metrics}: {e}", file=sys.stderr)
        return 1
    try:
        import matplotlib
    except ImportError:
        print("plot_training.py: matplotlib is missing (Debian: apt-get install python3-matplotlib;"
              " run it with /usr/bin/python3)", file=sys.stderr)
        return 1
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [r["epoch"] for r in rows]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax_loss.plot(epochs, [r["train_loss"] for r in rows], color="tab:red", marker=".")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss (cross-entropy)")
    ax_loss.set_yscale("log")
    ax_loss.grid(True, which="both", alpha=0.3)
    ax_loss.set_title("loss")

    ax_acc.plot(epochs, [100 * r["train_accuracy"] for r in rows], label="train", marker=".")
    test = [(r["epoch"], 100 * r["test_accuracy"]) for r in rows if r["test_accuracy"] >= 0]
    if test:
        ax_acc.plot([e for e, _ in test], [a for _, a in test], label="test (held out)", marker=".")
    ax_acc.axhline(95, color="gray", linestyle="--", linewidth=1, label="95% target")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy (%)")
    low = min([100 * r["train_accuracy"] for r in rows] + [a for _, a in test] + [95])
    ax_acc.set_ylim(max(0, low - 5), 100.5)
    ax_acc.grid(True, alpha=0.3)
    ax_acc.legend(loc="lower right")
    final = rows[-1]
    ax_acc.set_title(f"accuracy — final test {100 * final['test_accuracy']:.1f}%")
    # Overall throughput: each epoch's samples (its rate times its duration) over the total time.
    starts = [0.0] + [r["time_s"] for r in rows[:-1]]
    samples = sum(r["samples_per_s"] * (r["time_s"] - t) for r, t in zip(rows, starts))
    sps = samples / final["time_s"] if final["time_s"] > 0 else 0.0
    # The model's name from the metrics.json written beside the CSV, when there is one.
    model = "training"
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(args.metrics)), "metrics.json")) as f:
            model = json.load(f).get("model", model)
    except (OSError, ValueError):
        pass
    fig.suptitle(f"chanflow, {model}: {len(rows)} epochs, {final['time_s']:.2f} s, "
                 f"~{sps:,.0f} samples/s")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
