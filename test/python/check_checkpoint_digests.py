#!/usr/bin/python3
"""Checks a checkpoint directory's trainer_state.json against its files, with
Python's own os.path.getsize and zlib.crc32 (independent of the trainer's
code): prints "NAME ok" per listed file, or "NAME MISMATCH ..." and exits 1.
Also fails when a data file of the directory is not listed.

Usage: check_checkpoint_digests.py DIR
"""
import json
import os
import sys
import zlib

directory = sys.argv[1]
files = json.load(open(os.path.join(directory, "trainer_state.json")))["files"]
status = 0
for name in sorted(os.listdir(directory)):
    if name != "trainer_state.json" and name not in files:
        print(f"{name} NOT LISTED")
        status = 1
for name, recorded in sorted(files.items()):
    blob = open(os.path.join(directory, name), "rb").read()
    actual = {"bytes": len(blob), "crc32": "%08x" % zlib.crc32(blob)}
    if actual == recorded:
        print(f"{name} ok")
    else:
        print(f"{name} MISMATCH recorded {recorded}, actual {actual}")
        status = 1
sys.exit(status)
