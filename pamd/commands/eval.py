from __future__ import annotations

HELP = "measure what compression loses: recall@k and tokens per tier as a brain ages"
EXAMPLE = """pamd eval ../shared/bench/data/locomo/locomo10.json --plot fidelity.png
pamd eval questions.jsonl --brain ~/brains/agent      # {question, evidence_ids} per line
pamd eval locomo10.json --limit 2 --json
pamd eval questions.jsonl --summarizer extractive   # a brain set to gemini, measured without calling it"""


def add_arguments(p) -> None:
    p.add_argument("qa", help="LoCoMo JSON, or pamd JSONL of {question, evidence_ids} (uses --brain)")
    p.add_argument("-k", type=int, default=10, metavar="N",
                   help="hits per question: recall@N, lines@N and raw@N (default 10)")
    p.add_argument("--limit", type=int, help="only the first N conversations (LoCoMo)")
    p.add_argument("--workdir", help="make the scratch brains here and keep them (default: a temporary "
                                     "folder, removed at the end)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="FILE.png|svg", help="plot recall against compression")
    p.add_argument("--embedder", choices=["auto", "e5-small", "use", "sentence-transformers"],
                   help="embedder of the scratch brains (default: the brain's own, or auto)")
    p.add_argument("--rerank", type=int, metavar="N",
                   help="cross-encoder depth of the scratch brains ([index] rerank; default: the "
                        "brain's own; 0 is much faster for thousands of questions)")
    p.add_argument("--summarizer", choices=["extractive", "gemini", "openai"],
                   help="summarizer of the scratch brains' defrags ([summarizer] backend; default: the "
                        "brain's own, so an LLM one is called and paid at every age; extractive calls none)")


def run(args) -> int:
    import sys
    from pathlib import Path

    from pamd.errors import PamdError
    from pamd.fidelity import evaluate, qa

    path = Path(args.qa)
    if path.is_dir():
        raise PamdError(f"{args.qa} is a directory", "name a LoCoMo .json file, or a .jsonl of questions")
    if not path.is_file():
        raise PamdError(f"{args.qa}: no such file")
    # checked before a scratch brain is made: a bad value found in its pamd.toml would name a temp file
    if args.k < 1:
        raise PamdError("-k must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise PamdError("--limit must be at least 1")
    if args.rerank is not None and args.rerank < 0:
        raise PamdError("--rerank must be 0 or more", "0 searches without the cross-encoder")
    if args.plot:
        evaluate.check_plot(Path(args.plot))

    def progress(msg: str) -> None:
        print(f"pamd eval: {msg}", file=sys.stderr, flush=True)

    if qa.detect(path) == "locomo":
        convs = qa.load_locomo(path, args.limit)
        report = evaluate.eval_conversations(convs, args.k, workdir=args.workdir, progress=progress,
                                             source=path.name, embedder=args.embedder,
                                             rerank=args.rerank, summarizer=args.summarizer)
    else:
        from pamd.edge.brain import Brain

        report = evaluate.eval_brain(Brain.find(args.brain), qa.load_pamd(path), args.k,
                                     workdir=args.workdir, progress=progress, embedder=args.embedder,
                                     rerank=args.rerank, questions_file=args.qa,
                                     summarizer=args.summarizer)
    if args.json:
        print(report.to_json())
    else:
        print(evaluate.table(report))
        for line in evaluate.summary_lines(report):
            print(line)
    if args.plot:
        print(f"plot: {evaluate.plot(report, Path(args.plot))}", file=sys.stderr)
    return 0
