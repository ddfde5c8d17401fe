from __future__ import annotations

HELP = "build a demo brain from a sample week of agent work, age it, and show what pamd does"
EXAMPLE = "pamd demo\npamd demo /tmp/my-demo-brain"

# A simulated week: the sample's messages arrive on Monday to Friday; compaction
# and the nightly defrag then run on a clock we move forward.
CLOCK = [
    ("compact", "2026-11-27T18:00:00Z"),
    ("defrag", "2026-11-28T02:30:00Z"),
    ("compact", "2026-11-29T12:00:00Z"),
    ("defrag", "2026-11-30T02:30:00Z"),
]
QUERIES = ["what did we decide about memory use of the export", "дедлайн перенесли", "OOM incident cause"]


def add_arguments(p) -> None:
    p.add_argument("dir", nargs="?", default=None,
                   help="where to create the demo brain (default: ./pamd-demo-brain, or a new temporary "
                        "folder if the current folder is inside a git repository or already has one)")


def run(args) -> int:
    import shutil
    import tempfile
    from importlib import resources
    from pathlib import Path

    from pamd.edge.git import Repo
    from pamd.errors import PamdError

    # The demo runs command lines as a person would type them, in this process (one process
    # for a dozen commands keeps it to seconds): the CLI hands it its own entry point.
    main = args.cli

    if args.dir is not None:
        target = Path(args.dir)
    else:
        target = Path("pamd-demo-brain")
        # The README runs `pamd demo` in a clone of pamd, and a brain cannot live inside another
        # repository; nor should a second run fail on the first one's brain.
        if target.exists() or Repo.toplevel(Path.cwd()) is not None:
            target = Path(tempfile.mkdtemp(prefix="pamd-demo-brain-"))
    if target.exists() and any(target.iterdir()):
        raise PamdError(f"{target} already exists and is not empty", "remove it or pass another folder")

    def step(title: str, *argv: str, now: str | None = None) -> int:
        print(f"\n$ pamd {' '.join(argv)}" + (f"      # {title}" if title else ""), flush=True)
        full = [*argv, "--brain", str(target)] if argv[0] != "init" else list(argv)
        if now:
            full += ["--now", now]
        try:
            return main(full)
        except SystemExit as exc:  # argparse's own exits
            return int(exc.code or 0)

    print("pamd demo: an agent's week of work becomes a git repository of memory.")
    if step("a brain is a git repo", "init", str(target)) != 0:
        return 1
    # made only now, so a demo that stops at init leaves nothing behind in the temp folder
    sample = Path(tempfile.mkdtemp(prefix="pamd-demo-")) / "sample-week.jsonl"
    sample.write_bytes(resources.files("pamd.data").joinpath("sample-week.jsonl").read_bytes())
    step("Monday to Friday, raw messages in L0", "ingest", str(sample), now="2026-11-27T12:00:00Z")
    step("", "status", now="2026-11-27T12:00:00Z")
    for mode, now in CLOCK:
        step(f"the clock moves to {now}", mode, now=now)
    step("a week later: most memory is compressed", "status", now=CLOCK[-1][1])
    try:
        import hnswlib  # noqa: F401

        searchable = True
    except ImportError:
        searchable = False
    if searchable:
        for q in QUERIES:
            step("hybrid search, with file and lines", "recall", q, "-k", "3", now=CLOCK[-1][1])
    from pamd.edge.brain import Brain

    brain = Brain(target)
    oldest = sorted((e for e in brain.load().entries if e.sources), key=lambda e: e.tier, reverse=True)
    if oldest:
        step("a compressed memory, back to the raw messages via git history", "expand", oldest[0].id)
    print("\n$ pamd boot | head -30      # what the agent reads at session start")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["boot", "--brain", str(target)])
    print("\n".join(buf.getvalue().splitlines()[:30]))
    shutil.rmtree(sample.parent, ignore_errors=True)
    print(f"\nThe demo brain is in {target}. Look around:\n"
          f"  cd {target} && git log --stat        # one commit per ingest, compaction and defrag\n"
          f"  git show HEAD                      # a defrag as a reviewable diff, trailers at the end\n"
          f"  pamd recall 'checksum file'        # search it yourself")
    return 0
