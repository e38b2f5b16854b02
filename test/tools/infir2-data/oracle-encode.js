// The independent oracle of the tokenizer tests: @lenml/tokenizers (a
// transformers.js fork, JavaScript, no code shared with InfiR2) encodes the
// same JSONL documents `infir2-data encode` reads and prints one JSON array of
// ids per line, as infir2-data does.
//
//   node oracle-encode.js TOKENIZER_DIR DOCS.jsonl [--stats]
//
// --stats prints the encoding throughput (tokenizer.encode only) to stderr.
//
// Each line's bytes are decoded with TextDecoder, which replaces each invalid
// UTF-8 sequence with U+FFFD (the WHATWG rule InfiR2's tokenizer follows).
'use strict';
const fs = require('fs');
const path = require('path');
const { TokenizerLoader } = require('@lenml/tokenizers');

const [dir, docs, stats] = process.argv.slice(2);
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')),
});
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const bytes = fs.readFileSync(docs);
const out = [];
let start = 0;
let seconds = 0, textBytes = 0, tokens = 0;
while (start < bytes.length) {
  let end = bytes.indexOf(0x0a, start);
  if (end < 0) end = bytes.length;
  const line = decoder.decode(bytes.subarray(start, end));
  start = end + 1;
  if (line.trim() === '') continue;
  // The tokenizer's own post-processor decides what is added (nothing, for
  // the ByteLevel post-processors of Qwen2 and this Llama 3).
  const text = JSON.parse(line).text;
  const t0 = process.hrtime.bigint();
  const ids = tokenizer.encode(text);
  seconds += Number(process.hrtime.bigint() - t0) / 1e9;
  textBytes += Buffer.byteLength(text, 'utf8');
  tokens += ids.length;
  out.push(JSON.stringify(ids));
}
if (stats === '--stats')
  process.stderr.write(`oracle: ${out.length} documents, ${textBytes} bytes of text, ` +
                       `${tokens} tokens; encoding ${seconds.toFixed(2)} s: ` +
                       `${(textBytes / 1e6 / seconds).toFixed(2)} MB/s, ` +
                       `${(tokens / seconds).toFixed(0)} tokens/s\n`);
process.stdout.write(out.join('\n') + (out.length ? '\n' : ''));
