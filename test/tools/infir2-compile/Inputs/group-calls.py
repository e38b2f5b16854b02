"""Counts the training step's quantize_dual and reduce_sum calls by their
number of operand groups, from a module lowered to runtime calls."""
import collections
import re
import sys

step = open(sys.argv[1]).read()
step = step[step.index("@infir2_train_step"):step.index("@infir2_optimizer_step")]
counts = collections.Counter()
for entry, operands, attrs in re.findall(
        r'infir2rt.call "(quantize_dual|reduce_sum)" \[(.*?)\] attributes \[(.*?)\]', step):
    n = operands.count("#infir2rt.buffer")
    size = 5 if entry == "quantize_dual" else (3 if float(attrs) != 0 else 2)
    counts[(entry, n // size)] += 1
for (entry, groups), n in sorted(counts.items()):
    print(f"{entry} x{groups}: {n}")
