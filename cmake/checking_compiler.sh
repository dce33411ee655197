#!/bin/sh
# The compiler launcher of the checking units where CTFLOW_CHECKING_COMPILER names one:
#   sh checking_compiler.sh CHECKING-COMPILER PROJECT-COMPILER ARGUMENTS...
# runs CHECKING-COMPILER on the project compiler's arguments. The project's flags name some
# warnings the checking compiler does not know (GCC's -Wno-maybe-uninitialized): not a warning.
# A precompiled header (-x c++-header ... -o H.gch) is built from its header alone: clang would
# otherwise load the H.gch of the build before through the command's own -include H and chain
# the new one to it, which the next unit then finds out of date.
checking=$1
shift 2
header=no
previous=
for a in "$@"; do
  [ "$previous" = "-x" ] && [ "$a" = "c++-header" ] && header=yes
  [ "$previous" = "-o" ] && output=$a
  previous=$a
done
[ "$header" = yes ] && rm -f "$output"
exec "$checking" -Wno-unknown-warning-option "$@"
