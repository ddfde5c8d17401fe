"""What an LLM summarizer costs a day: the anthropic backend's prompts on the shared Claude
Code sessions, replayed at the seed's rate, through the real SDK against a local stub.

    python benchmarks/llm_cost.py              # 4 days at 350 messages a day
    python benchmarks/llm_cost.py --days 8

No model answers here. The stub bills what the SDK sends as the API would (prompt tokens
estimated at 4 characters a token, the prompt cache only from the model's minimum cacheable
length up) and answers every group with facts that fill its whole `max_chars` budget, the
most a valid answer may use, so the output side is an upper bound. Prices: Claude Haiku 4.5,
USD 1 / 5 per million tokens in / out (cache writes 1.25, reads 0.10). The seed budgets
USD 1.09 a day of a Flash-class model for the same job.

It also runs one small batch under each failure the API can give and reports what happens.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _workload import START, replay  # noqa: E402
from gemini_stub import (  # noqa: E402
    AnthropicStub,
    Reply,
    StubRequest,
    messages_answer,
    messages_error,
)

from pamd.consolidate.compaction import run as run_compaction  # noqa: E402
from pamd.consolidate.summarizers import Group  # noqa: E402
from pamd.consolidate.summarizers.anthropic import AnthropicSummarizer  # noqa: E402
from pamd.core.config import settings  # noqa: E402
from pamd.core.entry import Entry, count_tokens  # noqa: E402
from pamd.edge.brain import Brain  # noqa: E402
from pamd.encode.ingest import ingest_entries, make_entries, redactor  # noqa: E402
from pamd.encode.neurotag import Tagger  # noqa: E402
from pamd.ops.layout import init_brain  # noqa: E402
from pamd.ops.spend import FORMAT, parse_runs  # noqa: E402

SEED_USD_PER_DAY = 1.09
HAIKU = settings(None).summarizer.prices["claude-haiku-4-5"]
HAIKU_MIN_CACHE = 4096


def full_budget(stub: AnthropicStub):
    """Every group answered with one fact citing its messages and filling max_chars."""
    def answer(request: StubRequest) -> Reply:
        items = []
        for g in request.groups:
            text = " ".join(m["text"] for m in g["messages"])
            text = ("Fact: " + " ".join(text.split()))[: max(1, g["max_chars"] - 2)]
            items.append({"i": g["i"], "facts": [{"text": text, "sources": [m["id"] for m in g["messages"]]}]})
        data = {"summaries": items}
        plain, write, read = stub.cache(request)
        return messages_answer(data, input_tokens=plain, output_tokens=len(json.dumps(data)) // 4,
                               cache_write=write, cache_read=read)
    return answer


def use_anthropic(brain: Brain, base_url: str) -> Brain:
    cfg = brain.root / "pamd.toml"
    text = cfg.read_text().replace('backend = "extractive"', 'backend = "anthropic"', 1)
    text = text.replace('base_url = ""', f'base_url = "{base_url}"', 1)
    cfg.write_text(text)
    brain.repo.run("commit", "-qam", "use anthropic")
    return Brain(brain.root)


def simulate(tmp: Path, days: int, per_day: int) -> dict:
    import os

    os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    stub = AnthropicStub(min_cache_tokens=HAIKU_MIN_CACHE)
    stub.responder = full_budget(stub)
    with stub:
        brain, _ = init_brain(tmp / "brain")
        brain = use_anthropic(brain, stub.base_url)
        msgs = replay(days * per_day, START, per_day)
        now, end, i = START, START + timedelta(days=days, hours=3), 0
        per_run: dict[str, list[int]] = {"compact": [], "defrag": []}
        t0 = time.perf_counter()
        while now < end:
            now += timedelta(minutes=30)
            batch = []
            while i < len(msgs) and msgs[i].ts <= now:
                batch.append(msgs[i])
                i += 1
            if batch:
                entries, red = make_entries(batch, Tagger.from_config(brain.config, brain.root),
                                            redactor(brain.config), now)
                ingest_entries(brain, entries, ["bench"], now, "ingest", red)
            for mode in (("defrag", "compact") if now.hour == 2 and now.minute == 30 else ("compact",)):
                before = len(stub.requests)
                run_compaction(brain, now, mode)
                per_run[mode].append(len(stub.requests) - before)
        secs = time.perf_counter() - t0
        runs = parse_runs(brain.repo.log(FORMAT, "--grep=^pamd "))
    llm = [r for r in runs if r.backend == "anthropic"]
    tokens_in = sum(r.tokens_in for r in llm)
    tokens_out = sum(r.tokens_out for r in llm)
    cost = sum(r.cost_usd for r in llm)
    cost_nocache = (tokens_in * HAIKU.input + tokens_out * HAIKU.output) / 1e6  # all input uncached
    bodies = brain.repo.log("--format=%B").splitlines()
    fallbacks = sum(1 for line in bodies if line.startswith("Pamd-Fallback"))
    reasons = sorted({line.split(";")[0][:110] for line in bodies if "fell back" in line})
    requests = len(stub.requests)
    days_f = float(days)
    return {
        "days": days, "messages": len(msgs),
        "raw_tokens_a_day": round(sum(count_tokens(m.text) for m in msgs) / days_f),
        "requests": requests, "requests_a_day": round(requests / days_f, 1),
        "requests_per_compaction": _spread(per_run["compact"]),
        "requests_per_night": _spread(per_run["defrag"]),
        "tokens_in_a_day": round(tokens_in / days_f), "tokens_out_a_day": round(tokens_out / days_f),
        "usd_a_day": round(cost / days_f, 4), "usd_a_day_if_nothing_cached": round(cost_nocache / days_f, 4),
        "seed_usd_a_day": SEED_USD_PER_DAY, "ratio_to_seed": round(cost / days_f / SEED_USD_PER_DAY, 3),
        "cacheable_prefix_tokens": _prefix_tokens(), "fallback_commits": fallbacks,
        "fallback_reasons": reasons, "sim_s": round(secs, 1),
    }


def _spread(xs: list[int]) -> dict:
    busy = [x for x in xs if x]
    return {"runs": len(xs), "runs_with_requests": len(busy), "max": max(xs, default=0),
            "mean_when_any": round(sum(busy) / len(busy), 1) if busy else 0}


def _prefix_tokens() -> int:
    from pamd.consolidate.summarizers import prompts
    return (len(prompts.SYSTEM_OBJECT) + len(json.dumps(prompts.SCHEMA)) + 60) // 4


def failures() -> list[dict]:
    """One run of 4 groups (2 batches) under each failure: requests made, groups fallen back."""
    from datetime import UTC, datetime

    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    groups = [Group(f"g{i}", "L1", tuple(Entry(id=f"e-{i}{j}", ts=t0, role="user",
                                               text=f"Deploy {i}.{j} of api failed with 502; fixed by migration 00{j}.")
                                         for j in range(3)), 30) for i in range(4)]
    cases = {
        "429 rate limit (every request)":
            lambda r: messages_error(429, "rate_limit_error", headers={"retry-after": "1"}),
        "500 api_error (every request)": lambda r: messages_error(500, "api_error"),
        "529 overloaded (every request)": lambda r: messages_error(529, "overloaded_error"),
        "529 once, then answers": None,
        "malformed: invented source id": lambda r: messages_answer(
            {"summaries": [{"i": g["i"], "facts": [{"text": "x", "sources": ["e-made-up"]}]} for g in r.groups]}),
        "malformed: no tool call": lambda r: Reply(200, {"id": "m", "type": "message", "role": "assistant",
                                                         "model": "s", "content": [{"type": "text", "text": "ok"}],
                                                         "stop_reason": "end_turn",
                                                         "usage": {"input_tokens": 1, "output_tokens": 1}}),
        "body not JSON": lambda r: Reply(200, "<html>bad gateway</html>"),
    }
    out = []
    for name, responder in cases.items():
        stub = AnthropicStub(responder, min_cache_tokens=HAIKU_MIN_CACHE)
        if responder is None:
            stub.script.append(messages_error(529, "overloaded_error"))
        with stub:
            s = AnthropicSummarizer(api_key="k", base_url=stub.base_url, batch_size=2, max_retries=3,
                                    prices={"claude-haiku-4-5": HAIKU}, sleep=lambda _s: None)
            t = time.perf_counter()
            _, usage = s.summarize(groups)
            out.append({"case": name, "requests": len(stub.requests), "fallback_groups": usage.fallbacks,
                        "note": usage.notes[0] if usage.notes else "", "s": round(time.perf_counter() - t, 2)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--per-day", type=int, default=350)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result = simulate(Path(tmp), args.days, args.per_day)
    print(json.dumps(result, indent=2))
    for row in failures():
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
