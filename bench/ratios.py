"""The side-by-side benchmarks' summary of per-pair ratios (bench/perf17.sh's side
rows, bench/durable.sh side): one pair's ratio shares the host's conditions, so the
rounds' spread is the method's; two standard errors bound the mean."""

import statistics


def summary(ratios, what, unit):
    """One line: mean with two standard errors, median, and one `unit`'s sd."""
    mean = statistics.mean(ratios)
    sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    half = 2 * sd / len(ratios) ** 0.5
    return (f"{what} over {len(ratios)} {unit}s: mean {mean:.3f} (two standard errors "
            f"{mean - half:.3f} to {mean + half:.3f}), median {statistics.median(ratios):.3f}, "
            f"sd of one {unit} {sd:.3f}")
