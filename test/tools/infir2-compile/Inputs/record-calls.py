"""Reads the JSON of --record-calls for trainer-record-calls.test.

  record-calls.py ir RUNTIME_MLIR RECORD...   each record's calls per
      invocation of train_step and optimizer_step against the infir2rt.call
      ops of the lowered IR (--emit=runtime), counted here
  record-calls.py layers RECORD_L RECORD_L+1  what one more layer costs, and
      the optimizer step's calls and the host's round trips and uploads per
      step of the first
"""
import json
import re
import sys


def ir_calls(path):
    """Calls per function of a --emit=runtime module."""
    counts, function = {}, None
    for line in open(path):
        m = re.search(r"func\.func @infir2_(\w+)\(", line)
        if m:
            function = m.group(1)
            counts[function] = 0
        elif "infir2rt.call" in line and function:
            counts[function] += 1
    return counts


def per_invocation(record, function):
    f = record["functions"][function]
    assert f["calls"] % f["invocations"] == 0, f
    return f["calls"] // f["invocations"]


def number(x):
    return int(x) if float(x).is_integer() else x


if sys.argv[1] == "ir":
    expected = ir_calls(sys.argv[2])
    for path in sys.argv[3:]:
        record = json.load(open(path))
        for function in ("train_step", "optimizer_step"):
            got = per_invocation(record, function)
            assert got == expected[function], (path, function, got,
                                                expected[function])
            invocations = record["functions"][function]["invocations"]
            print("%s: %s invocations per step, calls as in the IR" %
                  (function, number(invocations / record["steps"])))
else:
    a, b = (json.load(open(p)) for p in sys.argv[2:4])
    print("calls per layer:",
          per_invocation(b, "train_step") - per_invocation(a, "train_step"))
    print("optimizer_step calls:", per_invocation(a, "optimizer_step"))
    print("host round trips per step:", number(a["per_step"]["host_round_trips"]))
    print("uploads per step:", number(a["per_step"]["uploads"]))
