#!/usr/bin/env bash
# Regenerates the fuzzer seed corpus in tests/fuzz/corpus/: one file per frame
# of the codec demo and of the public captures in ../shared/captures-public/
# (the inputs campaigns added, docs/fuzzing.md, are kept).
# usage: tests/fuzz/make_corpus.sh BUILD_DIR   (a full build with the tools)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
out="$here/corpus"
# Only the seeds this script writes: the ones a campaign added
# (scripts/fuzz.sh --seeds-from, named by their SHA-1) stay.
mkdir -p "$out"
rm -f "$out"/demo-*.bin "$out"/pub-*.bin
"$build/emulator/tools/rocemu-codec-demo" --corpus_dir "$out" /dev/null >/dev/null
/usr/bin/python3 - "$out" "$here/../../../shared/captures-public" <<'PY'
import glob, os, struct, sys
out, src = sys.argv[1:]
for path in sorted(glob.glob(os.path.join(src, "*.pcap"))):
    raw = open(path, "rb").read()
    assert raw[:4] == b"\xd4\xc3\xb2\xa1", path  # little-endian usec pcap
    stem = os.path.basename(path)[:-5]
    off, n = 24, 0
    while off + 16 <= len(raw):
        caplen = struct.unpack_from("<I", raw, off + 8)[0]
        n += 1
        with open(os.path.join(out, "pub-%s-%03d.bin" % (stem, n)), "wb") as f:
            f.write(raw[off + 16:off + 16 + caplen])
        off += 16 + caplen
PY
echo "make_corpus: $(ls "$out" | wc -l) seeds in $out"
