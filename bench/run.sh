#!/usr/bin/env bash
# make bench: pyfootprint beside LangGraph (and footprintjs when node is present), in one run.
#
# Installs the peers once, outside the project's venv, into bench/.cache/ (git-ignored):
#   bench/.cache/peers-venv   LangGraph & co., pinned in bench/requirements-peers.txt (PyPI)
#   bench/.cache/fp           footprintjs@9.24.0 (npm), only when node and npm exist
# then runs W1..W6 workload by workload, one process at a time, rotating which peer goes first,
# appends one JSON line per measurement to bench/results/latest.jsonl and writes the tables to
# bench/results/latest.md (also printed).
#
# Environment:
#   BENCH_QUICK=1      smoke run: 1 warm-up, >= 3 samples, 0.3 s per measurement
#   BENCH_BUDGET_S=N   time budget per measurement (default 4 s)
#   BENCH_PASSES=N     run the whole suite N times and pool the passes (default 1)
#   BENCH_ONLY="W1 W3" run only these workloads (W8, a map over 1,000 items, has no footprintjs peer)
#   BENCH_W7_BIG=1     W7 also at 150,000 commits (minutes, and a few hundred MB)
#   BENCH_INBOX_RUNS=N paused runs behind the inbox figures (default 1000; 10000 for the flat check)
#   BENCH_C1000_TURNS=N  turns of the long conversation C1000 (default 1000, about a minute a peer; 100 with BENCH_QUICK)
#   PF_PY, PEERS_VENV, FP_DIR   override the pyfootprint python / peers venv / footprintjs dir
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE="$ROOT/bench/.cache"
PF_PY=${PF_PY:-$ROOT/.venv/bin/python}
PEERS_VENV=${PEERS_VENV:-$CACHE/peers-venv}
export FP_DIR=${FP_DIR:-$CACHE/fp}
FP_VERSION=9.24.0
REQS="$ROOT/bench/requirements-peers.txt"
OUT="$ROOT/bench/results/latest.jsonl"
MD="$ROOT/bench/results/latest.md"
PASSES=${BENCH_PASSES:-1}
ONLY=${BENCH_ONLY:-W1 W2 W3 W4 W5 W6 W7 W8}
FAILED=0

say() { echo "bench: $*" >&2; }

setup_langgraph() {
  local stamp="$PEERS_VENV/.installed"
  if [[ -f "$stamp" && "$stamp" -nt "$REQS" ]]; then return 0; fi
  say "installing LangGraph peers into $PEERS_VENV (once)"
  python3 -m venv "$PEERS_VENV" &&
    "$PEERS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS" &&
    touch "$stamp"
}

setup_footprintjs() {
  command -v node >/dev/null || { say "node not found: footprintjs skipped"; return 1; }
  local pkg="$FP_DIR/node_modules/footprintjs/package.json"
  if [[ -f "$pkg" ]] && grep -q "\"version\": \"$FP_VERSION\"" "$pkg"; then return 0; fi
  command -v npm >/dev/null || { say "npm not found: footprintjs skipped"; return 1; }
  say "installing footprintjs@$FP_VERSION into $FP_DIR (once)"
  mkdir -p "$FP_DIR" && (
    cd "$FP_DIR" &&
      { [[ -f package.json ]] || npm init -y >/dev/null; } &&
      npm install --silent --no-audit --no-fund "footprintjs@$FP_VERSION" >/dev/null
  )
}

HAVE_LG=1
setup_langgraph || { say "pip install of the LangGraph peers FAILED: LangGraph skipped"; HAVE_LG=0; }
HAVE_FP=1
setup_footprintjs || { say "footprintjs unavailable (no node, or npm install failed): skipped"; HAVE_FP=0; }

