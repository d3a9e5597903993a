"""The `lingo` binary as the tools call it: built and run through cargo from the repository root."""

import json
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def lingo_greedy(checkpoint, sources, threads):
    """`lingo translate --json` (greedy) on the lines of `sources`: one JSON object per line, with
    `source_tokens` (lingo's tokens of the source, `<sos>` and `<eos>` included), `tokens` (the output,
    `<eos>` included when it finished), `finished` and `log_prob`."""
    cmd = ["cargo", "run", "--quiet", "--release", "--bin", "lingo", "--", "translate", "--checkpoint",
           str(Path(checkpoint).resolve()), "--input", str(Path(sources).resolve()), "--beam", "1", "--json",
           "--threads", str(threads)]
    out = subprocess.run(cmd, cwd=REPO_ROOT, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]
