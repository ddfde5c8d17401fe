"""The index in .pamd/index/: a cache derived from the tree, refreshed incrementally.

Layout (all untracked, all rebuildable from the tree):

    index.sqlite   meta (the manifest: format version, embedder identity and
                   dims, chunker settings, tree hash, hnsw generation and
                   checksum), files (path, stat, sha), chunks (label, lines,
                   tier, ids, time, importance, content hash, text, alive),
                   terms (BM25 postings per term), toksums (a hash of each append to
                   toks.bin; the manifest's toks_stamp is the file's size:mtime:inode)
    cols.npz       per-label columns for filters and BM25 (alive, tier, ts,
                   importance, length), loaded whole at query time
    hnsw-N.bin     the hnswlib graph written at generation N (the manifest's graph_gen);
                   labels are chunk labels, all those below graph_labels
    delta-N.npy    the vectors of the chunks added since (labels graph_labels and up) at
                   generation N, searched exactly beside the graph: a refresh that only
                   adds chunks (an ingest) writes this small file instead of the whole
                   graph, until DELTA_MAX (refresh) of them wait or a chunk of the graph is retired
    toks.bin       with an embedder that has token states (pamd.recall.maxsim): each
                   chunk's int8 token rows, appended as chunks are added; cols.npz
                   holds each label's first row and count (toff, tlen), and a query
                   maps the file and reads its candidates' rows only

A refresh stats every searchable file, re-chunks only files whose bytes
changed, retires chunks that disappeared (mark_deleted in hnsw, alive=0),
embeds only chunks whose text the vector cache has not seen, and adds them.
Anything that does not add up (another embedder, another format, a missing
or damaged file) makes it start from an empty index: vectors come back from
the cache, so that costs chunking time, not embedding time.

The modules, in the order a refresh runs through them:

    refresh        refresh(): the steps below in order, and when to build from empty instead
    index          Index, the open handle a refresh writes and a search reads; the lock
    changes        1. the files that changed, 2. the chunks that came and went with them
    vectors        3. the new chunks' vectors: the vector cache first, the rest embedded
    write          4. one transaction: chunks, postings, token rows, columns, graph or
                   delta, manifest; then the files of earlier generations go
    columns        cols.npz: its columns, extended, linked and written
    hnsw           hnsw-N.bin and delta-N.npy: their names and writers, hnswlib itself
    manifest       the meta table's values: what an index must carry, what a refresh records
    integrity      stamps and hashes that tell a damaged or copied file
    report         what a refresh says
"""
