#!/usr/bin/env bash
# Takes a PNG screenshot of an HTML report (or an SVG picture) with headless
# Chromium, to look at a report without a browser or to attach a picture of
# it where HTML cannot go.
#
#   tools/screenshot.sh REPORT.html OUT.png [WIDTH] [HEIGHT]
#
# WIDTH defaults to 1200 and HEIGHT to 3000 pixels. The screenshot is the
# window, not the whole page: raise HEIGHT for a longer report (white space
# below a shorter one stays white). Needs the Debian package chromium
# (`apt-get install -y chromium`). Chromium runs with a throwaway profile,
# deleted afterwards, and reads only the file.
set -euo pipefail

usage="usage: tools/screenshot.sh REPORT.html OUT.png [WIDTH] [HEIGHT]"
if [[ $# -lt 2 || $# -gt 4 ]]; then
    echo "$usage" >&2
    exit 2
fi
report="$1"
out="$2"
width="${3:-1200}"
height="${4:-3000}"
for size in "$width" "$height"; do
    if ! [[ "$size" =~ ^[0-9]+$ ]] || ((size < 100 || size > 16000)); then
        echo "screenshot.sh: width and height must be whole numbers of pixels in 100..16000, not '$size'" >&2
        exit 2
    fi
done
if [[ ! -f "$report" ]]; then
    echo "screenshot.sh: no such file: $report" >&2
    exit 1
fi

chromium_bin=""
for candidate in chromium chromium-browser; do
    if command -v "$candidate" >/dev/null 2>&1; then
        chromium_bin="$candidate"
        break
    fi
done
if [[ -z "$chromium_bin" ]]; then
    echo "screenshot.sh: chromium is not installed; install the Debian package chromium (apt-get install -y chromium)" >&2
    exit 1
fi

# A path as the path of a file:// URL: bytes other than letters, digits and
# "/._~-" percent-encoded, so spaces, '#', '%' and accents survive.
url_path() {
    local LC_ALL=C path="$1" out="" c i
    for ((i = 0; i < ${#path}; i++)); do
        c="${path:i:1}"
        case "$c" in
            [a-zA-Z0-9/._~-]) out+="$c" ;;
            *)
                printf -v c '%%%02X' "'$c"
                out+="$c"
                ;;
        esac
    done
    printf '%s' "$out"
}

# Chromium wants absolute file URLs and writes the screenshot relative to its
# own working folder, so both paths are made absolute.
report_abs="$(realpath "$report")"
out_abs="$(realpath -m "$out")"
mkdir -p "$(dirname "$out_abs")"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT

# --no-sandbox: Chromium refuses to run as root with its sandbox, and CI and
# containers run as root. The report loads nothing, so there is nothing to
# sandbox beyond the local file.
log="$profile/chromium.log"
if ! "$chromium_bin" --headless --disable-gpu --no-sandbox --hide-scrollbars \
    --no-first-run --disable-extensions --disable-background-networking \
    --user-data-dir="$profile" --window-size="$width,$height" \
    --screenshot="$out_abs" "file://$(url_path "$report_abs")" >"$log" 2>&1; then
    cat "$log" >&2
    echo "screenshot.sh: chromium failed on $report" >&2
    exit 1
fi
if [[ ! -s "$out_abs" ]]; then
    cat "$log" >&2
    echo "screenshot.sh: chromium wrote no screenshot to $out" >&2
    exit 1
fi
echo "$out (${width}x${height})"