# One measurement process. A failure is reported as a JSON note, and the run goes on.
step() {
  local peer=$1 w=$2
  shift 2
  local t0=$SECONDS
  say "$w $peer: $*"
  if ! "$@" >>"$OUT"; then
    FAILED=1
    say "!! $w $peer FAILED (see the error above)"
    printf '{"peer": "%s", "workload": "%s", "variant": "(script)", "skipped": "%s"}\n' \
      "$peer" "$w" "the script failed: $*" >>"$OUT"
  fi
  say "$w $peer done in $((SECONDS - t0)) s"
}

run_peer() {
  local peer=$1 w=$2 n=${2#W}
  local mod
  mod=$(basename "$(ls "$ROOT"/bench/pyfootprint/w"$n"_*.py)" .py)
  case $peer in
    pyfootprint) step "$peer" "$w" "$PF_PY" -m "bench.pyfootprint.$mod" ;;
    langgraph)
      [[ $HAVE_LG == 1 ]] || return 0
      [[ -f "$ROOT/bench/peers/langgraph/$mod.py" ]] || return 0  # no peer script for this workload
      if [[ $w == W4 ]]; then  # one process per saver, so peak RSS is per saver
        for kind in memory sqlite sqlite-sync; do
          step "$peer" "$w" "$PEERS_VENV/bin/python" -m "bench.peers.langgraph.$mod" "$kind"
        done
      else
        step "$peer" "$w" "$PEERS_VENV/bin/python" -m "bench.peers.langgraph.$mod"
      fi
      ;;
    footprintjs)
      [[ $HAVE_FP == 1 ]] || return 0
      [[ -f "$ROOT/bench/peers/footprintjs/$mod.mjs" ]] || return 0
      step "$peer" "$w" node --expose-gc "$ROOT/bench/peers/footprintjs/$mod.mjs"
      ;;
  esac
}

mkdir -p "$(dirname "$OUT")"
: >"$OUT"
PEER_ORDER=(pyfootprint langgraph footprintjs)
turn=0
for ((pass = 1; pass <= PASSES; pass++)); do
  for w in $ONLY; do
    # Rotate who goes first, so no peer always runs on a machine warmed (or tired) by another.
    for i in 0 1 2; do
      run_peer "${PEER_ORDER[$(((turn + i) % 3))]}" "$w"
    done
    turn=$((turn + 1))
  done
done

# Streaming overhead (agent.stream beside agent.run, one process): its own file, ratios included.
if [[ " $ONLY " == *" W6 "* ]]; then
  say "W6-stream pyfootprint: $PF_PY -m bench.pyfootprint.stream_overhead"
  "$PF_PY" -m bench.pyfootprint.stream_overhead >"$ROOT/bench/results/stream_overhead.jsonl" || FAILED=1
  if [[ $HAVE_LG == 1 ]]; then  # the peer's own stream beside its own invoke, measured the same way
    say "W6-stream langgraph: $PEERS_VENV/bin/python -m bench.peers.langgraph.w6_stream"
    (cd "$ROOT" && "$PEERS_VENV/bin/python" -m bench.peers.langgraph.w6_stream) \
      >"$ROOT/bench/results/stream_overhead_langgraph.jsonl" || FAILED=1
  else
    rm -f "$ROOT/bench/results/stream_overhead_langgraph.jsonl"
  fi
fi

# Effects and cost overhead (an idempotent tool's intent + receipt, pricing=, beside the plain W6 run).
if [[ " $ONLY " == *" W6 "* ]]; then
  say "W6-effects pyfootprint: $PF_PY -m bench.pyfootprint.effects_overhead"
  "$PF_PY" -m bench.pyfootprint.effects_overhead >"$ROOT/bench/results/effects_overhead.jsonl" || FAILED=1
fi

# Replay as a test: a decision diff of two 30,000-commit runs, a replayed W6 run (its own file).
say "REPLAY pyfootprint: $PF_PY -m bench.pyfootprint.replay"
"$PF_PY" -m bench.pyfootprint.replay >"$ROOT/bench/results/replay.jsonl" || FAILED=1
if [[ "$HAVE_LG" == 1 ]]; then  # LangGraph's fork of the same 50-node pipeline: its model calls
  say "REPLAY langgraph: $PEERS_VENV/bin/python -m bench.peers.langgraph.replay_fork"
  (cd "$ROOT" && "$PEERS_VENV/bin/python" -m bench.peers.langgraph.replay_fork) \
    >>"$ROOT/bench/results/replay.jsonl" || FAILED=1
