#!/usr/bin/env bash
# Runs each cargo-fuzz target of fuzz/ for a bounded time, one after the
# other, one process each, and prints a table: target, seconds, executions,
# crashes. Needs nightly Rust and cargo-fuzz (`cargo install cargo-fuzz`).
#
#   tools/fuzz.sh                  every target, FUZZ_SECONDS (default 60) each
#   tools/fuzz.sh 300 tsv vocab    300 s each for the targets named
#   tools/fuzz.sh seeds            rewrite the committed seed corpus (stable Rust)
#
# New inputs go to fuzz/work/<target> (ignored by git); the committed seeds
# in fuzz/corpus/<target> are only read. A crash is saved under
# fuzz/artifacts/<target>/ and ends that target's run; replay it with
# `cargo +nightly fuzz run <target> <file>`, then fix it and turn the input
# into a regression test of the crate (see docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == seeds ]]; then
    exec cargo run --release --manifest-path fuzz/Cargo.toml --example seeds
fi

seconds="${FUZZ_SECONDS:-60}"
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    seconds="$1"
    shift
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir fuzz)
fi

# A loader that takes 256 MB in one allocation, or 1 GB in all, from an input
# of at most 4 KB, has a bug: libFuzzer reports it as a crash.
limits=(-max_total_time="$seconds" -max_len=4096 -malloc_limit_mb=256 -rss_limit_mb=1024 -print_final_stats=1)

summary=()
status=0
for target in "${targets[@]}"; do
    mkdir -p "fuzz/work/$target" "fuzz/artifacts/$target"
    log="fuzz/work/$target.log"
    echo "== $target: ${seconds} s" >&2
    if cargo +nightly fuzz run --fuzz-dir fuzz --jobs 1 "$target" "fuzz/work/$target" "fuzz/corpus/$target" -- "${limits[@]}" 2>"$log"; then
        crashes=0
    else
        crashes=1
        status=1
        grep -E "^(==[0-9]+==ERROR|SUMMARY|thread .* panicked)|artifact_prefix|Test unit written" "$log" >&2 || tail -n 20 "$log" >&2
    fi
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    took=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || echo "$seconds")
    summary+=("$(printf '| %-10s | %7s | %12s | %7s |' "$target" "$took" "$runs" "$crashes")")
done

printf '| %-10s | %7s | %12s | %7s |\n|---|---|---|---|\n' target seconds executions crashes
printf '%s\n' "${summary[@]}"
exit "$status"
