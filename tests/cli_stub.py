"""Stand-ins for the `claude` and `codex` CLIs: executables put first on PATH that accept
the arguments the real CLIs document (`claude --help`, `codex exec --help`), refuse any
other, record each run (argv, stdin, cwd) and answer in the real output format: claude's
`--output-format json` result object, codex's `--json` JSONL events and its
`--output-last-message` file.

A test queues replies with `StandIn.queue` (a list of dicts, consumed one per run):
  {"echo": true}                          the default: one fact per group, citing its first message
  {"answer": <JSON value or str>}          this as the answer
  {"error": "API Error: 529 ...", "exit": 1}   a failed run, said the CLI's way
  {"sleep": 5}                            hang (for the timeout)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CLAUDE = r'''
import argparse, json, os, sys, time
sys.path.insert(0, os.environ["STANDIN_DIR"])
from standin_common import next_reply, record, echo

p = argparse.ArgumentParser(prog="claude", add_help=False)
p.add_argument("-p", "--print", action="store_true")
p.add_argument("--output-format", choices=["text", "json", "stream-json"])
p.add_argument("--system-prompt")
p.add_argument("--json-schema")
p.add_argument("--tools", nargs="*")
p.add_argument("--no-session-persistence", action="store_true")
p.add_argument("--settings")
p.add_argument("--model")
p.add_argument("prompt", nargs="?")
try:
    args = p.parse_args()
except SystemExit:
    print("error: unknown option " + " ".join(sys.argv[1:])[:200], file=sys.stderr)
    sys.exit(1)
stdin = sys.stdin.read()
record(sys.argv[1:], stdin)
# --no-session-persistence, --output-format and --json-schema only work with --print
assert args.print and args.output_format == "json", "needs -p --output-format json"
schema = json.loads(args.json_schema)
assert schema["type"] == "object"
json.loads(args.settings or "{}")
reply = next_reply()
if "sleep" in reply:
    time.sleep(reply["sleep"])
if "error" in reply:
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True, "result": reply["error"],
                      "total_cost_usd": 0, "usage": {"input_tokens": 0, "output_tokens": 0}}))
    sys.exit(reply.get("exit", 1))
answer = reply["answer"] if "answer" in reply else echo(stdin)
tokens_in = (len(stdin) + len(args.system_prompt or "")) // 4
out = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234, "num_turns": 2,
       "result": answer if isinstance(answer, str) else "", "session_id": "stub",
       "total_cost_usd": reply.get("cost", 0.0125),
       "usage": {"input_tokens": 3, "cache_creation_input_tokens": tokens_in, "cache_read_input_tokens": 0,
                 "output_tokens": len(json.dumps(answer)) // 4}}
if not isinstance(answer, str):
    out["structured_output"] = answer
print(json.dumps(out))
'''

CODEX = r'''
import argparse, json, os, sys, time
sys.path.insert(0, os.environ["STANDIN_DIR"])
from standin_common import next_reply, record, echo

p = argparse.ArgumentParser(prog="codex", add_help=False)
sub = p.add_subparsers(dest="command", required=True)
e = sub.add_parser("exec", add_help=False)
e.add_argument("--json", action="store_true")
e.add_argument("--color", choices=["always", "never", "auto"])
e.add_argument("-s", "--sandbox", choices=["read-only", "workspace-write", "danger-full-access"])
e.add_argument("--skip-git-repo-check", action="store_true")
e.add_argument("--ephemeral", action="store_true")
e.add_argument("--output-schema")
e.add_argument("-o", "--output-last-message")
e.add_argument("-m", "--model")
e.add_argument("prompt", nargs="?")
try:
    args = p.parse_args()
except SystemExit:
    print("error: unexpected argument " + " ".join(sys.argv[1:])[:200], file=sys.stderr)
    sys.exit(2)
stdin = sys.stdin.read() if args.prompt in (None, "-") else args.prompt
record(sys.argv[1:], stdin)
schema = json.load(open(args.output_schema))
assert schema["type"] == "object"
reply = next_reply()
if "sleep" in reply:
    time.sleep(reply["sleep"])
print(json.dumps({"type": "thread.started", "thread_id": "stub"}))
print(json.dumps({"type": "turn.started"}))
if "error" in reply:
    print(json.dumps({"type": "error", "message": reply["error"]}))
    print(json.dumps({"type": "turn.failed", "error": {"message": reply["error"]}}))
    sys.exit(reply.get("exit", 1))
answer = reply["answer"] if "answer" in reply else echo(stdin.strip().splitlines()[-1])
text = answer if isinstance(answer, str) else json.dumps(answer)
print(json.dumps({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}}))
print(json.dumps({"type": "turn.completed",
                  "usage": {"input_tokens": len(stdin) // 4, "cached_input_tokens": 0,
                            "output_tokens": len(text) // 4}}))
if args.output_last_message:
    open(args.output_last_message, "w").write(text)
'''

COMMON = r'''
import json, os

def _path(name):
    return os.path.join(os.environ["STANDIN_DIR"], name)

def record(argv, stdin):
    with open(_path("runs.jsonl"), "a") as f:
        f.write(json.dumps({"argv": argv, "stdin": stdin, "cwd": os.getcwd(),
                            "summarizing": os.environ.get("PAMD_SUMMARIZING")}) + "\n")

def next_reply():
    try:
        script = json.load(open(_path("script.json")))
    except FileNotFoundError:
        script = []
    reply = script.pop(0) if script else {"echo": True}
    json.dump(script, open(_path("script.json"), "w"))
    return reply

def echo(stdin):
    groups = json.loads(stdin)["groups"]
    def fact(g):
        text = ("summary of " + g["messages"][0]["text"][:60])[:g["max_chars"]]
        return {"text": text, "sources": [g["messages"][0]["id"]]}
    return {"summaries": [{"i": g["i"], "facts": [fact(g)]} for g in groups]}
'''


class StandIn:
    """A directory with a `claude` and a `codex` on PATH; `runs` are the recorded runs."""

    def __init__(self, root: Path) -> None:
        self.dir = root
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "standin_common.py").write_text(COMMON)
        for name, body in (("claude", CLAUDE), ("codex", CODEX)):
            exe = self.dir / name
            exe.write_text(f"#!{sys.executable}\n{body}")
            exe.chmod(0o755)

    def env(self, monkeypatch) -> None:
        monkeypatch.setenv("PATH", f"{self.dir}{os.pathsep}{os.environ.get('PATH', '')}")
        monkeypatch.setenv("STANDIN_DIR", str(self.dir))

    def queue(self, *replies: dict) -> None:
        """Replies for the next runs, in order (after them: echo)."""
        path = self.dir / "script.json"
        script = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(script + list(replies)))

    @property
    def runs(self) -> list[dict]:
        path = self.dir / "runs.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