fi

# A 50-turn conversation on SQLite: µs per turn at turns 1, 10 and 50 (its own file and table).
say "C50 pyfootprint: $PF_PY -m bench.pyfootprint.conversation"
"$PF_PY" -m bench.pyfootprint.conversation >"$ROOT/bench/results/conversation.jsonl" || FAILED=1

# Context injections and a mounted agent on W6: ratios to the plain agent (its own file).
say "W6-context pyfootprint: $PF_PY -m bench.pyfootprint.composition"
"$PF_PY" -m bench.pyfootprint.composition >"$ROOT/bench/results/composition.jsonl" || FAILED=1

# Recall from 100,000 memory items in SQLite: µs per search, p95 held to 5 ms (its own file).
say "M100K pyfootprint: $PF_PY -m bench.pyfootprint.memory_recall"
"$PF_PY" -m bench.pyfootprint.memory_recall >"$ROOT/bench/results/memory_recall.jsonl" || FAILED=1
if [[ $HAVE_LG == 1 ]]; then
  say "M100K langgraph: $PEERS_VENV/bin/python -m bench.peers.langgraph.memory_recall"
  (cd "$ROOT" && "$PEERS_VENV/bin/python" -m bench.peers.langgraph.memory_recall) \
    >>"$ROOT/bench/results/memory_recall.jsonl" || FAILED=1
fi
# The approval inbox over real HTTP (agent serve): first page of 1,000 paused runs, approve -> done.
say "inbox pyfootprint: $PF_PY -m bench.inbox --runs ${BENCH_INBOX_RUNS:-1000}"
(cd "$ROOT" && "$PF_PY" -m bench.inbox --runs "${BENCH_INBOX_RUNS:-1000}") >"$ROOT/bench/results/inbox.jsonl" || FAILED=1
if [[ $HAVE_LG == 1 ]]; then  # the peer column: get_state / Command(resume=...) on an equivalent graph
  say "inbox langgraph: $PEERS_VENV/bin/python -m bench.peers.langgraph.inbox --runs ${BENCH_INBOX_RUNS:-1000}"
  (cd "$ROOT" && "$PEERS_VENV/bin/python" -m bench.peers.langgraph.inbox --runs "${BENCH_INBOX_RUNS:-1000}") \
    >>"$ROOT/bench/results/inbox.jsonl" || FAILED=1
fi
# One long conversation (C1000, 1,000 turns, whole history) beside LangGraph + SqliteSaver on the
# same turns: µs per turn at turns 1, 10, 100 and 1,000, and each database's size.
C1000_TURNS=${BENCH_C1000_TURNS:-$([[ ${BENCH_QUICK:-0} == 1 ]] && echo 100 || echo 1000)}
say "C1000 pyfootprint: $PF_PY -m bench.pyfootprint.conversation_long $C1000_TURNS"
"$PF_PY" -m bench.pyfootprint.conversation_long "$C1000_TURNS" >"$ROOT/bench/results/conversation_long.jsonl" || FAILED=1
if [[ $HAVE_LG == 1 ]]; then
  say "C1000 langgraph: $PEERS_VENV/bin/python -m bench.peers.langgraph.conversation $C1000_TURNS"
  (cd "$ROOT" && "$PEERS_VENV/bin/python" -m bench.peers.langgraph.conversation "$C1000_TURNS") \
    >>"$ROOT/bench/results/conversation_long.jsonl" || FAILED=1
fi

