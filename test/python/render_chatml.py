#!/usr/bin/python3
"""Renders chat JSONL ({"messages": [...]}) as Qwen2.5's chat template does
(its tokenizer_config.json, without tools or a generation prompt), written
here from the template itself, not from InfiR2's code:

  {%- if messages[0]['role'] == 'system' %} <|im_start|>system\\n{content}<|im_end|>\\n
  {%- else %} <|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a
  helpful assistant.<|im_end|>\\n
  {%- for message in messages %} (user, system not first, assistant)
      <|im_start|>{role}\\n{content}<|im_end|>\\n

Usage: render_chatml.py CHATS.jsonl  -> one {"text": rendered} line per chat
"""
import json
import sys

DEFAULT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    messages = json.loads(line)["messages"]
    if messages[0]["role"] == "system":
        text = "<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n"
    else:
        text = "<|im_start|>system\n" + DEFAULT + "<|im_end|>\n"
    for i, m in enumerate(messages):
        if m["role"] == "user" or (m["role"] == "system" and i > 0) or m["role"] == "assistant":
            text += "<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n"
    print(json.dumps({"text": text}, ensure_ascii=False))
