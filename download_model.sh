#!/usr/bin/env bash
# Download a DeepSeek V4 Flash GGUF published for ds4 and link ./ds4flash.gguf.
#
# Resumable: the transfer goes to <file>.part with `curl -C -`; running the
# same command again continues where it stopped.
set -euo pipefail

REPO="antirez/deepseek-v4-gguf"
Q2_FILE="DeepSeek-V4-Flash-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-chat-v2.gguf"
Q2_IMATRIX_FILE="DeepSeek-V4-Flash-IQ2XXS-w2Q2K-AProjQ8-SExpQ8-OutQ8-chat-v2-imatrix.gguf"
Q4_FILE="DeepSeek-V4-Flash-Q4KExperts-F16HC-F16Compressor-F16Indexer-Q8Attn-Q8Shared-Q8Out-chat-v2.gguf"
Q4_IMATRIX_FILE="DeepSeek-V4-Flash-Q4KExperts-F16HC-F16Compressor-F16Indexer-Q8Attn-Q8Shared-Q8Out-chat-v2-imatrix.gguf"
MTP_FILE="DeepSeek-V4-Flash-MTP-Q4K-Q8_0-F32.gguf"

ROOT=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
OUT_DIR=${DS4_GGUF_DIR:-"$ROOT/gguf"}
case "$OUT_DIR" in
    /*) ;;
    *) OUT_DIR="$ROOT/$OUT_DIR" ;;
esac
# Overridable so the script can be tested against a local server.
BASE_URL=${DS4_HF_BASE_URL:-https://huggingface.co}
BASE_URL=${BASE_URL%/}
TOKEN=${HF_TOKEN:-}

usage() {
    cat <<EOF
DeepSeek V4 Flash GGUF downloader (files from https://huggingface.co/$REPO)

Usage:
  ./download_model.sh TARGET [--token TOKEN]

Targets:
  q2-imatrix  2-bit routed experts, imatrix quantisation, about 81 GB.
              Recommended for machines with 96-128 GB of RAM.
  q4-imatrix  4-bit routed experts, imatrix quantisation, about 153 GB.
              Recommended for machines with 256 GB of RAM or more.
  q2          Legacy 2-bit file (prefer q2-imatrix), about 81 GB.
  q4          Legacy 4-bit file (prefer q4-imatrix), about 153 GB.
  mtp         Optional speculative-decoding component, about 3.5 GB.
              Not linked; pass it with --mtp.

Options:
  --token TOKEN  Hugging Face token. Otherwise HF_TOKEN, or the token saved by
                 huggingface-cli in ~/.cache/huggingface/token, if present.
  -h, --help     Show this help.

Environment:
  DS4_GGUF_DIR     Download directory (default: ./gguf next to this script).
  DS4_HF_BASE_URL  Hub base URL (default: https://huggingface.co).
  HF_TOKEN         Hugging Face token.

An interrupted download resumes when the same command is run again.
After a q2/q4 download, ./ds4flash.gguf points to the file, so that
  ds4 -p "Hello"
works without -m.
EOF
}

if [ $# -eq 0 ]; then
    usage >&2
    exit 1
fi

TARGET=$1
shift
case "$TARGET" in
    q2-imatrix) MODEL_FILE=$Q2_IMATRIX_FILE ;;
    q4-imatrix) MODEL_FILE=$Q4_IMATRIX_FILE ;;
    q2) MODEL_FILE=$Q2_FILE ;;
    q4) MODEL_FILE=$Q4_FILE ;;
    mtp) MODEL_FILE=$MTP_FILE ;;
    -h|--help|help)
        usage
        exit 0
        ;;
    *)
        echo "download_model.sh: unknown target: $TARGET" >&2
        echo "valid targets: q2-imatrix q4-imatrix q2 q4 mtp (see --help)" >&2
        exit 1
        ;;
esac

while [ $# -gt 0 ]; do
    case "$1" in
        --token)
            if [ $# -lt 2 ] || [ -z "$2" ]; then
                echo "download_model.sh: --token needs a value" >&2
                exit 1
            fi
            TOKEN=$2
            shift 2
            ;;
        --token=*)
            TOKEN=${1#--token=}
            shift
            ;;
        *)
            echo "download_model.sh: unknown option: $1" >&2
            exit 1
            ;;
    esac
done

if [ -z "$TOKEN" ] && [ -s "${HOME:-/nonexistent}/.cache/huggingface/token" ]; then
    TOKEN=$(tr -d '[:space:]' < "$HOME/.cache/huggingface/token")
fi

if ! command -v curl >/dev/null 2>&1; then
    echo "download_model.sh: curl is required" >&2
    exit 1
fi

# True if the file starts with the GGUF magic (an HTML error page saved by a
# misconfigured proxy must not be linked as a model).
is_gguf() {
    [ "$(head -c 4 -- "$1" 2>/dev/null)" = "GGUF" ]
}

# Size of the remote file from a HEAD request (the last response after
# redirects), or empty if unknown.
remote_size() {
    local -a auth=()
    if [ -n "$TOKEN" ]; then
        auth=(--config -)
    fi
    printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" |
        curl --silent --location --head "${auth[@]}" "$1" 2>/dev/null |
        tr -d '\r' |
        awk 'tolower($1) == "content-length:" { n = $2 } END { if (n != "") print n }'
}

download_one() {
    local file=$1
    local out="$OUT_DIR/$file"
    local part="$out.part"
    local url="$BASE_URL/$REPO/resolve/main/$file"

    mkdir -p -- "$OUT_DIR"

    if [ -s "$out" ]; then
        echo "Already downloaded: $out"
        return 0
    fi

    if [ -s "$part" ]; then
        echo "Resuming $file from byte $(wc -c < "$part" | tr -d ' ')"
    else
        echo "Downloading $file"
    fi
    echo "from $url"
    echo "If the download stops, run the same command again to resume it."

    local -a args=(--fail --location --continue-at - --output "$part")
    if [ -t 2 ]; then
        args+=(--progress-bar)
    else
        args+=(--silent --show-error)
    fi
    # The token goes through a config on stdin so it never shows up in `ps`.
    local rc=0
    if [ -n "$TOKEN" ]; then
        printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" |
            curl "${args[@]}" --config - "$url" || rc=$?
    else
        curl "${args[@]}" "$url" || rc=$?
    fi
    # A .part that already holds the whole file makes the server answer the
    # resume request with 416; accept it when the sizes agree.
    if [ "$rc" -eq 22 ] && [ -s "$part" ]; then
        local have want
        have=$(wc -c < "$part" | tr -d ' ')
        want=$(remote_size "$url")
        if [ -n "$want" ] && [ "$have" = "$want" ]; then
            rc=0
        fi
    fi
    if [ "$rc" -ne 0 ]; then
        echo "download_model.sh: download failed (curl exit $rc)." >&2
        if [ -s "$part" ]; then
            echo "Partial data kept in $part; run the same command again to resume." >&2
        fi
        if [ "$rc" -eq 22 ]; then
            echo "The server refused the request; if the repository needs it, pass --token or set HF_TOKEN." >&2
        fi
        exit 1
    fi

    if ! is_gguf "$part"; then
        echo "download_model.sh: $part is not a GGUF file (no GGUF magic); not using it." >&2
        echo "Remove it and try again." >&2
        exit 1
    fi
    mv -f -- "$part" "$out"
    echo "Saved $out"
}

download_one "$MODEL_FILE"

if [ "$TARGET" = "mtp" ]; then
    echo
    echo "MTP is an optional draft model; enable it explicitly, e.g.:"
    echo "  ds4 --mtp $OUT_DIR/$MTP_FILE --mtp-draft 2"
else
    ln -sfn -- "$OUT_DIR/$MODEL_FILE" "$ROOT/ds4flash.gguf"
    echo "Linked $ROOT/ds4flash.gguf -> $OUT_DIR/$MODEL_FILE"
fi
echo "Done."
