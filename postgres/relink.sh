#!/bin/sh
# Links every non-test Go file of the repository's root into this folder, but
# main_taskstore.go, which this folder has its own version of: the command of
# this module is the reference server built from those files
# (docs/how-to/deploy.md). Run it after adding or removing a Go file at the root;
# the root's TestPostgresModuleLinksEveryRootFile says when it is due.
set -eu
cd "$(dirname "$0")"
find . -maxdepth 1 -type l -name '*.go' -exec rm -f {} +
for f in ../*.go; do
  case $f in
    *_test.go | ../main_taskstore.go) ;;
    *) ln -s "$f" . ;;
  esac
done
