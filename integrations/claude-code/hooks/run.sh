#!/bin/sh
# Claude Code runs this with the hook's JSON on stdin. Memory must never break a session:
# without pamd this says so on stderr and exits 0. PAMD_HOOK names another pamd-hook.
bin="${PAMD_HOOK:-pamd-hook}"
if ! command -v "$bin" >/dev/null 2>&1; then
  echo "pamd: note: $bin is not on PATH: install pamd (pip install 'pamd[search,mcp]') or set PAMD_HOOK" >&2
  exit 0
fi
"$bin" claude "$@"
exit 0
