#!/usr/bin/python3
"""Compares a Megatron-LM indexed dataset, read with the independent reader
(megatron_indexed.py), with token ids from elsewhere (one JSON array per line,
e.g. an oracle tokenizer's), each followed by EOD when given.

Usage: check_pretokenized.py PREFIX IDS.jsonl [EOD]
Prints "N documents equal (DTYPE)" or the first difference, exit 1.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from megatron_indexed import read  # noqa: E402

prefix, ids_path = sys.argv[1:3]
eod = [int(sys.argv[3])] if len(sys.argv) > 3 else []
ours = read(prefix)
theirs = [json.loads(line) + eod for line in open(ids_path) if line.strip()]
if len(ours["documents"]) != len(theirs):
    sys.exit(f"{len(ours['documents'])} documents, expected {len(theirs)}")
for k, (a, b) in enumerate(zip(ours["documents"], theirs)):
    if a != b:
        sys.exit(f"document {k} differs: {a[:20]} vs {b[:20]}")
print(f"{len(theirs)} documents equal ({ours['dtype']})")
