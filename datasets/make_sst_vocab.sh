#!/bin/sh
# Regenerates datasets/sst/vocab.txt byte for byte: every distinct leaf token of the SST splits, in
# order of first appearance across train, dev and test, one per line, then `<unk>` as the last line.
# Tokens are split on ASCII space and parentheses only (some contain U+00A0). Usage:
#   datasets/make_sst_vocab.sh [DIR_WITH_train_dev_test.txt] > datasets/sst/vocab.txt
set -eu
dir=${1:-/work/shared/datasets/sst}
LC_ALL=C perl -ne 'while (/\(([^ ()]+) ([^ ()]+)\)/g) { print "$2\n" unless $seen{$2}++ }' \
  "$dir/train.txt" "$dir/dev.txt" "$dir/test.txt"
printf '<unk>\n'
