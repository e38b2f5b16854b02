#!/usr/bin/python3
"""Chat data from the dialogue of the Brown corpus's fiction (categories
k-p: general fiction, mystery, science fiction, adventure, romance; 1961,
human-written, redistribution permitted): each pair of consecutive
paragraphs that are both quoted speech becomes a conversation, the first
speaker's words the user's message and the reply the assistant's. Nothing
is generated: every word is the corpus's. Tags are stripped and the
tokenized punctuation rejoined ("Come in , Joe ." -> "Come in, Joe.").

Usage: brown-dialogues.py PACKAGE_DIR OUT_DIR
  -> OUT_DIR/dialogues-train.jsonl, dialogues-heldout.jsonl (every 10th
     conversation held out), one {"messages": [...]} per line.
"""
import glob
import json
import os
import re
import sys


def words(paragraph):
    toks = []
    for tok in paragraph.split():
        word = tok.rsplit("/", 1)[0]
        toks.append('"' if word in ("``", "''") else word)
    return toks


def quoted(toks):
    """The words between quote marks, or None when the paragraph does not
    open with speech."""
    if not toks or toks[0] != '"':
        return None
    spans, inside, cur = [], False, []
    for t in toks:
        if t == '"':
            if inside and cur:
                spans.append(" ".join(cur))
            inside, cur = not inside, []
        elif inside:
            cur.append(t)
    text = " ".join(spans)
    text = re.sub(r" ([,.!?;:')])", r"\1", text)
    text = re.sub(r"([(`]) ", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ll|'d|'ve|'m)\b", r"\1", text)
    return text if 2 <= len(text) <= 400 else None


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1])
        sys.exit(2)
    package, out = sys.argv[1], sys.argv[2]
    chats = []
    for path in sorted(glob.glob(os.path.join(package, "c[k-p][0-9][0-9]"))):
        paragraphs = [p for p in re.split(r"\n\s*\n", open(path, encoding="latin-1").read()) if p.strip()]
        speech = [quoted(words(p)) for p in paragraphs]
        i = 0
        while i + 1 < len(speech):
            if speech[i] and speech[i + 1]:
                chats.append({"messages": [{"role": "user", "content": speech[i]},
                                           {"role": "assistant", "content": speech[i + 1]}]})
                i += 2
            else:
                i += 1
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "dialogues-train.jsonl"), "w", encoding="utf-8") as train, \
         open(os.path.join(out, "dialogues-heldout.jsonl"), "w", encoding="utf-8") as held:
        for n, c in enumerate(chats):
            (held if n % 10 == 9 else train).write(json.dumps(c) + "\n")
    print(f"brown-dialogues: {len(chats)} conversations ({len(chats) // 10} held out)")


if __name__ == "__main__":
    main()
