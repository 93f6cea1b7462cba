#!/bin/sh
# copy.sh DEST PACKAGE [FEATURE...]: copy the core of mcpstdio (the files
# testdata/core_files.txt lists) and the named features (http, auth, tasks,
# ...: the library files whose names start with FEATURE. or FEATURE_) into
# the directory DEST as package PACKAGE, and print the non-test lines of
# each part. Tests and the command's files (main*.go) are never copied.
# Features need what they name: http needs auth.
# The copy stays licensed: each copied file starts with a comment naming
# its origin (the file and the commit it was copied from, +dirty when the
# checkout had changes not committed) and the MIT License, whose text is
# written beside the files as DEST/LICENSE-mcpstdio.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DEST PACKAGE [FEATURE...]" >&2; exit 2; }
dest=$1 pkg=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if commit=$(git -C "$src" rev-parse HEAD 2>/dev/null); then
  [ -z "$(git -C "$src" status --porcelain 2>/dev/null)" ] || commit=$commit+dirty
else
  commit="unknown (not a git checkout)"
fi
copyright=$(grep -m1 '^Copyright' "$src/LICENSE")
cp "$src/LICENSE" "$dest/LICENSE-mcpstdio"
copy() { # copy PART FILE...: copy the files and print their line count
  part=$1
  shift
  lines=0 files=0
  for f in "$@"; do
    case $f in *_test.go | main.go | main_*.go) continue ;; esac
    [ -f "$src/$f" ] || continue
    {
      printf '// Code copied from mcpstdio, file %s, at commit %s.\n' "$f" "$commit"
      printf '// MIT License, %s; its text is in LICENSE-mcpstdio beside this file.\n\n' "$copyright"
      sed 's/^package main$/package '"$pkg"'/' "$src/$f"
    } >"$dest/$f"
    lines=$((lines + $(wc -l <"$src/$f"))) files=$((files + 1))
  done
  [ "$files" -gt 0 ] || { echo "$0: no library file is named $part.go or ${part}_*.go" >&2; exit 2; }
  printf '%-8s %3d files %6d lines\n' "$part" "$files" "$lines"
}
cd "$src"
# shellcheck disable=SC2046 # the list's globs are meant to expand
copy core $(grep -v '^#' testdata/core_files.txt)
for feature in "$@"; do
  copy "$feature" "$feature".go "$feature"_*.go
done
