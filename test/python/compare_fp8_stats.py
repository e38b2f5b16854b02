"""Compares a trainer's --fp8-stats-every records of one step with the
reference interpreter's (infir2-run --fp8-stats) for the same function on
the same inputs: the same quantizations in the same order (shape, layout,
format), the smallest and largest scales and amax to a relative tolerance (0: equal),
the same count of non-zero and saturated values, the largest scaled value to
a relative tolerance of its own and the flushed counts to an absolute one. The trainer's records are its
step's first call of FUNCTION (micro-batch 0); `where` and `name` are not
compared (the interpreter names the ops of the recipe's output, and the
trainer a fused quantization by its producer).

usage: compare_fp8_stats.py TRAINER.jsonl INTERPRETER.jsonl STEP FUNCTION
                            AMAX_RTOL MAX_SCALED_RTOL FLUSHED_ATOL
Prints OK, or each difference and FAIL (exit status 1).
"""
import json
import sys


def main():
    trainer, oracle, step, function = sys.argv[1:5]
    amax_rtol, scaled_rtol = float(sys.argv[5]), float(sys.argv[6])
    flushed_atol = int(sys.argv[7])
    mine = [r for r in map(json.loads, open(trainer))
            if r["step"] == int(step) and r["function"] == function
            and r["call"] == 0]
    theirs = [r for r in map(json.loads, open(oracle))
              if r["function"] == function]
    problems = []
    if not mine:
        problems.append("the trainer recorded no quantization of %s at step %s"
                        % (function, step))
    if len(mine) != len(theirs):
        problems.append("%d quantizations against the interpreter's %d"
                        % (len(mine), len(theirs)))
    worst_amax, worst_scaled, worst_flushed = 0.0, 0.0, 0
    for a, b in zip(mine, theirs):
        where = "#%d (%s, %s %s)" % (a["index"], a["where"], a["layout"],
                                     a["shape"])
        for key in ("index", "shape", "layout", "format"):
            if a[key] != b[key]:
                problems.append("%s: %s %s, interpreter %s"
                                % (where, key, a[key], b[key]))
        # Scales follow the amax: equal where they are powers of two (a
        # slightly different amax rounds to the same one), within the amax's
        # tolerance where they are not (scales=fp32).
        for key in ("scale_min", "scale_max"):
            rel = abs(a[key] - b[key]) / max(abs(b[key]), 1e-30)
            if rel > amax_rtol:
                problems.append("%s: %s %.9g, interpreter %.9g"
                                % (where, key, a[key], b[key]))
        for key in ("values", "nonzero", "saturated"):
            if a["counts"][key] != b["counts"][key]:
                problems.append("%s: %s %d, interpreter %d"
                                % (where, key, a["counts"][key],
                                   b["counts"][key]))
        # amax, and the largest value over its block's scale (which reads
        # each element's block: a wrong block index shows here).
        for key, tolerance in (("amax", amax_rtol), ("max_scaled", scaled_rtol)):
            rel = abs(a[key] - b[key]) / max(abs(b[key]), 1e-30)
            if key == "amax":
                worst_amax = max(worst_amax, rel)
            else:
                worst_scaled = max(worst_scaled, rel)
            if rel > tolerance:
                problems.append("%s: %s %g, interpreter %g (%.2g relative)"
                                % (where, key, a[key], b[key], rel))
        diff = abs(a["counts"]["flushed"] - b["counts"]["flushed"])
        worst_flushed = max(worst_flushed, diff)
        if diff > flushed_atol:
            problems.append("%s: %d flushed, interpreter %d"
                            % (where, a["counts"]["flushed"],
                               b["counts"]["flushed"]))
    print("%d quantizations of %s; worst amax difference %.2g relative, "
          "largest scaled value %.2g, flushed count %d"
          % (len(mine), function, worst_amax, worst_scaled, worst_flushed))
    for p in problems:
        print(p)
    print("FAIL" if problems else "OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
