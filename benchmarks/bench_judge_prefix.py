"""How many tokens a judge request's shared part holds on the real week's shape, against the
minimum prompt length the provider caches (docs/ci.md, "Judge prompt caching").

For each of the real qdrant/skills prompts (``tests/fixtures/data/qdrant-skills``) the judge
request is built as a run would build it (``judge.protocol.build_judge_request``) and split:

- **prefix today**: the verdict tool's definition and the system prompt — the only part
  identical across runs, since each request's section tags carry a random boundary and the
  rubric is shuffled per run and comes after the answer;
- **shared content**: the prefix plus the task (prompt) and rubric sections and the
  instruction — what a run of the same prompt repeats, if the request were laid out for
  caching (a fixed boundary, the rubric before the answer).

Tokens are counted from characters (no tokenizer of Anthropic's models is published): at
4.0 characters a token (low) and 3.5 (high; English prose with markup and JSON).

    python benchmarks/bench_judge_prefix.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_skilllift.judge.protocol import build_judge_request  # noqa: E402
from pytest_skilllift.run.prompts import load_prompt  # noqa: E402

DATA = REPO / "tests" / "fixtures" / "data" / "qdrant-skills"
#: Minimum cacheable prompt length per model, from Anthropic's prompt-caching page.
MINIMUMS = {"claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024, "claude-sonnet-4-6": 2048,
            "claude-opus-4-5": 4096, "claude-opus-4-6": 4096, "claude-haiku-4-5": 4096}


def main() -> None:
    prefix_chars: list[int] = []
    shared_chars: list[int] = []
    for path in sorted((DATA / "test-prompts").glob("*.json")):
        prompt = load_prompt(path, DATA / "skills", "https://skills.qdrant.tech/")
        req = build_judge_request(prompt.prompt, "", prompt.rubric, prompt.name)
        tools = json.dumps(req.tools)
        blocks = req.messages[0]["content"]
        prefix = len(tools) + len(req.system)
        prefix_chars.append(prefix)
        shared_chars.append(prefix + len(blocks[0]["text"]) + len(blocks[2]["text"]))
    n = len(shared_chars)
    print(f"{n} prompts of the real week")
    for name, chars in (("prefix today (tool + system)", prefix_chars),
                        ("shared content (+ task, rubric, instruction)", shared_chars)):
        lo, hi = min(chars), max(chars)
        print(f"{name}: {statistics.median(chars):.0f} chars median ({lo}-{hi}) = "
              f"{statistics.median(chars) / 4.0:.0f}-{statistics.median(chars) / 3.5:.0f} "
              f"tokens median, {lo / 4.0:.0f}-{hi / 3.5:.0f} over all prompts")
    most = max(shared_chars) / 3.5
    for model, minimum in MINIMUMS.items():
        print(f"  {model}: minimum {minimum} tokens — largest shared part {most:.0f} "
              f"tokens: {'cacheable' if most >= minimum else 'below it, nothing cached'}")


if __name__ == "__main__":
    main()
