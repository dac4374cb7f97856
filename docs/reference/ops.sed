# Doxygen's input filter for the generated ctorch_ops.h (scripts/reference):
# each operator's schema, the first line of its doc comment, becomes a code
# span, so that Markdown leaves it as written (a name such as
# _foreach_add_ would otherwise lose its underscores to emphasis). The
# header itself is not changed.
\|\*/$|!s|^/\*\* \(.*\)$|/** `\1`|
