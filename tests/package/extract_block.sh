#!/bin/sh
# Prints the first fenced code block of language LANG after the line that
# starts with HEADING in FILE (the README's first programs, read at test
# time so the tests run what the README shows). Usage: extract_block.sh FILE HEADING LANG
awk -v h="$2" -v fence="\`\`\`$3" '
  index($0, h) == 1 { seen = 1; next }
  seen && !inb && $0 == fence { inb = 1; next }
  inb && $0 == "```" { found = 1; exit }
  inb { print }
  END { if (!found) exit 1 }' "$1"