{
  echo "# make bench — $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "Machine: $(nproc) cores, $("$PF_PY" -c 'import platform; print("Python", platform.python_version())')$([[ $HAVE_FP == 1 ]] && echo ", node $(node --version)")."
  echo "Settings: BENCH_QUICK=${BENCH_QUICK:-0}, BENCH_BUDGET_S=${BENCH_BUDGET_S:-default}, passes=$PASSES."
  echo
  "$PF_PY" "$ROOT/bench/report.py" "$OUT"
  if [[ -s "$ROOT/bench/results/stream_overhead.jsonl" ]]; then
    echo
    echo "Streaming overhead (W6, agent.stream ÷ agent.run): $(tail -n 1 "$ROOT/bench/results/stream_overhead.jsonl")"
    if [[ -s "$ROOT/bench/results/stream_overhead_langgraph.jsonl" ]]; then
      echo "LangGraph, the same loop (graph.stream ÷ graph.invoke): $(tail -n 1 "$ROOT/bench/results/stream_overhead_langgraph.jsonl")"
    fi
    echo
    echo "W6 streamed, median µs/iter, each peer measured side by side in its own process:"
    "$PF_PY" -c 'import json, sys
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        r = json.loads(line)
        if "median" in r:
            print("- %s: %s: %.1f" % (r["peer"], r["variant"], r["median"]))' \
      "$ROOT/bench/results/stream_overhead.jsonl" "$ROOT/bench/results/stream_overhead_langgraph.jsonl"
  fi
  if [[ -s "$ROOT/bench/results/effects_overhead.jsonl" ]]; then
    echo
    echo "Effects and cost overhead (W6, ratios to the plain run): $(tail -n 1 "$ROOT/bench/results/effects_overhead.jsonl")"
  fi
  if [[ -s "$ROOT/bench/results/conversation.jsonl" ]]; then
    echo
    echo "A 50-turn conversation on SQLite (C50), median µs per turn:"
    "$PF_PY" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "median" in r:
        print("- %s: %.0f µs" % (r["variant"], r["median"]))' "$ROOT/bench/results/conversation.jsonl"
  fi
  if [[ -s "$ROOT/bench/results/composition.jsonl" ]]; then
    echo
    echo "W6 with context (2 facts, 1 skill, 1 recall per call; bar 1.3) and mounted with add_agent (bar 1.1): $(tail -n 1 "$ROOT/bench/results/composition.jsonl")"
  fi
  if [[ -s "$ROOT/bench/results/memory_recall.jsonl" ]]; then
    echo
    echo "Recall from 100,000 memory items (M100K), µs per search (target: p95 ≤ 5 ms per user namespace):"
    "$PF_PY" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "median" in r:
        print("- %s: median %.0f µs%s" % (r["variant"], r["median"], ", p95 %.2f ms" % r["p95_ms"] if "p95_ms" in r else ""))' "$ROOT/bench/results/memory_recall.jsonl"
  fi
  if [[ -s "$ROOT/bench/results/inbox.jsonl" ]]; then
    echo
    echo "The approval inbox (pyfootprint over HTTP with agent serve; LangGraph in process), p50 / p95 ms:"
    "$PF_PY" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "p50_ms" in r:
        print("- %s: %s, %d runs: %s / %s ms (target p95 <= %d ms)" % (r.get("peer", "pyfootprint"), r["figure"], r["runs"], r["p50_ms"], r["p95_ms"], r["target_p95_ms"]))' "$ROOT/bench/results/inbox.jsonl"
  fi
  if [[ -s "$ROOT/bench/results/conversation_long.jsonl" ]]; then
    echo
    echo "One conversation of $C1000_TURNS turns on SQLite (C1000), median µs per turn around each turn, and the database:"
    "$PF_PY" -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "median" in r:
        print("- %s: %s: %.0f µs" % (r["peer"], r["variant"], r["median"]))
    elif "bytes" in r:
        print("- %s: %s: %.1f MB" % (r["peer"], r["variant"], r["bytes"] / 1e6))' "$ROOT/bench/results/conversation_long.jsonl"
  fi
} >"$MD"
cat "$MD"
say "wrote $OUT and $MD"
if [[ $FAILED == 1 ]]; then
  say "some measurements FAILED; their rows are missing (see 'Skipped' above)"
  exit 1
fi
