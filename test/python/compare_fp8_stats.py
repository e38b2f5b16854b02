"""Compares a trainer's --fp8-stats-every records of one step with the
reference interpreter's (infir2-run --fp8-stats) for the same function on
the same inputs: the same quantizations in the same order (shape, layout,
format), the same scales, the same count of non-zero and saturated values,
amax to a relative tolerance and the flushed counts to an absolute one.

usage: compare_fp8_stats.py TRAINER.jsonl INTERPRETER.jsonl STEP FUNCTION
                            AMAX_RTOL FLUSHED_ATOL
Prints OK, or each difference and FAIL (exit status 1).
"""
import json
import sys


def main():
    trainer, oracle, step, function = sys.argv[1:5]
    amax_rtol, flushed_atol = float(sys.argv[5]), int(sys.argv[6])
    mine = [r for r in map(json.loads, open(trainer))
            if r["step"] == int(step) and r["function"] == function]
    theirs = [r for r in map(json.loads, open(oracle))
              if r["function"] == function]
    problems = []
    if not mine:
        problems.append("the trainer recorded no quantization of %s at step %s"
                        % (function, step))
    if len(mine) != len(theirs):
        problems.append("%d quantizations against the interpreter's %d"
                        % (len(mine), len(theirs)))
    worst_amax, worst_flushed = 0.0, 0
    for a, b in zip(mine, theirs):
        where = "#%d (%s, %s %s)" % (a["index"], a["where"], a["layout"],
                                     a["shape"])
        for key in ("index", "shape", "layout", "format"):
            if a[key] != b[key]:
                problems.append("%s: %s %s, interpreter %s"
                                % (where, key, a[key], b[key]))
        for key in ("scale_min", "scale_max"):
            if a[key] != b[key]:
                problems.append("%s: %s %g, interpreter %g"
                                % (where, key, a[key], b[key]))
        for key in ("values", "nonzero", "saturated"):
            if a["counts"][key] != b["counts"][key]:
                problems.append("%s: %s %d, interpreter %d"
                                % (where, key, a["counts"][key],
                                   b["counts"][key]))
        rel = abs(a["amax"] - b["amax"]) / max(abs(b["amax"]), 1e-30)
        worst_amax = max(worst_amax, rel)
        if rel > amax_rtol:
            problems.append("%s: amax %g, interpreter %g (%.2g relative)"
                            % (where, a["amax"], b["amax"], rel))
        diff = abs(a["counts"]["flushed"] - b["counts"]["flushed"])
        worst_flushed = max(worst_flushed, diff)
        if diff > flushed_atol:
            problems.append("%s: %d flushed, interpreter %d"
                            % (where, a["counts"]["flushed"],
                               b["counts"]["flushed"]))
    print("%d quantizations of %s; worst amax difference %.2g relative, "
          "worst flushed count difference %d"
          % (len(mine), function, worst_amax, worst_flushed))
    for p in problems:
        print(p)
    print("FAIL" if problems else "OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
