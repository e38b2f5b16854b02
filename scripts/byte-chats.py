#!/usr/bin/python3
"""Conversations ({"messages": [...]} JSONL, as brown-dialogues.py writes
them) as a byte-level SFT dataset for a byte-vocabulary model (the example
tiny Qwen): each conversation rendered in ChatML's text form,

  <|im_start|>user\\n{content}<|im_end|>\\n<|im_start|>assistant\\n{content}<|im_end|>\\n

one token per byte, one document per conversation, with its loss mask: 1 on
the assistant's content and its <|im_end|> (what the model must learn to
say, and to stop), 0 elsewhere, as `infir2-data sft` masks a tokenized
conversation. Writes PREFIX.bin/.idx (uint8 tokens) and PREFIX.mask.bin/.idx
in Megatron-LM's indexed format.

Usage: byte-chats.py IN.jsonl PREFIX
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "python"))
from megatron_indexed import write  # noqa: E402  (the format's writer)


def render(messages):
    tokens, mask = [], []
    for m in messages:
        head = f"<|im_start|>{m['role']}\n".encode()
        body = f"{m['content']}<|im_end|>".encode()
        learn = 1 if m["role"] == "assistant" else 0
        tokens += list(head) + list(body) + [ord("\n")]
        mask += [0] * len(head) + [learn] * len(body) + [0]
    return tokens, mask


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    docs, masks = [], []
    for line in open(sys.argv[1], encoding="utf-8"):
        if line.strip():
            t, m = render(json.loads(line)["messages"])
            docs.append(t)
            masks.append(m)
    if not docs:
        sys.exit(f"byte-chats.py: no conversation in {sys.argv[1]}")
    write(sys.argv[2], "uint8", docs)
    write(sys.argv[2] + ".mask", "uint8", masks)
    print(f"byte-chats: {len(docs)} conversations, {sum(map(len, docs))} bytes, "
          f"{sum(map(sum, masks))} of them in the loss")


if __name__ == "__main__":
    main()
