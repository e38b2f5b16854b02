"""Checks decode(encode(x)) against x for infir2-data's round trip.

    check-roundtrip.py DOCS.jsonl DECODED.jsonl [--nfc]

DOCS.jsonl is read as bytes and each line decoded with Python's
bytes.decode(errors="replace") (the U+FFFD rule the tokenizer documents),
then NFC-normalized by Python's unicodedata with --nfc (for a tokenizer whose
normalizer is NFC). The decoded text must equal it byte for byte, as UTF-8.
"""
import json
import sys
import unicodedata

docs_path, decoded_path = sys.argv[1], sys.argv[2]
nfc = "--nfc" in sys.argv[3:]
with open(docs_path, "rb") as f:
    docs = [json.loads(line.decode("utf-8", errors="replace"))["text"]
            for line in f.read().split(b"\n") if line.strip()]
with open(decoded_path, "rb") as f:
    decoded = [json.loads(line)["text"] for line in f if line.strip()]
if len(docs) != len(decoded):
    sys.exit(f"{len(docs)} documents but {len(decoded)} decoded")
for i, (doc, got) in enumerate(zip(docs, decoded)):
    want = unicodedata.normalize("NFC", doc) if nfc else doc
    if want.encode("utf-8") != got.encode("utf-8"):
        sys.exit(f"document {i + 1}: decode(encode(x)) = {got!r}, want {want!r}")
print(f"{len(docs)} documents round-trip exactly")
